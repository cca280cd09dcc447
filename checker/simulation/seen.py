"""What the walks saw, and an estimate of what they missed.

States: each distinct state with the number of walks that visited it (1, 2, or more) and the first of them, exactly
up to `EXACT` states; beyond, for the states whose mixed fingerprint has its top k bits zero (1 in 2^k of them, k
raised as needed, so the result does not depend on how the walks were split among processes), while a HyperLogLog
sketch counts them all. Variables: the distinct values of each, exactly up to `VALUES`, then by HyperLogLog.

The estimate of the unseen mass is Good–Turing's for incidence data, with walks as the samples (they are
independent; the states of one walk are not): Q1 / U, where Q1 is the number of states seen in exactly one walk and
U the number of (walk, state) pairs. It estimates the chance that a state a new walk visits was never seen, and
drops as walks are added. Its 95 % interval is Esty's normal limit with the singletons' variance taken over walks
(a cluster-robust ratio variance: Σ (a_i − Ĝ·b_i)², a_i the states only walk i saw, b_i the states walk i visited)
plus Esty's 2·Q2 for the doubletons.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import Model

M64 = (1 << 64) - 1
EXACT = 1 << 20  # distinct states counted exactly (with their walk counts)
VALUES = 1 << 16  # distinct values of one variable counted exactly
P = 14  # HyperLogLog registers: 2^14 (standard error 1.04 / 2^7 = 0.8 %)
Z95 = 1.959963984540054


def mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 values (fingerprints and hashes with well-spread bits)."""
    z = h.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def mix_one(f: int) -> int:
    z = f & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def distinct(a: np.ndarray) -> np.ndarray:
    """The distinct values of `a`, sorted (`np.unique` by sorting: numpy 2's hashing unique is ten times slower on
    a million fingerprints)."""
    s = np.sort(a)
    return s[np.concatenate([[True], s[1:] != s[:-1]])] if len(s) else s


def as_u64(values: Iterable[int]) -> np.ndarray:
    """Python ints (fingerprints, hashes, possibly negative) as uint64."""
    return np.fromiter((v & M64 for v in values), dtype=np.uint64)


class HyperLogLog:
    """Flajolet et al.'s distinct-count sketch: 2^P registers, merged by maximum (so a union's sketch is the same
    however its parts were sketched)."""

    def __init__(self, registers: np.ndarray | None = None):
        self.registers = np.zeros(1 << P, dtype=np.uint8) if registers is None else registers

    def add(self, hashes: np.ndarray) -> None:
        if not len(hashes):
            return
        h = mix(hashes)
        idx = (h >> np.uint64(64 - P)).astype(np.int64)
        rest = (h & np.uint64((1 << (64 - P)) - 1)).astype(np.float64)  # < 2^50: exact in a double
        _m, e = np.frexp(rest)  # rest = m · 2^e, 0.5 <= m < 1: e is its bit length
        rank = np.where(rest > 0, (64 - P) - e + 1, (64 - P) + 1).astype(np.uint8)
        np.maximum.at(self.registers, idx, rank)

    def merge(self, other: HyperLogLog) -> None:
        np.maximum(self.registers, other.registers, out=self.registers)

    def estimate(self) -> float:
        m = float(1 << P)
        raw = 0.7213 / (1 + 1.079 / m) * m * m / float(np.sum(np.ldexp(1.0, -self.registers.astype(np.int64))))
        zeros = int(np.count_nonzero(self.registers == 0))
        if raw <= 2.5 * m and zeros:
            return m * math.log(m / zeros)  # linear counting for small counts
        return raw


