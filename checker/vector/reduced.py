"""Partial-order reduction in the vector engine: each batch's reduced sets, chosen over packed rows.

`Reducer.choose` reads the batch through `PackedColumns`; a step is unsafe for a reduced
set where its XOR delta touches a visible slot's bits or is zero (it loops on the state). The
cycle proviso needs to know whether a successor was visited at this level or an earlier one,
so the states found during the current level are also kept in a small table of their own.
"""

from __future__ import annotations

import numpy as np

from ..reduction.ample import PorStats, Reducer
from .layout import CHUNK, Layout
from .visited import VisitedSet


class PackedColumns:
    """Slot values of a batch of packed states."""

    def __init__(self, layout: Layout, words: np.ndarray):
        self.layout = layout
        self.words = words
        self.rows = words.shape[1]

    def value(self, slot: int) -> np.ndarray:
        c = self.layout.slot_columns[slot][0]
        v = ((self.words[c.word] >> np.uint64(c.shift)) & np.uint64(c.mask)).astype(np.int64)
        return v + c.lo if c.lo else v

    def bit(self, slot: int, i: int) -> np.ndarray:
        c = self.layout.slot_columns[slot][i // CHUNK]
        return ((self.words[c.word] >> np.uint64(c.shift + i % CHUNK)) & np.uint64(1)) != 0


class VectorReduction:
    """The reduction's per-batch work and its statistics."""

    def __init__(self, red: Reducer, layout: Layout, ntrans: int):
        self.red = red
        self.layout = layout
        self.ntrans = ntrans
        self.vmask = [0] * layout.words
        for s in red.visible:
            for c in layout.slot_columns[s]:
                self.vmask[c.word] |= c.mask << c.shift
        self.vmask_np = [np.uint64(m) for m in self.vmask]
        self.level = VisitedSet()  # the states found at this level, split as the visited set is
        self.stats = PorStats()

    def new_level(self, parts: int = 1) -> None:
        self.level = VisitedSet(parts)

    def choose(self, words: np.ndarray, outs: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ample, reduced, enabled) for a batch, from the batch function's outputs."""
        n = words.shape[1]
        enabled = np.zeros((self.ntrans, n), dtype=bool)
        unsafe = np.zeros((self.ntrans, n), dtype=bool)
        for tid, (idx, deltas, _fail) in enumerate(outs):
            if not idx.size:
                continue
            enabled[tid, idx] = True
            moved = np.zeros(idx.size, dtype=bool)
            seen = np.zeros(idx.size, dtype=bool)
            for w, d in enumerate(deltas):
                if d is None:
                    continue
                moved |= d != 0
                if self.vmask[w]:
                    seen |= (d & self.vmask_np[w]) != 0
            unsafe[tid, idx] = seen | ~moved
        ample, reduced = self.red.choose(PackedColumns(self.layout, words), enabled, unsafe)
        return ample, reduced, enabled

    def proviso(self, visited: VisitedSet, fps: np.ndarray, rows: np.ndarray, reduced: np.ndarray,
                n: int) -> np.ndarray:
        """Rows (a bool mask) that reduced sets would leave, but whose reduced successors include a state of
        this level or an earlier one: the cycle proviso expands them fully."""
        back = np.zeros(n, dtype=bool)
        sel = reduced[rows]
        if sel.any():
            f = fps[sel]
            hit = visited.contains(f)
            if hit.any():
                hit[hit] = ~self.level.contains(f[hit])
                back[rows[sel][hit]] = True
        return back & reduced
