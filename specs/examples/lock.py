"""A lock shared by N processes: liveness under weak and strong fairness.

Fairness as defined in Lamport, *Specifying Systems* (2002), ch. 8: WF(A) forbids A to stay
enabled for ever without being taken, SF(A) forbids A to be enabled infinitely often without
being taken.

Each process cycles: `request` (idle -> waiting), `acquire` (waiting -> cs, when the lock is
free), `release` (cs -> idle). Mutual exclusion holds whatever the scheduling. Whether a
waiting process eventually enters is a question of fairness, as in Lamport's discussion of
weak and strong fairness: `acquire(p)` is enabled only while the lock is free, so a process
can wait for ever while the others keep taking the lock — unless acquiring is *strongly* fair.

- `Lock`: `acquire` strongly fair per process, the other actions weakly fair; `no_starvation`
  (waiting ↝ cs) holds.
- `LockWeak`: the seeded bug, `acquire` only weakly fair; a process starves while another
  loops through request, acquire, release (the checker's lasso shows it).

Deviations: the book gives the definitions, not this spec; the spec is Lockstep's own minimal
example of the difference between them (a test-and-set lock with no queue).
"""

from ..lang import (
    Bool,
    Count,
    Enum,
    Map,
    Range,
    Spec,
    Var,
    action,
    always_eventually,
    invariant,
    leads_to,
    require,
    temporal,
)

Proc = Range("n", default=2)
PC = Enum("idle", "waiting", "cs")


class Lock(Spec):
    """A lock with strongly fair acquisition: no process starves."""

    pc = Map(Proc, PC, init="idle")
    locked = Var(Bool, init=False)

    @action(fairness="weak")
    def request(s, p: Proc):
        require(s.pc[p] == "idle")
        s.pc[p] = "waiting"

    @action(fairness="strong")
    def acquire(s, p: Proc):
        require(s.pc[p] == "waiting", s.locked == False)  # noqa: E712 - a term, not a Python bool
        s.pc[p] = "cs"
        s.locked = True

    @action(fairness="weak")
    def release(s, p: Proc):
        require(s.pc[p] == "cs")
        s.pc[p] = "idle"
        s.locked = False

    @invariant
    def mutual_exclusion(s):
        return Count(Proc, lambda p: s.pc[p] == "cs") <= 1

    @temporal
    def no_starvation(s):
        return leads_to(s.pc[0] == "waiting", s.pc[0] == "cs")

    @temporal
    def lock_used_infinitely_often(s):
        return always_eventually(s.locked)


class LockWeak(Lock):
    """Seeded bug: acquisition only weakly fair, so a waiting process can starve."""

    @action(fairness="weak")
    def acquire(s, p: Proc):
        require(s.pc[p] == "waiting", s.locked == False)  # noqa: E712 - a term, not a Python bool
        s.pc[p] = "cs"
        s.locked = True