class Distinct:
    """Distinct 64-bit hashes: a set up to `bound`, then a HyperLogLog sketch."""

    def __init__(self, bound: int):
        self.bound = bound
        self.exact: set[int] | None = set()
        self.sketch: HyperLogLog | None = None
        self._pending: list[int] = []
        self._batch = np.zeros(0, np.uint64)  # the distinct hashes of `add_many`, while exact
        self._batches: list[np.ndarray] = []
        self._batched = 0

    def add(self, h: int) -> None:
        if self.exact is not None:
            self.exact.add(h)
            if len(self.exact) > self.bound:
                self._to_sketch()
        else:
            self._pending.append(h)
            if len(self._pending) >= 1 << 14:
                self._flush()

    def add_many(self, hashes: np.ndarray) -> None:
        """Add an array of (uint64) hashes, repeats allowed (kept as arrays, folded now and then)."""
        if self.exact is None:
            self.sketch.add(hashes)  # type: ignore[union-attr]
            return
        self._batches.append(hashes)
        self._batched += len(hashes)
        if self._batched > max(1 << 16, len(self._batch)):
            self._fold()

    def _fold(self) -> None:
        if self._batches:
            self._batch = distinct(np.concatenate([self._batch, *self._batches]))
            self._batches, self._batched = [], 0
            if self.exact is not None and len(self._batch) + len(self.exact) > self.bound:
                self._to_sketch()

    def _to_sketch(self) -> None:
        self.sketch = HyperLogLog()
        self.sketch.add(as_u64(self.exact or ()))
        self.sketch.add(distinct(np.concatenate([self._batch, *self._batches])))
        self._batch, self._batches, self._batched = np.zeros(0, np.uint64), [], 0
        self.exact = None

    def _flush(self) -> None:
        if self.sketch is not None and self._pending:
            self.sketch.add(as_u64(self._pending))
            self._pending = []

    def plain(self) -> tuple[str, np.ndarray]:
        """("exact", the hashes) or ("sketch", the registers)."""
        self._fold()
        if self.exact is not None:
            return "exact", distinct(np.concatenate([as_u64(self.exact), self._batch]))
        self._flush()
        return "sketch", self.sketch.registers  # type: ignore[union-attr]


def merge_distinct(parts: list[tuple[str, np.ndarray]], bound: int) -> tuple[int, bool]:
    """(the number of distinct hashes in the union of `parts`, whether it is exact)."""
    exact = [a for kind, a in parts if kind == "exact"]
    union = distinct(np.concatenate(exact)) if exact else np.zeros(0, np.uint64)
    sketches = [a for kind, a in parts if kind == "sketch"]
    if not sketches and len(union) <= bound:
        return len(union), True
    hll = HyperLogLog()
    hll.add(union)
    for r in sketches:
        hll.merge(HyperLogLog(r))
    return round(hll.estimate()), False


def value_hashers(model: Model) -> tuple[list[str], Callable[[Any], list[int]]]:
    """(the variables, a function from a state to one hash per variable's value) for TLC-style value counts."""
    prog = getattr(model, "prog", None)
    if prog is not None:
        spans = [(f.base, f.base + f.count) for f in prog.fields]
        # Python hashes an int modulo 2^61 - 1 (so the sets {0} and {61} would collide): a set of more elements is
        # hashed as its 60-element chunks
        wide = [(i, d.elem.size) for i, d in enumerate(prog.slot_doms) if d.kind == "set" and d.elem.size > 60]
        if not wide:
            return [f.name for f in prog.fields], lambda st: [hash(st[a:b]) for a, b in spans]

        def hashes(st: tuple) -> list[int]:
            parts = list(st)
            for i, size in wide:
                parts[i] = tuple((st[i] >> c) & ((1 << 60) - 1) for c in range(0, size, 60))
            return [hash(tuple(parts[a:b])) for a, b in spans]

        return [f.name for f in prog.fields], hashes
    from ..plain_model import plain_fingerprint

    names = list(model.vars)
    if names == ["state"]:
        return names, lambda st: [plain_fingerprint(st)]
    return names, lambda st: [plain_fingerprint(getattr(st, n, None)) for n in names]


