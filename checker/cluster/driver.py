"""The driver of a distributed vector search: seeds the search, sequences each level over the
partition actors, finds where one process would have stopped, and rebuilds counterexamples.

Each level: every actor expands its frontier (`Partition.expand`), returning one block of packed
rows per owner; the blocks go to their owners through Ray's object store (`absorb`); the owners
report what they found; the driver picks the least serial key at which one process would stop
(a failing step, a deadlock, an invariant violation, the state bound) and has every partition
store its new states up to that key (`commit`), each numbered by its rank in the whole level.
So the verdict, the counts, the depth and the counterexample are those of one process.

At level boundaries (at most every `every` seconds) the driver takes a snapshot: each partition's
frontier and its parent links of the levels not yet taken, held in the object store and owned by
the driver, so they outlive the actor that made them. When an actor is lost, the driver reports
it, starts fresh actors from the last snapshot, and goes on from that level.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..explicit.search import Options, _Found, _Search, safe_predicates
from ..progress import Progress, Stats
from ..result import HOLDS, INCONCLUSIVE, VIOLATION, CheckResult
from ..vector.search import VectorModel, _VectorFingerprints
from .connect import ClusterError, check_address, connect, disconnect
from .partition import DEADLOCK, NONE, STEP, Partition

INVARIANT_LAST, CUT, INVARIANT = 2, 3, 4  # after STEP and DEADLOCK: the order one process breaks ties in
RECOVERIES = 3  # lost actors survived per run


class ActorLost(Exception):
    """A partition actor died; the run resumes from the last snapshot."""


@dataclass
class Snapshot:
    """The search at a level boundary: counters and, per partition, object refs of its state."""

    level: int
    distinct: int
    generated: int
    depth: int
    frontier: list[Any]  # per partition, (words ref, index ref)
    links: list[list[Any]] = field(default_factory=list)  # per partition, one ref per level


class ClusterSearch:
    """One breadth-first search over `workers` partition actors."""

    def __init__(self, vm: VectorModel, spec: str, params: dict[str, int], opts: Options, progress: Progress,
                 address: str, workers: int | None, every: float = 60.0,
                 say: Callable[[str], None] | None = None,
                 on_level: Callable[[ClusterSearch, int], None] | None = None, checkpoint: Any = None):
        if vm.symmetry is not None:
            raise ClusterError("the cluster search has no symmetry reduction (its partitions keep states as "
                               "generated); reduce by symmetry on one machine, with --workers N")
        self.vm, self.spec, self.params, self.opts, self.progress = vm, spec, params, opts, progress
        self.address, self.every = check_address(address), every
        self.say = say or (lambda text: None)
        self.on_level = on_level
        self.checkpoint = checkpoint  # a vector.checkpoint.Checkpoint: snapshots are also written to disk
        self.model, self.layout = vm.model, vm.layout
        self.T1 = vm.ntrans + 1
        self.helper = _Search(_VectorFingerprints(vm.model, vm.layout), opts, progress)
        self.helper.parents = self  # type: ignore[assignment]  # rebuild_path asks self.get(fp)
        self.initial: set[int] = set()
        self.distinct = self.generated = self.depth = 0
        self.cut: str | None = None
        self.workers = workers
        self.actors: list[Any] = []
        self.snapshot: Snapshot | None = None
        self.last_snapshot = 0.0
        self.exchanged: list[tuple[int, int, int]] = []  # per level: (rows sent, rows crossing partitions, bytes)
        self.recovered = 0
        self.started_ray = False

    # -- Ray ------------------------------------------------------------------------------------
    def _connect(self) -> None:
        self.ray, self.n, self.started_ray = connect(self.address, self.workers)
        self.remote = self.ray.remote(num_cpus=1, max_restarts=0)(Partition)

    def _spawn(self) -> None:
        m = self.model
        invs = list(m.invariant_names) if m.invariant_names else None
        self.actors = [self.remote.remote(w, self.n, self.spec, self.params, invs, self.opts.deadlock)
                       for w in range(self.n)]
        want = [self.layout.bits, self.layout.words, self.vm.ntrans]
        for got in self._get([a.identity.remote() for a in self.actors]):
            if list(got) != want:
                raise ClusterError("a Ray worker built this spec with another packing; every node needs the "
                                   "same lockstep version and spec files")

    def _kill(self) -> None:
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:
                pass
        self.actors = []

    def _get(self, refs: Any) -> Any:
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayActorError as e:
            raise ActorLost(str(e).splitlines()[0] if str(e) else type(e).__name__) from None

    # -- the run ----------------------------------------------------------------------------------
    def run(self) -> CheckResult:
        self._connect()
        t0 = time.monotonic()
        found: _Found | None = None
        queued = 0
        try:
            try:
                ck = self.checkpoint
                if ck is not None and ck.resume:
                    self._spawn()
                    self._resume()
                else:
                    words, fps = self._seed()
                    self._spawn()
                    self._start([np.stack([fps, np.zeros(len(fps), np.uint64)])], words, 0)
                queued = self._resilient()
            except _Found as f:
                found = f
            except _Cut as c:
                queued = c.queued
            res = CheckResult(HOLDS, self.distinct, self.generated, self.depth, time.monotonic() - t0,
                              queued=queued, workers=self.n, visited_bytes=getattr(self, "table_bytes", None))
            res.exact_fingerprints = self.layout.exact
            res.notes.append(self._note())
            if found is not None:
                res.verdict = VIOLATION
                res.violation = self.helper._violation(found)
            elif self.cut:
                res.verdict = INCONCLUSIVE
                res.cut = self.cut
            return res
        finally:
            self._kill()
            if self.started_ray:
                disconnect(self.ray)

    def _note(self) -> str:
        rows = sum(e[1] for e in self.exchanged)
        sent = sum(e[2] for e in self.exchanged)
        note = (f"cluster: {self.n} Ray actors; {rows:,} successor rows ({sent / 2**20:,.1f} MiB) crossed "
                f"partitions over {len(self.exchanged)} levels")
        if self.recovered:
            note += f"; {self.recovered} lost actor{'s' if self.recovered > 1 else ''} recovered from snapshots"
        return note

    def _seed(self) -> tuple[np.ndarray, np.ndarray]:
        """The initial states, as one process keeps them: (words, fingerprints)."""
        m, lay, h = self.model, self.layout, self.helper
        bad, outside = safe_predicates(m)
        states = m.initial_states()
        words = lay.pack_many(states)
        fps = lay.fingerprints(words) if states else np.zeros(0, np.uint64)
        keep: list[int] = []
        for j, st in enumerate(states):
            self.generated += 1
            f = int(fps[j])
            if f in self.initial:
                continue
            if outside is not None and outside(st) >= 0:
                if bad(st):
                    raise h._invariant_violation(f, st)
                continue
            self.initial.add(f)
            keep.append(j)
            self.distinct += 1
            if bad(st):
                raise h._invariant_violation(f, st)
        if keep:
            self.depth = 1
        sel = np.array(keep, dtype=np.int64)
        return (words[:, sel] if states else np.zeros((lay.words, 0), np.uint64)), fps[sel]

    def _start(self, links: list[np.ndarray], words: np.ndarray, level: int) -> None:
        """Hand each partition its part of the parent links and of the frontier (in one-process order)."""
        put, n = self.ray.put, self.n
        fps = self.layout.fingerprints(words) if words.shape[1] else np.zeros(0, np.uint64)
        own = (fps % np.uint64(n)).astype(np.int64)
        mine = [[] for _ in range(n)]
        for lk in links:
            lo = (np.asarray(lk[0]) % np.uint64(n)).astype(np.int64)
            for w in range(n):
                mine[w].append(put(np.ascontiguousarray(lk[:, lo == w])))
        front = []
        for w in range(n):
            sel = (own == w).nonzero()[0]
            front.append((put(np.ascontiguousarray(words[:, sel])), put(sel.astype(np.int64))))
        self._get([a.restore.remote(wr, ir, *lk) for a, (wr, ir), lk in zip(self.actors, front, mine)])
        self.level, self.frontier_size = level, words.shape[1]
        self.snapshot = Snapshot(level, self.distinct, self.generated, self.depth, front, mine)
        self.last_snapshot = time.monotonic()

    def _resume(self) -> None:
        """Start from the checkpoint on disk (written by a cluster run or by one process)."""
        links, frontier, man = self.checkpoint.load()
        self.initial = {int(x) for x in links[0][0]}
        self.distinct, self.generated, self.depth = man["distinct"], man["generated"], man["depth"]
        self._start(links, np.array(frontier), man["level"])
        self.say(f"resuming from {self.checkpoint.directory}: level {man['level']}, {self.distinct:,} states, "
                 f"{frontier.shape[1]:,} in the frontier")

    def _write_checkpoint(self, snap: Snapshot) -> None:
        """Write the snapshot to disk in the one-process format (frontier in one-process order)."""
        ck = self.checkpoint
        t0 = time.monotonic()
        levels: list[Any] = [None] * ck.written
        for lv in range(ck.written, snap.level + 1):
            levels.append(np.concatenate(self._get([lk[lv] for lk in snap.links]), axis=1))
        words = np.concatenate(self._get([w for w, _i in snap.frontier]), axis=1)
        index = np.concatenate(self._get([i for _w, i in snap.frontier]))
        ck.save(levels, words[:, np.argsort(index)], ck.link_fingerprints(),
                {"level": snap.level, "distinct": snap.distinct, "generated": snap.generated, "depth": snap.depth})
        self.say(f"checkpoint: level {snap.level}, {snap.distinct:,} states, written to {ck.directory} "
                 f"in {time.monotonic() - t0:.1f} s")

    def _resilient(self) -> int:
        while True:
            try:
                return self._levels()
            except ActorLost as e:
                snap = self.snapshot
                assert snap is not None
                self.recovered += 1
                if self.recovered > RECOVERIES:
                    raise RuntimeError(f"{RECOVERIES} actors lost in one run; the last: {e}") from None
                self.say(f"cluster: an actor was lost at level {self.level} ({e}); resuming from level "
                         f"{snap.level} with fresh actors")
                self._kill()
                self._spawn()
                self._get([a.restore.remote(wr, ir, *links) for a, (wr, ir), links
                           in zip(self.actors, snap.frontier, snap.links)])
                self.level, self.distinct, self.generated, self.depth = snap.level, snap.distinct, snap.generated, snap.depth
                self.frontier_size = self._frontier_size(snap)
                self.exchanged = self.exchanged[:snap.level]

    def _frontier_size(self, snap: Snapshot) -> int:
        return sum(len(ix) for ix in self._get([ir for _w, ir in snap.frontier]))

    def _take_snapshot(self) -> None:
        """Replace the snapshot once every part of the new one is in the object store (an actor lost
        meanwhile leaves the old one intact)."""
        snap = self.snapshot
        assert snap is not None
        links = [old + [a.level_links.remote(lv) for lv in range(len(old), self.level + 1)]
                 for old, a in zip(snap.links, self.actors)]
        refs = [a.snapshot.options(num_returns=2).remote() for a in self.actors]
        self._get([r[1] for r in refs] + [lk[-1] for lk in links])
        self.snapshot = Snapshot(self.level, self.distinct, self.generated, self.depth,
                                 [(r[0], r[1]) for r in refs], links)
        if self.checkpoint is not None:
            self._write_checkpoint(self.snapshot)
        self.last_snapshot = time.monotonic()

    def _levels(self) -> int:
        opts = self.opts
        while self.frontier_size:
            if opts.max_depth is not None and self.level >= opts.max_depth:
                if self._probe():
                    self.cut = opts.depth_cut()
                return self.frontier_size
            if self.on_level is not None:
                self.on_level(self, self.level)
            self.frontier_size = self._level()
            self.level += 1
            if self.frontier_size:
                self.depth = self.level + 1
                if time.monotonic() - self.last_snapshot >= self.every:
                    self._take_snapshot()
            if self.progress.due():
                self.progress.report(Stats(self.distinct, self.generated, self.frontier_size, self.depth))
        return 0

    # -- one level ----------------------------------------------------------------------------------
    def _level(self) -> int:
        n, A = self.n, self.actors
        cap = self.opts.max_states if self.opts.max_states is not None else NONE
        ex = [a.expand.options(num_returns=n + 2).remote() for a in A]
        ab = [A[o].absorb.options(num_returns=2).remote(*[ex[w][o] for w in range(n)]) for o in range(n)]
        ex_stats = self._get([ex[w][n] for w in range(n)])
        ab_stats = self._get([ab[o][1] for o in range(n)])
        sent = self._get([ex[w][n + 1] for w in range(n)])
        rows = int(sum(s.sum() for s in sent))
        cross = rows - int(sum(s[w] for w, s in enumerate(sent)))
        self.exchanged.append((rows, cross, cross * (3 + self.layout.words) * 8))
        stops: list[tuple[int, int, int]] = []  # (serial key, kind, partition)
        for w, s in enumerate(ex_stats):
            if s[1] != NONE:
                stops.append((int(s[1]), int(s[2]), w))
        for o, s in enumerate(ab_stats):
            if s[2] != NONE:
                stops.append((int(s[2]), INVARIANT_LAST, o))
            if s[1] != NONE:
                stops.append((int(s[1]), INVARIANT, o))
        new = int(sum(s[0] for s in ab_stats))
        room = max(cap - self.distinct, 0)
        key_refs = [ab[o][0] for o in range(n)]
        if new > room:
            keys = np.concatenate(self._get(key_refs))
            stops.append((int(np.partition(keys, room)[room]), CUT, -1))
        if not stops:
            out = self._get([a.commit.remote(int(NONE), False, *key_refs) for a in A])
            self.generated += int(sum(s[0] for s in ex_stats))
            self.distinct += new
            self.table_bytes = sum(o[1] for o in out)
            return new
        key, kind, who = min(stops, key=lambda s: (s[0], s[1]))
        inclusive = kind in (INVARIANT, INVARIANT_LAST, CUT)
        self.generated += sum(self._get([a.settle.remote(key, inclusive) for a in A]))
        detail = None
        if kind in (STEP, DEADLOCK):
            detail = self._get(A[who].row_with_index.remote(key // self.T1))
        elif kind in (INVARIANT, INVARIANT_LAST):
            detail = self._get(A[who].pending_with_key.remote(key if kind == INVARIANT else -1))
        out = self._get([a.commit.remote(key, kind == INVARIANT, *key_refs) for a in A])
        stored = sum(o[0] for o in out)
        self.distinct += stored
        self.table_bytes = sum(o[1] for o in out)
        lay, h = self.layout, self.helper
        if kind == CUT:
            self.cut = f"state bound {self.opts.max_states} reached"
            raise _Cut(self.frontier_size + stored)
        assert detail is not None
        if kind in (STEP, DEADLOCK):
            st = lay.unpack([int(x) for x in detail])
            pf = lay.fingerprint_state(st)
            if kind == STEP:
                raise h._step_failure(pf, st)
            raise _Found("deadlock", "", "deadlock: no action is enabled", None, pf, None, st)
        st = lay.unpack([int(x) for x in detail[1:]])
        if kind == INVARIANT:
            raise h._invariant_violation(lay.fingerprint_state(st), st)
        raise h._invariant_violation(int(detail[0]), st, last=(None, st))

    def _probe(self) -> bool:
        """At the depth bound: whether a frontier state has an unseen successor; a failing step or a
        deadlock found first (in the one-process order) stops the search."""
        n, A = self.n, self.actors
        ex = [a.probe_expand.options(num_returns=n + 1).remote() for a in A]
        unseen = min(self._get([A[o].probe_absorb.remote(*[ex[w][o] for w in range(n)]) for o in range(n)]))
        local = self._get([ex[w][n] for w in range(n)])
        fail = min(int(s[0]) for s in local)
        dead = min(int(s[1]) for s in local)
        first = min(fail, dead, unseen)
        if first == NONE:
            return False
        if first == unseen and first < fail and first < dead:
            return True
        col = 0 if first == fail else 1
        who = next(w for w, s in enumerate(local) if int(s[col]) == first)
        st = self.layout.unpack([int(x) for x in self._get(A[who].row_with_index.remote(first))])
        pf = self.layout.fingerprint_state(st)
        if first == fail:
            raise self.helper._step_failure(pf, st)
        raise _Found("deadlock", "", "deadlock: no action is enabled", None, pf, None, st)

    # -- parent links ---------------------------------------------------------------------------
    def get(self, fp: int) -> int | None:
        """The parent fingerprint of a visited state (None for an initial state), from its owner."""
        if fp in self.initial:
            return None
        found, parent = self._get(self.actors[fp % self.n].parent.remote(fp))
        if not found:
            raise RuntimeError("a counterexample state has no recorded parent")
        return None if parent == 0 else int(parent)


class _Cut(Exception):
    def __init__(self, queued: int):
        self.queued = queued
