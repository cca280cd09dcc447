"""Breadth-first search a frontier at a time: the vector engine's single-process search.

Each level's frontier is read in batches of packed states; every transition runs once over a
batch (`compile.VectorProgram`), giving candidate successors. Candidates equal to their parent
are dropped at once (their parent is visited); the rest are fingerprinted and looked up in the
visited table; those not found are put in the scalar engine's order — frontier row, then
transition — and the first occurrence of each fingerprint is a new state, whose parent is the
row that produced it. So the counts, the stopping point of a violation and the counterexample
are those of `lockstep.checker.explicit`, which visits successors in that order one by one.

Counterexamples are rebuilt as the scalar engine rebuilds them: walk the parent links back to
an initial state, then regenerate the path forward with the scalar model, choosing at each
step the successor whose vector fingerprint is the recorded one.
"""

from __future__ import annotations

import mmap
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..explicit.search import Options, _Found, _Search, safe_predicates
from ..progress import Progress, Stats
from ..result import HOLDS, INCONCLUSIVE, VIOLATION, CheckResult
from ..typed_model import TypedModel
from . import kernels
from .compile import VectorProgram
from .cores import CoreJudge
from .layout import Layout, VectorUnsupported
from .pipeline import LevelPipeline
from .spool import Budget, Spool
from .visited import VisitedSet, bitstate_note

if TYPE_CHECKING:  # the thread pools are imported when a search uses two threads (logging comes with them)
    from concurrent.futures import Future, ThreadPoolExecutor

TARGET_CANDIDATES = 1 << 22  # successors per batch the default batch size aims at
MAX_CANDIDATES = 1 << 31  # a batch's candidates are numbered in 32 bits (the positions kept per visited table)
LINKS_IN_MEMORY = 1 << 28  # bytes of parent links kept in memory (32 million states)
WARM_FROM = 1 << 12  # a level of this many states starts building the C loops (unless they are cached)
WARM_AFTER = 1.0  # seconds of search on the numpy loops after which their C form is built in any case
THREADED_LEVEL = 1 << 15  # smaller levels run on one thread (a second one costs more than it saves there)
AHEAD = 4  # ... and the visited set splits in two only when the next two levels hold this many times as many
SPLIT_FROM = 8  # (at a level that must rebuild it, or once it holds this many times as many)


@dataclass
class VectorOptions:
    """Tuning of the vector engine (the defaults suit this machine)."""

    batch: int | None = None  # frontier rows per batch
    memory: int | None = None  # bytes of RAM for frontiers and parent links before they spill to disk
    spill_dir: str | None = None
    checkpoint: Any = None  # a `checkpoint.Checkpoint`: write (or resume) the search at level boundaries
    native: str = "auto"  # the C loops and fused kernel: "auto" (once built), "always" (built first) or "never"
    bitstate: int | None = None  # bytes of a bitstate visited set instead of the exact one (C loops)


class VectorModel:
    """A typed model prepared for the vector engine: its packing and its compiled batch functions."""

    def __init__(self, model: Any):
        if not isinstance(model, TypedModel):
            raise VectorUnsupported("it is a plain spec (init/next functions), which only the scalar engine runs")
        self.model = model
        self.layout = Layout(model.prog)
        self.program = VectorProgram(model.prog, self.layout)
        self.ntrans = len(model.prog.transitions)
        self.symmetry = None
        if model.symmetry:
            from .symmetry import BatchSymmetry

            self.symmetry = BatchSymmetry(model.sym, self.layout)

    def canonical(self, words: np.ndarray) -> np.ndarray:
        """The packed canonical forms of a batch's rows (the rows themselves without symmetry reduction)."""
        return words if self.symmetry is None else self.symmetry(words)


class _VectorFingerprints:
    """The scalar model, seen through vector fingerprints (to follow the vector engine's parent links)."""

    def __init__(self, model: Any, layout: Layout):
        self._model = model
        self.fingerprint = layout.fingerprint_state

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


class _Stop(Exception):
    """The search stops inside a batch: a violation (`found`) or the state bound (`found` None)."""

    def __init__(self, found: _Found | None, queued: int = 0):
        self.found, self.queued = found, queued


class Candidates:
    """One batch's candidate successors, laid out transition-major: candidate j is the successor of
    frontier row `rows[j]` whose words are that row's XOR `deltas[:, j]`; segment s (from
    `seg_start[s]` to `seg_start[s + 1]`) holds transition `seg_tid[s]`'s candidates, rows ascending.
    A zero delta is a step back to the parent itself."""

    def __init__(self, words: np.ndarray, outs: list):
        self.words, self.outs = words, outs
        n, k = words.shape[1], words.shape[0]
        parts = []
        for tid, (idx, deltas, _fail) in enumerate(outs):
            if idx.size and any(d is not None for d in deltas):
                parts.append((tid, idx, deltas))
        sizes = [len(idx) for _t, idx, _d in parts]
        self.seg_start = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.seg_start[1:])
        self.seg_tid = np.array([t for t, _i, _d in parts], dtype=np.int64)
        total = int(self.seg_start[-1])
        self.rows = np.empty(total, dtype=np.int64)
        self.deltas = np.zeros((k, total), dtype=np.uint64)
        for s, (_tid, idx, deltas) in enumerate(parts):
            a, b = self.seg_start[s], self.seg_start[s + 1]
            self.rows[a:b] = idx if idx.size < n else np.arange(n)
            for w, d in enumerate(deltas):
                if d is not None:
                    self.deltas[w, a:b] = d
        self.n = n

    def __len__(self) -> int:
        return len(self.rows)

    def row_of(self, sel: np.ndarray) -> np.ndarray:
        return self.rows[sel]

    def serial(self, sel: np.ndarray, base: int) -> np.ndarray:
        """Serial keys, within the level, of candidates `sel` of the batch that starts at row `base`."""
        return (base + self.rows[sel]) * (len(self.outs) + 1) + self.tids()[sel]
    def tids(self) -> np.ndarray:
        """Each candidate's transition."""
        return np.repeat(self.seg_tid, np.diff(self.seg_start))

    def moved(self) -> np.ndarray:
        """Which candidates differ from their parent."""
        return (self.deltas != 0).any(axis=0)

    def states(self, sel: np.ndarray | None = None) -> np.ndarray:
        """The words of candidates `sel` (all by default)."""
        if sel is None:
            return self.words[:, self.rows] ^ self.deltas
        return self.words[:, self.rows[sel]] ^ self.deltas[:, sel]


class FusedCandidates:
    """One batch's candidate successors as the fused kernel writes them, already in serial order:
    candidate j is the successor of row `keys[j] // T1` by transition `keys[j] % T1`, with words
    `cand[:, j]` (only those that differ from their row)."""

    def __init__(self, words: np.ndarray, cand: np.ndarray, keys: np.ndarray, T1: int):  # noqa: N803
        self.words, self.cand, self.keys, self.T1 = words, cand, keys, T1
        self.n = words.shape[1]

    def __len__(self) -> int:
        return len(self.keys)

    def row_of(self, sel: np.ndarray) -> np.ndarray:
        return self.keys[sel] // self.T1

    def serial(self, sel: np.ndarray, base: int) -> np.ndarray:
        """Serial keys, within the level, of candidates `sel` of the batch that starts at row `base`."""
        return base * self.T1 + self.keys[sel]

    def states(self, sel: np.ndarray | None = None) -> np.ndarray:
        """The words of candidates `sel` (all by default)."""
        return self.cand if sel is None else self.cand[:, sel]


