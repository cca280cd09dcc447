"""Byzantine quorum intersection: with n = 3f + 1 processes, two quorums of 2f + 1 share f + 1.

This is the arithmetic behind BFT protocols' safety: any two quorums then share at least one
correct process (f + 1 > f faulty). It is proved for every f >= 1 by linear integer arithmetic
over cardinalities — two subsets of an n-set split it into four regions (only in the first,
only in the second, in both, in neither) whose sizes are non-negative integers summing to n,
so if no such sizes exist, no such sets exist — and checked again for f <= 4 with explicit sets
(one Boolean per process and quorum). Quorums of 2f are too small: the same checks refute that
variant and show a counterexample.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import z3

from .facts import PROVED, REFUTED, UNKNOWN, Fact, Outcome, main

EXPLICIT_F = (1, 2, 3, 4)


def for_all_f(quorum: Callable[[z3.ArithRef], z3.ArithRef]) -> Outcome:
    """For every f >= 1, any two quorums of `quorum(f)` processes out of 3f + 1 share at least f + 1."""
    f, only1, only2, both, neither = z3.Ints("f only_first only_second both neither")
    q = quorum(f)
    s = z3.Solver()
    s.add(f >= 1, only1 >= 0, only2 >= 0, both >= 0, neither >= 0)
    s.add(only1 + only2 + both + neither == 3 * f + 1, only1 + both == q, only2 + both == q)
    s.add(both < f + 1)  # the negation of the claim
    return _decide(s, lambda m: f"f={m[f]}, n={m.eval(3 * f + 1)}, quorums of {m.eval(q)} sharing {m[both]}")


def explicit(f: int, size: int) -> Outcome:
    """Any two sets of `size` processes out of 3f + 1 share at least f + 1 (one Bool per process)."""
    n = 3 * f + 1
    q1 = [z3.Bool(f"q1_{p}") for p in range(n)]
    q2 = [z3.Bool(f"q2_{p}") for p in range(n)]
    s = z3.Solver()
    s.add(z3.PbEq([(x, 1) for x in q1], size), z3.PbEq([(x, 1) for x in q2], size))
    s.add(z3.AtMost(*(z3.And(a, b) for a, b in zip(q1, q2)), f))  # the negation: at most f in common
    members = lambda m, q: "{" + ", ".join(str(p) for p in range(n) if z3.is_true(m.eval(q[p]))) + "}"  # noqa: E731
    return _decide(s, lambda m: f"n={n}: Q1={members(m, q1)}, Q2={members(m, q2)}")


def _decide(s: z3.Solver, show: Callable[[z3.ModelRef], str]) -> Outcome:
    r = s.check()
    if r == z3.unsat:
        return Outcome(PROVED)
    if r == z3.sat:
        return Outcome(REFUTED, "counterexample " + show(s.model()))
    return Outcome(UNKNOWN, s.reason_unknown())


FACTS = [
    Fact("for all f >= 1, n = 3f+1: two quorums of 2f+1 share at least f+1 (cardinalities, LIA)", PROVED,
         lambda: for_all_f(lambda f: 2 * f + 1)),
    *(Fact(f"f = {f}, n = {3 * f + 1}: two quorums of {2 * f + 1} share at least {f + 1} (explicit sets)", PROVED,
           lambda f=f: explicit(f, 2 * f + 1)) for f in EXPLICIT_F),
    Fact("for all f >= 1, n = 3f+1: two quorums of 2f share at least f+1 (cardinalities, LIA)", REFUTED,
         lambda: for_all_f(lambda f: 2 * f)),
    *(Fact(f"f = {f}, n = {3 * f + 1}: two quorums of {2 * f} share at least {f + 1} (explicit sets)", REFUTED,
           lambda f=f: explicit(f, 2 * f)) for f in EXPLICIT_F),
]


if __name__ == "__main__":
    sys.exit(main(FACTS))
