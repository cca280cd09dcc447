"""Breadth-first search on several worker processes, partitioned by fingerprint.

The search starts in one process; once a level's frontier is large enough to be worth
splitting (`HANDOFF` states), it forks the workers, which inherit the visited map. Worker w
then owns the states whose fingerprint is w modulo N: it expands them, keeps their parent
links, and sends every new successor it does not own to its owner, once. Levels are
synchronised, so the search stays breadth-first (shortest counterexamples), and the counts
are exactly those of one process: each successor is counted where it is generated, each
distinct state where it is owned.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time
import traceback
from array import array
from typing import Any

from ..model import Model
from ..progress import NoProgress, Progress, Stats
from ..result import HOLDS, INCONCLUSIVE, VIOLATION, CheckResult, Violation
from ..trace import Trace
from .search import Options, _Found, _matching_step, _Search, expander, rebuild_path, safe_predicates

HANDOFF = 20_000  # frontier size at which one process hands the search over to the workers
_SENT = object()  # parent-map marker: this fingerprint belongs to another worker and was sent there


def _context() -> mp.context.BaseContext:
    return mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context("spawn")


def check_parallel(model: Model, opts: Options, progress: Progress | None = None, handoff: int = HANDOFF) -> CheckResult:
    """Breadth-first search with `opts.workers` processes; same counts as one process."""
    progress = progress or NoProgress()
    search = _Search(model, opts, progress, handoff=handoff)
    try:
        res = search.run()
        if search.handed_off is None:
            res.notes.append(f"the search ended before a frontier reached {handoff:,} states, so one process ran it")
            return res
        return _run_workers(model, opts, progress, search, res.seconds)
    finally:
        progress.close()


def _run_workers(model: Model, opts: Options, progress: Progress, search: _Search, elapsed: float) -> CheckResult:
    ctx = _context()
    n = opts.workers
    frontier, level = search.handed_off
    parts: list[list] = [[] for _ in range(n)]
    for f, st in frontier:
        parts[f % n].append((f, st))
    inboxes = [ctx.Queue() for _ in range(n)]
    commands = [ctx.Queue() for _ in range(n)]
    results = ctx.Queue()
    forked = ctx.get_start_method() == "fork"
    payload: Any = model if forked else (model.ref, model.params, model.symmetry, list(model.invariant_names))
    procs = [ctx.Process(target=_run_worker, daemon=True,
                         args=(w, n, payload, opts, search.parents, parts[w], inboxes, commands[w], results))
             for w in range(n)]
    for p in procs:
        p.start()
    try:
        coord = _Coordinator(model, opts, progress, search, commands, results, n)
        return coord.run(level, elapsed)
    finally:
        for q in commands:
            q.put(("stop", None))
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()


# ---------------------------------------------------------------------------------- workers


class _Worker:
    """One partition of the visited set and of the frontier."""

    def __init__(self, me: int, n: int, model: Model, opts: Options, parents: dict, frontier: list,
                 inboxes: list, commands: Any, results: Any):
        self.me, self.n, self.model, self.opts = me, n, model, opts
        self.inboxes, self.commands, self.results = inboxes, commands, results
        self.parents = parents  # owned: parent fingerprint; sent elsewhere: _SENT; inherited: any
        self.frontier = frontier
        flat_width = getattr(model, "flat_width", None)
        self.width = flat_width() if flat_width else None
        self.expand = expander(model, deadlock=opts.deadlock, partitioned=True, flat=self.width is not None)
        self.bad, self.outside = safe_predicates(model)
        self.canon = model.canonical if model.symmetry else None

    def serve(self) -> None:
        while True:
            cmd, arg = self.commands.get()
            if cmd == "expand":
                self.results.put(("level", self.me, self._level(insert=True)))
            elif cmd == "probe":
                self.results.put(("probe", self.me, self._level(insert=False)))
            elif cmd == "parent":
                p = self.parents.get(arg, _SENT)
                self.results.put(("parent", self.me, "unknown" if p is _SENT else p))
            elif cmd == "stop":
                return

    def _level(self, insert: bool) -> dict[str, Any]:
        n, me = self.n, self.me
        outgoing = [_columns(self.width) for _ in range(n)]
        nxt: list = []
        found = None
        try:
            if insert:
                r = self.expand(self.frontier, self.parents, nxt, self.bad, self.canon, self.outside, sys.maxsize,
                                _no_tick, _SENT, outgoing, n, me)
            else:
                r = self._probe(outgoing, nxt)
            if type(r) is tuple:
                kind, f, st, generated = r
                found = (kind, f, st)
            else:
                generated = r
            for o in range(n):
                if o != me:
                    self.inboxes[o].put(_pack(outgoing[o], self.width))
            received = [_unpack(self.inboxes[me].get()) for _ in range(n - 1)]
            if found is None:
                found = self._merge(received, nxt, insert)
        except Exception:
            return {"crash": traceback.format_exc()}
        if insert:
            self.frontier = nxt
        return {"generated": generated, "new": len(nxt), "found": found,
                "bytes": sys.getsizeof(self.parents) + 32 * len(self.parents)}

    def _merge(self, batches: list, nxt: list, insert: bool) -> tuple | None:
        """Take in the states other workers sent; a violation tuple if one breaks an invariant."""
        parents, bad, outside = self.parents, self.bad, self.outside
        for batch in batches:
            for f, pf, c in batch:
                if f in parents:  # owned here, so never the _SENT marker
                    continue
                if outside is not None and outside(c) >= 0:
                    if insert and bad(c):
                        return ("invariant-last", pf, c)
                    continue
                if not insert:
                    nxt.append(f)
                    continue
                parents[f] = pf
                if bad(c):
                    return ("invariant", f, c)
                nxt.append((f, c))
        return None

    def _probe(self, outgoing: list[tuple], nxt: list) -> Any:
        """For a depth bound: which frontier successors are unseen (nothing is inserted)."""
        n, me = self.n, self.me
        successors, fingerprint = self.model.successors, self.model.fingerprint
        for pf, st in self.frontier:
            try:
                succs = successors(st)
            except Exception:
                return ("step", pf, st, 0)
            if not succs and self.opts.deadlock:
                return ("deadlock", pf, st, 0)
            for _, t in succs:
                c = self.canon(t) if self.canon is not None else t
                f = fingerprint(c)
                if f % n != me:
                    ob = outgoing[f % n]
                    ob[0].append(f)
                    ob[1].append(pf)
                    ob[2].extend(c) if self.width is not None else ob[2].append(c)
                elif f not in self.parents and not (self.outside is not None and self.outside(c) >= 0):
                    nxt.append(f)
        return 0


def _no_tick(k: int, gen: int) -> None:
    pass


def _columns(width: int | None) -> tuple:
    """An outgoing batch: fingerprints, parents, states (flat: all slots in one int64 array)."""
    if width is None:
        return ([], [], [])
    return (array("Q"), array("Q"), array("q"))


def _pack(batch: tuple, width: int | None) -> tuple:
    """A batch ready to send: machine arrays travel as raw bytes."""
    if width is None:
        return ("objects", batch)
    return ("arrays", batch[0].tobytes(), batch[1].tobytes(), batch[2].tobytes(), width)


def _unpack(packed: tuple) -> Any:
    """(fingerprint, parent, state) triples of a received batch."""
    if packed[0] == "objects":
        return zip(*packed[1])
    _, fb, pb, sb, width = packed
    fps, parents, states = array("Q"), array("Q"), array("q")
    fps.frombytes(fb)
    parents.frombytes(pb)
    states.frombytes(sb)
    it = iter(states)
    return zip(fps, parents, zip(*[it] * width))


def _run_worker(me: int, n: int, model: Any, opts: Options, parents: dict, frontier: list, inboxes: list,
                commands: Any, results: Any) -> None:
    if isinstance(model, tuple):  # spawned: load the model again from its reference
        from ..loader import load_model

        ref, params, symmetry, invariants = model
        model = load_model(ref, params, symmetry=symmetry, invariants=invariants)
    try:
        _Worker(me, n, model, opts, parents, frontier, inboxes, commands, results).serve()
    except Exception:
        results.put(("crash", me, traceback.format_exc()))


# ------------------------------------------------------------------------------- coordinator


class _Coordinator:
    def __init__(self, model: Model, opts: Options, progress: Progress, search: _Search, commands: list,
                 results: Any, n: int):
        self.model, self.opts, self.progress, self.search = model, opts, progress, search
        self.commands, self.results, self.n = commands, results, n

    def _gather(self) -> list[Any]:
        out: list[Any] = [None] * self.n
        for _ in range(self.n):
            k, w, payload = self.results.get()
            if k == "crash" or (isinstance(payload, dict) and "crash" in payload):
                raise RuntimeError("a worker failed:\n" + (payload if k == "crash" else payload["crash"]))
            out[w] = payload
        return out

    def _broadcast(self, cmd: str) -> None:
        for q in self.commands:
            q.put((cmd, None))

    def parent_of(self, f: int) -> int | None:
        known = self.search.parents
        if f in known:
            return known[f]
        self.commands[f % self.n].put(("parent", f))
        _k, _w, p = self.results.get()
        if p == "unknown":
            raise RuntimeError("a counterexample state has no recorded parent")
        return p

    def run(self, level: int, elapsed: float) -> CheckResult:
        opts, search = self.opts, self.search
        t0 = time.monotonic() - elapsed
        generated, distinct, depth = search.generated, len(search.parents), search.depth
        frontier = len(search.handed_off[0])
        found, cut, bytes_ = None, None, None
        while frontier:
            if opts.max_depth is not None and level >= opts.max_depth:
                self._broadcast("probe")
                reports = self._gather()
                found = self._first_found(reports)
                if found is None and any(r["new"] for r in reports):
                    cut = opts.depth_cut()
                break
            if opts.max_states is not None and distinct >= opts.max_states:
                cut = f"state bound {opts.max_states} reached"
                break
            self._broadcast("expand")
            reports = self._gather()
            generated += sum(r["generated"] for r in reports)
            frontier = sum(r["new"] for r in reports)
            distinct += frontier
            bytes_ = sum(r["bytes"] for r in reports)
            found = self._first_found(reports)
            if found is not None:
                break
            level += 1
            if frontier:
                depth = level + 1
            if self.progress.due():
                self.progress.report(Stats(distinct, generated, frontier, depth))
        res = CheckResult(HOLDS, distinct, generated, depth, time.monotonic() - t0,
                          queued=frontier if (cut or found) else 0, workers=self.n, visited_bytes=bytes_)
        if found is not None:
            res.verdict = VIOLATION
            res.violation = self._violation(found)
        elif cut:
            res.verdict = INCONCLUSIVE
            res.cut = cut
        return res

    def _first_found(self, reports: list[dict]) -> _Found | None:
        for r in reports:
            if r.get("found"):
                kind, f, st = r["found"]
                out = _Found(kind, "", "", None, f, None, st)
                out.last = kind == "invariant-last"  # type: ignore[assignment]
                return out
        return None

    def _violation(self, f: _Found) -> Violation:
        m = self.model
        path = rebuild_path(m, self.parent_of, f.fp)
        if f.last:
            path.append(_matching_step(m, path[-1][1], f.state))
        st = path[-1][1]
        if f.kind == "step":
            fail = m.diagnose(st)
            kind, name, msg, loc = fail.kind, fail.action, fail.describe(), fail.location
        elif f.kind == "deadlock":
            kind, name, msg, loc = "deadlock", "", "deadlock: no action is enabled", None
        else:
            try:
                i = m.violated(st)
                kind, name, msg, loc = "invariant", m.invariant_names[i], f"invariant {m.invariant_names[i]} is violated", None
            except Exception:
                fail = m.diagnose_predicate(st)
                kind, name, msg, loc = fail.kind, fail.action, fail.message, fail.location
        prop = {"kind": "invariant" if kind == "invariant" else ("deadlock" if kind == "deadlock" else "step"),
                "name": name}
        trace = Trace.from_states(m, path, property=prop, message=msg, location=loc)
        return Violation(kind, name, msg, loc, trace)
