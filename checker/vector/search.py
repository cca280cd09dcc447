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

import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..explicit.search import Options, _Found, _Search, safe_predicates
from ..progress import Progress, Stats
from ..reduction.ample import for_model
from ..result import HOLDS, INCONCLUSIVE, VIOLATION, CheckResult
from ..typed_model import TypedModel
from .compile import VectorProgram
from .layout import Layout, VectorUnsupported
from .reduced import VectorReduction
from .spool import Budget, Spool
from .symmetry import BatchSymmetry
from .visited import FingerprintTable

TARGET_CANDIDATES = 1 << 22  # successors per batch the default batch size aims at


@dataclass
class VectorOptions:
    """Tuning of the vector engine (the defaults suit this machine)."""

    batch: int | None = None  # frontier rows per batch
    memory: int | None = None  # bytes of RAM for frontiers and parent links before they spill to disk
    spill_dir: str | None = None
    checkpoint: Any = None  # a `checkpoint.Checkpoint`: write (or resume) the search at level boundaries


class VectorModel:
    """A typed model prepared for the vector engine: its packing and its compiled batch functions."""

    def __init__(self, model: Any):
        if not isinstance(model, TypedModel):
            raise VectorUnsupported("it is a plain spec (init/next functions), which only the scalar engine runs")
        self.model = model
        self.layout = Layout(model.prog)
        self.program = VectorProgram(model.prog, self.layout)
        self.ntrans = len(model.prog.transitions)
        self.symmetry = BatchSymmetry(model.sym, self.layout) if model.symmetry else None

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


class FirstOccurrences:
    """For each distinct key of a batch, the index of its occurrence with the least serial number.

    Hashes the keys into a scratch open-addressing table (equal keys meet in one slot), then
    takes the least serial number per slot. The table is sized for the number of distinct keys
    the previous batch had (small tables stay in cache), and redone at full size if it fills;
    its arrays are kept between batches, since fresh large arrays cost a page fault per page."""

    def __init__(self) -> None:
        self.table = np.zeros(0, dtype=np.uint64)
        self.best = np.zeros(0, dtype=np.int64)
        self.ratio = 1.0  # distinct keys per key in the last batch

    def __call__(self, keys: np.ndarray, serial: np.ndarray) -> np.ndarray:
        m = len(keys)
        guess = min(m, int(2 * self.ratio * m) + 1024)
        slot = self._slots(keys, 1 << max(10, (2 * guess).bit_length()))
        if slot is None:
            slot = self._slots(keys, 1 << max(10, (2 * m).bit_length()))
        best = self.best
        np.minimum.at(best, slot, serial)
        out = (best[slot] == serial).nonzero()[0]
        self.table[slot] = 0
        best[slot] = np.iinfo(np.int64).max
        self.ratio = len(out) / max(m, 1)
        return out

    def _slots(self, keys: np.ndarray, cap: int) -> np.ndarray | None:
        """Each key's slot in a table of `cap` slots; None (and the table cleared) if it fills."""
        if len(self.table) < cap:
            self.table = np.zeros(cap, dtype=np.uint64)
            self.best = np.full(cap, np.iinfo(np.int64).max, dtype=np.int64)
        table = self.table
        wrap = np.int64(cap - 1)
        slot = (keys & np.uint64(cap - 1)).astype(np.int64)
        table[slot] = keys  # the first round: one key wins each slot
        go = (table[slot] != keys).nonzero()[0]
        filled = np.count_nonzero(table[:cap])
        k, p = keys[go], slot[go]
        while go.size:
            if filled > 0.75 * cap:
                table[:cap] = 0
                return None
            p = (p + 1) & wrap
            v = table[p]
            empty = (v == 0).nonzero()[0]
            if empty.size:
                table[p[empty]] = k[empty]  # among different keys racing for a slot, one wins
                filled += empty.size  # an overestimate when equal keys race: safe
                v = table[p]
            hit = v == k
            slot[go[hit]] = p[hit]
            miss = (~hit).nonzero()[0]
            go, k, p = go[miss], k[miss], p[miss]
        return slot


class InOrder:
    """The permutation that sorts distinct non-negative keys below a span: a counting sort, with
    scratch arrays kept between batches."""

    def __init__(self) -> None:
        self.where = np.zeros(0, dtype=np.int64)
        self.marked = np.zeros(0, dtype=bool)

    def __call__(self, keys: np.ndarray, span: int) -> np.ndarray:
        if len(self.marked) < span:
            self.where = np.zeros(span, dtype=np.int32)
            self.marked = np.zeros(span, dtype=bool)
        self.where[keys] = np.arange(len(keys), dtype=np.int32)
        self.marked[keys] = True
        out = self.where[self.marked[:span].nonzero()[0]]
        self.marked[keys] = False
        return out


