"""The Die Hard jugs puzzle, as in the TLA+ Examples `DieHard` spec (Lamport).

Source: github.com/tlaplus/Examples, specifications/DieHard/DieHard.tla. With a 3-gallon and
a 5-gallon jug, measure exactly 4 gallons. The "invariant" `not_solved` (big ≠ 4) is
violated, and the shortest counterexample — 6 steps — is the puzzle's solution.

Deviations: none. The jug sizes are parameters (`small_cap`, `big_cap`), 3 and 5 by default.
"""

from ..lang import Int, Min, Param, Spec, Var, action, invariant

SMALL = Param("small_cap", default=3, lo=1)
BIG = Param("big_cap", default=5, lo=1)


class DieHard(Spec):
    """Die Hard jugs: reach 4 gallons in the big jug (a violation of not_solved)."""

    big = Var(Int(0, BIG), init=0)
    small = Var(Int(0, SMALL), init=0)

    @action
    def fill_small(s):
        s.small = SMALL

    @action
    def fill_big(s):
        s.big = BIG

    @action
    def empty_small(s):
        s.small = 0

    @action
    def empty_big(s):
        s.big = 0

    @action
    def small_to_big(s):
        poured = Min(s.small, BIG - s.big)
        s.big = s.big + poured
        s.small = s.small - poured

    @action
    def big_to_small(s):
        poured = Min(s.big, SMALL - s.small)
        s.small = s.small + poured
        s.big = s.big - poured

    @invariant
    def not_solved(s):
        return s.big != 4
