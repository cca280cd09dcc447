"""Statistical model checking: estimates of probabilities and means with stated confidence.

- `clopper_pearson`: the exact binomial confidence interval for a success probability;
- `hoeffding_runs`: how many runs make the empirical frequency ε-close with confidence 1−δ
  (Chernoff–Hoeffding: N ≥ ln(2/δ) / (2ε²));
- `sprt`: Wald's sequential probability ratio test of "p ≥ θ" against "p < θ" with an
  indifference region, stopping as soon as the evidence suffices;
- `mean_interval`: Student-t confidence interval for a mean (e.g. a hitting time).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .quantiles import beta_quantile, t_quantile


def clopper_pearson(successes: int, runs: int, confidence: float) -> tuple[float, float]:
    """Two-sided exact interval for the success probability at the given confidence."""
    alpha = 1.0 - confidence
    lo = 0.0 if successes == 0 else beta_quantile(alpha / 2, successes, runs - successes + 1)
    hi = 1.0 if successes == runs else beta_quantile(1 - alpha / 2, successes + 1, runs - successes)
    return lo, hi


def lower_bound(successes: int, runs: int, confidence: float) -> float:
    """One-sided exact lower confidence bound for the success probability."""
    if successes == 0:
        return 0.0
    return beta_quantile(1.0 - confidence, successes, runs - successes + 1)


def hoeffding_runs(epsilon: float, delta: float) -> int:
    """Runs after which the empirical frequency is within ε of p with probability ≥ 1 − δ."""
    return math.ceil(math.log(2.0 / delta) / (2.0 * epsilon**2))


@dataclass
class SprtResult:
    """Outcome of a sequential test of p ≥ θ."""

    holds: bool | None  # None: undecided when the run budget was spent
    runs: int
    successes: int


def sprt(trial: Callable[[], bool], theta: float, indifference: float, alpha: float, beta: float,
         max_runs: int) -> SprtResult:
    """Wald's SPRT of H0: p ≥ θ + δ against H1: p ≤ θ − δ (δ the indifference half-width); α bounds
    the probability of rejecting a true H0, β of accepting a false one."""
    p0, p1 = min(theta + indifference, 1.0 - 1e-12), max(theta - indifference, 1e-12)
    accept_h1, accept_h0 = math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))
    llr, k = 0.0, 0
    for runs in range(1, max_runs + 1):
        ok = bool(trial())
        k += ok
        llr += math.log(p1 / p0) if ok else math.log((1 - p1) / (1 - p0))
        if llr >= accept_h1:
            return SprtResult(False, runs, k)
        if llr <= accept_h0:
            return SprtResult(True, runs, k)
    return SprtResult(None, max_runs, k)


def mean_interval(samples: list[float] | np.ndarray, confidence: float) -> tuple[float, float]:
    """(mean, half-width) of a Student-t confidence interval for the mean."""
    x = np.asarray(samples, dtype=float)
    if len(x) < 2:
        return float(x.mean()) if len(x) else math.nan, math.inf
    half = t_quantile(0.5 + confidence / 2, len(x) - 1) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return float(x.mean()), half
