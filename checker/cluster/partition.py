"""One partition of a distributed vector search: the states whose fingerprint is `me` modulo `n`.

A partition holds its part of the visited set, of the frontier (packed words and each row's
index in the whole level, in the one-process order), and of the parent links. A level is
expanded in three steps the driver sequences: `expand` runs the transitions over this
partition's frontier and returns one block of candidate rows per owner; `absorb` takes the
blocks addressed here, keeps each unseen state's least serial number (parent's index times
transitions + 1, plus the transition: the one-process order) and reports what it found;
`commit` stores the new states (up to the driver's stop key) and numbers them within the whole
level from every partition's sorted serial numbers. Everything in and out is a uint64 or int64
array (or an int): no objects cross the network.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..loader import load_model
from ..vector.search import VectorModel
from ..vector.visited import FingerprintTable

NONE = np.iinfo(np.int64).max  # no stop key
STEP, DEADLOCK = 0, 1  # kinds of the events `expand` reports (the driver ranks the others after them)
BATCH = 1 << 14  # frontier rows expanded at a time


class BadBlock(Exception):
    """A block of rows that is not what a partition sends."""


def owners(fps: np.ndarray, n: int) -> np.ndarray:
    """The partition owning each fingerprint (independent of the visited table's home slots, which
    use the high bits)."""
    return (fps % np.uint64(n)).astype(np.int64)


def least_per_key(fps: np.ndarray, serial: np.ndarray) -> np.ndarray:
    """Indices of the occurrence with the least serial number of each distinct fingerprint."""
    order = np.lexsort((serial, fps))
    f = fps[order]
    first = np.ones(len(f), dtype=bool)
    first[1:] = f[1:] != f[:-1]
    return order[first]


class Partition:
    """A partition's state and its steps; runs inside a Ray actor (or directly, in tests)."""

    def __init__(self, me: int, n: int, spec: str, params: dict[str, int], invariants: list[str] | None,
                 deadlock: bool):
        self.me, self.n, self.deadlock = me, n, deadlock
        self.vm = VectorModel(load_model(spec, params, invariants=invariants))
        self.layout, self.program = self.vm.layout, self.vm.program
        self.k = self.layout.words
        self.T1 = self.vm.ntrans + 1
        self.constrained = bool(self.vm.model.constraint_names)
        self.checks = bool(self.vm.model.invariant_names)
        self.table = FingerprintTable()
        self.frontier = np.zeros((self.k, 0), dtype=np.uint64)
        self.index = np.zeros(0, dtype=np.int64)
        self.links: list[np.ndarray] = []  # per level: (2, m) fingerprint, parent fingerprint (0: initial)
        self.pending: tuple[np.ndarray, ...] = ()
        self.last_bad: np.ndarray | None = None

    def pid(self) -> int:
        return os.getpid()

    def identity(self) -> list[int]:
        """The packing this partition computed (the driver checks that every partition agrees)."""
        return [self.layout.bits, self.k, self.vm.ntrans]

    # -- state ----------------------------------------------------------------------------------
    def restore(self, frontier: np.ndarray, index: np.ndarray, *links: np.ndarray) -> int:
        """Start from a frontier (with its rows' indices in the level) and the parent links so far."""
        frontier, index = self._check(frontier, self.k), np.asarray(index, dtype=np.int64)
        if index.shape != (frontier.shape[1],):
            raise BadBlock("a frontier's indices do not match its rows")
        self.frontier, self.index = frontier, index
        self.table = FingerprintTable()
        self.links = [self._check(lk, 2) for lk in links]
        for lk in self.links:
            if lk.shape[1]:
                self.table.add(lk[0].copy())
        return self.table.size

    def snapshot(self) -> tuple[np.ndarray, np.ndarray]:
        """The frontier and its indices (the links are taken level by level with `level_links`)."""
        return self.frontier, self.index

    def level_links(self, level: int) -> np.ndarray:
        return self.links[level]

    def _check(self, block: Any, columns: int) -> np.ndarray:
        if not isinstance(block, np.ndarray) or block.dtype != np.uint64 or block.ndim != 2 \
                or block.shape[0] != columns:
            raise BadBlock(f"expected a ({columns}, rows) uint64 block")
        return block

    # -- a level ----------------------------------------------------------------------------------
    def _batches(self):
        for start in range(0, self.frontier.shape[1], BATCH):
            words = np.ascontiguousarray(self.frontier[:, start:start + BATCH])
            yield words, self.index[start:start + BATCH], self.program.batch(words, words.shape[1])

    def _moved(self, words: np.ndarray, outs: list):
        """(rows, transitions, candidate words) of the successors that differ from their parent."""
        rows, tids, cands = [], [], []
        n = words.shape[1]
        for tid, (idx, deltas, _fail) in enumerate(outs):
            if not idx.size or all(d is None for d in deltas):
                continue
            moved = np.zeros(idx.size, dtype=bool)
            for d in deltas:
                if d is not None:
                    moved |= d != 0
            sel = moved.nonzero()[0]
            r = sel if idx.size == n else idx[sel]
            block = words[:, r].copy()
            for w, d in enumerate(deltas):
                if d is not None:
                    block[w] ^= d[sel]
            rows.append(r)
            tids.append(np.full(len(r), tid, dtype=np.int64))
            cands.append(block)
        if not rows:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((self.k, 0), np.uint64)
        return np.concatenate(rows), np.concatenate(tids), np.concatenate(cands, axis=1)

    def _events(self, words: np.ndarray, index: np.ndarray, outs: list) -> list[tuple[int, int]]:
        """(serial key, kind) of this batch's first failing step per transition and first deadlock."""
        ev = []
        for tid, (_idx, _d, fail) in enumerate(outs):
            if fail is not None and fail.any():
                ev.append((int(index[int(np.argmax(fail))]) * self.T1 + tid, STEP))
        if self.deadlock:
            live = np.zeros(words.shape[1], dtype=bool)
            for idx, _d, _f in outs:
                live[idx] = True
            if not live.all():
                ev.append((int(index[int(np.argmin(live))]) * self.T1 + self.T1 - 1, DEADLOCK))
        return ev

    def expand(self) -> list[np.ndarray]:
        """One block per owner (rows: fingerprint, parent fingerprint, serial key, words), then
        [generated, first event key, its kind], then the rows sent to each owner."""
        parts: list[list[np.ndarray]] = [[] for _ in range(self.n)]
        generated, events = 0, []
        for words, index, outs in self._batches():
            generated += sum(o[0].size for o in outs)
            events += self._events(words, index, outs)
            rows, tids, cands = self._moved(words, outs)
            if not len(rows):
                continue
            fps = self.layout.fingerprints(cands)
            serial = index[rows] * self.T1 + tids
            keep = least_per_key(fps, serial)
            fps, serial, cands, rows = fps[keep], serial[keep], cands[:, keep], rows[keep]
            parents = self.layout.fingerprints(words)[rows]
            own = owners(fps, self.n)
            for o in range(self.n):
                sel = (own == o).nonzero()[0]
                if sel.size:
                    parts[o].append(np.vstack([fps[sel], parents[sel], serial[sel].astype(np.uint64), cands[:, sel]]))
        blocks = [np.concatenate(p, axis=1) if p else np.zeros((3 + self.k, 0), np.uint64) for p in parts]
        key, kind = min(events) if events else (NONE, -1)
        sent = np.array([b.shape[1] for b in blocks], dtype=np.int64)
        return blocks + [np.array([generated, key, kind], dtype=np.int64), sent]

    def absorb(self, *blocks: np.ndarray) -> list[np.ndarray]:
        """Take in this partition's candidates: [sorted serial keys of the new states, [new states,
        first invariant violation's key, first violation outside the constraints' key]]."""
        for b in blocks:
            self._check(b, 3 + self.k)
        rec = np.concatenate(blocks, axis=1) if blocks else np.zeros((3 + self.k, 0), np.uint64)
        fps, parents, serial, words = rec[0], rec[1], rec[2].astype(np.int64), rec[3:]
        if fps.size and (owners(fps, self.n) != self.me).any():
            raise BadBlock("a block holds states another partition owns")
        first = least_per_key(fps, serial)
        fresh = first[~self.table.contains(fps[first])]
        fresh = fresh[np.argsort(serial[fresh], kind="stable")]
        m = len(fresh)
        cand = np.ascontiguousarray(words[:, fresh])
        inside = ~self.program.outside(cand, m) if self.constrained and m else np.ones(m, dtype=bool)
        bad = self.program.bad(cand, m) if self.checks and m else np.zeros(m, dtype=bool)
        out_bad = (~inside & bad).nonzero()[0]
        self.last_bad = None
        last_key = NONE
        if out_bad.size:
            j = int(out_bad[0])
            last_key = int(serial[fresh[j]])
            self.last_bad = np.concatenate([[parents[fresh[j]]], cand[:, j]])
        new = inside.nonzero()[0]
        keys = serial[fresh[new]]
        nbad = bad[new].nonzero()[0]
        inv_key = int(keys[nbad[0]]) if nbad.size else NONE
        self.pending = (keys, fps[fresh[new]], parents[fresh[new]], cand[:, new])
        return [keys, np.array([len(keys), inv_key, last_key], dtype=np.int64)]

    def commit(self, limit: int, inclusive: bool, *all_keys: np.ndarray) -> list[int]:
        """Store the pending new states with keys below `limit` (or up to it) as the next frontier,
        each numbered by its rank among every partition's new states: [stored, visited table bytes]."""
        keys, fps, parents, words = self.pending
        cut = int(np.searchsorted(keys, limit, side="right" if inclusive else "left"))
        keys, fps, parents, words = keys[:cut], fps[:cut], parents[:cut], words[:, :cut]
        rank = np.zeros(cut, dtype=np.int64)
        for other in all_keys:
            rank += np.searchsorted(np.asarray(other, dtype=np.int64), keys, side="left")
        self.table.add(fps)
        self.links.append(np.stack([fps, parents]))
        self.frontier, self.index = words, rank
        self.pending = ()
        return [cut, self.table.nbytes]

    def settle(self, limit: int, inclusive: bool) -> int:
        """Steps this partition's frontier generates with serial keys below `limit` (or up to it)."""
        total = 0
        for _words, index, outs in self._batches():
            for tid, (idx, _d, _f) in enumerate(outs):
                keys = index[idx] * self.T1 + tid
                total += int(np.count_nonzero(keys <= limit if inclusive else keys < limit))
        return total

    # -- counterexamples ------------------------------------------------------------------------
    def row_with_index(self, i: int) -> np.ndarray:
        """The packed words of the frontier row numbered `i` in its level."""
        at = int(np.searchsorted(self.index, i))
        return self.frontier[:, at].copy()

    def pending_with_key(self, key: int) -> np.ndarray:
        """[parent fingerprint, words] of a new state found by `absorb`, by serial key; `key` -1:
        the first violation outside the constraints."""
        if key < 0:
            assert self.last_bad is not None
            return self.last_bad
        keys, _fps, parents, words = self.pending
        j = int(np.searchsorted(keys, key))
        return np.concatenate([[parents[j]], words[:, j]])

    def parent(self, fp: int) -> list[int]:
        """[found, parent fingerprint (0 for an initial state)] from this partition's links."""
        for lk in reversed(self.links):
            hit = np.flatnonzero(lk[0] == np.uint64(fp))
            if hit.size:
                return [1, int(lk[1, hit[0]])]
        return [0, 0]

    # -- at the depth bound -----------------------------------------------------------------------
    def probe_expand(self) -> list[np.ndarray]:
        """Per owner, (fingerprint, parent's index) of every successor that moves; then [first row index
        with a failing step, first deadlocked row index]."""
        parts: list[list[np.ndarray]] = [[] for _ in range(self.n)]
        fail_at = dead_at = NONE
        for words, index, outs in self._batches():
            for _idx, _d, fail in outs:
                if fail is not None and fail.any():
                    fail_at = min(fail_at, int(index[int(np.argmax(fail))]))
            if self.deadlock:
                live = np.zeros(words.shape[1], dtype=bool)
                for idx, _d, _f in outs:
                    live[idx] = True
                if not live.all():
                    dead_at = min(dead_at, int(index[int(np.argmin(live))]))
            rows, _tids, cands = self._moved(words, outs)
            if not len(rows):
                continue
            fps = self.layout.fingerprints(cands)
            own = owners(fps, self.n)
            for o in range(self.n):
                sel = (own == o).nonzero()[0]
                if sel.size:
                    parts[o].append(np.vstack([fps[sel], index[rows[sel]].astype(np.uint64), cands[:, sel]]))
        blocks = [np.concatenate(p, axis=1) if p else np.zeros((2 + self.k, 0), np.uint64) for p in parts]
        return blocks + [np.array([fail_at, dead_at], dtype=np.int64)]

    def probe_absorb(self, *blocks: np.ndarray) -> int:
        """The least parent index among candidates that are unseen and inside the constraints."""
        for b in blocks:
            self._check(b, 2 + self.k)
        rec = np.concatenate(blocks, axis=1) if blocks else np.zeros((2 + self.k, 0), np.uint64)
        fresh = ~self.table.contains(rec[0])
        if self.constrained and fresh.any():
            sub = fresh.nonzero()[0]
            fresh[sub] = ~self.program.outside(np.ascontiguousarray(rec[2:, sub]), len(sub))
        return int(rec[1, fresh].astype(np.int64).min()) if fresh.any() else int(NONE)
