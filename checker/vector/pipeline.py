"""A level of the two-thread vector search, its batches pipelined across the two threads.

Each batch goes through three phases, each split between the threads: generation (each thread runs
the fused kernel over half of the rows, sorting the candidates by table), insertion (each thread
inserts into its own table) and gathering (each thread merges the tables' new states and gathers
one half of them). Phase by phase with a barrier between, whichever thread finishes a phase first
waits for the other. Here each thread instead runs, batch after batch,

    insert batch i, generate its half of batch i + 1, gather its half of batch i

so a thread that finishes inserting early generates the next batch while the other still inserts;
a phase waits only for what it reads. Batch i + 1 is generated into the second of two sets of
scratch arrays while batch i is gathered from the first.

The first thread also reads the frontier two batches ahead, and adds each batch's new states to
the search, in order, after inserting the next one. A batch with a stop (a violation or the state
bound) raises there, as in the one-thread search; the next batch's keys may already be in the
visited tables, which after a stop only the reported table size can show. Searches with state
constraints do not run this way (`VectorSearch.routed`). Under a partial-order reduction a batch's
insertion starts with the cycle proviso: each thread marks the rows whose reduced successors its own
table holds from an earlier level (`probe_part`), then waits for the other's marks before inserting.

A level is read in batches of at most a quarter of its rows (`LEVEL_BATCHES`, down to `MIN_BATCH`), so
that a level of one or two of the search's batches is pipelined too: a single batch would leave
every phase's wait for the slower thread, and the level's last gather, unshared.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np

from .spool import Spool

LEVEL_BATCHES = 4  # a level is cut into at least this many batches (of `MIN_BATCH` rows or more), so that they overlap
MIN_BATCH = 1 << 13


class Stages(Protocol):
    """What the pipeline needs of a search (`search.VectorSearch`): its batch's steps, each on part of
    the rows, one table or one range of new states."""

    batch: int
    scratch: tuple
    vm: Any
    layout: Any
    insert_pool: Any
    por: Any

    def gen_rows(self, words: np.ndarray, lo: int, hi: int, k: int, scratch: Any, info: np.ndarray,
                 routes: list | None) -> int: ...

    def fused_prepared(self, words: np.ndarray, base: int, scratch: Any, halves: list, infos: list,
                       counts: list, routes: list | None) -> Any: ...

    def probe_part(self, b: Any, part: int) -> None: ...

    def settle_reduction(self, b: Any) -> None: ...

    def insert_part(self, b: Any, part: int, progress_of_level: float, outputs: list) -> int: ...

    def new_states(self, runs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, ...]: ...

    def halves_of_new(self, m: int) -> list[tuple[int, int]]: ...

    def merge_part(self, b: Any, runs: list[tuple[np.ndarray, np.ndarray]], lo: int, hi: int,
                   new: tuple[np.ndarray, ...]) -> int: ...

    def commit(self, b: Any, level: int, nxt: Spool, links: Spool, cap: int, level_size: int, nfps: np.ndarray,
               nwords: np.ndarray, new_links: np.ndarray | None, ukeys: np.ndarray, first_bad: int) -> None: ...


class _Abandoned(Exception):
    """The other thread stopped the level (it raised); this one leaves it."""


class _Batch:
    """One batch on its way through the pipeline."""

    def __init__(self, words: np.ndarray, base: int, slot: int):
        self.words, self.base, self.slot = words, base, slot
        n = words.shape[1]
        self.halves = [(0, n // 2), (n // 2, n)]
        self.infos = [np.zeros(4, dtype=np.int64) for _ in range(2)]
        self.stored = [0, 0]  # candidates stored, per half of the rows
        self.routes: list = [[], []]
        self.prepared: Any = None  # the search's prepared batch, once both halves are generated
        self.runs: list = [None, None]  # per table: (positions, fingerprints) of its new states
        self.new: tuple | None = None  # the new states' arrays (`VectorSearch.new_states`)
        self.first_bad = [-1, -1]
        self.settled = False  # a reduction's counts, once both tables are probed


class LevelPipeline:
    """Expands one level's frontier on two threads (this one and the search's second)."""

    def __init__(self, search: Stages, frontier: Spool, level: int, nxt: Spool, links: Spool, cap: int,
                 outputs: list[list[Any]]):
        self.s, self.level, self.nxt, self.links, self.cap = search, level, nxt, links, cap
        self.size = len(frontier)
        size = min(search.batch, max(self.size // LEVEL_BATCHES, MIN_BATCH))
        self.source: Iterator[np.ndarray] = frontier.batches(size)
        self.outputs = outputs  # per scratch slot, per table
        self.batches: dict[int, _Batch] = {}  # read and not yet committed, by index in the level
        self.read = 0  # batches read so far
        self.next_base = 0  # the level index of the next batch's first row
        self.ended = False  # every batch of the frontier has been read
        self.done: set[tuple[str, int, int]] = set()  # (phase, thread, batch) finished
        self.cv = threading.Condition()
        self.failed = False
        self.lock = threading.Lock()

    # -- scheduling ---------------------------------------------------------------------------------
    def _finish(self, phase: str, k: int, i: int) -> None:
        with self.cv:
            self.done.add((phase, k, i))
            self.cv.notify_all()

    def _await(self, phase: str, k: int, i: int) -> None:
        with self.cv:
            self.cv.wait_for(lambda: self.failed or (phase, k, i) in self.done)
            if self.failed:
                raise _Abandoned

    def _read(self) -> bool:
        """Read the frontier's next batch (if any is left); whether there was one."""
        words = next(self.source, None)
        with self.cv:
            if words is None:
                self.ended = True
            else:
                self.batches[self.read] = _Batch(np.ascontiguousarray(words), self.next_base, self.read % 2)
                self.read += 1
                self.next_base += words.shape[1]
            self.cv.notify_all()
        return words is not None

    def _has(self, i: int) -> bool:
        """Whether the frontier has a batch i (waiting until the first thread has read that far)."""
        with self.cv:
            self.cv.wait_for(lambda: self.failed or self.ended or self.read > i)
            if self.failed:
                raise _Abandoned
            return self.read > i

    def run(self) -> None:
        """Expand the level; a stop raises as in the one-thread search."""
        s = self.s
        if not self._read():
            return
        self._read()  # the first thread reads two batches ahead, so the second never waits for one
        for scratch in s.scratch:  # both sets, before the threads write into them
            scratch.fit_fused(s.batch * s.vm.ntrans, s.layout.words, s.batch, s.por is not None)
        other = s.insert_pool.submit(self._lane, 1)
        try:
            self._lane(0)
        except _Abandoned:  # the second thread failed first: its error is the one to see
            other.result()
            raise
        except BaseException:  # a stop (or an error) here: the second thread leaves at its next wait
            other.exception()
            raise
        other.result()

    # -- one thread -----------------------------------------------------------------------------------
    def _lane(self, k: int) -> None:
        """Thread k's part of every batch, in pipeline order; the first thread also reads the frontier and
        adds each batch's new states to the search."""
        try:
            self._generate(k, 0)
            i = 0
            while True:
                if k == 0:
                    self._read()  # batch i + 2
                more = self._has(i + 1)
                self._insert(k, i)
                if k == 0 and i:
                    self._commit(i - 1)
                if more:
                    self._generate(k, i + 1)
                self._gather(k, i)
                if not more:
                    break
                i += 1
            if k == 0:
                self._commit(i)
        except BaseException:
            with self.cv:
                self.failed = True
                self.cv.notify_all()
            raise

    def _generate(self, k: int, i: int) -> None:
        b, s = self.batches[i], self.s
        if i >= 2:  # its scratch slot was batch i - 2's: the other thread must be done gathering from it
            self._await("gather", 1 - k, i - 2)
        b.stored[k] = s.gen_rows(b.words, *b.halves[k], k, s.scratch[b.slot], b.infos[k], b.routes)
        self._finish("gen", k, i)

    def _prepared(self, i: int) -> Any:
        """Batch i, prepared for insertion once both halves are generated (by whichever thread asks first)."""
        b = self.batches[i]
        self._await("gen", 1, i)
        self._await("gen", 0, i)
        with self.lock:
            if b.prepared is None:
                b.prepared = self.s.fused_prepared(b.words, b.base, self.s.scratch[b.slot], b.halves, b.infos,
                                                   b.stored, b.routes)
        return b.prepared

    def _insert(self, k: int, i: int) -> None:
        b = self.batches[i]
        p = self._prepared(i)
        if p.reduced is not None:  # the cycle proviso reads both tables: each thread probes its own, then waits
            self.s.probe_part(p, k)
            self._finish("probe", k, i)
            self._await("probe", 1 - k, i)
            with self.lock:
                if not b.settled:
                    self.s.settle_reduction(p)
                    b.settled = True
        out = self.outputs[b.slot]
        m = self.s.insert_part(p, k, (b.base + b.words.shape[1]) / self.size, out)
        b.runs[k] = (out[k].k[:m], out[k].fp[:m])
        self._finish("insert", k, i)

    def _gather(self, k: int, i: int) -> None:
        b = self.batches[i]
        self._await("insert", 1 - k, i)
        with self.lock:
            if b.new is None:
                b.new = self.s.new_states(b.runs)
        ranges = self.s.halves_of_new(len(b.new[0]))
        if k < len(ranges):
            b.first_bad[k] = self.s.merge_part(b.prepared, b.runs, *ranges[k], b.new)
        self._finish("gather", k, i)

    def _commit(self, i: int) -> None:
        b = self.batches[i]
        self._await("gather", 1, i)
        first, second = b.first_bad
        self.s.commit(b.prepared, self.level, self.nxt, self.links, self.cap, self.size, *b.new[:4],
                      first if first >= 0 else second)
        del self.batches[i]  # its arrays can go
