"""Simulators of population protocols, exact in distribution: batched, or on an array of agents.

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
given number of interactions truncates the collision-free part, which keeps it exact. While the
agents fit in memory, the sequential scheduler on an array of agents (`agents`, compiled) is
faster still, and `Simulator` uses it unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lockstep.specs.lang.population import Population

AGENT_LIMIT = 1 << 24  # agents held as an int32 array (64 MiB); beyond, the batched simulator runs


class Simulator:
    """Simulates one run of a protocol from a configuration; `t` counts interactions.

    `method` "agents" runs the sequential scheduler on an array of agents (`agents`, compiled:
    fastest while the agents fit in memory); "batched" runs the batches described above on the
    configuration alone (any n; `max_batch` caps a batch's collision-free interactions, and 1
    makes it the sequential scheduler); "auto" (the default) picks agents up to `AGENT_LIMIT`
    agents unless `max_batch` or `track` is given. Both are exact in distribution.
    `track` (batched only) keeps in `touched` the states held at some moment of the last batch.
    """

    def __init__(self, protocol: Population, config: Any, seed: int | None = None, max_batch: int | None = None,
                 method: str = "auto", track: bool = False):
        if method not in ("auto", "agents", "batched"):
            raise ValueError(f"method {method!r}: use auto, agents or batched")
        if track and method == "agents":
            raise ValueError("track needs the batched simulator: use method auto or batched")
        self.protocol = protocol
        self.n = protocol.n
        self.Q = protocol.Q
        self.rng = np.random.default_rng(seed)
        self.max_batch = max_batch
        self.track = track
        self.touched: np.ndarray | None = None  # with `track`: the states held at some moment of the last batch
        if method == "auto":
            method = "agents" if max_batch is None and not track and self.n <= AGENT_LIMIT else "batched"
        self.method = method
        self._tables()
        self._run_lengths()
        self._pending: np.ndarray = np.empty(0, dtype=np.int64)
        if method == "agents":
            from . import agents  # numba compiles it: imported only by simulations that use it

            self._kernel = agents
            self._state = agents.seed_state(self.rng)
        self.reset(config)

    def reset(self, config: Any, t: int = 0) -> None:
        """Start again from the configuration `config` (a count tuple, a dict, or a start's name)."""
        self.counts = np.array(self.protocol.configuration(config), dtype=np.int64)
        self.t = t
        if self.method == "agents":
            self._agents = self._kernel.spread(self.counts, self.rng)

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
        self._out_a32 = self.out_a.astype(np.int32)
        self._out_b32 = self.out_b.astype(np.int32)

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
        """Run at most `limit` interactions (one batch; with agents, exactly `limit`); returns how many ran."""
        if self.method == "agents":
            self._kernel.interact(self._agents, self.counts, self._out_a32, self._out_b32, self.cum, limit, self._state)
            self.t += limit
            return limit
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
        not hold within `limit` more. With agents the test runs every `every` interactions, so the time
        is exact with `every=1` and late by less than `every` otherwise; batched, it runs after the batch
        that ends at or past each multiple of `every`, so it is exact with `max_batch=1, every=1` and
        otherwise late by less than one batch (about 0.63·√n interactions) plus `every`."""
        begin = self.t
        end, check = begin + limit, begin
        if test(self.config()):
            return 0
        while self.t < end:
            if self.method == "agents":
                self.batch(min(every, end - self.t))
            else:
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
                to = p.index[p.with_input(p.states[i], new)]
                self.counts[i] -= m
                self.counts[to] += m
                if self.method == "agents":
                    holders = np.flatnonzero(self._agents == i)
                    self._agents[self.rng.choice(holders, size=int(m), replace=False)] = to
        return k

    def fractions(self, of: Callable[[Any], Any]) -> dict[Any, float]:
        """Fraction of agents per value of `of(state)` (an output or an input)."""
        out: dict[Any, float] = {}
        for q, c in zip(self.protocol.states, self.counts.tolist()):
            if c:
                key = of(q)
                out[key] = out.get(key, 0.0) + c / self.n
        return out
