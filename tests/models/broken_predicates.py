"""Specs whose invariant or constraint raises when it is built, whatever the state."""

from lockstep.specs.lang import Int, Spec, Var, action, constraint, invariant, require

TABLE = [0, 1]


class BrokenInvariant(Spec):
    """The invariant indexes past the end of a Python list."""

    x = Var(Int(0, 3), init=0)

    @invariant
    def broken(s):
        return s.x == TABLE[5]

    @action
    def inc(s):
        require(s.x < 3)
        s.x = s.x + 1


class BrokenConstraint(Spec):
    """The constraint indexes past the end of a Python list."""

    x = Var(Int(0, 3), init=0)

    @constraint
    def broken(s):
        return s.x < TABLE[5]

    @action
    def inc(s):
        require(s.x < 3)
        s.x = s.x + 1
