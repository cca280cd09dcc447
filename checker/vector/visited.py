"""The visited set of the vector engine: 64-bit fingerprints in a numpy open-addressing table.

Linear probing over one uint64 array (0 marks an empty slot; no valid state has fingerprint
0, see `layout`). A key's home slot is `(key >> 32) * capacity >> 32`, so the capacity need not
be a power of two: the table grows to twice its contents whenever it would pass 75% full, so
it holds between 10.7 and 16 bytes per fingerprint. Lookups and inserts run a probe round at a
time over all pending keys; the keys still probing shrink geometrically. Growing places every
key in one sequential pass (see `_grow`).
"""

from __future__ import annotations

import numpy as np

MAX_LOAD = 0.75
REFILL = 0.5  # load right after growing
GROW_SLICE = 1 << 20  # old slots moved at a time when growing
STRAGGLERS = 32  # keys still probing when a vectorised round is no longer worth its overhead


class FingerprintTable:
    """A set of non-zero uint64 fingerprints."""

    def __init__(self, capacity: int = 1 << 8):
        self.table = np.zeros(capacity, dtype=np.uint64)
        self.size = 0

    @property
    def nbytes(self) -> int:
        return self.table.nbytes

    def _home(self, keys: np.ndarray, capacity: int | None = None) -> np.ndarray:
        cap = len(self.table) if capacity is None else capacity
        return (((keys >> np.uint64(32)) * np.uint64(cap)) >> np.uint64(32)).astype(np.int64)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """A bool array: which keys are in the set."""
        table, cap = self.table, len(self.table)
        found = np.zeros(len(keys), dtype=bool)
        pos = self._home(keys)
        pending = np.arange(len(keys))
        k = keys
        while pending.size > STRAGGLERS:
            v = table[pos]
            hit = v == k
            found[pending[hit]] = True
            go = (~hit & (v != 0)).nonzero()[0]
            pending, k, pos = pending[go], k[go], pos[go] + 1
            pos[pos == cap] = 0
        for i, key, p in zip(pending.tolist(), k.tolist(), pos.tolist()):  # the few with long probes
            while (v := int(table[p])) != 0:
                if v == key:
                    found[i] = True
                    break
                p = p + 1 if p + 1 < cap else 0
        return found

    def add(self, keys: np.ndarray) -> None:
        """Insert distinct keys that are not in the set yet."""
        if self.size + len(keys) > MAX_LOAD * len(self.table):
            self._grow(self.size + len(keys))
        self._insert(keys)
        self.size += len(keys)

    def _insert(self, keys: np.ndarray) -> None:
        table, cap = self.table, len(self.table)
        pos = self._home(keys)
        k = keys
        while k.size > STRAGGLERS:
            free = (table[pos] == 0).nonzero()[0]
            fp, fk = pos[free], k[free]
            table[fp] = fk  # among keys racing for one slot, one wins
            lost = np.ones(len(k), dtype=bool)
            lost[free[table[fp] == fk]] = False
            go = lost.nonzero()[0]
            k, pos = k[go], pos[go] + 1
            pos[pos == cap] = 0
        for key, p in zip(k.tolist(), pos.tolist()):  # the few left probe one by one
            while table[p] != 0:
                p = p + 1 if p + 1 < cap else 0
            table[p] = key

    def _grow(self, need: int) -> None:
        """Move the keys to a larger table, a slice of the old one at a time (so growing needs the two
        tables and little else). Homes are monotone in a key's high bits and the old table is nearly
        in home order, so keys sorted by home go to the first free slot at or after their home: a
        running maximum. Keys that had wrapped round the old table's end, or whose home lies behind the
        slots already filled, are inserted by probing."""
        old = self.table
        new = np.zeros(max(int(need / REFILL), 1 << 8), dtype=np.uint64)
        self.table = new
        filled = -1  # the last slot placed
        late = []
        for start in range(0, len(old), GROW_SLICE):
            chunk = old[start:start + GROW_SLICE]
            where = (chunk != 0).nonzero()[0]
            keys = chunk[where]
            wrapped = where + start < self._home(keys, len(old))  # probed past the old table's end
            if wrapped.any():
                late.append(keys[wrapped])
                keys = keys[~wrapped]
            home = self._home(keys)
            order = np.argsort(home, kind="stable")
            keys, home = keys[order], home[order]
            behind = int(np.searchsorted(home, filled, side="right"))
            if behind:
                late.append(keys[:behind].copy())  # a copy: a view would keep the whole slice alive
            keys, home = keys[behind:], home[behind:]
            if not len(keys):
                continue
            step = np.arange(len(keys))
            pos = np.maximum.accumulate(np.maximum(home - step, filled + 1)) + step  # increasing
            fits = int(np.searchsorted(pos, len(new)))
            new[pos[:fits]] = keys[:fits]
            if fits < len(keys):
                late.append(keys[fits:].copy())  # past the end: they wrap round
            if fits:
                filled = int(pos[fits - 1])
        del old
        self._insert(np.concatenate(late) if late else np.zeros(0, dtype=np.uint64))
