"""The vector engine on several processes, the frontier partitioned by fingerprint.

The search starts in one process; once a level's frontier reaches `HANDOFF` states it forks
the workers, which inherit the visited table so far. Worker w then owns the states whose
fingerprint is w modulo N: it expands its part of each level a batch at a time and writes
every successor that differs from its parent (fingerprint, parent fingerprint, packed words)
to the owner's inbox, a file in a shared directory; after a barrier each worker takes in its
inbox, keeps the first occurrence of each state it has not seen, checks the invariants, and
records parent links. Levels are synchronised, so the search stays breadth-first (shortest
counterexamples), and a search that completes counts exactly as one process does: each
successor is counted where it is generated, each distinct state where it is owned.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import tempfile
import time
import traceback
from typing import Any

import numpy as np

from ..explicit.search import Options, _Found
from ..progress import Progress, Stats
from ..result import HOLDS, INCONCLUSIVE, VIOLATION, CheckResult
from .search import VectorModel, VectorOptions, VectorSearch
from .spool import Budget, Spool

HANDOFF = 20_000  # frontier size at which the first process hands the search to the workers
INBOX_CHUNK = 1 << 22  # records taken in at a time


def _context() -> mp.context.BaseContext:
    if "fork" not in mp.get_all_start_methods():
        raise RuntimeError("--workers with the vector engine needs the fork start method (Linux, macOS)")
    return mp.get_context("fork")


def check_workers(vm: VectorModel, opts: Options, progress: Progress, vopts: VectorOptions,
                  handoff: int = HANDOFF) -> CheckResult:
    """Breadth-first search with `opts.workers` processes; the counts of one process."""
    search = VectorSearch(vm, opts, progress, vopts)
    search.handoff = handoff
    try:
        res = search.run()
        if search.handed_off is None:
            res.notes.append(f"the search ended before a frontier reached {handoff:,} states, so one process ran it")
            return res
        with tempfile.TemporaryDirectory(prefix="lockstep-workers-", dir=vopts.spill_dir) as shared:
            return _Coordinator(search, opts, progress, vopts, shared).run(res.seconds)
    finally:
        search.close()
        progress.close()


def first_occurrences(keys: np.ndarray) -> np.ndarray:
    """The index of each distinct key's first occurrence, ascending."""
    return np.sort(np.unique(keys, return_index=True)[1])


def _inbox(shared: str, level: int, src: int, dst: int) -> str:
    return os.path.join(shared, f"level{level}-from{src}-to{dst}.bin")


# ---------------------------------------------------------------------------------- workers


