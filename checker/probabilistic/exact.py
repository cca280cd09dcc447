"""Exact rational hitting and holding times for small chains (sympy over the rationals).

The transition probabilities of a population protocol are rational (count products over
n(n−1), times the rule's own fractions), so expected times are rational too. These solve the
same systems as `analysis`, in exact arithmetic, for tests and for the smallest populations.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from .analysis import classify
from .dtmc import Chain, TooManyConfigurations

if TYPE_CHECKING:
    from sympy import Rational

EXACT_LIMIT = 3_000
"""Largest number of unknowns solved in exact arithmetic."""


def hitting_times(chain: Chain, target: np.ndarray) -> list[Rational | None]:
    from sympy import QQ, Rational  # imported when used: sympy takes about a second to import
    from sympy.polys.matrices import DomainMatrix

    """Expected interactions until `target`, per configuration, as exact rationals (None: infinite)."""
    _, finite = classify(chain.P, target)
    todo = [int(i) for i in np.flatnonzero(finite & ~target)]
    if len(todo) > EXACT_LIMIT:
        raise TooManyConfigurations(f"{len(todo):,} unknowns: exact arithmetic is limited to {EXACT_LIMIT:,}; "
                                    "drop --exact or use a smaller n")
    out: list[Rational | None] = [None] * chain.size
    for i in np.flatnonzero(target):
        out[int(i)] = Rational(0)
    if not todo:
        return out
    pos = {c: k for k, c in enumerate(todo)}
    rows: dict[int, dict[int, object]] = {}
    protocol = chain.protocol
    for k, i in enumerate(todo):
        row: dict[int, Fraction] = {k: Fraction(1)}
        for p, _label, succ in protocol.weighted_successors(chain.config(i)):
            j = pos.get(chain.index_of(succ))
            if j is not None:  # successors inside the target contribute 0
                row[j] = row.get(j, Fraction(0)) - p
        stay = 1 - sum(p for p, _, _ in protocol.weighted_successors(chain.config(i)))
        row[k] -= stay
        rows[k] = {j: QQ(v.numerator, v.denominator) for j, v in row.items() if v}
    A = DomainMatrix(rows, (len(todo), len(todo)), QQ)
    b = DomainMatrix({k: {0: QQ(1)} for k in range(len(todo))}, (len(todo), 1), QQ)
    x = A.lu_solve(b).to_Matrix()
    for k, i in enumerate(todo):
        out[i] = x[k]
    return out


def holding_times(chain: Chain, inside: np.ndarray) -> list[Rational | None]:
    """Expected interactions until the chain leaves `inside`, as exact rationals (None: infinite)."""
    return hitting_times(chain, ~inside)
