"""A lock shared by interchangeable processes, each action fair as one family, for the tests of liveness under
symmetry reduction.

Each process requests (idle -> waiting), acquires the lock when it is free (waiting -> cs) and releases it
(cs -> idle). Requests, acquisitions and releases are each one weakly fair family (WF(∃ p: request(p)), ...),
so every permutation of the processes keeps the fairness. `lock_used` (□◇ locked) holds; without fair
acquisition the waiting processes may stutter for ever. `all_idle_again` (□◇ every process idle) is violated by
a fair loop in which a process keeps waiting while the others take the lock in turn. `first_served` singles out
process 0, so it cannot be checked on one state of each orbit. `SymmetricLockOneWaiter` adds an invariant that two
requests violate, `SymmetricLockAsserting` an assertion that the third request fails; `TokenPassing` passes a
token whose holder is one representative.
"""

from lockstep.specs.lang import (
    Assert,
    Bool,
    Count,
    Enum,
    Exists,
    ForAll,
    Map,
    Range,
    Spec,
    Var,
    action,
    always_eventually,
    eventually,
    invariant,
    leads_to,
    require,
    temporal,
)

Proc = Range("n", default=3, symmetric=True)
PC = Enum("idle", "waiting", "cs")


class SymmetricLock(Spec):
    """The lock, its actions fair as families."""

    pc = Map(Proc, PC, init="idle")
    locked = Var(Bool, init=False)

    @action(fairness="weak", family="requests")
    def request(s, p: Proc):
        require(s.pc[p] == "idle")
        s.pc[p] = "waiting"

    @action(fairness="weak", family="acquisitions")
    def acquire(s, p: Proc):
        require(s.pc[p] == "waiting", s.locked == False)  # noqa: E712 - a term, not a Python bool
        s.pc[p] = "cs"
        s.locked = True

    @action(fairness="weak", family="releases")
    def release(s, p: Proc):
        require(s.pc[p] == "cs")
        s.pc[p] = "idle"
        s.locked = False

    @invariant
    def mutual_exclusion(s):
        return Count(Proc, lambda p: s.pc[p] == "cs") <= 1

    @temporal
    def lock_used(s):
        return always_eventually(s.locked)

    @temporal
    def someone_waiting_gets_the_lock(s):
        return leads_to(Exists(Proc, lambda p: s.pc[p] == "waiting"), s.locked)

    @temporal
    def all_idle_again(s):
        return always_eventually(ForAll(Proc, lambda p: s.pc[p] == "idle"))

    @temporal
    def first_served(s):
        return leads_to(s.pc[0] == "waiting", s.pc[0] == "cs")


class SymmetricLockOneWaiter(SymmetricLock):
    """Seeded bug: claims that at most one process waits, which two requests refute."""

    @invariant
    def one_waiter(s):
        return Count(Proc, lambda p: s.pc[p] == "waiting") <= 1


class SymmetricLockAsserting(SymmetricLock):
    """Seeded bug: a request asserts that fewer than two processes wait, which the third request refutes."""

    @action(fairness="weak", family="requests")
    def request(s, p: Proc):
        require(s.pc[p] == "idle")
        Assert(Count(Proc, lambda q: s.pc[q] == "waiting") < 2, "at most two processes wait")
        s.pc[p] = "waiting"


class TokenPassing(Spec):
    """A token passed from process to process, each pass fair as one family; `finishes` needs the fair family
    `finishing`. Under symmetry every holder is one representative, and passing the token is a step onto it."""

    holder = Var(Proc, init=0)
    done = Var(Bool, init=False)

    @action(fairness="weak", family="passes")
    def pass_token(s, p: Proc, q: Proc):
        require(s.holder == p, p != q)
        s.holder = q

    @action(fairness="weak", family="finishing")
    def finish(s, p: Proc):
        require(s.holder == p, s.done == False)  # noqa: E712 - a term, not a Python bool
        s.done = True

    @temporal
    def finishes(s):
        return eventually(s.done)
