"""Two-phase commit, as in the TLA+ Examples `TwoPhase` spec (Lamport; after Gray).

Source: github.com/tlaplus/Examples, specifications/transaction_commit/TwoPhase.tla.
A transaction manager (TM) and resource managers (RMs) exchange Prepared, Commit and Abort
messages; messages are never lost or removed, so `msgs` only grows. TLC, RM = 3: 288
distinct states, 1146 generated, depth 11, and `TPConsistent` holds.

Deviations: none in behaviour. Names follow Python style (`rm_state` for `rmState`); the
type invariant `TPTypeOK` is implied by the field types and checked on every assignment.

Additions: `TPConsistent` is an invariant but not an inductive one. The invariants after it
strengthen it into one (`lockstep prove two_phase --invariant consistent --with ...`, and
`proofs/two_phase.py`); they are not in the TLA+ spec, and they hold in every reachable
state, so checking them changes no count. Every action is weakly fair (per RM), and the temporal
property `every_rm_decides` (◇ every RM committed or aborted) holds under that fairness
(`lockstep check two_phase --property every_rm_decides --no-deadlock`; `bench/liveness.py` checks it
against SPIN's `pan -a -f` on bench/promela/two_phase_live.pml); the TLA+ spec states no fairness.
"""

from ..lang import (
    And,
    Enum,
    ForAll,
    Implies,
    Map,
    Not,
    Or,
    Range,
    Record,
    Set,
    Spec,
    Union,
    Var,
    action,
    eventually,
    invariant,
    require,
    temporal,
)

RM = Range("rm", default=3, symmetric=True)

Prepared = Record("Prepared", rm=RM)
Commit = Record("Commit")
Abort = Record("Abort")
Message = Union(Prepared, Commit, Abort)


class TwoPhase(Spec):
    """Two-phase commit (TLA+ Examples TwoPhase)."""

    rm_state = Map(RM, Enum("working", "prepared", "committed", "aborted"), init="working")
    tm_state = Var(Enum("init", "committed", "aborted"), init="init")
    tm_prepared = Set(RM)
    msgs = Set(Message)

    @action(fairness="weak")
    def tm_rcv_prepared(s, r: RM):
        require(s.tm_state == "init", s.msgs.contains(Prepared(r)))
        s.tm_prepared = s.tm_prepared.add(r)

    @action(fairness="weak")
    def tm_commit(s):
        require(s.tm_state == "init", ForAll(RM, lambda r: s.tm_prepared.contains(r)))
        s.tm_state = "committed"
        s.msgs = s.msgs.add(Commit())

    @action(fairness="weak")
    def tm_abort(s):
        require(s.tm_state == "init")
        s.tm_state = "aborted"
        s.msgs = s.msgs.add(Abort())

    @action(fairness="weak")
    def rm_prepare(s, r: RM):
        require(s.rm_state[r] == "working")
        s.rm_state[r] = "prepared"
        s.msgs = s.msgs.add(Prepared(r))

    @action(fairness="weak")
    def rm_choose_to_abort(s, r: RM):
        require(s.rm_state[r] == "working")
        s.rm_state[r] = "aborted"

    @action(fairness="weak")
    def rm_rcv_commit_msg(s, r: RM):
        require(s.msgs.contains(Commit()))
        s.rm_state[r] = "committed"

    @action(fairness="weak")
    def rm_rcv_abort_msg(s, r: RM):
        require(s.msgs.contains(Abort()))
        s.rm_state[r] = "aborted"

    @temporal
    def every_rm_decides(s):
        """Under weak fairness of every action, each RM ends committed or aborted."""
        return eventually(ForAll(RM, lambda r: Or(s.rm_state[r] == "committed", s.rm_state[r] == "aborted")))

    @invariant
    def consistent(s):
        """TPConsistent: no RM has committed while another has aborted."""
        return ForAll(RM, RM, lambda r1, r2: Not(And(s.rm_state[r1] == "aborted", s.rm_state[r2] == "committed")))

    # -- strengthening: with these, `consistent` is inductive ------------------------------------

    @invariant
    def commit_msg_means_tm_committed(s):
        """A Commit message is sent only by a TM that has committed."""
        return Implies(s.msgs.contains(Commit()), s.tm_state == "committed")

    @invariant
    def abort_msg_means_tm_aborted(s):
        """An Abort message is sent only by a TM that has aborted."""
        return Implies(s.msgs.contains(Abort()), s.tm_state == "aborted")

    @invariant
    def committed_rm_saw_commit(s):
        """An RM commits only on a Commit message."""
        return ForAll(RM, lambda r: Implies(s.rm_state[r] == "committed", s.msgs.contains(Commit())))

    @invariant
    def commit_msg_means_all_prepared(s):
        """Once the TM commits, every RM is prepared or committed."""
        return Implies(s.msgs.contains(Commit()),
                       ForAll(RM, lambda r: Or(s.rm_state[r] == "prepared", s.rm_state[r] == "committed")))

    @invariant
    def tm_prepared_were_sent(s):
        """The TM records an RM as prepared only on its Prepared message."""
        return ForAll(RM, lambda r: Implies(s.tm_prepared.contains(r), s.msgs.contains(Prepared(r))))

    @invariant
    def prepared_rm_aborts_only_on_abort_msg(s):
        """An RM that sent Prepared has left `working`, and has aborted only on an Abort message."""
        return ForAll(RM, lambda r: Implies(s.msgs.contains(Prepared(r)),
                                            And(s.rm_state[r] != "working",
                                                Implies(s.rm_state[r] == "aborted", s.msgs.contains(Abort())))))
