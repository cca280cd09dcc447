"""Simulators of population protocols, exact in distribution: on the configuration, or on an array of agents.

The sequential model picks, per interaction, a uniformly random ordered pair of distinct agents.
Both methods run exactly that, one interaction at a time, in a compiled kernel (`kernels`, C):

- `agents` keeps every agent's state in an array (one byte per agent up to 256 states).
- `batched` keeps only the configuration (count vector), in batches as in Berenbrink, Hammer,
  Kaaser, Meyer, Penschuck and Tran ("Simulating population protocols in sub-constant time per
  interaction", ESA 2020): a batch ends with the first interaction that meets an agent already
  used in it, so inside a batch every agent is in its state before or after it, and a batch holds
  about 0.63·√n interactions (at most `BATCH_CAP` + 1). At the start of a batch the agents are relabelled in state order
  (the scheduler picks a uniform pair whatever the labels, so this changes nothing), an agent not
  yet used in the batch has the state of its label's block, and the used ones are kept with their
  states in a hash table.

Both take 10 to 30 nanoseconds per interaction. The agent array is faster while it stays in the
cache (`FAST_AGENT_BYTES`), the configuration beyond, and `Simulator` picks accordingly.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from lockstep.specs.lang.population import Population

AGENT_LIMIT = 1 << 24  # the most agents held as an array when every interaction is observed (`simulate --sequential`)
FAST_AGENT_BYTES = 3 << 20  # up to this size the agent array is faster than batches (measured, docs/population.md)
BATCH_CAP = 1 << 11  # collision-free interactions per batch at most: its hash table (384 KiB) stays in the cache


def agent_dtype(Q: int) -> np.dtype:
    """The smallest integer type that holds Q agent states."""
    return np.dtype(np.uint8 if Q <= 1 << 8 else np.uint16 if Q <= 1 << 16 else np.int32)


def auto_method(n: int, Q: int, max_batch: int | None = None, track: bool = False) -> str:
    """The method `Simulator` picks: batches when asked for (`max_batch`, `track`) or once the agent
    array outgrows `FAST_AGENT_BYTES` (the cache), the agent array otherwise."""
    if max_batch is not None or track:
        return "batched"
    return "agents" if n * agent_dtype(Q).itemsize <= FAST_AGENT_BYTES else "batched"


_RULES: weakref.WeakKeyDictionary[Population, tuple[np.ndarray, np.ndarray, np.ndarray]] = weakref.WeakKeyDictionary()


def rule_table(protocol: Population) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernels' form of `protocol.outcomes`, built once per protocol: `out_a[k, j]`, `out_b[k, j]`
    (int32) are outcome j of the pair k = a·Q + b, and `cum[k, j]` the probability of outcomes 0..j
    (2.0 from the last outcome on, so that the last one takes the rest of the probability)."""
    got = _RULES.get(protocol)
    if got is None:
        outs = protocol.outcomes
        J = max(len(o) for o in outs)
        out_a = np.repeat(np.array([o[-1][0] for o in outs], dtype=np.int32)[:, None], J, axis=1)
        out_b = np.repeat(np.array([o[-1][1] for o in outs], dtype=np.int32)[:, None], J, axis=1)
        cum = np.full((len(outs), J), 2.0)
        for k, o in enumerate(outs):
            acc = 0.0
            for j, (a2, b2, p) in enumerate(o[:-1]):
                acc += float(p)
                out_a[k, j], out_b[k, j], cum[k, j] = a2, b2, acc
        got = _RULES[protocol] = (out_a, out_b, cum)
    return got