class Seen:
    """The states (and variable values) one block of walks visited, walk by walk."""

    def __init__(self, model: Model, bound: int | None = None, values: int | None = None):
        self.bound = EXACT if bound is None else bound
        self.k = 0  # states kept: those whose mixed fingerprint has its top k bits zero
        self.counts: dict[int, int] = {}  # fingerprint -> first walk · 4 + min(walks, 3)
        self.sketch: HyperLogLog | None = None  # every state, once k > 0
        self._pending: list[int] = []
        self.sizes: list[int] = []  # distinct states of each walk
        self.names, self._hash = value_hashers(model)
        self.values = [Distinct(VALUES if values is None else values) for _ in self.names]
        self._batches: list[tuple[np.ndarray, np.ndarray]] = []  # from `walks`: (fingerprints, walk) not yet folded
        self._batched = 0
        self._table = (np.zeros(0, np.uint64), np.zeros(0, np.int64))  # `counts` as arrays, for `walks`

    def walk(self, k: int, states: dict[int, Any]) -> None:
        """Walk `k` visited `states` (fingerprint -> state)."""
        counts, level = self.counts, self.k
        self.sizes.append(len(states))
        for f, st in states.items():
            if level:
                self._pending.append(f)
                if mix_one(f) >> (64 - level):
                    self._values(st)
                    continue
            v = counts.get(f)
            if v is None:
                counts[f] = 4 * k + 1
                self._values(st)
            elif v & 3 < 3:
                counts[f] = v + 1
        if len(counts) > self.bound:
            self._raise()
        if len(self._pending) >= 1 << 15:
            self._flush()

    def walks(self, first: int, fps: np.ndarray, sizes: np.ndarray, values: list[np.ndarray]) -> None:
        """Walks first, first+1, ... visited `sizes[i]` distinct states each, whose fingerprints are `fps` (walk after
        walk), and their variables had (at least) the values hashed in `values` (an array per variable): the
        compiled walkers' record, without the states."""
        for d, hashes in zip(self.values, values):
            d.add_many(hashes)
        self.sizes.extend(sizes.tolist())
        self._batches.append((fps.copy(), np.repeat(np.arange(first, first + len(sizes), dtype=np.int64), sizes)))
        self._batched += len(fps)
        if self._batched > max(1 << 20, len(self._table[0])):
            self._fold()

    def _fold(self) -> None:
        """Fold the batches of `walks` into the walk counts (as `walk` would have counted them, one by one)."""
        if not self._batches:
            return
        f = np.concatenate([b[0] for b in self._batches])
        w = np.concatenate([b[1] for b in self._batches])
        self._batches, self._batched = [], 0
        if self.sketch is not None:
            self.sketch.add(f)
        if self.k:
            keep = _kept(f, self.k)
            f, w = f[keep], w[keep]
        allf = np.concatenate([self._table[0], f])
        allv = np.concatenate([self._table[1], w * 4 + 1])
        order = np.argsort(allf)
        sf, sv = allf[order], allv[order]
        if len(sf):
            start = np.flatnonzero(np.concatenate([[True], sf[1:] != sf[:-1]]))
            fps = sf[start]
            vals = np.minimum.reduceat(sv >> 2, start) * 4 + np.minimum(np.add.reduceat(sv & 3, start), 3)
        else:
            fps, vals = sf, sv
        if len(fps) > self.bound and self.sketch is None:
            self.sketch = HyperLogLog()
            self.sketch.add(fps)
        while len(fps) > self.bound:
            self.k += 1
            keep = _kept(fps, self.k)
            fps, vals = fps[keep], vals[keep]
        self._table = (fps, vals)

    def _values(self, st: Any) -> None:
        for d, h in zip(self.values, self._hash(st)):
            d.add(h)

    def _raise(self) -> None:
        if self.sketch is None:
            self.sketch = HyperLogLog()
            self.sketch.add(as_u64(self.counts))
        self._flush()
        while len(self.counts) > self.bound:
            self.k += 1
            self.counts = {f: v for f, v in self.counts.items() if not mix_one(f) >> (64 - self.k)}

    def _flush(self) -> None:
        if self.sketch is not None and self._pending:
            self.sketch.add(as_u64(self._pending))
        self._pending = []

    def plain(self) -> dict[str, Any]:
        """Plain data (numpy arrays and ints) that crosses processes and merges in block order."""
        self._fold()
        self._flush()
        # (states counted one by one, by `walk`, or by batches, by `walks`)
        fps = np.concatenate([as_u64(self.counts), self._table[0]])
        vals = np.concatenate([np.fromiter(self.counts.values(), dtype=np.int64, count=len(self.counts)),
                               self._table[1]])
        return {"k": self.k, "fps": fps, "vals": vals,
                "sketch": None if self.sketch is None else self.sketch.registers,
                "sizes": np.asarray(self.sizes, dtype=np.int64),
                "values": [d.plain() for d in self.values]}


