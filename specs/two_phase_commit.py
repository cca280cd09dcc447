"""Two-phase commit as message-passing processes: a coordinator, resource managers, timeouts, crashes.

Source: J. Gray and L. Lamport, "Consensus on Transaction Commit", ACM TODS 31(1), 2006, §3
(the two-phase commit protocol, after Gray's "Notes on Data Base Operating Systems", 1978).
Process 0 is the transaction manager (TM); processes 1..rm are the resource managers (RMs). The
RMs are interchangeable (the TM is the range's fixed id), so `--symmetry` checks one state per
relabelling of the RMs.

- The TM sends Prepare to every RM. An RM that is still working prepares and answers Prepared;
  one that has already aborted answers No.
- The TM commits once every RM has answered Prepared and then sends Commit; it aborts on a No
  or when its timer fires first, and then sends Abort. RMs do what they are told.
- An RM that is still working may time out and abort on its own (Gray & Lamport: an RM may
  abort spontaneously before it prepares). A prepared RM is blocked: on a timeout it waits on.
- The TM may crash (`--param crashes=1`, the default): the RMs that have prepared stay blocked.

`consistent` is Gray & Lamport's TCConsistent; `follows_tm` says an RM commits only what the TM
decided. `TwoPhaseCommitEager` is a seeded bug: a prepared RM commits when its timer fires.
`all_commit` is a witness (some reachable state has every RM committed). `all_decide` is the
liveness the protocol lacks when the TM may crash: under weakly fair delivery, every RM
eventually commits or aborts. It holds with `--param crashes=0` and fails with the crash
(a prepared RM blocks): `lockstep check two_phase_commit --property all_decide --no-deadlock`.

Deviations and gaps filled: the paper leaves timeouts abstract; here both the TM and the RMs arm
one timer at start, of `timeout_ms` milliseconds when run as processes. A blocked RM does not ask
the TM or other RMs for the outcome (the paper's termination protocol is out of scope); it waits.
An aborted RM answers Prepare with an explicit No rather than by staying silent, so the TM need
not wait for its timer. Messages carry no RM id: the sender's process id identifies it.
"""

from .lang import (
    And,
    Enum,
    ForAll,
    If,
    Implies,
    Not,
    Or,
    Param,
    Range,
    Record,
    Set,
    Union,
    eventually,
    invariant,
    require,
    temporal,
    witness,
)
from .lang.actors import ActorSpec, Local, Network, on_message, on_start, on_timeout, send, set_timer

RM = Param("rm", default=2, lo=1, doc="resource managers")
TM = 0

Prepare = Record("Prepare")
Prepared = Record("Prepared")
No = Record("No")
Commit = Record("Commit")
Abort = Record("Abort")


def rms(p):
    """The resource managers' process ids."""
    return range(1, p.rm + 1)


class TwoPhaseCommit(ActorSpec):
    """Two-phase commit as actors: TM and RMs, timeouts, TM crash (Gray & Lamport 2006).

    Processes 1..rm (the RMs) are interchangeable; process 0 (the TM) is fixed."""

    Process = Range(RM + 1, symmetric=True, fixed=(TM,))
    Message = Union(Prepare, Prepared, No, Commit, Abort)
    Timer = Enum("timeout")
    timeouts = {"timeout": Param("timeout_ms", default=300, lo=1, doc="timer length when run")}
    network = Network()
    max_crashes = 1
    crashable = (TM,)
    fairness = {"deliver": "weak"}  # every message sent to a live process is eventually delivered

    tm_state = Local(Enum("init", "committed", "aborted"), init="init")
    tm_prepared = Local(Set(Process))
    rm_state = Local(Enum("working", "prepared", "committed", "aborted"), init="working")

    @on_start
    def start(p):
        if p.id == TM:
            for r in rms(p):
                send(r, Prepare())
        set_timer("timeout")

    @on_message
    def receive(p, src, m):
        if p.id == TM:
            TwoPhaseCommit.tm_receive(p, src, m)
        elif m.tag == "Prepare":
            working = p.rm_state == "working"
            p.rm_state = If(working, "prepared", p.rm_state)
            send(TM, Prepared(), when=working)
            send(TM, No(), when=p.rm_state == "aborted")
        elif m.tag == "Commit":
            p.rm_state = "committed"
        elif m.tag == "Abort":
            p.rm_state = "aborted"
        else:
            require(False)

    def tm_receive(p, src, m):
        undecided = p.tm_state == "init"
        if m.tag == "Prepared":
            prepared = p.tm_prepared.add(src)
            p.tm_prepared = prepared
            decide = And(undecided, ForAll(rms(p), lambda r: prepared.contains(r)))
            p.tm_state = If(decide, "committed", p.tm_state)
            for r in rms(p):
                send(r, Commit(), when=decide)
        elif m.tag == "No":
            TwoPhaseCommit.tm_abort(p, undecided)
        else:
            require(False)

    def tm_abort(p, undecided):
        p.tm_state = If(undecided, "aborted", p.tm_state)
        for r in rms(p):
            send(r, Abort(), when=undecided)

    @on_timeout
    def timeout(p, timer):
        if p.id == TM:
            TwoPhaseCommit.tm_abort(p, p.tm_state == "init")
        else:
            TwoPhaseCommit.rm_timeout(p)

    def rm_timeout(p):
        p.rm_state = If(p.rm_state == "working", "aborted", p.rm_state)
        set_timer("timeout", when=p.rm_state == "prepared")  # blocked: wait on

    @invariant
    def consistent(s):
        """TCConsistent: no RM has committed while another has aborted."""
        return ForAll(range(1, s.rm + 1), range(1, s.rm + 1),
                      lambda a, b: Not(And(s.rm_state[a] == "committed", s.rm_state[b] == "aborted")))

    @invariant
    def follows_tm(s):
        """An RM commits only after the TM has decided to commit."""
        return ForAll(range(1, s.rm + 1), lambda r: Implies(s.rm_state[r] == "committed", s.tm_state[TM] == "committed"))


    @witness
    def all_commit(s):
        """Some run commits everywhere (without it, a TM that always aborts would pass every check)."""
        return ForAll(range(1, s.rm + 1), lambda r: s.rm_state[r] == "committed")

    @temporal
    def all_decide(s):
        """Every RM eventually commits or aborts."""
        return eventually(ForAll(range(1, s.rm + 1), lambda r: Or(s.rm_state[r] == "committed",
                                                                   s.rm_state[r] == "aborted")))


class TwoPhaseCommitEager(TwoPhaseCommit):
    """Seeded bug: a prepared RM commits when its timer fires instead of waiting for the TM.

    Processes 1..rm (the RMs) are interchangeable; process 0 (the TM) is fixed."""

    @on_timeout
    def timeout(p, timer):
        if p.id == TM:
            TwoPhaseCommit.tm_abort(p, p.tm_state == "init")
        else:
            p.rm_state = If(p.rm_state == "working", "aborted", If(p.rm_state == "prepared", "committed", p.rm_state))
