"""Peterson's mutual exclusion algorithm for two processes (Peterson 1981).

Each process announces interest (`flag[p] := TRUE`), yields priority (`turn := other`), and
waits until the other is not interested or it is its turn. Mutual exclusion holds. The
seeded bug `PetersonSwapped` yields the turn *before* raising its flag, which lets both
processes into the critical section; the checker finds the shortest such run.

Deviations: none; each assignment and the wait's test are single atomic steps, as in the
usual TLA+ and Promela models.
"""

from ..lang import And, Bool, Enum, ForAll, Implies, Map, Not, Or, Range, Spec, Var, action, invariant, require

Proc = Range(2, symmetric=True)
PC = Enum("idle", "set_flag", "set_turn", "wait", "cs", "exit")


class Peterson(Spec):
    """Peterson's algorithm for two processes: mutual exclusion holds."""

    pc = Map(Proc, PC, init="idle")
    flag = Map(Proc, Bool, init=False)
    turn = Var(Proc, init=0)

    @action
    def request(s, p: Proc):
        require(s.pc[p] == "idle")
        s.pc[p] = "set_flag"

    @action
    def set_flag(s, p: Proc):
        require(s.pc[p] == "set_flag")
        s.flag[p] = True
        s.pc[p] = "set_turn"

    @action
    def set_turn(s, p: Proc):
        require(s.pc[p] == "set_turn")
        s.turn = 1 - p
        s.pc[p] = "wait"

    @action
    def enter(s, p: Proc):
        require(s.pc[p] == "wait", Or(Not(s.flag[1 - p]), s.turn == p))
        s.pc[p] = "cs"

    @action
    def leave(s, p: Proc):
        require(s.pc[p] == "cs")
        s.pc[p] = "exit"

    @action
    def reset_flag(s, p: Proc):
        require(s.pc[p] == "exit")
        s.flag[p] = False
        s.pc[p] = "idle"

    @invariant
    def mutual_exclusion(s):
        return ForAll(Proc, Proc, lambda p, q: Implies(p != q, Not(And(s.pc[p] == "cs", s.pc[q] == "cs"))))


class PetersonSwapped(Peterson):
    """Seeded bug: Peterson with the flag and turn writes swapped (mutual exclusion fails)."""

    @action
    def request(s, p: Proc):
        require(s.pc[p] == "idle")
        s.pc[p] = "set_turn"

    @action
    def set_turn(s, p: Proc):
        require(s.pc[p] == "set_turn")
        s.turn = 1 - p
        s.pc[p] = "set_flag"

    @action
    def set_flag(s, p: Proc):
        require(s.pc[p] == "set_flag")
        s.flag[p] = True
        s.pc[p] = "wait"
