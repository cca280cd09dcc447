"""Relations as numpy columns: integer keys packed into one int64 code, joins by sorted index (a CSR-like
offset table when the key space is dense), grouping and deduplication without Python loops.

The few passes where the time goes (sorting codes, building an offset table, expanding a probe into its matches,
the best value per group) are the methods of a `Kernels` object: `NUMPY` here, the same passes compiled in
`lockstep.checker.datalog.kernels`; both give the same arrays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lockstep.specs.datalog.syntax import DatalogError

VALUE_LIMIT = 1 << 62  # values beyond ±2^62 are an overflow (so + and - of two values never wrap)
DENSE_LIMIT = 1 << 25  # key spaces up to this many codes get a direct (dense) table
EMPTY = np.zeros(0, dtype=np.int64)


@dataclass
class Step:
    """One recursive rule of a propagation (`Kernels.propagate`): p(X, _) joined on its group X with a fixed
    relation's offset table (`Kernels.group_rows`, keys from `klo`); each match proposes a value for a group, the
    matched row's `key` (in the table's order; None: X itself), read from `source`: 0 X, 1 p's value at X, 2 the
    matched row's `val` (in the table's order)."""

    klo: int
    indptr: np.ndarray
    key: np.ndarray | None
    source: int
    val: np.ndarray | None


class Kernels:
    """The evaluator's innermost passes, in numpy (the portable path; a compiled set overrides every method)."""

    joins_into_groups = False  # whether `join_best` (a join and a min/max aggregate in one pass) is provided
    propagates = False  # whether `propagate` (a min/max recursion to its fixpoint by chaotic iteration) is provided

    def sort(self, a: np.ndarray) -> np.ndarray:
        """`a` (int64) in ascending order."""
        return np.sort(a)

    def offsets(self, codes: np.ndarray, total: int, lo: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(indptr, order) of codes in lo..lo+total-1: row order[indptr[c]:indptr[c + 1]] are those of code lo + c,
        in row order."""
        if lo:
            codes = codes - lo
        counts = np.bincount(codes, minlength=total) if len(codes) else np.zeros(total, np.int64)
        indptr = np.zeros(total + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return indptr, np.argsort(codes, kind="stable")

    def group_rows(self, codes: np.ndarray, total: int, lo: int, cols: list[np.ndarray | None]
                   ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """(indptr, cols in code order) of codes in lo..lo+total-1 (as `offsets`): the rows of code lo + c are
        indptr[c]..indptr[c + 1] - 1 of each column returned, in row order (None stays None)."""
        indptr, order = self.offsets(codes, total, lo)
        return indptr, [None if c is None else c[order] for c in cols]

    def expand(self, probes: np.ndarray, start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(probe, position) for every position in start[i]..stop[i] - 1 of every probe i, in probe order."""
        counts = stop - start
        ends = np.cumsum(counts)
        left = np.repeat(probes, counts)
        # match j of probe i is start[i] + (j - (ends[i] - counts[i])): one repeat for both terms
        pos = np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64)
        pos += np.repeat(start - (ends - counts), counts)
        return left, pos

    def merge_sorted(self, old: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the merged codes, those of `codes` not in `old`) of two non-empty ascending runs of distinct codes: one
        stable sort of the two runs (a linear merge), each code tagged in its low bit with where it came from."""
        if max(int(old[-1]), int(codes[-1])) >= 1 << 61:
            pos = np.searchsorted(old, codes)
            present = old[np.minimum(pos, len(old) - 1)] == codes
            new = codes[~present]
            return np.sort(np.concatenate([old, new]), kind="stable"), new
        tagged = np.sort(np.concatenate([old << 1, (codes << 1) | 1]), kind="stable")
        code = tagged >> 1
        first = np.empty(len(code), dtype=bool)
        first[0] = True
        np.not_equal(code[1:], code[:-1], out=first[1:])
        fresh = first & (tagged & 1).astype(bool)  # a code from `codes` not preceded by the same code of `old`
        return code[first], code[fresh]

    def fresh_sorted(self, old: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """The codes of `codes` not in `old` (two ascending runs of distinct codes, `old` not empty)."""
        pos = np.searchsorted(old, codes)
        return codes[old[np.minimum(pos, len(old) - 1)] != codes]

    def best_in_table(self, codes: np.ndarray, vals: np.ndarray, func: str, total: int, lo: int = 0
                      ) -> tuple[np.ndarray, np.ndarray]:
        """One (code - lo, best value) per distinct code in lo..lo+total-1, ascending (min or max)."""
        if lo:
            codes = codes - lo
        fill = np.iinfo(np.int64).max if func == "min" else np.iinfo(np.int64).min
        table = np.full(total, fill, dtype=np.int64)
        (np.minimum if func == "min" else np.maximum).at(table, codes, vals)
        hit = np.zeros(total, dtype=bool)
        hit[codes] = True
        c = np.flatnonzero(hit)
        return c, table[c]


NUMPY = Kernels()


def as_columns(rows: np.ndarray) -> list[np.ndarray]:
    return [np.ascontiguousarray(rows[:, i]) for i in range(rows.shape[1])]


class KeySpace:
    """Mixed-radix packing of key tuples into int64 codes over per-column ranges [lo, lo + size)."""

    def __init__(self, los: list[int], sizes: list[int]):
        self.los, self.sizes = list(los), list(sizes)
        total = 1
        for s in self.sizes:
            total *= max(s, 1)
        if total >= 1 << 62:
            raise DatalogError("the key space of a relation is too large to pack into 64 bits", None,
                               hint="renumber the input's values densely (0..n-1)")
        self.total = total

    @classmethod
    def covering(cls, cols: list[np.ndarray], slack: float = 0.0) -> KeySpace:
        los, sizes = [], []
        for c in cols:
            lo, hi = (int(c.min()), int(c.max())) if len(c) else (0, 0)
            span = hi - lo + 1
            extra = int(span * slack)
            los.append(lo - extra)
            sizes.append(span + 2 * extra)
        return cls(los, sizes)

    def contains(self, cols: list[np.ndarray]) -> np.ndarray:
        ok = np.ones(len(cols[0]) if cols else 0, dtype=bool)
        for c, lo, s in zip(cols, self.los, self.sizes):
            ok &= (c >= lo) & (c < lo + s)
        return ok

    def fits(self, cols: list[np.ndarray]) -> bool:
        """Whether every tuple lies in the space (each column's least and greatest value do)."""
        if not cols or len(cols[0]) == 0:
            return True
        return all(lo <= int(c.min()) and int(c.max()) < lo + s for c, lo, s in zip(cols, self.los, self.sizes))

    def encode(self, cols: list[np.ndarray]) -> np.ndarray:
        """Codes of key tuples known to lie in the space."""
        if not cols:
            return np.zeros(0, dtype=np.int64)
        code = np.subtract(cols[0], self.los[0], dtype=np.int64)
        for c, lo, s in zip(cols[1:], self.los[1:], self.sizes[1:]):  # in place: one array however many columns
            code *= s
            code += c
            code -= lo
        return code

    def decode(self, codes: np.ndarray, into: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """The key tuples of codes, as columns: new arrays, or written into `into` (one int64 array a column, as
        long as `codes`)."""
        if not self.los:
            return []
        cols = into if into is not None else [np.empty(len(codes), dtype=np.int64) for _ in self.los]
        rest = codes
        for i in range(len(self.los) - 1, 0, -1):  # the trailing columns, each a remainder
            quotient = cols[0] if i == 1 else np.empty(len(codes), dtype=np.int64)
            np.divmod(rest, self.sizes[i], out=(quotient, cols[i]))
            cols[i] += self.los[i]
            rest = quotient
        if len(self.los) == 1:  # the leading column: what the divisions leave (codes lie in the space)
            np.add(codes, self.los[0], out=cols[0])
        else:
            cols[0] += self.los[0]
        return cols

    def union(self, cols: list[np.ndarray]) -> KeySpace:
        """A space covering this one and the given tuples (with room to grow)."""
        other = KeySpace.covering(cols, 0.25)
        los = [min(a, b) for a, b in zip(self.los, other.los)]
        his = [max(a + s, b + t) for a, s, b, t in zip(self.los, self.sizes, other.los, other.sizes)]
        return KeySpace(los, [h - lo for lo, h in zip(los, his)])


class Index:
    """A relation's rows sorted by some key columns, for probing: `matches(codes)` gives, for each probe,
    the range of rows with that key."""

    def __init__(self, key_cols: list[np.ndarray], kernels: Kernels = NUMPY):
        self.kernels = kernels
        self.space = KeySpace.covering(key_cols)
        self._sorted: dict[int, np.ndarray] = {}
        self._bounds: dict[int, tuple[int, int]] = {}
        self.dense = self.space.total <= max(DENSE_LIMIT, 4 * len(key_cols[0]))
        if not self.dense:
            codes = self.space.encode(key_cols)
            self.order = np.argsort(codes, kind="stable")
            self.sorted = codes[self.order]
        elif len(key_cols) == 1:  # one key column: its values, from the least, are the codes
            self.indptr, self.order = kernels.offsets(key_cols[0], self.space.total, self.space.los[0])
        else:
            self.indptr, self.order = kernels.offsets(self.space.encode(key_cols), self.space.total)

    def probe(self, key_cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(probe index, row index) pairs of every match."""
        left, pos = self.probe_sorted(key_cols)
        return left, self.order[pos]

    def take(self, col: np.ndarray, slot: int, pos: np.ndarray) -> np.ndarray:
        """`col[rows]` for the rows at sorted positions `pos` (from `probe_sorted`): one gather from the column
        in index order, which is kept (under `slot`, the column's place in its relation) for later probes."""
        return self.column(col, slot)[pos]

    def bounds(self, col: np.ndarray, slot: int) -> tuple[int, int]:
        """The least and greatest value of a non-empty column of the relation (kept under `slot`, as `column`)."""
        hit = self._bounds.get(slot)
        if hit is None:
            hit = self._bounds[slot] = (int(col.min()), int(col.max()))
        return hit

    def column(self, col: np.ndarray, slot: int) -> np.ndarray:
        """A column of the relation in index order (kept under `slot`, the column's place in its relation)."""
        cached = self._sorted.get(slot)
        if cached is None:
            cached = self._sorted[slot] = col[self.order]
        return cached

    def probe_sorted(self, key_cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(probe index, position in index order) pairs of every match."""
        n = len(key_cols[0])
        inside = self.space.contains(key_cols)
        probes = np.flatnonzero(inside) if not inside.all() else np.arange(n)
        codes = self.space.encode([c[probes] for c in key_cols])
        if self.dense:
            start, stop = self.indptr[codes], self.indptr[codes + 1]
        else:
            start = np.searchsorted(self.sorted, codes, "left")
            stop = np.searchsorted(self.sorted, codes, "right")
        return self.kernels.expand(probes, start, stop)


def distinct(a: np.ndarray, kernels: Kernels = NUMPY) -> np.ndarray:
    """The distinct values of an int64 array, ascending (a sort: faster here than numpy's hashing unique)."""
    if len(a) == 0:
        return a
    s = kernels.sort(a)
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s if np.count_nonzero(keep) == len(s) else s[keep]


def merge_new(old: np.ndarray, codes: np.ndarray, kernels: Kernels = NUMPY) -> tuple[np.ndarray, np.ndarray]:
    """(the merged sorted codes, those of `codes` not in `old`): both sorted and distinct."""
    if len(old) == 0:
        return codes, codes
    return kernels.merge_sorted(old, codes)


def group_best(codes: np.ndarray, vals: np.ndarray, func: str, total: int | None = None,
               kernels: Kernels = NUMPY, base: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One (code, best value) per distinct code, codes ascending; `func` is min or max; the codes given are from
    `base`, those returned from 0. With `total` (codes lie in base..base+total-1 and the space is small) the best
    values are gathered in a table instead of sorted."""
    if len(codes) == 0:
        return EMPTY, EMPTY
    if total is not None and total <= max(4 * len(codes), DENSE_LIMIT // 8):
        return kernels.best_in_table(codes, vals, func, total, base)
    if base:
        codes = codes - base
    lo = int(vals.min())
    span = int(vals.max()) - lo + 1
    if int(codes.max()) < (1 << 62) // span:  # (code, value) packed into one int64: one plain sort
        packed = kernels.sort(codes * span + (vals - lo))
        c = packed // span
        edge = np.empty(len(c), dtype=bool)
        if func == "min":  # the first of each group holds its least value, the last its greatest
            edge[0] = True
            np.not_equal(c[1:], c[:-1], out=edge[1:])
        else:
            edge[-1] = True
            np.not_equal(c[1:], c[:-1], out=edge[:-1])
        return c[edge], packed[edge] % span + lo
    order = np.argsort(codes, kind="stable")
    c = codes[order]
    v = vals[order]
    starts = np.flatnonzero(np.concatenate(([True], c[1:] != c[:-1])))
    best = (np.minimum if func == "min" else np.maximum).reduceat(v, starts)
    return c[starts], best


def group_sum(codes: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One (code, sum of values) per distinct code, codes ascending."""
    if len(codes) == 0:
        return EMPTY, EMPTY
    order = np.argsort(codes, kind="stable")
    c = codes[order]
    starts = np.flatnonzero(np.concatenate(([True], c[1:] != c[:-1])))
    return c[starts], np.add.reduceat(vals[order], starts)


def unique_rows(cols: list[np.ndarray], kernels: Kernels = NUMPY) -> list[np.ndarray]:
    """The distinct rows of a relation given by its columns (in code order): a sort of the packed codes,
    decoded (several times faster than an argsort and a gather)."""
    if not cols or len(cols[0]) == 0:
        return [c[:0] for c in cols]
    space = KeySpace.covering(cols)
    return space.decode(distinct(space.encode(cols), kernels))


def check_values(a: np.ndarray, what: str) -> np.ndarray:
    if len(a) and (int(a.max()) > VALUE_LIMIT or int(a.min()) < -VALUE_LIMIT):
        raise DatalogError(f"arithmetic overflow in {what}: a value passed ±2^62", None,
                           hint="values are 64-bit integers; a value that keeps growing often means divergence")
    return a
