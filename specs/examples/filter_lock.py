"""The filter lock: Peterson's algorithm generalised to N processes (Peterson 1981).

A process climbs levels 1..N-1; at each level L it sets `level[p] := L`, then
`victim[L] := p`, then waits until no other process is at level L or higher, or it is no
longer the victim of L. At most N-L processes pass level L, so one reaches the critical
section at a time. The seeded bug `FilterLockSwapped` writes `victim` before `level`.

Model: one atomic step per assignment and one for the wait's test (over all other
processes), as in the Promela model in `bench/`. N = 5: 344,805 distinct states. Deviations:
none; `j` is the loop variable of the paper's `for` loop, reset to 0 in the critical section.
"""

from ..lang import And, Enum, ForAll, If, Implies, Int, Map, Not, Or, Param, Range, Spec, action, invariant, require

N = Param("n", default=3, lo=2)
Proc = Range(N)
Level = Int(0, N - 1)
PC = Enum("idle", "set_level", "set_victim", "wait", "cs")


class FilterLock(Spec):
    """Filter lock for N processes: mutual exclusion holds."""

    pc = Map(Proc, PC, init="idle")
    j = Map(Proc, Level, init=0)
    level = Map(Proc, Level, init=0)
    victim = Map(Level, Proc, init=0)

    @action
    def enter(s, p: Proc):
        require(s.pc[p] == "idle")
        s.j[p] = 1
        s.pc[p] = "set_level"

    @action
    def set_level(s, p: Proc):
        require(s.pc[p] == "set_level")
        s.level[p] = s.j[p]
        s.pc[p] = "set_victim"

    @action
    def set_victim(s, p: Proc):
        require(s.pc[p] == "set_victim")
        s.victim[s.j[p]] = p
        s.pc[p] = "wait"

    @action
    def advance(s, p: Proc):
        me = s.j[p]
        require(s.pc[p] == "wait",
                Or(ForAll(Proc, lambda k: Implies(k != p, s.level[k] < me)), s.victim[me] != p))
        top = me >= s.n - 1
        s.j[p] = If(top, 0, me + 1)
        s.pc[p] = If(top, "cs", "set_level")

    @action
    def leave(s, p: Proc):
        require(s.pc[p] == "cs")
        s.level[p] = 0
        s.pc[p] = "idle"

    @invariant
    def mutual_exclusion(s):
        return ForAll(Proc, Proc, lambda p, q: Implies(p != q, Not(And(s.pc[p] == "cs", s.pc[q] == "cs"))))


class FilterLockSwapped(FilterLock):
    """Seeded bug: the filter lock with the level and victim writes swapped."""

    @action
    def set_level(s, p: Proc):
        require(s.pc[p] == "set_level")
        s.victim[s.j[p]] = p
        s.pc[p] = "set_victim"

    @action
    def set_victim(s, p: Proc):
        require(s.pc[p] == "set_victim")
        s.level[p] = s.j[p]
        s.pc[p] = "wait"
