"""Small specs with known induction facts."""

from lockstep.specs.lang import If, Int, Spec, Var, action, invariant


class Hop(Spec):
    """x toggles between 0 and 1; from 2 it would jump to 3, but 2 is unreachable.

    `not_three` holds, is not inductive (2 satisfies it and steps to 3), and is 2-inductive:
    no state steps to 2, so no two distinct states satisfying it lead to 3. With `below_two` it
    is inductive; with `zero` the proof fails in its base case.
    """

    x = Var(Int(0, 3), init=0)

    @action
    def hop(s):
        s.x = If(s.x == 0, 1, If(s.x == 1, 0, 3))

    @invariant
    def not_three(s):
        return s.x != 3

    @invariant
    def below_two(s):
        return s.x < 2

    @invariant
    def zero(s):
        """False: the first hop reaches 1."""
        return s.x == 0
