"""Quantiles of the Beta and Student-t distributions, for `smc`'s confidence intervals, without scipy.

Both come from the regularized incomplete beta function I_x(a, b), evaluated by its continued fraction
(modified Lentz) on the side of the mean where it converges fast, and inverted by bisection, which
I_x's monotonicity makes exact to the last bit of a float. Student's t with ν degrees of freedom has,
for t > 0, P(T > t) = I_{ν/(ν+t²)}(ν/2, 1/2) / 2.
"""

from __future__ import annotations

import math

_EPS = 1e-16
_TINY = 1e-300
_TERMS = 100_000  # the fraction converges in O(√max(a, b)) terms


def _fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), for x below (a + 1) / (a + b + 2)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _TERMS):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + num / c
            c = c if abs(c) > _TINY else _TINY
            h *= c * d
        if abs(c * d - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"the incomplete beta function's continued fraction did not converge (a={a}, b={b}, x={x})")


def beta_cdf(x: float, a: float, b: float) -> float:
    """I_x(a, b): the probability that a Beta(a, b) variable is at most x."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _fraction(b, a, 1.0 - x) / b


def beta_quantile(q: float, a: float, b: float) -> float:
    """The least x with I_x(a, b) ≥ q (0 < q < 1), to the float next to it."""
    lo, hi = 0.0, 1.0
    while True:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            return hi
        if beta_cdf(mid, a, b) < q:
            lo = mid
        else:
            hi = mid


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` degrees of freedom (0 < p < 1)."""
    if p == 0.5:
        return 0.0
    x = beta_quantile(2.0 * min(p, 1.0 - p), df / 2.0, 0.5)
    t = math.sqrt(df * (1.0 - x) / x)
    return t if p > 0.5 else -t