def _buffer(shape: int | tuple[int, int], dtype: type) -> np.ndarray:
    """A zeroed array reused from batch to batch, in ordinary pages: it is written in order, so huge pages
    would not save TLB misses, and faulting in a huge page can cost far more (it needs 2 MiB at once)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if size < 1 << 20:
        return np.zeros(shape, dtype=dtype)
    return np.frombuffer(mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS), dtype=dtype).reshape(shape)


class _Scratch:
    """Arrays reused from batch to batch (fresh large arrays cost a page fault per page)."""

    def __init__(self) -> None:
        self.order = np.zeros(0, dtype=np.int64)
        self.tids = np.zeros(0, dtype=np.int64)
        self.cand = np.zeros((0, 0), dtype=np.uint64)  # the fused kernel's outputs
        self.fps = np.zeros(0, dtype=np.uint64)
        self.keys = np.zeros(0, dtype=np.int64)
        self.routes = [[np.zeros(0, dtype=np.int32)] * 2] * 2  # per half of the rows, per table: positions
        self.counts = np.zeros((2, 2), dtype=np.int64)  # per half, per table: how many positions
        # a partial-order reduction in the fused kernel: per candidate its proviso flag; per row its enabled
        # steps, the size of its reduced set (-1: none) and, per table, the cycle proviso's marks
        self.flags = np.zeros(0, dtype=np.uint8)
        self.ren = np.zeros(0, dtype=np.int32)
        self.ramp = np.zeros(0, dtype=np.int32)
        self.back = np.zeros((2, 0), dtype=np.uint8)

    def fit(self, m: int) -> None:
        if len(self.order) < m:
            m = max(m, int(1.25 * len(self.order)))
            self.order = _buffer(m, np.int64)
            self.tids = _buffer(m, np.int64)

    def fit_fused(self, m: int, words: int, rows: int = 0, por: bool = False) -> None:
        if self.cand.shape[1] < m:
            self.cand = _buffer((words, m), np.uint64)
            self.fps = _buffer(m, np.uint64)
            self.keys = _buffer(m, np.int64)
            self.routes = [[_buffer(m, np.int32) for _p in range(2)] for _h in range(2)]
        if por and self.flags.size < m:
            self.flags = _buffer(m, np.uint8)
        if por and self.ren.size < rows:
            self.ren = np.zeros(rows, dtype=np.int32)
            self.ramp = np.zeros(rows, dtype=np.int32)
            self.back = np.zeros((2, rows), dtype=np.uint8)


class _Outputs:
    """The insertion pass's outputs, reused from batch to batch."""

    def __init__(self) -> None:
        self.k = np.zeros(0, dtype=np.int64)
        self.fp = np.zeros(0, dtype=np.uint64)
        self.mine = np.zeros(0, dtype=np.int32)  # the positions of the table's own candidates (two tables)

    def fit(self, m: int) -> None:
        if len(self.k) < m:
            m = max(m, int(1.25 * len(self.k)))
            self.k = _buffer(m, np.int64)
            self.fp = _buffer(m, np.uint64)
            self.mine = _buffer(m, np.int32)


@dataclass
class Prepared:
    """A frontier batch with its candidates in serial order, ready for the visited table: what does not
    depend on the table, so it can be computed for the next batch while this one is inserted."""

    words: np.ndarray
    base: int  # the batch's first row's index in the level
    c: Candidates | FusedCandidates
    order: np.ndarray | None  # candidate positions in serial order (a view of a scratch array; None: fused)
    tids: np.ndarray | None  # their transitions
    allow: np.ndarray  # which candidates may be stored: inside the constraints and kept by the reduction
    stops: list  # (serial key, kind, detail) of step failures, deadlocks and constraint-hidden violations
    enabled: int  # successors generated
    explored: list | None  # per transition, the rows whose step counts as generated (None: not yet computed)
    hidden: np.ndarray  # candidates outside the constraints that violate an invariant
    fingerprints: tuple  # (fingerprints, serial positions or None for 0.., count) of the allowed candidates that moved
    por: tuple | None = None  # (ample, reduced, enabled) of the partial-order reduction, before its proviso
    segments: tuple | None = None  # fused on two threads: the (start, stop) stretches of the outputs, in order
    routes: list | None = None  # routed: per table, (positions, count) of its candidates in each stretch
    reduced: tuple | None = None  # a reduction in the fused kernel: the scratch's (flags, ren, ramp, back)

NO_FILTER = np.zeros(0, dtype=np.bool_)
NO_HIDDEN = np.zeros(0, dtype=np.int64)


