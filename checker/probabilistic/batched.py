"""A batched simulator of population protocols, exact in distribution.

The sequential model picks, per interaction, a uniformly random ordered pair of distinct agents.
Following the batching of Berenbrink, Hammer, Kaaser, Meyer, Penschuck and Tran ("Simulating
population protocols in sub-constant time per interaction", ESA 2020), the simulator works on
the configuration (count vector) and splits the run into batches:

1. The number ℓ of interactions before the first one that meets an agent already used in the
   batch has a known law, P(ℓ ≥ k) = Π_{i<k} (n−2i)(n−2i−1) / (n(n−1)); it is sampled by
   inversion. Those ℓ interactions involve 2ℓ distinct agents, whose states are a uniform sample
   without replacement (a multivariate hypergeometric draw), randomly split into ℓ ordered
   pairs; disjoint interactions commute, so they are applied at once with table look-ups.
2. The (ℓ+1)-th interaction is drawn conditioned on meeting a used agent (used–fresh, fresh–used
   or used–used, with the right weights) and applied on its own.

Each batch costs O(ℓ + Q) numpy work for ℓ ≈ 0.63·√n interactions. A run that must stop after a
given number of interactions truncates the collision-free part, which keeps it exact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lockstep.specs.lang.population import Population


class Simulator:
    """Simulates one run of a protocol from a configuration; `t` counts interactions."""

    def __init__(self, protocol: Population, config: Any, seed: int | None = None, max_batch: int | None = None,
                 track: bool = False):
        self.protocol = protocol
        self.n = protocol.n
        self.Q = protocol.Q
        self.rng = np.random.default_rng(seed)
        self.counts = np.array(protocol.configuration(config), dtype=np.int64)
        self.t = 0
        self.max_batch = max_batch
        self.track = track
        self.touched: np.ndarray | None = None  # with `track`: the states held at some moment of the last batch
        self._tables()
        self._run_lengths()
        self._pending: np.ndarray = np.empty(0, dtype=np.int64)

    # -- set-up -------------------------------------------------------------------------------
    def _tables(self) -> None:
        outs = self.protocol.outcomes
        J = max(len(o) for o in outs)
        K = self.Q * self.Q
        self.J = J
        self.out_a = np.zeros((K, J), dtype=np.int64)
        self.out_b = np.zeros((K, J), dtype=np.int64)
        self.cum = np.ones((K, J), dtype=np.float64)
        for k, o in enumerate(outs):
            acc = 0.0
            for j in range(J):
                a2, b2, p = o[min(j, len(o) - 1)]
                self.out_a[k, j], self.out_b[k, j] = a2, b2
                if j < len(o):
                    acc += float(p)
                self.cum[k, j] = acc if j < len(o) - 1 else 2.0  # the last outcome takes the rest
        self.flat_a = self.out_a[:, 0].copy()
        self.flat_b = self.out_b[:, 0].copy()

    def _run_lengths(self) -> None:
        n = self.n
        i = np.arange(0, n // 2 + 1, dtype=np.float64)
        factors = (n - 2 * i) * (n - 2 * i - 1) / (n * (n - 1.0))
        surv = np.cumprod(np.clip(factors, 0.0, 1.0))  # surv[k-1] = P(ℓ >= k)
        cut = np.searchsorted(-surv, -1e-300, side="left") + 1
        self._neg_surv = -surv[:cut]

    def _next_run_length(self) -> int:
        if not len(self._pending):
            self._pending = np.searchsorted(self._neg_surv, -self.rng.random(4096), side="left")
        ell, self._pending = int(self._pending[0]), self._pending[1:]
        return ell

    # -- interactions -----------------------------------------------------------------------------
    def _apply(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = u * self.Q + v
        if self.J == 1:
            return self.flat_a[k], self.flat_b[k]
        r = self.rng.random(len(k))
        j = (r[:, None] >= self.cum[k]).sum(axis=1)
        return self.out_a[k, j], self.out_b[k, j]

    def _one(self, u: int, v: int) -> tuple[int, int]:
        """The outcome of one interaction of states u and v."""
        k = u * self.Q + v
        if self.J == 1:
            return int(self.flat_a[k]), int(self.flat_b[k])
        j = int(np.searchsorted(self.cum[k], self.rng.random(), side="right"))
        return int(self.out_a[k, j]), int(self.out_b[k, j])

    def batch(self, limit: int) -> int:
        """Run at most `limit` interactions (one batch); returns how many ran."""
        ell = self._next_run_length()
        if self.max_batch is not None and ell >= self.max_batch:
            ell, collide = self.max_batch, False
        else:
            collide = True
        if ell >= limit:
            ell, collide = limit, False
        n, t = self.n, 2 * ell
        # 2ℓ agents for the collision-free interactions, and one more fresh agent the collision may meet
        extra = 1 if collide and t < n else 0
        occupied = np.flatnonzero(self.counts)  # configurations are often sparse: sample only held states
        drawn = self.rng.multivariate_hypergeometric(self.counts[occupied], t + extra, method="marginals")
        agents = np.repeat(occupied, drawn)
        self.rng.shuffle(agents)
        a2, b2 = self._apply(agents[:ell], agents[ell:t])
        counts = self.counts.copy()
        counts[occupied] -= drawn
        counts += np.bincount(a2, minlength=self.Q)
        counts += np.bincount(b2, minlength=self.Q)
        if collide:
            fresh = int(agents[t]) if extra else -1
            if extra:
                counts[fresh] += 1
            r = self.rng.random() * (n * (n - 1) - (n - t) * (n - t - 1))
            i = int(self.rng.integers(t))  # a used agent: position i among the outputs
            used = int(a2[i] if i < ell else b2[i - ell])
            if r < t * (n - t):
                u, v = used, fresh
            elif r < 2 * t * (n - t):
                u, v = fresh, used
            else:
                j = int(self.rng.integers(t - 1))
                j += j >= i
                u, v = used, int(a2[j] if j < ell else b2[j - ell])
            x, y = self._one(u, v)
            counts[u] -= 1
            counts[v] -= 1
            counts[x] += 1
            counts[y] += 1
            ell += 1
        if self.track:
            touched = np.zeros(self.Q, dtype=bool)
            touched[occupied] = True
            touched[a2] = True
            touched[b2] = True
            if collide:
                touched[[x, y]] = True
            self.touched = touched
        self.counts = counts
        self.t += ell
        return ell

    def run(self, interactions: int, every: int | None = None,
            observe: Callable[[Simulator], None] | None = None) -> None:
        """Run `interactions` more interactions, calling `observe` every `every` interactions."""
        end = self.t + interactions
        step = every or interactions
        mark = self.t + step
        while self.t < end:
            self.batch(min(end, mark) - self.t)
            if self.t >= mark:
                if observe is not None:
                    observe(self)
                mark += step

    def run_until(self, test: Callable[[tuple[int, ...]], bool], limit: int, every: int = 1) -> int | None:
        """Run until `test(configuration)` holds; the number of interactions it took, or None if it did
        not hold within `limit` more. The test runs after the batch that ends at or past each multiple of
        `every` interactions, so the time is exact with `max_batch=1, every=1`, and otherwise late by
        less than one batch (about 0.63·√n interactions) plus `every`."""
        begin = self.t
        end, check = begin + limit, begin
        if test(self.config()):
            return 0
        while self.t < end:
            self.batch(end - self.t)
            if self.t >= check:
                if test(self.config()):
                    return self.t - begin
                check = self.t + every
        return None

    # -- configurations, inputs, outputs ------------------------------------------------------------
    def config(self) -> tuple[int, ...]:
        return tuple(self.counts.tolist())

    def change_inputs(self, old: Any, new: Any, k: int) -> int:
        """Give `k` uniformly chosen agents whose input is `old` the input `new` (fewer if fewer
        have it); returns how many changed."""
        p = self.protocol
        src = [i for i, q in enumerate(p.states) if p.input(q) == old]
        pool = self.counts[src]
        k = min(k, int(pool.sum()))
        if k <= 0:
            return 0
        moved = self.rng.multivariate_hypergeometric(pool, k, method="marginals")
        for i, m in zip(src, moved):
            if m:
                self.counts[i] -= m
                self.counts[p.index[p.with_input(p.states[i], new)]] += m
        return k

    def fractions(self, of: Callable[[Any], Any]) -> dict[Any, float]:
        """Fraction of agents per value of `of(state)` (an output or an input)."""
        out: dict[Any, float] = {}
        for q, c in zip(self.protocol.states, self.counts.tolist()):
            if c:
                key = of(q)
                out[key] = out.get(key, 0.0) + c / self.n
        return out
