"""The visited set of the vector engine: 64-bit fingerprints in one open-addressing table.

Linear probing over a uint64 array (0 marks an empty slot; no valid state has fingerprint 0, see
`layout`); the loops are `kernels.backend()`'s (C once loaded, numpy before).
The search sizes the table once per level, from the previous level's growth (`reserve`), so it is
rebuilt at most once per level; it grows past `MAX_LOAD` only when a level outgrows its estimate.
The array is an anonymous memory map, so a rebuild returns the old table's pages to the system slice
by slice as their keys move: growing needs little more than the new table.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from typing import Any

import numpy as np

from .kernels import backend, bitstate_backend

MAX_LOAD = 0.6  # the table never holds more than this fraction of its slots (but see TAIL_LOAD)
TARGET_LOAD = 0.4  # load after a rebuild, once the expected new keys are in
TAIL_LOAD = 0.7  # a search whose levels shrink may fill the table to this rather than rebuild it for its last keys
MIN_CAPACITY = 1 << 8
GROW_SLICE = 1 << 20  # old slots moved at a time when growing (a multiple of the page size in bytes)
MADV_POPULATE_WRITE = 23  # Linux 5.14 and later: fault a range's pages in at once
_LIBC = ctypes.CDLL(None) if sys.platform.startswith("linux") else None


def _whole_pages(slots: int) -> int:
    """The bytes of the whole pages among a table's first `slots` slots."""
    return slots * 8 // mmap.PAGESIZE * mmap.PAGESIZE


def _populate(table: np.ndarray, start: int, stop: int) -> None:
    """Fault in the pages of slots start..stop of a new table with one system call (which releases the GIL,
    so two tables grow at once), rather than one fault per page as the rebuild first writes each; where the
    call is not supported the pages fault in as before."""
    lo, hi = _whole_pages(start), _whole_pages(stop)
    if _LIBC is not None and hi > lo:
        _LIBC.madvise(ctypes.c_void_p(table.ctypes.data + lo), ctypes.c_size_t(hi - lo), MADV_POPULATE_WRITE)


def _first_empty(table: np.ndarray) -> int:
    """The first empty slot of a table (its size if it has none)."""
    start, step = 0, 64
    while start < table.size:
        empty = np.flatnonzero(table[start:start + step] == 0)
        if empty.size:
            return start + int(empty[0])
        start, step = start + step, step * 4
    return table.size