class _Worker:
    """One partition of the visited set, the frontier and the parent links."""

    def __init__(self, me: int, n: int, search: VectorSearch, frontier: Spool, shared: str, memory: int):
        self.me, self.n, self.search, self.shared = me, n, search, shared
        os.makedirs(os.path.join(shared, f"worker{me}"), exist_ok=True)
        self.budget = Budget(memory, os.path.join(shared, f"worker{me}"))
        self.frontier = frontier
        self.links: list[Spool] = []
        self.cols = 2 + search.layout.words  # fingerprint, parent fingerprint, packed words

    def serve(self, commands: Any, results: Any) -> None:
        while True:
            cmd, level, insert = commands.get()
            if cmd == "stop":
                self.budget.close()
                return
            try:
                if cmd == "expand":
                    out = self.expand(level)
                elif cmd == "absorb":
                    out = self.absorb(level, insert)
                else:  # "parent": `level` carries the fingerprint
                    found, parent = self.find_parent(level)
                    out = {"found": found, "parent": parent}
            except Exception:
                out = {"crash": traceback.format_exc()}
            results.put((self.me, out))

    def find_parent(self, fp: int) -> tuple[bool, int | None]:
        for links in reversed(self.links):
            row = links.find(0, fp)
            if row is not None:
                return True, (None if int(row[1]) == 0 else int(row[1]))
        return self.search.find_parent(fp)

    def expand(self, level: int) -> dict:
        """Run the transitions over this worker's frontier; send each successor to its owner."""
        s, lay = self.search, self.search.layout
        files = [open(_inbox(self.shared, level, self.me, o), "wb") for o in range(self.n)]
        generated, event = 0, None
        try:
            for words in self.frontier.batches(s.batch):
                c = s.successors(words)
                outs = c.outs
                generated += sum(o[0].size for o in outs)
                if event is None:
                    event = self._first_failure(words, outs)
                moved = c.moved().nonzero()[0]
                if not moved.size:
                    continue
                rows, cands = c.rows[moved], c.states(moved)
                fps = lay.fingerprints(cands)
                firsts = first_occurrences(fps)
                fps, cands = fps[firsts], cands[:, firsts]
                parents = lay.fingerprints(words)[rows[firsts]]
                owner = fps % np.uint64(self.n)
                for o in range(self.n):
                    sel = (owner == o).nonzero()[0]
                    if sel.size:
                        block = np.vstack([fps[sel], parents[sel], cands[:, sel]])
                        np.ascontiguousarray(block.T).tofile(files[o])
        finally:
            for f in files:
                f.close()
        return {"generated": generated, "event": event}

    def _first_failure(self, words: np.ndarray, outs: list) -> tuple | None:
        """A failing step or a deadlock in this batch (the first row with one), as an event."""
        n = words.shape[1]
        flags = np.full(n, 2, dtype=np.int8)  # 0 step failure, 1 deadlock, 2 none
        if self.search.opts.deadlock:
            live = np.zeros(n, dtype=bool)
            for idx, _d, _f in outs:
                live[idx] = True
            flags[~live] = 1
        for _idx, _d, fail in outs:
            if fail is not None:
                flags[fail] = 0
        hit = (flags < 2).nonzero()[0]
        if not hit.size:
            return None
        r = int(hit[0])
        st = self.search.layout.unpack([int(x) for x in words[:, r]])
        return ("step" if flags[r] == 0 else "deadlock", self.search.layout.fingerprint_state(st), st)

    def absorb(self, level: int, insert: bool) -> dict:
        """Take in the successors owned here: keep the unseen ones (or, probing, just say if any)."""
        s, lay = self.search, self.search.layout
        nxt = Spool(self.budget, lay.words)
        links = Spool(self.budget, 2)
        new, unseen, event = 0, False, None
        for src in range(self.n):
            path = _inbox(self.shared, level, src, self.me)
            if not os.path.getsize(path):
                os.remove(path)
                continue
            records = np.memmap(path, dtype=np.uint64, mode="r").reshape(-1, self.cols)
            for start in range(0, len(records), INBOX_CHUNK):
                rec = np.array(records[start:start + INBOX_CHUNK]).T
                fps, parents, words = rec[0], rec[1], rec[2:]
                firsts = first_occurrences(fps)
                fresh = firsts[~s.table.contains(fps[firsts])]
                m = len(fresh)
                if not m:
                    continue
                cand = words[:, fresh]
                inside = ~s.program.outside(cand, m) if s.constrained else np.ones(m, dtype=bool)
                bad = s.program.bad(cand, m) if s.checks_invariants else np.zeros(m, dtype=bool)
                if not insert:
                    unseen = unseen or bool(inside.any())
                    continue
                out_bad = (~inside & bad).nonzero()[0]
                if out_bad.size and event is None:
                    j = int(out_bad[0])
                    event = ("invariant-last", int(parents[fresh[j]]), lay.unpack([int(x) for x in cand[:, j]]))
                keep = inside.nonzero()[0]
                s.table.add(fps[fresh[keep]])
                links.append(np.stack([fps[fresh[keep]], parents[fresh[keep]]]))
                nxt.append(cand[:, keep])
                new += len(keep)
                new_bad = bad[keep].nonzero()[0]
                if new_bad.size and event is None:
                    j = int(keep[new_bad[0]])
                    event = ("invariant", int(fps[fresh[j]]), lay.unpack([int(x) for x in cand[:, j]]))
            del records
            os.remove(path)
        if insert:
            self.links.append(links)
            self.frontier.close()
            self.frontier = nxt
        else:
            nxt.close()
            links.close()
        return {"new": new, "unseen": unseen, "event": event, "table_bytes": s.table.nbytes,
                "spilled": self.budget.spilled}


def _run_worker(me: int, n: int, search: VectorSearch, frontier: Spool, shared: str, memory: int,
                commands: Any, results: Any) -> None:
    try:
        _Worker(me, n, search, frontier, shared, memory).serve(commands, results)
    except Exception:
        results.put((me, {"crash": traceback.format_exc()}))


# ------------------------------------------------------------------------------- coordinator