class VectorSearch:
    """One process's breadth-first search over packed states."""

    def __init__(self, vm: VectorModel, opts: Options, progress: Progress, vopts: VectorOptions):
        self.vm, self.opts, self.progress = vm, opts, progress
        self.layout, self.program, self.model = vm.layout, vm.program, vm.model
        self.budget = Budget(vopts.memory, vopts.spill_dir)  # frontiers
        # parent links are read only to rebuild a counterexample: past a little memory they go to disk at once
        self.link_budget = Budget(min(self.budget.limit, LINKS_IN_MEMORY), vopts.spill_dir)
        self.batch = vopts.batch or int(np.clip(TARGET_CANDIDATES // max(vm.ntrans, 1), 1 << 10, 1 << 20))
        if self.batch * max(vm.ntrans, 1) >= MAX_CANDIDATES:
            raise ValueError(f"a batch of {self.batch:,} rows has {self.batch * vm.ntrans:,} candidate successors; "
                             f"the vector engine numbers a batch's candidates in 32 bits: use a smaller batch")
        if vopts.bitstate is not None and vopts.checkpoint is not None:
            raise ValueError("a bitstate search is not checkpointed: its visited set holds no fingerprints to resume from")
        self.table = VisitedSet(bitstate=vopts.bitstate)
        self.bitstate = vopts.bitstate
        self.bit_ops = kernels.bitstate_backend() if vopts.bitstate is not None else None  # its C loops
        constrained = bool(vm.model.constraint_names)
        self.por: VectorReduction | None = None
        if opts.por:
            from ..reduction.ample import for_model
            from .reduced import VectorReduction

            self.por = VectorReduction(for_model(vm.model), vm.layout, vm.ntrans)
        self.started = time.monotonic()  # `run` restarts it
        self.native = kernels.Native(vm.model.prog, vm.layout, not (opts.por and constrained), vopts.native,
                                     reduction=self.por.red if self.por is not None else None,
                                     symmetry=vm.symmetry)
        self.k = kernels.backend()  # the loops in use: C once loaded, numpy before
        self.fused = self.native.fused if self.native.loaded else None  # the spec's C successor function
        self.scratch = (_Scratch(), _Scratch())  # two, so that the next batch is prepared while one is inserted
        self.outputs = [_Outputs()]
        self.spare_outputs: list[_Outputs] = []  # two tables, pipelined: the outputs of every other batch
        self.threads = 1
        self.threaded_level = THREADED_LEVEL
        self.judge_cores = False  # whether levels go to one thread while no second core is to be had
        self.cores = CoreJudge()  # whether the levels get a second core (`judge_cores`)
        self.crowded_levels = 0  # levels large enough for two threads that ran on one for want of a core
        self.insert_pool: ThreadPoolExecutor | None = None
        self.split = False  # this level runs on two threads
        self.tbits = max(vm.ntrans - 1, 1).bit_length()  # a parent link: parent's index << tbits | transition
        self.levels: list[Spool] = []  # parent links per level (level 0: the index among the initial states)
        self.initial_words = np.zeros((self.layout.words, 0), dtype=np.uint64)
        self.helper = _Search(_VectorFingerprints(vm.model, vm.layout), opts, progress)  # reports violations
        self.distinct = self.generated = self.depth = 0
        self.cut: str | None = None
        self.at: tuple[int, int] | None = None  # (level, index) of the state a violation is reported at
        self.handoff: int | None = None  # stop at the first level with this many states, for workers
        self.handed_off: tuple[Spool, int] | None = None
        self.level_fps: list[list[np.ndarray]] = []  # each level's fingerprints, kept only when handing off
        self.constrained = bool(vm.model.constraint_names)
        self.checks_invariants = bool(vm.model.invariant_names)
        self.expected = 0  # new states this level is expected to add (from the last levels' growth)
        self.seed_fp, self.exact = np.uint64(self.layout.seed), self.layout.exact
        self.checkpoint = vopts.checkpoint
        self.fp_levels = 0  # leading levels resumed from a checkpoint, their links (fingerprint, parent fingerprint)
        self.resumed_frontier: Spool | None = None  # the frontier a resumed search started from

    def use_threads(self, threads: int, threaded_level: int = THREADED_LEVEL, judge_cores: bool = False) -> None:
        """Search with two threads (more do not pay on this design): from the first level of `threaded_level`
        states on, the visited set is two tables, inserted into at once, and each batch is generated in
        halves, the batches pipelined across the threads where every candidate is stored (`pipeline`), or,
        without the fused kernel, prepared while the one before it is inserted; before, the search is the
        one-thread search. With `judge_cores`, levels run on one thread while the machine gives the search no
        second core (`cores`). Call before `run`."""
        if threads < 2:
            return
        if self.bitstate is not None:  # bits cannot be split later, as keys are: two tables from the start
            self.table = VisitedSet(2, bitstate=self.bitstate)
        self.threads, self.threaded_level, self.judge_cores = 2, threaded_level, judge_cores
        from concurrent.futures import ThreadPoolExecutor

        self.insert_pool = ThreadPoolExecutor(1, thread_name_prefix="lockstep-insert")

    def _use_native(self, level_size: int) -> None:
        """Move to the C loops once they are built. A level of `WARM_FROM` states, or `WARM_AFTER` seconds of
        search, starts their build: a search of small levels that is slow on numpy (reduced or symmetric levels)
        gets them too, and a build still running when the search ends fills the cache for the next one."""
        if not self.native.loaded and (level_size >= WARM_FROM or time.monotonic() - self.started >= WARM_AFTER):
            self.native.start()
        if self.native.ready():
            self.k = kernels.backend()
            self.fused = self.native.fused

    def close(self) -> None:
        self.native.cancel()
        if self.insert_pool is not None:
            self.insert_pool.shutdown()
        for s in self.levels:
            s.close()
        if self.resumed_frontier is not None:
            self.resumed_frontier.close()
        self.budget.close()
        self.link_budget.close()

    # -- parent links ---------------------------------------------------------------------------
    def link(self, parents: np.ndarray, tids: np.ndarray) -> np.ndarray:
        """Parent links of new states: their parents' indices in the previous level and transitions."""
        return (parents.astype(np.uint64) << np.uint64(self.tbits)) | tids.astype(np.uint64)

    def path_fingerprints(self, level: int, index: int) -> list[int]:
        """The fingerprints of the path from an initial state to state `index` of `level`: the parent
        links give each step's transition, which the compiled program re-runs on one state at a time
        (under symmetry reduction, on the representative each step stored)."""
        steps = []
        mask = (1 << self.tbits) - 1
        while level > 0 and level >= self.fp_levels:
            link = int(self.levels[level].row(index)[0])
            steps.append(link & mask)
            index, level = link >> self.tbits, level - 1
        if self.resumed_frontier is None:
            root = int(self.levels[0].row(index)[0])
            w = self.initial_words[:, root:root + 1].copy()
            fps = [int(self.layout.fingerprints(w)[0])]
        else:
            w = self.resumed_frontier.row(index)[:, None].copy()
            fps = self._resumed_path(level, int(self.layout.fingerprints(w)[0]))
        for tid in reversed(steps):
            idx, deltas, _fail = self.program.batch(w, 1)[tid]
            assert idx.size == 1, "a recorded step is not enabled"
            for word, d in enumerate(deltas):
                if d is not None:
                    w[word] ^= d
            w = np.ascontiguousarray(self.vm.canonical(w))  # the state stored: its orbit's representative
            fps.append(int(self.layout.fingerprints(w)[0]))
        return fps

    def _resumed_path(self, level: int, fp: int) -> list[int]:
        """The fingerprints of the path to state `fp` of resumed `level`, from the checkpoint's links."""
        path = [fp]
        while level > 0:
            row = self.levels[level].find(0, fp)
            if row is None:
                raise RuntimeError("a counterexample state has no parent in the resumed checkpoint")
            fp, level = int(row[1]), level - 1
            path.append(fp)
        return path[::-1]

    def resumed(self, frontier: Spool) -> None:
        """After a checkpoint's levels (fingerprint, parent fingerprint) were loaded: keep the frontier
        the search resumes from, for counterexamples through it and parent links of later checkpoints."""
        self.fp_levels = len(self.levels)
        self.resumed_frontier = frontier
        fps = [self.layout.fingerprints(w) for w in frontier.batches(self.batch)]
        self.level_fps = [[] for _ in range(self.fp_levels - 1)] + [fps]

    def checkpoint_links(self, written: int) -> list:
        """Each level's parent links in the checkpoint's form, (fingerprint, parent fingerprint) columns
        (parent 0 for an initial state); None for the first `written` levels, which are on disk."""
        out: list = [None] * written
        join = (lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.uint64))
        for lv in range(written, len(self.levels)):
            if lv < self.fp_levels:
                out.append(self.levels[lv])
                continue
            fps = join(self.level_fps[lv])
            parents = np.zeros(len(fps), np.uint64)
            if lv:
                prev = join(self.level_fps[lv - 1])
                for at, links in zip(range(0, len(fps), 1 << 20), self.levels[lv].batches(1 << 20)):
                    parents[at:at + links.shape[1]] = prev[(links[0] >> np.uint64(self.tbits)).astype(np.int64)]
            out.append(np.stack([fps, parents]))
        if self.handoff is None:
            for lv in range(len(self.levels) - 1):  # only the last level's are needed as parents later
                self.level_fps[lv] = []
        return out

    def find_parent(self, fp: int) -> tuple[bool, int | None]:
        """(found, parent fingerprint or None for an initial state) of a state of the levels searched
        before a handoff (their fingerprints are kept then)."""
        fps = [np.concatenate(lv) if lv else np.zeros(0, np.uint64) for lv in self.level_fps]
        for level in range(len(fps) - 1, -1, -1):
            hit = np.flatnonzero(fps[level] == np.uint64(fp))
            if hit.size:
                if level == 0:
                    return True, None
                parent = int(self.levels[level].row(int(hit[0]))[0]) >> self.tbits
                return True, int(fps[level - 1][parent])
        return False, None

    def _keep_fps(self, fps: np.ndarray, new_level: bool = False) -> None:
        """Keep a batch's new fingerprints for the level (a copy: the batch's arrays are scratch, reused by
        the next batch), when a checkpoint or a handoff will need them."""
        if self.handoff is not None or self.checkpoint is not None:
            if new_level:
                self.level_fps.append([])
            self.level_fps[-1].append(fps.copy())

    def parents_on_path(self) -> dict[int, int | None]:
        """The parent fingerprint of each state on the path to `self.at` (for `rebuild_path`)."""
        if self.at is None:
            return {}
        fps = self.path_fingerprints(*self.at)
        return dict(zip(fps, [None] + fps[:-1]))

    # -- main loop --------------------------------------------------------------------------------
    def run(self) -> CheckResult:
        t0 = self.started = time.monotonic()
        found: _Found | None = None
        queued = 0
        try:
            ck = self.checkpoint
            frontier, level = ck.restore(self) if ck is not None and ck.resume else (self._seed(), 0)
            queued = self._bfs(frontier, level)
        except _Found as f:
            found = f
        except _Stop as s:
            found, queued = s.found, s.queued
        secs = time.monotonic() - t0
        res = CheckResult(HOLDS, self.distinct, self.generated, self.depth, secs, queued=queued,
                          workers=self.threads, visited_bytes=self.table.nbytes)
        res.exact_fingerprints = self.layout.exact
        res.notes.append(self._memory_note())
        if self.native.note:
            res.notes.append(self.native.note)
        if self.por is not None:
            res.notes.append(self.por.stats.note())
        if self.bitstate is not None:
            bits = self.table.bit_tables
            for t in bits:
                t.settle()
            res.notes.append(bitstate_note(bits))
            res.bitstate_omitted = sum(t.omitted for t in bits)
        if self.crowded_levels:
            res.notes.append(f"two workers: {self.crowded_levels} level(s) large enough for two threads ran on one, the "
                             "machine giving the search no second core (a busy machine)")
        if found is not None:
            res.verdict = VIOLATION
            res.violation = self.violation(found)
        elif self.cut:
            res.verdict = INCONCLUSIVE
            res.cut = self.cut
        return res

    def violation(self, found: _Found) -> Any:
        self.helper.parents = self.parents_on_path()
        return self.helper._violation(found)

    def _memory_note(self) -> str:
        per = self.table.nbytes / max(self.distinct, 1)
        note = (f"vector engine: states packed into {self.layout.bits} bits ({self.layout.words} word"
                f"{'s' if self.layout.words > 1 else ''}); visited table {per:.1f} bytes per state, "
                f"parent links 8 bytes per state")
        spilled = self.budget.spilled + self.link_budget.spilled
        if spilled:
            note += f"; {spilled / 2**20:,.1f} MiB of frontiers and parent links spilled to disk"
        return note

    def _seed(self) -> Spool:
        m, layout = self.model, self.layout
        bad, outside = safe_predicates(m)
        states = [m.canonical(st) for st in m.initial_states()]
        words = layout.pack_many(states)
        self.initial_words = words
        fps = layout.fingerprints(words) if states else np.zeros(0, np.uint64)
        links = Spool(self.link_budget, 1)
        self.levels.append(links)
        frontier = Spool(self.budget, layout.words)
        seen: set[int] = set()
        kept: list[int] = []  # which initial states are kept, in order
        for j, st in enumerate(states):
            self.generated += 1
            f = int(fps[j])
            if f in seen:
                continue
            if outside is not None and outside(st) >= 0:
                if bad(st):
                    raise self.helper._invariant_violation(f, st)
                continue
            seen.add(f)
            self.at = (0, len(links))
            links.append(np.array([[j]], dtype=np.uint64))
            kept.append(j)
            self.distinct += 1
            if bad(st):
                raise self.helper._invariant_violation(f, st)
            frontier.append(words[:, j:j + 1])
        self.at = None
        self._keep_fps(fps[np.array(kept, dtype=np.int64)], new_level=True)
        self.table.add(np.array(sorted(seen), dtype=np.uint64))
        if len(frontier):
            self.depth = 1
        return frontier

    def _bfs(self, frontier: Spool, level: int = 0) -> int:
        opts = self.opts
        cap = opts.max_states if opts.max_states is not None else sys.maxsize
        while len(frontier):
            if self.handoff is not None and len(frontier) >= self.handoff:
                self.handed_off = (frontier, level)
                return 0
            if opts.max_depth is not None and level >= opts.max_depth:
                if self._frontier_grows(frontier):
                    self.cut = opts.depth_cut()
                return len(frontier)
            nxt = Spool(self.budget, self.layout.words)
            links = Spool(self.link_budget, 1)
            self.levels.append(links)
            self._keep_fps(np.zeros(0, np.uint64), new_level=True)
            self.expected = self.expect(level)
            self._use_native(len(frontier))
            # a small search, whose few levels large enough for two threads cannot repay the split, stays on one
            # thread (TwoPhase RM=7, 0.30 M states: 44 ms on two threads, 40 on one, had it split)
            splittable = (self.threads == 2 and len(frontier) >= self.threaded_level
                          and (len(self.table.parts) == 2 or self._worth_splitting(level)))
            crowded = self.judge_cores and self.cores.crowded
            self.split = splittable and not crowded
            self.crowded_levels += splittable and crowded
            judged = self.judge_cores and splittable  # (a smaller level runs on one thread either way)
            if judged:
                self.cores.start()
            if self.split and len(self.table.parts) == 1:  # from here on the visited set is two tables
                self.table = self.table.split(self.expected, self.expect_after(level), self.insert_pool)
            if len(self.table.parts) == 2 and len(self.outputs) == 1:  # (a bitstate set is two from the start)
                self.outputs = [self.outputs[0], _Outputs()]
                self.spare_outputs = [_Outputs(), _Outputs()]
            self.table.reserve(self.expected, self.insert_pool, self.expect_after(level), self.expect_rest(level))
            if self.por is not None:
                self.por.new_level(len(self.table.parts))
            if self.split and self.routed():
                LevelPipeline(self, frontier, level, nxt, links, cap, [self.outputs, self.spare_outputs]).run()
            else:
                for b in self._prepared(frontier):
                    self._expand(b, level, nxt, links, cap, len(frontier))
            if judged:
                self.cores.end(self.split)
            if frontier is not self.resumed_frontier:
                frontier.close()
            frontier = nxt
            level += 1
            if len(frontier):
                self.depth = level + 1
            if self.checkpoint is not None:
                self.checkpoint.level_done(self, frontier, level)
        return 0

    def _prepared(self, frontier: Spool) -> Iterator[Prepared]:
        """The level's batches, prepared; with two threads, each batch is prepared while the one before
        it is inserted (numpy and the kernels release the GIL, so the two overlap)."""

        if not self.split or self.fused is not None:  # fused on two threads: both run each phase of a batch
            base = 0
            for words in frontier.batches(self.batch):
                yield self.prepare(words, base, self.scratch[0])
                base += words.shape[1]
            return
        size = int(np.clip(len(frontier) // 4, 1 << 10, self.batch))  # several batches, so that they overlap
        base, i = 0, 0
        from concurrent.futures import ThreadPoolExecutor

        pending: Future | None = None
        with ThreadPoolExecutor(1, thread_name_prefix="lockstep-prepare") as pool:
            try:
                for words in frontier.batches(size):
                    nxt = pool.submit(self.prepare, words, base, self.scratch[i % 2])
                    if pending is not None:
                        yield pending.result()
                    pending, base, i = nxt, base + words.shape[1], i + 1
                if pending is not None:
                    yield pending.result()
            finally:
                if pending is not None:
                    pending.cancel()

    def expect(self, level: int) -> int:
        """New states expected from expanding `level`: its size times its growth over the level before."""
        return int(len(self.levels[level]) * self._growth(level))

    def expect_after(self, level: int) -> int:
        """New states expected from expanding the level after `level`, at the same growth."""
        return int(self.expect(level) * self._growth(level))

    def _worth_splitting(self, level: int) -> bool:
        """Whether the one-table visited set should split in two for this level, the first large enough for two
        threads: when the next two levels are expected to hold `AHEAD` times as many states (work enough to
        repay the split and the two tables' costs), at a level that must rebuild the table anyway (the split is
        a rebuild) or once it holds `SPLIT_FROM` times `threaded_level` states."""
        ahead = self.expected + self.expect_after(level) >= AHEAD * self.threaded_level
        return ahead and (self.table.size >= SPLIT_FROM * self.threaded_level
                          or self.table.parts[0].must_grow(self.expected, self.expect_rest(level)))

    def expect_rest(self, level: int) -> int | None:
        """When the levels shrink, every new state still expected: the levels after `level` at its growth (a
        geometric series); None while they grow."""
        g = self._growth(level)
        return int(self.expect(level) / (1 - g)) if g < 1 else None

    def _growth(self, level: int) -> float:
        now = len(self.levels[level])
        before = len(self.levels[level - 1]) if level else 1
        return min(now / max(before, 1), 2.0)

    # -- one batch ----------------------------------------------------------------------------------
    def successors(self, words: np.ndarray) -> Candidates:
        """Run every transition over the batch (under symmetry reduction each successor is its orbit's
        representative: the deltas lead to it)."""
        c = Candidates(words, self.program.batch(words, words.shape[1]))
        if self.vm.symmetry is not None and len(c):
            parents = words[:, c.rows]
            c.deltas = np.ascontiguousarray(parents ^ self.vm.canonical(parents ^ c.deltas))
        return c

    def prepare(self, words: np.ndarray, base: int, scratch: _Scratch) -> Prepared:
        """Everything about a batch that does not depend on the visited table (it runs on a second thread
        while the previous batch is inserted, if the search has two)."""
        if self.fused is not None:
            return self._prepare_fused(words, base, scratch)
        loops = self.k
        n = words.shape[1]
        T1 = self.vm.ntrans + 1
        c = self.successors(words)
        outs = c.outs
        # A reduced search chooses a row's reduced set from all its steps first, so a failing or deadlocked
        # row stops before any of its successors; a full search stops at the failing step.
        reduced = self.por is not None
        stops: list[tuple[int, str, Any]] = []  # (serial key, kind, detail)
        for tid, (_idx, _d, fail) in enumerate(outs):
            if fail is not None and fail.any():
                r = int(np.argmax(fail))
                stops.append(((base + r) * T1 + (-1 if reduced else tid), "step", r))
        if self.opts.deadlock:
            live = np.zeros(n, dtype=bool)
            for idx, _d, _f in outs:
                live[idx] = True
            if not live.all():
                r = int(np.argmin(live))
                stops.append(((base + r) * T1 + (-1 if reduced else T1 - 1), "deadlock", r))
        allow, hidden = NO_FILTER, NO_HIDDEN
        if self.constrained and len(c):
            allow, hidden = self._inside(c)
        por = self.por.choose(words, outs) if reduced else None
        if not reduced and hidden.size:
            self._hidden_stop(c, base, hidden, stops)
        total = len(c)
        scratch.fit(total)
        loops.serial_order(c.rows, c.seg_start, c.seg_tid, c.n, scratch.order, scratch.tids)
        order = scratch.order[:total]
        fingerprints = loops.candidate_fps(c.words, c.rows, c.deltas, order, allow, self.seed_fp, self.exact)
        b = Prepared(words, base, c, order, scratch.tids[:total], allow, stops, sum(o[0].size for o in outs),
                     [o[0] for o in outs], hidden, fingerprints, por)
        return b

    def _prepare_fused(self, words: np.ndarray, base: int, scratch: _Scratch) -> Prepared:
        """`prepare` by the spec's fused kernel: the candidates come out in serial order, fingerprinted (under
        symmetry reduction, their orbits' representatives), and the kernel stops at the batch's first failing
        step or deadlock. On two threads each runs it on half of the rows, into its own stretch of the outputs.
        With a reduction the kernel also chooses each row's reduced set and flags the candidates for the cycle
        proviso, which `settle_reduction` applies once the visited tables can be read."""
        n, nt = words.shape[1], self.vm.ntrans
        scratch.fit_fused(max(n, self.batch) * nt, self.layout.words, max(n, self.batch), self.por is not None)
        words = np.ascontiguousarray(words)
        halves = [(0, n)] if not self.split or n < 2 else [(0, n // 2), (n // 2, n)]
        infos = [np.zeros(4, dtype=np.int64) for _ in halves]
        # candidates stored as generated (two tables) or flagged (a reduction): each thread sorts its half's out
        # by table
        routes: list | None = [None] * len(halves) if (len(halves) == 2 or self.por is not None) and self.routed() \
            else None

        def gen(k: int) -> int:
            return self.gen_rows(words, *halves[k], k, scratch, infos[k], routes)

        if len(halves) == 2:
            other = self.insert_pool.submit(gen, 1)
            counts = [gen(0), other.result()]
        else:
            counts = [gen(0)]
        return self.fused_prepared(words, base, scratch, halves, infos, counts, routes)

    def routed(self) -> bool:
        """Whether each thread sorts the positions of the candidates it generated by table (the fused kernel,
        every candidate stored or flagged for the reduction's proviso: no state constraints)."""
        return self.fused is not None and not self.constrained

    def _out_offset(self, lo: int, scratch: _Scratch) -> int:
        """Where the candidates of a batch's rows from `lo` on start in the scratch outputs: the first half of the
        rows at 0, the second at the middle of the outputs. The outputs have room for `transitions` candidates a
        row, for R >= the batch's rows, so each half fits; and the second half's place does not move with the
        batch's size, so that the pages its candidates touch are the same from batch to batch (at `lo *
        transitions`, batches of every size met in a search would fault in most of the outputs' pages)."""
        nt = max(self.vm.ntrans, 1)
        return 0 if lo == 0 else scratch.cand.shape[1] // nt // 2 * nt

    def gen_rows(self, words: np.ndarray, lo: int, hi: int, k: int, scratch: _Scratch, info: np.ndarray,
                 routes: list | None) -> int:
        """The fused kernel over rows lo..hi-1 of a batch, into their stretch of the scratch outputs (from
        `_out_offset`); routed, the positions of each table's candidates then go to `routes[k]`."""
        off = self._out_offset(lo, scratch)
        por = None
        if self.por is not None:
            scratch.ren[lo:hi] = 0  # rows after a stop are left as explored by no step
            scratch.ramp[lo:hi] = -1
            por = (scratch.flags, scratch.ren, scratch.ramp)
        m = self.fused.gen(words, lo, hi, self.opts.deadlock, scratch.cand, scratch.fps, scratch.keys, info, off, por)
        if routes is not None:
            routes[k] = self.route(scratch.fps, off, off + m, scratch.routes[k], scratch.counts[k])
        return m

    def route(self, fps: np.ndarray, lo: int, hi: int, pos: list[np.ndarray], counts: np.ndarray) -> list[tuple]:
        """The positions lo..hi-1 sorted by visited table into `pos` (one array per table, `counts` their lengths):
        [(positions, how many)] per table."""
        counts[:] = 0
        self.k.route(fps[lo:hi], int(self.table.mask), lo, pos[0], pos[1], counts)
        return [(pos[0], int(counts[0])), (pos[1], int(counts[1]))]

    def fused_prepared(self, words: np.ndarray, base: int, scratch: _Scratch, halves: list, infos: list,
                       counts: list, routes: list | None) -> Prepared:
        """A batch the fused kernel has generated (in `halves` of its rows), prepared for insertion."""
        T1 = self.vm.ntrans + 1
        reduced = self.por is not None
        stops: list[tuple[int, str, Any]] = []
        for info in infos:  # a reduced search stops at a failing or deadlocked row before any of its steps
            if info[0] == 1:
                stops.append(((base + int(info[1])) * T1 + (-1 if reduced else int(info[2])), "step", int(info[1])))
            elif info[0] == 2:
                stops.append(((base + int(info[1])) * T1 + (-1 if reduced else T1 - 1), "deadlock", int(info[1])))
            if stops:
                break  # the first half's stop comes before anything of the second
        segments = tuple((off, off + m) for off, m in ((self._out_offset(lo, scratch), m)
                                                        for (lo, _hi), m in zip(halves, counts)))
        c = FusedCandidates(words, scratch.cand, scratch.keys, T1)
        fingerprints = (scratch.fps, None, segments[-1][1])  # positions: the candidates' own indices
        if self.constrained:  # only the candidates inside the constraints are stored
            fingerprints, segments = self._inside_fused(c, scratch.fps, segments, base, stops)
        marks = (scratch.flags, scratch.ren, scratch.ramp, scratch.back) if reduced else None
        return Prepared(words, base, c, None, None, NO_FILTER, stops, int(sum(i[3] for i in infos)), None, NO_HIDDEN,
                        fingerprints, None, segments, [[r[p] for r in routes] for p in range(2)] if routes else None,
                        marks)

    def probe_part(self, b: Prepared, part: int) -> None:
        """The cycle proviso's marks for table `part`'s candidates of a reduced fused batch: rows whose reduced
        set leads to a state visited before this level (read from that table and the level's own)."""
        assert b.reduced is not None and b.routes is not None
        flags, _ren, _ramp, back = b.reduced
        n = b.words.shape[1]
        back[part, :n] = 0
        if part >= len(self.table.parts):
            return
        table, level = self.table.parts[part], self.por.level.parts[part]
        k = self.k if self.bit_ops is None else self.bit_ops
        for pos, c in b.routes[part]:
            k.probe(table.table, level.table, b.fingerprints[0], flags, b.c.keys, self.vm.ntrans + 1, pos, c, back[part])

    def settle_pruned(self, b: Prepared) -> None:
        """Under symmetry, the kernel canonicalizes a candidate left out of its row's reduced set only where the
        cycle proviso expands the row, which is known now; with two tables every candidate is then routed again
        (an unsettled one went to the first)."""
        if not self.fused.lazy:
            return
        flags, _ren, _ramp, back = b.reduced
        fps = b.fingerprints[0]
        settled = sum(self.fused.settle_pruned(b.c.cand, fps, flags, b.c.keys, back, lo, hi) for lo, hi in b.segments)
        if settled and len(self.table.parts) == 2:
            counts = np.zeros(2, dtype=np.int64)
            for k, (lo, hi) in enumerate(b.segments):
                b.routes[0][k], b.routes[1][k] = self.route(fps, lo, hi, [b.routes[0][k][0], b.routes[1][k][0]], counts)

    def settle_reduction(self, b: Prepared) -> None:
        """A reduced fused batch's counts, once the proviso's marks are in: steps explored per row (all enabled
        ones where the proviso applies or no reduced set was chosen) and the reduction's statistics; the
        candidates the proviso brings back settled (`settle_pruned`)."""
        self.settle_pruned(b)
        _flags, ren, ramp, back = b.reduced
        n = b.words.shape[1]
        en, amp = ren[:n].astype(np.int64), ramp[:n].astype(np.int64)
        full = (back[0, :n] | back[1, :n]) != 0
        cut = (amp >= 0) & ~full
        st = self.por.stats
        st.enabled += int(en.sum())
        st.pruned += int((en - amp)[cut].sum())
        st.reduced += int(cut.sum())
        st.proviso += int(((amp >= 0) & full).sum())
        b.enabled = int(np.where(cut, amp, en).sum())

    def _explored_reduced(self, b: Prepared) -> list[np.ndarray]:
        """Per transition, the rows of a reduced fused batch whose step counts as generated (for a stop): the
        reduced sets chosen again by the numpy passes, widened where the kernel's proviso marks apply."""
        words, n = b.words, b.words.shape[1]
        ample, _reduced, enabled = self.por.choose(words, self.program.batch(words, n))
        back = b.reduced[3]
        explored = ample | (enabled & ((back[0, :n] | back[1, :n]) != 0)[None, :])
        return [np.nonzero(explored[tid])[0] for tid in range(self.vm.ntrans)]

    def _inside_fused(self, c: FusedCandidates, fps: np.ndarray, segments: tuple, base: int,
                      stops: list) -> tuple[tuple, None]:
        """The fused candidates inside the constraints, as (fingerprints, positions, count); the first outside
        one that violates an invariant (checked, though never stored) is a stop."""
        outside = np.zeros(segments[-1][1], dtype=np.uint8)
        for lo, hi in segments:
            self.fused.outside(c.cand, lo, hi, outside)
        pos = np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi in segments])
        out = pos[outside[pos] != 0]
        if out.size and self.checks_invariants:
            first = self.fused.bad(np.ascontiguousarray(c.cand[:, out]), 0, out.size)
            if first >= 0:
                self._hidden_stop(c, base, out[first:first + 1], stops)
        kept = pos[outside[pos] == 0]
        return (np.ascontiguousarray(fps[kept]), kept, kept.size), None

    def _count_reduction(self, enabled: np.ndarray, explored: np.ndarray, reduced: np.ndarray,
                         back: np.ndarray) -> None:
        st = self.por.stats
        st.enabled += int(enabled[:, enabled.any(axis=0)].sum())
        st.pruned += int((enabled & ~explored).sum())
        st.reduced += int((reduced & ~back).sum())
        st.proviso += int(back.sum())

    def _proviso(self, b: Prepared) -> None:
        """Narrow a prepared batch to the reduced sets, expanding fully the rows whose reduced successors
        include a state of this level or an earlier one (the cycle proviso). It reads the visited table,
        so it runs once the batches before this one are inserted."""
        por, c = self.por, b.c
        assert por is not None and b.por is not None
        ample, reduced, enabled = b.por
        n = b.words.shape[1]
        tids = c.tids()
        keep = ample[tids, c.rows]
        probe = (keep & reduced[c.rows] & c.moved()).nonzero()[0]
        fps = self.layout.fingerprints(c.states(probe)) if probe.size else np.zeros(0, np.uint64)
        back = por.proviso(self.table, fps, c.rows[probe], reduced, n)
        keep |= (~reduced | back)[c.rows]
        explored = ample | (enabled & back)
        self._count_reduction(enabled, explored, reduced, back)
        b.explored = [np.nonzero(explored[tid])[0] for tid in range(self.vm.ntrans)]
        b.enabled = sum(e.size for e in b.explored)
        if b.hidden.size:
            self._hidden_stop(c, b.base, b.hidden[keep[b.hidden]], b.stops)
        b.allow = np.ascontiguousarray(keep & b.allow if b.allow.size else keep)

    def insert_new(self, b: Prepared, progress_of_level: float) -> tuple[np.ndarray, ...]:
        """Insert the candidates' fingerprints, each if absent, the first occurrence of a state winning:
        (positions, fingerprints) of the new states, in serial order (with two tables, their runs merged
        by position, which gives the one-table result)."""
        runs = self._insert_runs(b, progress_of_level)
        return runs[0] if len(runs) == 1 else self.k.merge_runs(*runs[0], *runs[1])

    def _insert_runs(self, b: Prepared, progress_of_level: float) -> list[tuple[np.ndarray, np.ndarray]]:
        """Insert the candidates into each table: per table, (positions, fingerprints) of its new states in
        serial order. On two threads, each inserts the keys of its own table."""
        outs = self.outputs
        if len(self.table.parts) == 1:
            counts = [self.insert_part(b, 0, progress_of_level, outs)]
        elif not self.split and self.por is None and self.bit_ops is None and hasattr(self.k, "insert_pair"):
            return [self._insert_pair(b, progress_of_level, outs[0])]
        else:  # a level too small for two threads inserts the two tables one after the other
            other = self.insert_pool.submit(self.insert_part, b, 1, progress_of_level, outs) if self.split else None
            m0 = self.insert_part(b, 0, progress_of_level, outs)
            counts = [m0, other.result() if other is not None else self.insert_part(b, 1, progress_of_level, outs)]
        return [(out.k[:m], out.fp[:m]) for out, m in zip(outs, counts)]

    def _insert_pair(self, b: Prepared, progress_of_level: float, out: _Outputs) -> tuple[np.ndarray, np.ndarray]:
        """A level too small for two threads, into the two tables in one pass (the C loops): (positions,
        fingerprints) of the new states in serial order, as one table would give them."""
        t0, t1 = self.table.parts
        fps, ks, count = b.fingerprints
        out.fit(count)
        sizes, m = np.array([t0.size, t1.size], dtype=np.int64), 0
        for lo, hi in b.segments or ((0, count),):
            i = lo
            while True:
                limits = np.array([t0.limit, t1.limit], dtype=np.int64)
                i, m = self.k.insert_pair(t0.table, t1.table, sizes, limits, fps, ks, hi, i, out.k, out.fp, m)
                t0.size, t1.size = int(sizes[0]), int(sizes[1])
                if i == hi:
                    break
                full = t0 if int(fps[i]) & 1 == 0 else t1  # the table the key at `i` found at its limit
                self._grow_in_level(full, m // 2, progress_of_level)  # (about half the batch's new states are its)
        return out.k[:m], out.fp[:m]

    def _grow_in_level(self, table: Any, batch_new: int, progress_of_level: float) -> None:
        """Grow a table that reached its limit inside a level, for the rest of the level at the rate so far
        (`batch_new`: its new states in this batch until now)."""
        done = len(self.levels[-1]) // len(self.table.parts) + batch_new  # its new states in this level so far
        table.grow_for(int(1.1 * done / max(progress_of_level, 1e-3)) - done)

    def _new_fused(self, b: Prepared, progress_of_level: float) -> tuple[np.ndarray, ...]:
        """The fused kernel's new states, inserted: (fingerprints, words, parent links, serial keys, index of
        the first that violates an invariant or -1). With two tables, each thread then merges the two runs
        into one half of the outputs, gathers that half's states and tests its invariants: one hand-off."""
        runs = self._insert_runs(b, progress_of_level)
        new = self.new_states(runs)
        ranges = self.halves_of_new(len(new[0]))
        if len(ranges) == 2:
            other = self.insert_pool.submit(self.merge_part, b, runs, *ranges[1], new)
            first, second = self.merge_part(b, runs, *ranges[0], new), other.result()
        else:
            first, second = self.merge_part(b, runs, *ranges[0], new), -1
        return (*new[:4], first if first >= 0 else second)

    def halves_of_new(self, m: int) -> list[tuple[int, int]]:
        """The ranges of a batch's `m` new states that the threads merge and gather (one range: one thread)."""
        return [(0, m // 2), (m // 2, m)] if self.split and m > 1 << 12 else [(0, m)]

    def new_states(self, runs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, ...]:
        """Arrays for a batch's new states, from the tables' runs: (fingerprints, words, parent links, serial
        keys, positions among the candidates); with one table, the fingerprints and positions are its run's."""
        m = sum(len(k) for k, _f in runs)
        pos, fps = runs[0] if len(runs) == 1 else (np.empty(m, dtype=np.int64), np.empty(m, dtype=np.uint64))
        words = np.empty((self.layout.words, m), dtype=np.uint64)
        return fps, words, np.empty(m, dtype=np.uint64), np.empty(m, dtype=np.int64), pos

    def merge_part(self, b: Prepared, runs: list[tuple[np.ndarray, np.ndarray]], lo: int, hi: int,
                   new: tuple[np.ndarray, ...]) -> int:
        """New states lo..hi-1 of a batch: their positions and fingerprints merged from the tables' runs (two
        tables), their words and parent links gathered; the first of them that violates an invariant, or -1."""
        fps, words, links, ukeys, pos = new
        if len(runs) == 2:
            self.k.merge_range(*runs[0], *runs[1], lo, hi, pos, fps)
        c, bad = b.c, self.fused.bad if self.checks_invariants else None
        self.k.gather_range(c.cand, c.keys, pos, lo, hi, self.vm.ntrans + 1, b.base, self.tbits, words, links, ukeys)
        return bad(words, lo, hi) if bad is not None and hi > lo else -1

    def insert_part(self, b: Prepared, part: int, progress_of_level: float, outputs: list[_Outputs]) -> int:
        """Insert the candidates of table `part` in serial order, growing it when full, its new states into
        `outputs[part]`; how many were new."""
        n = len(self.table.parts)
        table, out = self.table.parts[part], outputs[part]
        k = self.k if self.bit_ops is None else self.bit_ops
        fps, ks, count = b.fingerprints
        out.fit(count if b.routes is None else sum(c for _p, c in b.routes[part]))
        m = 0

        def grow() -> None:
            self._grow_in_level(table, m, progress_of_level)

        if b.routes is not None:  # the positions of this table's candidates, stretch by stretch
            por = None
            if b.reduced is not None:
                flags, _ren, _ramp, back = b.reduced
                por = (flags, b.c.keys, self.vm.ntrans + 1, back)
            for pos, c in b.routes[part]:
                q = 0
                while True:
                    q, table.size, m = k.insert_at(table.table, table.size, table.limit, fps, ks, pos, q, c,
                                                   out.k, out.fp, m, por)
                    if q == c:
                        break
                    grow()
        else:
            for lo, hi in b.segments or ((0, count),):
                i = lo
                while True:
                    i, table.size, m = k.insert_serial(table.table, table.size, table.limit, fps, ks, hi, i,
                                                       n - 1, part, out.k, out.fp, m, out.mine)
                    if i == hi:
                        break
                    grow()
        if self.por is not None:  # the cycle proviso tells this level's states from earlier ones
            self.por.level.parts[part].add(out.fp[:m])
        if self.bit_ops is not None:
            table.settle()
        return m

    def _expand(self, b: Prepared, level: int, nxt: Spool, links: Spool, cap: int, level_size: int) -> None:
        if b.reduced is not None:
            for part in range(2):
                self.probe_part(b, part)
            self.settle_reduction(b)
        elif b.por is not None:
            self._proviso(b)
            fps, ks, count = b.fingerprints
            b.fingerprints = (fps, ks, self.k.keep_allowed(fps, ks, count, b.order, b.allow))
        base, c, n, T1 = b.base, b.c, b.words.shape[1], self.vm.ntrans + 1
        if b.order is None:  # fused: the candidates are in serial order, keyed by row and transition
            nfps, nwords, new_links, ukeys, first_bad = self._new_fused(b, (base + n) / level_size)
            rows = tids = None
        else:
            js, nfps = self.insert_new(b, (base + n) / level_size)
            rows, tids = c.row_of(b.order[js]), b.tids[js]
            nwords, ukeys = c.states(b.order[js]), (base + rows) * T1 + tids
            new_links = None
            first_bad = self._first_bad(nwords, len(js)) if self.checks_invariants and len(js) else -1
        self.commit(b, level, nxt, links, cap, level_size, nfps, nwords, new_links, ukeys, first_bad, rows, tids)

    def commit(self, b: Prepared, level: int, nxt: Spool, links: Spool, cap: int, level_size: int, nfps: np.ndarray,
               nwords: np.ndarray, new_links: np.ndarray | None, ukeys: np.ndarray, first_bad: int,
               rows: np.ndarray | None = None, tids: np.ndarray | None = None) -> None:
        """Add a batch's new states to the next frontier, the parent links and the counts; at its first stop
        (a violation or the state bound, in serial order) settle the counts there and raise."""
        words, base, c, stops = b.words, b.base, b.c, b.stops
        n = words.shape[1]
        T1 = self.vm.ntrans + 1
        m = len(nfps)
        room = cap - self.distinct
        if m > max(room, 0):
            stops.append((int(ukeys[max(room, 0)]), "cut", None))
        if first_bad >= 0:
            stops.append((int(ukeys[first_bad]), "invariant", first_bad))
        if stops:
            if rows is None:
                rows, tids = np.divmod(ukeys, T1)
                rows -= base
            if b.explored is not None:
                explored = b.explored
            elif b.reduced is not None:
                explored = self._explored_reduced(b)
            else:
                explored = [o[0] for o in self.program.batch(words, n)]
            self._stop(min(stops, key=lambda s: s[0]), words, explored, base, level, ukeys, rows, tids, nwords, c,
                       links, level_size)
        self.generated += b.enabled
        self.distinct += m
        links.append((self.link(base + rows, tids) if new_links is None else new_links)[None, :])
        self._keep_fps(nfps)
        nxt.append(nwords)
        if self.progress.due():
            self.progress.report(Stats(self.distinct, self.generated, level_size - base - n + len(nxt), self.depth))

    def _first_bad(self, words: np.ndarray, m: int) -> int:
        """The index of the first of `m` packed states that violates an invariant, or -1 (the numpy passes;
        the fused kernel's states are tested by `_new_fused`)."""
        hit = self.program.bad(words, m).nonzero()[0]
        return int(hit[0]) if hit.size else -1

    def _inside(self, c: Candidates) -> tuple[np.ndarray, np.ndarray]:
        """(which candidates satisfy the constraints, the moved ones that do not but violate an invariant:
        they are checked, though never stored)."""
        cands = c.states()
        inside = ~self.program.outside(cands, len(c))
        hidden = NO_HIDDEN
        if self.checks_invariants:
            out = (~inside & c.moved()).nonzero()[0]
            if out.size:
                hidden = out[self.program.bad(cands[:, out], len(out))]
        return np.ascontiguousarray(inside), hidden

    def _hidden_stop(self, c: Candidates | FusedCandidates, base: int, hidden: np.ndarray, stops: list) -> None:
        """The first candidate outside the constraints that violates an invariant is a stop."""
        if hidden.size:
            keys = c.serial(hidden, base)
            stops.append((int(keys.min()), "invariant-last", int(hidden[np.argmin(keys)])))

    def _stop(self, stop: tuple[int, str, Any], words: np.ndarray, explored: list, base: int, level: int,
              ukeys: np.ndarray, rows: np.ndarray, tids: np.ndarray, nwords: np.ndarray, c: Candidates,
              links: Spool, level_size: int) -> None:
        """Settle the counts where the scalar engine would have stopped, and raise."""
        key, kind, detail = stop
        T1 = self.vm.ntrans + 1
        inclusive = kind in ("invariant", "invariant-last", "cut")
        for tid, idx in enumerate(explored):
            keys = (base + idx) * T1 + tid
            self.generated += int(np.count_nonzero(keys <= key if inclusive else keys < key))
        before = int(np.count_nonzero(ukeys <= key if kind == "invariant" else ukeys < key))
        start = len(links)
        links.append(self.link(base + rows[:before], tids[:before])[None, :])
        self.distinct += before
        lay, h = self.layout, self.helper
        if kind == "cut":
            self.cut = f"state bound {self.opts.max_states} reached"
            raise _Stop(None, queued=level_size + self.distinct - self._level_start())
        if kind in ("step", "deadlock"):
            st = lay.unpack(list(words[:, detail]))
            pf = lay.fingerprint_state(st)
            self.at = (level, base + detail)
            if kind == "step":
                raise h._step_failure(pf, st)
            raise _Found("deadlock", "", "deadlock: no action is enabled", None, pf, None, st)
        if kind == "invariant":
            st = lay.unpack([int(x) for x in nwords[:, detail]])
            self.at = (level + 1, start + detail)
            raise h._invariant_violation(lay.fingerprint_state(st), st)
        st = lay.unpack([int(x) for x in c.states(np.array([detail]))[:, 0]])
        r = int(c.row_of(np.array([detail]))[0])
        self.at = (level, base + r)
        pf = lay.fingerprint_words([int(x) for x in words[:, r]])
        raise h._invariant_violation(pf, st, last=(None, st))

    def _level_start(self) -> int:
        return self.distinct - len(self.levels[-1])

    def _frontier_grows(self, frontier: Spool) -> bool:
        """Whether a frontier state has an unseen successor; step failures and deadlocks found on the
        way stop the search, in the scalar engine's order."""
        level = len(self.levels) - 1
        base = 0
        for words in frontier.batches(self.batch):
            n = words.shape[1]
            c = self.successors(words)
            flags = np.full(n, 3, dtype=np.int8)  # 0 step failure, 1 deadlock, 2 unseen successor, 3 none
            unseen = np.zeros(n, dtype=bool)
            moved = c.moved().nonzero()[0]
            cands = c.states(moved)
            fresh = ~self.table.contains(self.layout.fingerprints(cands))
            if self.constrained and fresh.any():
                sub = fresh.nonzero()[0]
                fresh[sub] = ~self.program.outside(cands[:, sub], len(sub))
            unseen[c.rows[moved[fresh]]] = True
            flags[unseen] = 2
            if self.opts.deadlock:
                live = np.zeros(n, dtype=bool)
                for idx, _d, _f in c.outs:
                    live[idx] = True
                flags[~live] = 1
            for _idx, _d, fail in c.outs:
                if fail is not None:
                    flags[fail] = 0
            hit = (flags < 3).nonzero()[0]
            if hit.size:
                r = int(hit[0])
                st = self.layout.unpack([int(x) for x in words[:, r]])
                pf = self.layout.fingerprint_state(st)
                self.at = (level, base + r)
                if flags[r] == 0:
                    raise self.helper._step_failure(pf, st)
                if flags[r] == 1:
                    raise _Found("deadlock", "", "deadlock: no action is enabled", None, pf, None, st)
                return True
            base += n
        return False
