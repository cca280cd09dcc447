"""Initial-state functions that return their condition instead of calling require(...)."""

from lockstep.specs.lang import ANY, And, Bool, Int, Not, Spec, Var, action, initial, invariant, require


class SumThree(Spec):
    """x and y are any values with x + y = 3, returned as a condition: exactly four initial states, which `swap`
    keeps (so the four are also every reachable state)."""

    x = Var(Int(0, 3), init=ANY)
    y = Var(Int(0, 3), init=ANY)

    @initial
    def start(s):
        return s.x + s.y == 3

    @action
    def swap(s):
        s.x, s.y = s.y, s.x

    @invariant
    def sums_to_three(s):
        return s.x + s.y == 3

    @invariant
    def not_two_one(s):
        """Violated by one of the initial states."""
        return Not(And(s.x == 2, s.y == 1))


class AssignedThenReturned(Spec):
    """The condition is read after the function's assignment, as a require(...) at that point would read it: y is
    set to 3 - x, and only x <= 1 is initial (two initial states)."""

    x = Var(Int(0, 3), init=ANY)
    y = Var(Int(0, 3), init=0)
    flag = Var(Bool, init=False)

    @initial
    def start(s):
        s.y = 3 - s.x
        return s.y >= 2

    @action
    def toggle(s):
        s.flag = Not(s.flag)

    @invariant
    def y_large(s):
        return s.y >= 2


class RequiredAndReturned(Spec):
    """A require(...) and a returned condition both hold in every initial state: x even and x > 0."""

    x = Var(Int(0, 5), init=ANY)

    @initial
    def start(s):
        require(s.x % 2 == 0)
        return s.x > 0

    @action
    def stay(s):
        s.x = s.x