class FingerprintTable:
    """A set of non-zero uint64 fingerprints. A large table is an anonymous mapping of ordinary pages: asked for
    huge pages, its rebuilds waited on the kernel compacting memory for them (0.18 to 0.36 s in a search of the
    filter lock N=6, against 0.16 to 0.18 s), and the probes were no faster: medians of 7 interleaved rounds,
    1.48 s against 1.42 s on one worker, and TwoPhase RM=9 on two workers 1.25 s against 1.11 s."""

    def __init__(self, capacity: int = MIN_CAPACITY):
        self.size = 0
        self.table, self.mm = self._allocate(max(capacity, 8))
        self.rebuilds = 0
        self.max_load = MAX_LOAD  # TAIL_LOAD once the search's last keys are known to fit under it

    @staticmethod
    def _allocate(capacity: int) -> tuple[np.ndarray, mmap.mmap | None]:
        """A zeroed table, and the anonymous mapping under it when it is large (its pages can be released)."""
        if capacity >= 1 << 32:
            raise MemoryError(f"a visited table of {capacity:,} slots is beyond this engine's limit (2^32)")
        if capacity * 8 < GROW_SLICE * 8:
            return np.zeros(capacity, dtype=np.uint64), None
        mm = mmap.mmap(-1, capacity * 8, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        return np.frombuffer(mm, dtype=np.uint64), mm

    @property
    def nbytes(self) -> int:
        return self.table.nbytes

    @property
    def limit(self) -> int:
        """How many keys the table may hold before it must grow."""
        return int(self.max_load * len(self.table))

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """A bool array: which keys are in the set."""
        return backend().contains(self.table, np.ascontiguousarray(keys, dtype=np.uint64))

    def add(self, keys: np.ndarray) -> int:
        """Insert keys (duplicates and keys already present are ignored); how many were new."""
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        self.reserve(len(keys))
        added = backend().insert(self.table, keys)
        self.size += added
        return added

    def reserve(self, expected: int, then: int = 0, rest: int | None = None) -> None:
        """Make room for `expected` more keys, rebuilding once if they would pass `MAX_LOAD`; a rebuild
        makes room for the `then` keys expected after those as well, so that it need not rebuild again.
        `rest`, given when the search's levels shrink, is every key still expected: when they all fit under
        `TAIL_LOAD`, the table fills to that instead (a rebuild for a search's last few keys would move all
        the others for them; if more come than expected, the table grows when it reaches `TAIL_LOAD`)."""
        need = self.size + max(expected, 0)
        if not self.must_grow(expected, rest):  # (a search whose levels grow again gets MAX_LOAD back)
            self.max_load = MAX_LOAD if need <= MAX_LOAD * len(self.table) else TAIL_LOAD
            return
        self._grow(self.capacity_for(need, then))

    @staticmethod
    def capacity_for(need: int, then: int = 0) -> int:
        """The slots of a table rebuilt for `need` keys and `then` more after those."""
        return max(int((need + max(then, 0)) / TARGET_LOAD), MIN_CAPACITY)

    def must_grow(self, expected: int, rest: int | None = None) -> bool:
        """Whether `reserve` rebuilds the table for these keys."""
        fits = rest is not None and self.size + max(rest, expected, 0) <= TAIL_LOAD * len(self.table)
        return self.size + max(expected, 0) > MAX_LOAD * len(self.table) and not fits

    def grow_for(self, expected: int) -> None:
        """Grow now (the table is at its limit) for `expected` more keys, by at least a quarter."""
        self._grow(max(int((self.size + max(expected, 0)) / TARGET_LOAD), len(self.table) * 5 // 4))

    def _grow(self, capacity: int) -> None:
        """Move every key into a table of `capacity` slots (`_moved`)."""
        self.table, self.mm = self._moved(self.table, self.mm, capacity)
        self.rebuilds += 1
        self.max_load = MAX_LOAD

    @classmethod
    def _moved(cls, old: np.ndarray, release: mmap.mmap | None, capacity: int, mask: int = 0,
               part: int = 0) -> tuple[np.ndarray, mmap.mmap | None]:
        """A table of `capacity` slots holding the keys k of `old` with `k & mask == part` (every key: mask 0),
        moved a slice at a time; with `release` (the old table's mapping), each slice of the old table is
        released once its keys have moved. Home slots are monotone in the key, so a slice's keys land in the
        matching stretch of the new table: each stretch is faulted in just before. The old table's first run
        of keys (up to its first empty slot) may hold keys that wrapped around from its end: it is kept aside
        and moved last, so that the rest arrives almost in order of home slot."""
        k = backend()
        new, mm = cls._allocate(capacity)
        first = _first_empty(old)
        head = old[:first].copy()
        head = head[head & np.uint64(mask) == np.uint64(part)]
        state = np.array([-1, 0], dtype=np.int64)  # the rehash's place in the new table (see `runtime`)
        released = 0  # bytes of the old table given back (whole pages)
        populated = 0  # slots of the new table faulted in
        for start in range(0, len(old), GROW_SLICE):
            stop = min(start + GROW_SLICE, len(old))
            if mm is not None:  # this slice's keys land below `reach` in the new table (a few probe past it)
                reach = len(new) if stop == len(old) else min(len(new), stop * len(new) // len(old) + GROW_SLICE // 8)
                _populate(new, populated, reach)
                populated = max(populated, reach)
            k.rehash(old, new, max(start, first), stop, state, mask, part)
            upto = _whole_pages(stop)
            if release is not None and upto > released:
                release.madvise(mmap.MADV_DONTNEED, released, upto - released)
                released = upto
        k.insert(new, head)
        return new, mm


class BitTable:
    """A bitstate visited set (SPIN's supertrace, Holzmann 1988): `nbytes` of bits, each state stored as
    `HASHES` bits at independent hashes of its fingerprint, in the C loops of `bitstate_backend`. A state whose
    bits were all set by others is taken for visited and omitted with the states reached only through it; the
    estimate of how many were (`omitted`) follows Holzmann's analysis: a new state is lost with the probability
    that all its bits are set, the fill to the power `HASHES`, as it stood when the state came."""

    HASHES = 3  # as the C's HASHES (SPIN's -k3)

    def __init__(self, nbytes: int):
        words = nbytes // 8
        if words < 2:
            raise ValueError(f"a bitstate table of {nbytes} bytes has no room for bits: give at least 16 bytes")
        self.ops = bitstate_backend()
        self.mm = mmap.mmap(-1, words * 8, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            try:
                self.mm.madvise(mmap.MADV_HUGEPAGE)
            except OSError:
                pass
        self.table = np.frombuffer(self.mm, dtype=np.uint64)  # word 0 counts the bits set (see the C)
        self.size = 0
        self.limit = 1 << 62  # never full: past its capacity it omits more, it does not grow
        self.omitted = 0.0  # expected states omitted so far
        self._settled = 0  # states stored when `omitted` was last brought up to date

    @property
    def nbytes(self) -> int:
        return self.table.nbytes

    @property
    def bits(self) -> int:
        return (len(self.table) - 1) * 64

    @property
    def fill(self) -> float:
        """The fraction of the bits set."""
        return int(self.table[0]) / self.bits

    def settle(self) -> None:
        """Count the expected omissions of the states stored since the last call, at the fill now: for every
        state stored, p / (1 - p) new ones are expected to have been taken for visited, p = fill ** HASHES."""
        p = self.fill ** self.HASHES
        new = self.size - self._settled
        if new:
            self.omitted += new * p / (1 - p) if p < 1 else float("inf")
        self._settled = self.size

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """A bool array: which keys have all their bits set."""
        return self.ops.contains(self.table, np.ascontiguousarray(keys, dtype=np.uint64))

    def add(self, keys: np.ndarray) -> int:
        """Set the keys' bits; how many keys had a bit clear (were taken for new)."""
        added = self.ops.insert(self.table, np.ascontiguousarray(keys, dtype=np.uint64))
        self.size += added
        self.settle()
        return added

    def reserve(self, expected: int, then: int = 0, rest: int | None = None) -> None:
        """A bitstate table never grows (the interface of `FingerprintTable`)."""


def bitstate_note(tables: list[BitTable]) -> str:
    """The bitstate tables' size, fill and estimate of the states omitted (summed over the tables), for the result."""
    nbytes, bits = sum(t.nbytes for t in tables), sum(t.bits for t in tables)
    size, omitted = sum(t.size for t in tables), sum(t.omitted for t in tables)
    fill = sum(int(t.table[0]) for t in tables) / bits
    sure = float(np.exp(-omitted)) if omitted < 745 else 0.0
    return (f"bitstate: {nbytes:,} bytes ({bits:,} bits), {BitTable.HASHES} bits per state; "
            f"{bits / max(size, 1):,.1f} bits per state stored (hash factor), {fill:.2%} of the bits set; expected "
            f"states omitted {omitted:.3g} (probability that none was: {sure:.4f}), so the counts are lower bounds "
            "and a verdict without a violation is probable, not certain")


class VisitedSet:
    """The visited set as a power of two of `FingerprintTable`s, key k in table `k & (parts - 1)`: threads
    that each insert only the keys of their own table need no locks, and the keys a table gets are
    exactly those it would hold alone (the home slot uses a key's high bits, the part its low bits)."""

    def __init__(self, parts: int = 1, bitstate: int | None = None):
        """`bitstate`: bytes of bits in all, shared equally by the tables, instead of exact tables."""
        if parts < 1 or parts & (parts - 1):
            raise ValueError(f"a visited set splits into a power of two of tables, not {parts}")
        self.parts: list = ([BitTable(bitstate // parts) for _ in range(parts)] if bitstate is not None
                            else [FingerprintTable() for _ in range(parts)])
        self.mask = np.uint64(parts - 1)

    @property
    def bit_tables(self) -> list[BitTable]:
        """The tables, if they are bitstate tables (else none)."""
        return [t for t in self.parts if isinstance(t, BitTable)]

    @property
    def size(self) -> int:
        return sum(t.size for t in self.parts)

    def split(self, expected: int = 0, then: int = 0, pool: Any = None) -> VisitedSet:
        """This one-table set as two tables, each sized at once for its share of the keys and of the `expected`
        keys to come (and room for `then` more after those, as `reserve`), so that the level's `reserve` after
        the split need not rebuild them. Each table's keys are moved from the old table as a rebuild moves
        them: with a thread pool, the two at once; else one after the other, the second releasing the old
        table's pages as it goes."""
        assert len(self.parts) == 1 and not self.bit_tables
        two = VisitedSet(2)
        old = self.parts[0]
        odd = sum(int(np.count_nonzero(old.table[i:i + GROW_SLICE] & two.mask)) for i in range(0, len(old.table), GROW_SLICE))

        def move(part: int, size: int, release: mmap.mmap | None) -> None:
            t = two.parts[part]
            capacity = FingerprintTable.capacity_for(size + two.share(expected), max(then, 0) // 2)
            t.table, t.mm = FingerprintTable._moved(old.table, release, capacity, int(two.mask), part)
            t.size = size

        if pool is not None:
            other = pool.submit(move, 1, odd, None)
            move(0, old.size - odd, None)
            other.result()
        else:
            move(0, old.size - odd, None)
            move(1, odd, old.mm)
        self.parts = []
        return two

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.parts)

    def _route(self, keys: np.ndarray) -> list[np.ndarray]:
        part = keys & self.mask
        return [(part == np.uint64(p)).nonzero()[0] for p in range(len(self.parts))]

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """A bool array: which keys are in the set."""
        if len(self.parts) == 1:
            return self.parts[0].contains(keys)
        out = np.zeros(len(keys), dtype=bool)
        for t, sel in zip(self.parts, self._route(keys)):
            out[sel] = t.contains(keys[sel])
        return out

    def add(self, keys: np.ndarray) -> int:
        """Insert keys (duplicates and keys already present are ignored); how many were new."""
        if len(self.parts) == 1:
            return self.parts[0].add(keys)
        return sum(t.add(keys[sel]) for t, sel in zip(self.parts, self._route(keys)))

    def share(self, keys: int) -> int:
        """A table's share of `keys` keys of the set, with a margin for the parts' unequal draws."""
        n = len(self.parts)
        return keys if n == 1 else int(keys / n * 1.05) + 64

    def reserve(self, expected: int, pool: Any = None, then: int = 0, rest: int | None = None) -> None:
        """Make room for `expected` more keys in all (a little more than its share in each), and in a
        table that must grow for them, for `then` more after those (`rest`: every key still expected, when
        the search's levels shrink; see `FingerprintTable.reserve`); with a thread pool, the tables grow at
        once."""
        share, later, left = self.share(expected), then // len(self.parts), None if rest is None else self.share(rest)
        growing = [t for t in self.parts if t.size + share > t.limit]  # (a table with room has nothing to do)
        if pool is None or len(growing) < 2:
            for t in growing:
                t.reserve(share, later, left)
            return
        others = [pool.submit(t.reserve, share, later, left) for t in growing[1:]]
        growing[0].reserve(share, later, left)
        for f in others:
            f.result()