class Simulator:
    """Simulates one run of a protocol from a configuration; `t` counts interactions.

    `method` "agents" runs the sequential scheduler on an array of agents; "batched" runs it on the
    configuration alone, in the batches described above (any n; `max_batch` caps a batch's
    collision-free interactions, and 1 makes every interaction a batch; a batch also ends after
    `BATCH_CAP` of them, so that its hash table stays in the cache: at n ≤ 10⁶ a batch rarely gets
    that long, beyond it is cut more and more often); "auto" (the default) is
    `auto_method`. Both are exact in distribution, and a run is determined by its seed. `track`
    (batched only) keeps in `touched` the states held at some moment of the last batch.
    """

    def __init__(self, protocol: Population, config: Any, seed: int | None = None, max_batch: int | None = None,
                 method: str = "auto", track: bool = False):
        if method not in ("auto", "agents", "batched"):
            raise ValueError(f"method {method!r}: use auto, agents or batched")
        if track and method == "agents":
            raise ValueError("track needs the batched simulator: use method auto or batched")
        if max_batch is not None and max_batch < 1:
            raise ValueError(f"max_batch {max_batch}: a batch holds at least one interaction")
        from . import kernels  # imported (and its C kernels built or loaded) only by simulations

        self._kernels = kernels
        self._loops = kernels.load()
        self.protocol = protocol
        self.n = protocol.n
        self.Q = protocol.Q
        self.rng = np.random.default_rng(seed)
        self.max_batch = max_batch
        self.track = track
        self.touched: np.ndarray | None = None  # with `track`: the states held at some moment of the last batch
        self.method = auto_method(self.n, self.Q, max_batch, track) if method == "auto" else method
        if self.method == "agents" and self.n >= 1 << 32:
            raise ValueError(f"n = {self.n}: the agent array holds fewer than 2**32 agents; use method batched")
        self._out_a, self._out_b, self._cum = rule_table(protocol)
        self._state = kernels.seed_state(self.rng)
        if self.method == "batched":
            self._cap = min(max_batch or BATCH_CAP, BATCH_CAP)
            rows = 1 << (8 * self._cap - 1).bit_length()  # filled to a quarter at most: short probes
            self._table = np.zeros((rows, 3), dtype=np.int64)
            self._batch = 0
            self._touched = np.zeros(self.Q, dtype=np.bool_)
        self.reset(config)

    def reset(self, config: Any, t: int = 0) -> None:
        """Start again from the configuration `config` (a count tuple or a dict {state: count})."""
        self.counts = np.array(self.protocol.configuration(config), dtype=np.int64)
        self.t = t
        if self.method == "agents":
            self._agents = self._kernels.spread(self.counts, self.rng, agent_dtype(self.Q))

    # -- interactions -----------------------------------------------------------------------------
    def _batches(self, limit: int, until: int) -> int:
        """Batches until at least `until` interactions have run, the last one cut at `limit`."""
        ran, self._batch = self._loops.batches(self.counts, self.n, self._out_a, self._out_b, self._cum, limit, until,
                                               self._cap, self._state, self._table, self._batch, self._touched,
                                               self.track)
        if self.track:
            self.touched = self._touched.copy()
        self.t += ran
        return ran

    def _advance(self, steps: int) -> None:
        """Exactly `steps` more interactions."""
        if self.method == "agents":
            self._loops.interact(self._agents, self.counts, self._out_a, self._out_b, self._cum, steps, self._state)
            self.t += steps
        else:
            self._batches(steps, steps)

    def batch(self, limit: int) -> int:
        """Run at most `limit` interactions (one batch; with agents, exactly `limit`); returns how many ran."""
        if self.method == "agents":
            self._advance(limit)
            return limit
        return self._batches(limit, 1)

    def run(self, interactions: int, every: int | None = None,
            observe: Callable[[Simulator], None] | None = None) -> None:
        """Run `interactions` more interactions, calling `observe` every `every` interactions."""
        end = self.t + interactions
        step = every or interactions
        mark = self.t + step
        while self.t < end:
            self._advance(min(end, mark) - self.t)
            if self.t >= mark:
                if observe is not None:
                    observe(self)
                mark += step

    def run_until(self, test: Callable[[tuple[int, ...]], bool], limit: int, every: int = 1) -> int | None:
        """Run until `test(configuration)` holds; the number of interactions it took, or None if it did
        not hold within `limit` more. With agents the test runs every `every` interactions, so the time
        is exact with `every=1` and late by less than `every` otherwise; batched, it runs after the batch
        that ends at or past each multiple of `every`, so it is exact with `max_batch=1, every=1` and
        otherwise late by less than one batch (about min(0.63·√n, `BATCH_CAP`) interactions) plus `every`."""
        begin = self.t
        end, check = begin + limit, begin
        if test(self.config()):
            return 0
        while self.t < end:
            if self.method == "agents":
                self._advance(min(every, end - self.t))
            else:
                self._batches(end - self.t, max(1, check - self.t))
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