def _kept(fps: np.ndarray, k: int) -> np.ndarray:
    return np.ones(len(fps), dtype=bool) if k == 0 else (mix(fps) >> np.uint64(64 - k)) == 0


@dataclass
class SeenSummary:
    """Distinct states and values the walks saw, and the Good–Turing estimate of the unseen mass."""

    distinct: int
    exact: bool  # the distinct count is exact (else a HyperLogLog estimate)
    walks: int
    incidences: int  # (walk, state) pairs: each walk's distinct states, summed
    singletons: float  # states seen in exactly one walk (estimated from a sample when not exact)
    doubletons: float
    unseen: float  # Good–Turing: the chance that a state a new walk visits was never seen
    low: float  # its 95 % interval
    high: float
    sample: int = 0  # k: walk counts kept for 1 in 2^k states
    values: dict[str, tuple[int, bool]] = field(default_factory=dict)  # variable -> (distinct values, exact)

    def json(self) -> dict[str, Any]:
        return {"distinct": self.distinct, "distinct_exact": self.exact, "walks": self.walks,
                "walk_state_pairs": self.incidences, "seen_in_one_walk": round(self.singletons),
                "seen_in_two_walks": round(self.doubletons),
                "unseen_mass": {"estimate": self.unseen, "low": self.low, "high": self.high, "confidence": 0.95},
                "counted_one_state_in": 1 << self.sample,
                "variables": {n: {"distinct_values": c, "exact": e} for n, (c, e) in self.values.items()}}

    def lines(self) -> list[str]:
        """The summary as `lockstep simulate` prints it."""
        approx = "" if self.exact else " (a HyperLogLog estimate)"
        sampled = "" if not self.sample else f" (estimated from 1 in {1 << self.sample:,} states)"
        out = [f"  distinct states seen: {self.distinct:,}{approx}, {round(self.singletons):,} of them by one walk "
               f"only, {round(self.doubletons):,} by two{sampled}",
               f"  unseen mass (Good–Turing): {_pct(self.unseen)} (95% interval {_pct(self.low)} to "
               f"{_pct(self.high)}): the chance that a state a new walk visits was never seen"]
        if self.values:
            vals = ", ".join(f"{n} {c:,}{'' if e else '~'}" for n, (c, e) in self.values.items())
            out.append(f"  distinct values per variable: {vals}")
        return out


def _pct(x: float) -> str:
    return f"{100 * x:.2g}%" if x < 0.1 else f"{100 * x:.1f}%"