class _Coordinator:
    """Drives the workers level by level and assembles the result."""

    def __init__(self, search: VectorSearch, opts: Options, progress: Progress, vopts: VectorOptions, shared: str):
        self.search, self.opts, self.progress, self.shared = search, opts, progress, shared
        self.n = opts.workers
        self.memory = (search.budget.limit if vopts.memory is None else vopts.memory) // self.n

    def _split(self, frontier: Spool) -> list[Spool]:
        lay = self.search.layout
        parts = [Spool(Budget(None), lay.words) for _ in range(self.n)]
        for words in frontier.batches(self.search.batch):
            owner = lay.fingerprints(words) % np.uint64(self.n)
            for w in range(self.n):
                parts[w].append(words[:, owner == w])
        frontier.close()
        return parts

    def run(self, elapsed: float) -> CheckResult:
        search, n = self.search, self.n
        ctx = _context()
        frontier, level = search.handed_off
        parts = self._split(frontier)
        self.commands = [ctx.Queue() for _ in range(n)]
        self.results = ctx.Queue()
        procs = [ctx.Process(target=_run_worker, daemon=True,
                             args=(w, n, search, parts[w], self.shared, self.memory, self.commands[w], self.results))
                 for w in range(n)]
        for p in procs:
            p.start()
        try:
            return self._levels(level, elapsed, sum(len(p) for p in parts))
        finally:
            for q in self.commands:
                q.put(("stop", 0, False))
            for p in procs:
                p.join(timeout=10)
                if p.is_alive():
                    p.terminate()

    def _ask(self, cmd: str, level: int, insert: bool = True) -> list[dict]:
        for q in self.commands:
            q.put((cmd, level, insert))
        return self._gather()

    def _gather(self) -> list[dict]:
        out: list[dict] = [{}] * self.n
        for _ in range(self.n):
            w, payload = self.results.get()
            if "crash" in payload:
                raise RuntimeError("a vector worker failed:\n" + payload["crash"])
            out[w] = payload
        return out

    def _levels(self, level: int, elapsed: float, queued: int) -> CheckResult:
        search, opts = self.search, self.opts
        t0 = time.monotonic() - elapsed
        found: tuple | None = None
        cut: str | None = None
        table_bytes, spilled = search.table.nbytes, search.budget.spilled
        while queued:
            probing = opts.max_depth is not None and level >= opts.max_depth
            if not probing and opts.max_states is not None and search.distinct >= opts.max_states:
                cut = f"state bound {opts.max_states} reached"
                break
            reports = self._ask("expand", level)
            if not probing:
                search.generated += sum(r["generated"] for r in reports)
            found = next((r["event"] for r in reports if r["event"]), None)
            if found is not None:
                break
            reports = self._ask("absorb", level, insert=not probing)
            if probing:
                if any(r["unseen"] for r in reports):
                    cut = opts.depth_cut()
                break
            queued = sum(r["new"] for r in reports)
            search.distinct += queued
            table_bytes = sum(r["table_bytes"] for r in reports)
            spilled = search.budget.spilled + sum(r["spilled"] for r in reports)
            found = next((r["event"] for r in reports if r["event"]), None)
            if found is not None:
                break
            level += 1
            if queued:
                search.depth = level + 1
            if self.progress.due():
                self.progress.report(Stats(search.distinct, search.generated, queued, search.depth))
        res = CheckResult(HOLDS, search.distinct, search.generated, search.depth, time.monotonic() - t0,
                          queued=queued if (cut or found) else 0, workers=self.n, visited_bytes=table_bytes)
        res.exact_fingerprints = search.layout.exact
        search.budget.spilled = spilled
        res.notes.append(search._memory_note().replace("visited table", f"visited tables (all {self.n} workers)"))
        if found is not None:
            res.verdict = VIOLATION
            res.violation = self._violation(found)
        elif cut:
            res.verdict = INCONCLUSIVE
            res.cut = cut
        return res

    def get(self, fp: int) -> int | None:
        """A parent link: from the first process's levels, or from the worker owning `fp`."""
        found, parent = self.search.find_parent(fp)
        if found:
            return parent
        self.commands[fp % self.n].put(("parent", fp, False))
        _w, payload = self.results.get()
        if "crash" in payload or not payload["found"]:
            raise RuntimeError("a counterexample state has no recorded parent")
        return payload["parent"]

    def _violation(self, event: tuple) -> Any:
        kind, fp, st = event
        h = self.search.helper
        h.parents = self  # type: ignore[assignment]
        if kind == "step":
            f = h._step_failure(fp, st)
        elif kind == "deadlock":
            f = _Found("deadlock", "", "deadlock: no action is enabled", None, fp, None, st)
        elif kind == "invariant":
            f = h._invariant_violation(fp, st)
        else:
            f = h._invariant_violation(fp, st, last=(None, st))
        return h._violation(f)
