"""A spec with an action whose guard can never hold: coverage must flag it."""

from lockstep.specs.lang import Int, Spec, Var, action, invariant, require, witness


class Vacuous(Spec):
    """x counts up to 3; `overflow` waits for x == 5, which is never reached, so it checks nothing."""

    x = Var(Int(0, 5), init=0)

    @action
    def inc(s):
        require(s.x < 3)
        s.x = s.x + 1

    @action
    def reset(s):
        require(s.x == 3)
        s.x = 0

    @action
    def overflow(s):
        require(s.x == 5)
        s.x = 0

    @invariant
    def bounded(s):
        return s.x <= 3


class Witnessed(Vacuous):
    """Two witnesses: x == 3 is reachable, x == 5 is not."""

    @witness
    def reaches_three(s):
        return s.x == 3

    @witness
    def reaches_five(s):
        return s.x == 5


class Reachable(Vacuous):
    """A witness that is reachable."""

    @witness
    def reaches_three(s):
        return s.x == 3


class TwoReachable(Vacuous):
    """Two reachable witnesses, at depths 1 and 3."""

    @witness
    def reaches_one(s):
        return s.x == 1

    @witness
    def reaches_three(s):
        return s.x == 3