def summarise(parts: list[dict[str, Any]], names: list[str] | None = None, bound: int | None = None,
              values: int | None = None) -> SeenSummary:
    """The summary of the blocks' plain data, in block order (the same whatever the blocks)."""
    bound = EXACT if bound is None else bound
    values = VALUES if values is None else values
    k = max((p["k"] for p in parts), default=0)
    fps, vals = _union(parts, k)
    while len(fps) > bound:
        k += 1
        keep = _kept(fps, k)
        fps, vals = fps[keep], vals[keep]
    sizes = np.concatenate([p["sizes"] for p in parts]) if parts else np.zeros(0, np.int64)
    walks, incidences = len(sizes), int(sizes.sum())
    if k == 0:
        distinct, exact = len(fps), True
    else:
        hll = HyperLogLog()
        for p in parts:
            if p["sketch"] is not None:
                hll.merge(HyperLogLog(p["sketch"].copy()))
            else:
                hll.add(p["fps"])
        distinct, exact = round(hll.estimate()), False
    scale = float(1 << k)
    ones = (vals & 3) == 1
    q1, q2 = scale * int(np.count_nonzero(ones)), scale * int(np.count_nonzero((vals & 3) == 2))
    unseen = q1 / incidences if incidences else 0.0
    a = scale * np.bincount((vals[ones] >> 2).astype(np.int64), minlength=walks).astype(np.float64)
    b = sizes.astype(np.float64)
    spread = float(np.sum((a - unseen * b) ** 2)) * walks / (walks - 1) if walks > 1 else 0.0
    half = Z95 * math.sqrt(spread + 2 * q2) / incidences if incidences else 0.0
    per_var = {}
    for i, n in enumerate(names or []):
        per_var[n] = merge_distinct([p["values"][i] for p in parts], values)
    return SeenSummary(distinct, exact, walks, incidences, q1, q2, unseen, max(unseen - half, 0.0),
                       min(unseen + half, 1.0), k, per_var)


def _union(parts: list[dict[str, Any]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The states kept at level k in any block, with their walk counts (capped at 3) and first walk."""
    fps, vals = [], []
    for p in parts:
        keep = _kept(p["fps"], k)
        fps.append(p["fps"][keep])
        vals.append(p["vals"][keep])
    if not fps:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    f, v = np.concatenate(fps), np.concatenate(vals)
    uniq, inv = np.unique(f, return_inverse=True)
    count = np.minimum(np.bincount(inv, weights=(v & 3).astype(np.float64), minlength=len(uniq)), 3).astype(np.int64)
    first = np.full(len(uniq), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, inv, v >> 2)
    return uniq, first * 4 + count


def checked(data: Any, nvars: int) -> dict[str, Any]:
    """`Seen.plain`'s data as received from another process, with its types checked (ValueError if not)."""
    def array(x: Any, dtype: Any) -> np.ndarray:
        a = np.asarray(x)
        if a.ndim != 1 or a.dtype != dtype:
            raise ValueError(f"expected a 1-d {np.dtype(dtype).name} array")
        return a

    if not isinstance(data, dict):
        raise ValueError("expected the states seen as a dict")
    k = data.get("k")
    if not isinstance(k, int) or not 0 <= k < 64:
        raise ValueError("expected a sampling level 0..63")
    fps, vals = array(data.get("fps"), np.uint64), array(data.get("vals"), np.int64)
    if len(fps) != len(vals):
        raise ValueError("fingerprints and walk counts differ in length")
    sketch = data.get("sketch")
    if sketch is not None:
        sketch = array(sketch, np.uint8)
        if len(sketch) != 1 << P:
            raise ValueError("a HyperLogLog sketch of the wrong size")
    values = data.get("values")
    if not isinstance(values, list) or len(values) != nvars:
        raise ValueError("expected one value count per variable")
    out_values = []
    for kind, a in values:
        if kind == "exact":
            out_values.append(("exact", array(a, np.uint64)))
        elif kind == "sketch" and len(array(a, np.uint8)) == 1 << P:
            out_values.append(("sketch", np.asarray(a)))
        else:
            raise ValueError("a variable's values are neither a set nor a sketch")
    return {"k": k, "fps": fps, "vals": vals, "sketch": sketch, "sizes": array(data.get("sizes"), np.int64),
            "values": out_values}