class VectorSearch:
    """One process's breadth-first search over packed states."""

    def __init__(self, vm: VectorModel, opts: Options, progress: Progress, vopts: VectorOptions):
        self.vm, self.opts, self.progress = vm, opts, progress
        self.layout, self.program, self.model = vm.layout, vm.program, vm.model
        self.budget = Budget(vopts.memory, vopts.spill_dir)
        self.batch = vopts.batch or int(np.clip(TARGET_CANDIDATES // max(vm.ntrans, 1), 1 << 10, 1 << 20))
        self.table = FingerprintTable()
        self.first_occurrences = FirstOccurrences()
        self.in_order = InOrder()
        self.levels: list[Spool] = []  # parent links (fingerprint, parent fingerprint) per level
        self.proxy = _VectorFingerprints(vm.model, vm.layout)
        self.helper = _Search(self.proxy, opts, progress)  # reports violations as the scalar engine does
        self.helper.parents = self  # type: ignore[assignment]  # rebuild_path asks self.get(fp)
        self.distinct = self.generated = self.depth = 0
        self.cut: str | None = None
        self.handoff: int | None = None  # stop at the first level with this many states, for workers
        self.handed_off: tuple[Spool, int] | None = None
        self.constrained = bool(vm.model.constraint_names)
        self.checks_invariants = bool(vm.model.invariant_names)
        self._hint = 0
        self.por: VectorReduction | None = None
        if opts.por:
            self.por = VectorReduction(for_model(vm.model), vm.layout, vm.ntrans)
        self.checkpoint = vopts.checkpoint

    def close(self) -> None:
        for s in self.levels:
            s.close()
        self.budget.close()

    # -- parent links ---------------------------------------------------------------------------
    def find_parent(self, fp: int) -> tuple[bool, int | None]:
        """(found, parent fingerprint or None for an initial state) from this process's parent links."""
        order = list(range(min(self._hint, len(self.levels) - 1), -1, -1)) + list(range(self._hint + 1, len(self.levels)))
        for lv in order:
            row = self.levels[lv].find(0, fp)
            if row is not None:
                self._hint = max(lv - 1, 0)
                return True, (None if int(row[1]) == 0 else int(row[1]))
        return False, None

    def get(self, fp: int) -> int | None:
        """The parent fingerprint of a visited state (None for an initial state)."""
        found, parent = self.find_parent(fp)
        if not found:
            raise RuntimeError("a counterexample state has no recorded parent")
        return parent

    # -- main loop --------------------------------------------------------------------------------
    def run(self) -> CheckResult:
        t0 = time.monotonic()
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
                          visited_bytes=self.table.nbytes)
        res.exact_fingerprints = self.layout.exact
        res.notes.append(self._memory_note())
        if self.por is not None:
            res.notes.append(self.por.stats.note())
        if found is not None:
            self._hint = len(self.levels) - 1
            res.verdict = VIOLATION
            res.violation = self.helper._violation(found)
        elif self.cut:
            res.verdict = INCONCLUSIVE
            res.cut = self.cut
        return res

    def _memory_note(self) -> str:
        per = self.table.nbytes / max(self.distinct, 1)
        note = (f"vector engine: states packed into {self.layout.bits} bits ({self.layout.words} word"
                f"{'s' if self.layout.words > 1 else ''}); visited table {per:.1f} bytes per state, "
                f"parent links 16 bytes per state")
        if self.budget.spilled:
            note += f"; {self.budget.spilled / 2**20:,.1f} MiB of frontiers and parent links spilled to disk"
        return note

    def _seed(self) -> Spool:
        m, layout = self.model, self.layout
        bad, outside = safe_predicates(m)
        states = [m.canonical(st) for st in m.initial_states()]
        words = layout.pack_many(states)
        fps = layout.fingerprints(words) if states else np.zeros(0, np.uint64)
        links = Spool(self.budget, 2)
        self.levels.append(links)
        frontier = Spool(self.budget, layout.words)
        seen: set[int] = set()
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
            links.append(np.array([[f], [0]], dtype=np.uint64))
            self.distinct += 1
            if bad(st):
                raise self.helper._invariant_violation(f, st)
            frontier.append(words[:, j:j + 1])
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
            links = Spool(self.budget, 2)
            self.levels.append(links)
            if self.por is not None:
                self.por.new_level()
            base = 0
            for words in frontier.batches(self.batch):
                self._expand(words, base, nxt, links, cap, len(frontier))
                base += words.shape[1]
            frontier.close()
            frontier = nxt
            level += 1
            if len(frontier):
                self.depth = level + 1
            if self.checkpoint is not None:
                self.checkpoint.level_done(self, frontier, level)
        return 0

    # -- one batch ----------------------------------------------------------------------------------
    def _successors(self, words: np.ndarray) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
        """Run every transition over the batch: (per-transition outputs, rows, serial numbers within the
        batch (row * (transitions + 1) + transition), candidate words, canonical under symmetry reduction)
        for the successors that differ from their parent."""
        n, k = words.shape[1], self.layout.words
        outs = self.program.batch(words, n)
        T1 = self.vm.ntrans + 1
        rows, keys, cands = [], [], []
        for tid, (idx, deltas, _fail) in enumerate(outs):
            if not idx.size:
                continue
            moved = None
            for d in deltas:
                if d is not None:
                    moved = d != 0 if moved is None else moved | (d != 0)
            if moved is None:
                continue
            sel = moved.nonzero()[0]
            if not sel.size:
                continue
            r = sel if idx.size == n else idx[sel]  # all rows enabled: idx is 0..n-1
            rows.append(r)
            keys.append(r * T1 + tid)
            block = np.empty((k, len(r)), dtype=np.uint64)
            for w, d in enumerate(deltas):
                np.take(words[w], r, out=block[w])
                if d is not None:
                    block[w] ^= d[sel]
            cands.append(block)
        if not rows:
            return outs, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((k, 0), np.uint64)
        return outs, np.concatenate(rows), np.concatenate(keys), self.vm.canonical(np.concatenate(cands, axis=1))

    def _expand(self, words: np.ndarray, base: int, nxt: Spool, links: Spool, cap: int, level_size: int) -> None:
        n = words.shape[1]
        T1 = self.vm.ntrans + 1
        outs, rows, keys, cands = self._successors(words)
        fps = self.layout.fingerprints(cands)
        explored = [o[0] for o in outs]  # per transition, the rows whose step counts as generated
        before_row = 0  # stop keys of failing and deadlocked rows: at the row's end, or (reduced) its start
        if self.por is not None:
            rows, keys, cands, fps, explored = self._reduce(words, outs, rows, keys, cands, fps, n)
            before_row = -T1
        enabled = sum(e.size for e in explored)
        stops: list[tuple[int, str, Any]] = []  # (serial key, kind, detail)
        for tid, (_idx, _d, fail) in enumerate(outs):
            if fail is not None and fail.any():
                r = int(np.argmax(fail))
                stops.append(((base + r) * T1 + (tid if not before_row else T1 - 1) + before_row, "step", r))
        if self.opts.deadlock:
            live = np.zeros(n, dtype=bool)
            for idx, _d, _f in outs:
                live[idx] = True
            if not live.all():
                r = int(np.argmin(live))
                stops.append(((base + r) * T1 + T1 - 1 + before_row, "deadlock", r))
        serial = keys + base * T1
        firsts = self.first_occurrences(fps, serial)
        fresh = firsts[~self.table.contains(fps[firsts])]
        cand = fresh[self.in_order(serial[fresh] - base * T1, n * T1)]  # new successors, in the scalar engine's order
        ukeys, ufps = serial[cand], fps[cand]
        uwords = cands[:, cand]
        m = len(cand)
        inside = np.ones(m, dtype=bool)
        if self.constrained and m:
            inside = ~self.program.outside(uwords, m)
        bad = self.program.bad(uwords, m) if self.checks_invariants and m else np.zeros(m, dtype=bool)
        out_bad = (~inside & bad).nonzero()[0]
        if out_bad.size:
            stops.append((int(ukeys[out_bad[0]]), "invariant-last", int(cand[out_bad[0]])))
        new = inside.nonzero()[0]
        room = cap - self.distinct
        if len(new) > max(room, 0):
            stops.append((int(ukeys[new[max(room, 0)]]), "cut", None))
        new_bad = bad[new].nonzero()[0]
        if new_bad.size:
            stops.append((int(ukeys[new[new_bad[0]]]), "invariant", int(cand[new[new_bad[0]]])))
        parent_fps = self.layout.fingerprints(words)
        if stops:
            self._stop(min(stops, key=lambda s: s[0]), words, explored, base, new, ukeys, ufps, uwords, cand, rows,
                       parent_fps, links, level_size)
        self.generated += enabled
        self.distinct += len(new)
        nf = ufps[new]
        self.table.add(nf)
        if self.por is not None:
            self.por.level.add(nf)
        links.append(np.stack([nf, parent_fps[rows[cand[new]]]]))
        nxt.append(uwords[:, new])
        if self.progress.due():
            self.progress.report(Stats(self.distinct, self.generated, level_size - base - n + len(nxt), self.depth))

    def _reduce(self, words: np.ndarray, outs: list, rows: np.ndarray, keys: np.ndarray, cands: np.ndarray,
                fps: np.ndarray, n: int) -> tuple:
        """The candidates and generated steps that the reduced sets (with the cycle proviso) keep."""
        por = self.por
        assert por is not None
        T1 = self.vm.ntrans + 1
        ample, reduced, enabled = por.choose(words, outs)
        keep = ample[keys % T1, rows]
        back = por.proviso(self.table, fps[keep], rows[keep], reduced, n)
        full = ~reduced | back
        keep |= full[rows]
        explored_mask = ample | (enabled & back)
        st = por.stats
        live = enabled.any(axis=0)
        st.enabled += int(enabled[:, live].sum())
        st.pruned += int((enabled & ~explored_mask).sum())
        st.reduced += int((reduced & ~back).sum())
        st.proviso += int(back.sum())
        explored = [np.nonzero(explored_mask[tid])[0] for tid in range(len(outs))]
        return rows[keep], keys[keep], cands[:, keep], fps[keep], explored

    def _stop(self, stop: tuple[int, str, Any], words: np.ndarray, explored: list, base: int, new: np.ndarray,
              ukeys: np.ndarray, ufps: np.ndarray, uwords: np.ndarray, cand: np.ndarray, rows: np.ndarray,
              parent_fps: np.ndarray, links: Spool, level_size: int) -> None:
        """Settle the counts where the scalar engine would have stopped, and raise."""
        key, kind, detail = stop
        T1 = self.vm.ntrans + 1
        inclusive = kind in ("invariant", "invariant-last", "cut")
        for tid, idx in enumerate(explored):
            keys = (base + idx) * T1 + tid
            self.generated += int(np.count_nonzero(keys <= key if inclusive else keys < key))
        before = new[ukeys[new] < key]
        if kind == "invariant":
            before = new[ukeys[new] <= key]
        links.append(np.stack([ufps[before], parent_fps[rows[cand[before]]]]))
        self.distinct += len(before)
        lay, h = self.layout, self.helper
        if kind == "cut":
            self.cut = f"state bound {self.opts.max_states} reached"
            raise _Stop(None, queued=level_size + self.distinct - self._level_start())
        if kind in ("step", "deadlock"):
            st = lay.unpack(list(words[:, detail]))
            pf = int(parent_fps[detail])
            if kind == "step":
                raise h._step_failure(pf, st)
            raise _Found("deadlock", "", "deadlock: no action is enabled", None, pf, None, st)
        st = lay.unpack([int(x) for x in uwords[:, int((cand == detail).nonzero()[0][0])]])
        if kind == "invariant":
            raise h._invariant_violation(lay.fingerprint_state(st), st)
        pf = int(parent_fps[rows[detail]])
        raise h._invariant_violation(pf, st, last=(None, st))

    def _level_start(self) -> int:
        return self.distinct - len(self.levels[-1])

    def _frontier_grows(self, frontier: Spool) -> bool:
        """Whether a frontier state has an unseen successor; step failures and deadlocks found on the
        way stop the search, in the scalar engine's order."""
        for words in frontier.batches(self.batch):
            n = words.shape[1]
            outs, rows, _keys, cands = self._successors(words)
            flags = np.full(n, 3, dtype=np.int8)  # 0 step failure, 1 deadlock, 2 unseen successor, 3 none
            unseen = np.zeros(n, dtype=bool)
            fps = self.layout.fingerprints(cands)
            fresh = ~self.table.contains(fps)
            if self.constrained and fresh.any():
                sub = fresh.nonzero()[0]
                fresh[sub] = ~self.program.outside(cands[:, sub], len(sub))
            unseen[rows[fresh]] = True
            flags[unseen] = 2
            if self.opts.deadlock:
                live = np.zeros(n, dtype=bool)
                for idx, _d, _f in outs:
                    live[idx] = True
                flags[~live] = 1
            for _idx, _d, fail in outs:
                if fail is not None:
                    flags[fail] = 0
            hit = (flags < 3).nonzero()[0]
            if hit.size:
                r = int(hit[0])
                st = self.layout.unpack([int(x) for x in words[:, r]])
                pf = self.layout.fingerprint_state(st)
                if flags[r] == 0:
                    raise self.helper._step_failure(pf, st)
                if flags[r] == 1:
                    raise _Found("deadlock", "", "deadlock: no action is enabled", None, pf, None, st)
                return True
        return False
