"""Relations as numpy columns: integer keys packed into one int64 code, joins by sorted index (a CSR-like
offset table when the key space is dense), grouping and deduplication without Python loops."""

from __future__ import annotations

import numpy as np

from .syntax import DatalogError

VALUE_LIMIT = 1 << 62  # values beyond ±2^62 are an overflow (so + and - of two values never wrap)
DENSE_LIMIT = 1 << 25  # key spaces up to this many codes get a direct (dense) table
EMPTY = np.zeros(0, dtype=np.int64)


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
        return bool(self.contains(cols).all()) if cols and len(cols[0]) else True

    def encode(self, cols: list[np.ndarray]) -> np.ndarray:
        """Codes of key tuples known to lie in the space."""
        if not cols:
            return np.zeros(0, dtype=np.int64)
        code = cols[0] - self.los[0]
        for c, lo, s in zip(cols[1:], self.los[1:], self.sizes[1:]):
            code = code * s + (c - lo)
        return code.astype(np.int64, copy=False)

    def decode(self, codes: np.ndarray) -> list[np.ndarray]:
        if not self.los:
            return []
        out = []
        rest = codes
        for lo, s in zip(reversed(self.los[1:]), reversed(self.sizes[1:])):
            rest, digit = np.divmod(rest, s)
            digit += lo
            out.append(digit)
        out.append(rest + self.los[0])  # the leading column: what the divisions leave (codes lie in the space)
        return list(reversed(out))

    def union(self, cols: list[np.ndarray]) -> KeySpace:
        """A space covering this one and the given tuples (with room to grow)."""
        other = KeySpace.covering(cols, 0.25)
        los = [min(a, b) for a, b in zip(self.los, other.los)]
        his = [max(a + s, b + t) for a, s, b, t in zip(self.los, self.sizes, other.los, other.sizes)]
        return KeySpace(los, [h - lo for lo, h in zip(los, his)])


class Index:
    """A relation's rows sorted by some key columns, for probing: `matches(codes)` gives, for each probe,
    the range of rows with that key."""

    def __init__(self, key_cols: list[np.ndarray]):
        self.space = KeySpace.covering(key_cols)
        codes = self.space.encode(key_cols)
        self.dense = self.space.total <= max(DENSE_LIMIT, 4 * len(codes))
        if self.dense:
            counts = np.bincount(codes, minlength=self.space.total) if len(codes) else np.zeros(self.space.total, np.int64)
            self.indptr = np.zeros(self.space.total + 1, dtype=np.int64)
            np.cumsum(counts, out=self.indptr[1:])
            self.order = np.argsort(codes, kind="stable")
        else:
            self.order = np.argsort(codes, kind="stable")
            self.sorted = codes[self.order]

    def probe(self, key_cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(probe index, row index) pairs of every match."""
        n = len(key_cols[0])
        inside = self.space.contains(key_cols)
        probes = np.flatnonzero(inside) if not inside.all() else np.arange(n)
        codes = self.space.encode([c[probes] for c in key_cols])
        if self.dense:
            start, stop = self.indptr[codes], self.indptr[codes + 1]
        else:
            start = np.searchsorted(self.sorted, codes, "left")
            stop = np.searchsorted(self.sorted, codes, "right")
        counts = stop - start
        ends = np.cumsum(counts)
        left = np.repeat(probes, counts)
        # match j of probe i is sorted row start[i] + (j - (ends[i] - counts[i])): one repeat for both terms
        pos = np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64)
        pos += np.repeat(start - (ends - counts), counts)
        return left, self.order[pos]


def distinct(a: np.ndarray) -> np.ndarray:
    """The distinct values of an int64 array, ascending (a sort: faster here than numpy's hashing unique)."""
    if len(a) == 0:
        return a
    s = np.sort(a)
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def group_best(codes: np.ndarray, vals: np.ndarray, func: str, total: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One (code, best value) per distinct code, codes ascending; `func` is min or max. With `total` (codes lie
    in 0..total-1 and the space is small) the best values are gathered in a table instead of sorted."""
    if len(codes) == 0:
        return EMPTY, EMPTY
    if total is not None and total <= max(4 * len(codes), DENSE_LIMIT // 8):
        fill = np.iinfo(np.int64).max if func == "min" else np.iinfo(np.int64).min
        table = np.full(total, fill, dtype=np.int64)
        (np.minimum if func == "min" else np.maximum).at(table, codes, vals)
        hit = np.zeros(total, dtype=bool)
        hit[codes] = True
        c = np.flatnonzero(hit)
        return c, table[c]
    lo = int(vals.min())
    span = int(vals.max()) - lo + 1
    if int(codes.max()) < (1 << 62) // span:  # (code, value) packed into one int64: one plain sort
        packed = np.sort(codes * span + (vals - lo))
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


def unique_rows(cols: list[np.ndarray]) -> list[np.ndarray]:
    """The distinct rows of a relation given by its columns (in code order): a sort of the packed codes,
    decoded (several times faster than an argsort and a gather)."""
    if not cols or len(cols[0]) == 0:
        return [c[:0] for c in cols]
    space = KeySpace.covering(cols)
    return space.decode(distinct(space.encode(cols)))


def check_values(a: np.ndarray, what: str) -> np.ndarray:
    if len(a) and (int(a.max()) > VALUE_LIMIT or int(a.min()) < -VALUE_LIMIT):
        raise DatalogError(f"arithmetic overflow in {what}: a value passed ±2^62", None,
                           hint="values are 64-bit integers; a value that keeps growing often means divergence")
    return a
