"""Specs whose own code fails while they are checked: a typo (NameError) and a wrong call (TypeError),
each reached only after a few steps. These are spec errors (exit 5), not violations."""

from lockstep.specs.lang import Int, Spec, Var, action, require

LIMITS = (1, 2)


class Typo(Spec):
    """`reset` names a variable that does not exist; it is enabled once x reaches 3."""

    x = Var(Int(0, 3), init=0)

    @action
    def inc(s):
        require(s.x < 3)
        s.x = s.x + 1

    @action
    def reset(s):
        require(s.x == 3)
        s.x = zer0  # noqa: F821 - the typo under test


class WrongCall(Spec):
    """`clip` calls a tuple; it is enabled once x reaches 2."""

    x = Var(Int(0, 2), init=0)

    @action
    def inc(s):
        require(s.x < 2)
        s.x = s.x + 1

    @action
    def clip(s):
        require(s.x == 2)
        s.x = LIMITS(0)
