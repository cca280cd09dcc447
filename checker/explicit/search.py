"""Explicit-state search in one process: breadth-first (shortest counterexamples) or depth-first.

The visited set maps each state's 64-bit fingerprint to its parent's fingerprint; states
themselves are kept only in the frontier. A counterexample is rebuilt by walking parent
links back to an initial state and re-generating the path forward (choosing at each step a
successor with the recorded fingerprint), so traces are real paths even under symmetry.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..model import Model, StepFailure
from ..progress import NoProgress, Progress, Stats
from ..result import HOLDS, INCONCLUSIVE, VIOLATION, CheckResult, Violation
from ..trace import Trace


@dataclass
class Options:
    """What to check and how far."""

    deadlock: bool = True
    max_depth: int | None = None  # steps from an initial state
    max_states: int | None = None  # distinct states
    dfs: bool = False
    workers: int = 1
    por: bool = False  # partial-order reduction (actor specs, breadth-first)
    max_violations: int = 1  # beyond 1: record invariant violations and go on (this engine, breadth-first, one worker)

    def depth_cut(self) -> str:
        """Why a search that stopped at the depth bound is inconclusive (in the bound's own unit, steps)."""
        n = self.max_depth
        return f"depth bound of {n} step{'s' if n != 1 else ''} reached with unexplored states"


class _Found(Exception):
    """Stops the search: a violation at a state (by fingerprint), possibly via one more step."""

    def __init__(self, kind: str, name: str, message: str, location: str | None, fp: int,
                 last: tuple[Any, Any] | None = None, state: Any = None, step: bool = False):
        self.kind, self.name, self.message, self.location = kind, name, message, location
        self.fp, self.last, self.state = fp, last, state
        self.step = step  # a step fails in the state (diagnosed on the state the search stored)


def check_serial(model: Model, opts: Options, progress: Progress | None = None) -> CheckResult:
    """Explore `model` exhaustively (within the bounds) in this process and report the verdict."""
    progress = progress or NoProgress()
    try:
        return _Search(model, opts, progress).run()
    finally:
        progress.close()


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (forked workers inherit the pause). A search allocates
    millions of acyclic state tuples, which the collector would only rescan, again and again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _Search:
    """One process's search; with `handoff`, a breadth-first search stops at the first level whose
    frontier has that many states and leaves it in `handed_off` (frontier, level) for workers."""

    def __init__(self, model: Model, opts: Options, progress: Progress, handoff: int | None = None):
        self.model = model
        self.opts = opts
        self.progress = progress
        self.handoff = handoff
        self.handed_off: tuple[list[tuple[int, Any]], int] | None = None
        self.parents: dict[int, int | None] = {}
        self.generated = 0
        self.depth = 0
        self.cut: str | None = None
        self.por: Any = None  # the reduction's statistics when opts.por
        self.checkpoint: Any = None  # an `ExplicitCheckpoint`: write (or resume) the search at level boundaries
        self.collect: Any = None  # a `counterexample.Collector`: invariant violations recorded, the search goes on
        if opts.max_violations > 1 and not opts.dfs:
            from ..counterexample.several import Collector

            self.collect = Collector(model, opts.max_violations)

    # -- shared helpers ----------------------------------------------------------------------
    def _invariant_violation(self, fp: int, st: Any, last: tuple[Any, Any] | None = None) -> _Found:
        m = self.model
        try:
            i = m.violated(st)
        except Exception:
            f = m.diagnose_predicate(st)
            return _Found(f.kind, f.action, f.message, f.location, fp, last, st)
        return _Found("invariant", m.invariant_names[i], f"invariant {m.invariant_names[i]} is violated",
                      None, fp, last, st)

    def _step_failure(self, fp: int, st: Any) -> _Found:
        f: StepFailure = self.model.diagnose(st)
        return _Found(f.kind, f.action, f.describe(), f.location, fp, None, st, step=True)

    def _seed(self) -> list[tuple[int, Any]]:
        m, parents = self.model, self.parents
        canon = m.canonical if m.symmetry else None
        frontier = []
        for s in m.initial_states():
            self.generated += 1
            c = canon(s) if canon else s
            f = m.fingerprint(c)
            if f in parents:
                continue
            if self._outside(c):
                if self._bad(c):
                    raise self._invariant_violation(f, c)
                continue
            parents[f] = None
            if self._bad(c):
                if self.collect is None or self.collect.initial(f, c):
                    raise self._invariant_violation(f, c)
                continue
            frontier.append((f, c))
        if frontier:
            self.depth = 1
        return frontier

    def _bad(self, st: Any) -> bool:
        try:
            return self.model.violated(st) >= 0
        except Exception:
            return True

    def _outside(self, st: Any) -> bool:
        if not self.model.constraint_names:
            return False
        try:
            return self.model.outside(st) >= 0
        except Exception:
            return False

    # -- main loop -----------------------------------------------------------------------------
    def run(self) -> CheckResult:
        t0 = time.monotonic()
        found = None
        queued = 0
        try:
            ck = self.checkpoint
            frontier, level = ck.restore(self) if ck is not None and ck.resume else (self._seed(), 0)
            if self.opts.dfs:
                queued = self._dfs(frontier)
            else:
                queued = self._bfs(frontier, level)
        except _Found as f:
            found = f
        secs = time.monotonic() - t0
        res = CheckResult(HOLDS, len(self.parents), self.generated, self.depth, secs, queued=queued,
                          visited_bytes=_dict_bytes(self.parents))
        if self.por is not None:
            res.notes.append(self.por.note())
        if self.collect is not None:  # the violations recorded, then the one that stopped the search if another
            res.violations = self.collect.violations(self.parents, rebuild_path)
            if found is not None and not self.collect.recorded(found.fp):
                res.violations.append(self._violation(found))
            found = None
            if res.violations:
                res.verdict = VIOLATION
                res.violation = res.violations[0]
        if found is not None:
            res.verdict = VIOLATION
            res.violation = self._violation(found)
        elif self.cut and res.violation is None:
            res.verdict = INCONCLUSIVE
            res.cut = self.cut
        return res

    def _bfs(self, frontier: list[tuple[int, Any]], level: int = 0) -> int:
        m, opts, parents, progress = self.model, self.opts, self.parents, self.progress
        if opts.por:
            from ..reduction.ample import PorStats, for_model
            from .reduced import reduced_level

            if self.por is None:  # (a resumed search goes on counting)
                self.por = PorStats()
            expand = reduced_level(m, for_model(m), self.por, opts.deadlock)
        else:
            expand = expander(m, deadlock=opts.deadlock, partitioned=False)
        canon = m.canonical if m.symmetry else None
        bad, outside = safe_predicates(m)
        if self.collect is not None:
            bad = self.collect.watch(bad, parents)
        cap = opts.max_states if opts.max_states is not None else sys.maxsize
        while frontier:
            if self.handoff is not None and len(frontier) >= self.handoff:
                self.handed_off = (frontier, level)
                return 0
            if opts.max_depth is not None and level >= opts.max_depth:
                if self._frontier_grows(frontier):
                    self.cut = opts.depth_cut()
                return len(frontier)
            nxt: list[tuple[int, Any]] = []
            base = self.generated

            def tick(k: int, gen: int, frontier: list = frontier, nxt: list = nxt, base: int = base) -> None:
                if progress.due():
                    progress.report(Stats(len(parents), base + gen, len(frontier) - k + len(nxt), self.depth))

            if self.collect is not None:
                self.collect.level(frontier)
            r = expand(frontier, parents, nxt, bad, canon, outside, cap, tick, None, None, 1, 0)
            if type(r) is tuple:
                kind, f, st, gen = r
                self.generated += gen
                if kind == "cut":
                    self.cut = f"state bound {opts.max_states} reached"
                    return len(frontier) + len(nxt)
                raise self._stop(kind, f, st)
            self.generated += r
            frontier = nxt if self.collect is None else self.collect.unexpanded(nxt)
            level += 1
            if frontier:
                self.depth = level + 1
            if self.checkpoint is not None:
                self.checkpoint.level_done(self, frontier, level)
        return 0

    def _stop(self, kind: str, f: int, st: Any) -> _Found:
        """The _Found for an expander's stop report."""
        if kind == "step":
            return self._step_failure(f, st)
        if kind == "deadlock":
            return _Found("deadlock", "", "deadlock: no action is enabled", None, f, None, st)
        if kind == "invariant-last":
            return self._invariant_violation(f, st, last=(None, st))
        return self._invariant_violation(f, st)

    def _frontier_grows(self, frontier: list[tuple[int, Any]]) -> bool:
        """Whether any frontier state has an unseen successor (a bound that cut nothing is no cut)."""
        m = self.model
        successors, fingerprint, canon = m.fast_functions()
        for pf, st in frontier:
            try:
                succs = successors(st)
            except Exception:
                raise self._step_failure(pf, st) from None
            if not succs and self.opts.deadlock:
                raise _Found("deadlock", "", "deadlock: no action is enabled", None, pf, None, st)
            for _, t in succs:
                c = canon(t) if canon is not None else t
                if fingerprint(c) not in self.parents and not self._outside(c):
                    return True
        return False

    def _dfs(self, roots: list[tuple[int, Any]]) -> int:
        m, opts, parents, progress = self.model, self.opts, self.parents, self.progress
        successors, fingerprint, canon = m.fast_functions()
        max_states = opts.max_states if opts.max_states is not None else sys.maxsize
        stack = [(f, st, 0) for f, st in reversed(roots)]
        expanded = 0
        while stack:
            pf, st, d = stack.pop()
            self.depth = max(self.depth, d + 1)
            try:
                succs = successors(st)
            except Exception:
                raise self._step_failure(pf, st) from None
            self.generated += len(succs)
            if not succs and opts.deadlock:
                raise _Found("deadlock", "", "deadlock: no action is enabled", None, pf, None, st)
            children = []
            for lid, t in succs:
                c = canon(t) if canon is not None else t
                f = fingerprint(c)
                if f in parents:
                    continue
                if self._outside(c):
                    if self._bad(c):
                        raise self._invariant_violation(pf, c, (lid, t))
                    continue
                if opts.max_depth is not None and d >= opts.max_depth:
                    self.cut = opts.depth_cut()
                    continue
                if len(parents) >= max_states:
                    self.cut = f"state bound {opts.max_states} reached"
                    return len(stack)
                parents[f] = pf
                if self._bad(c):
                    raise self._invariant_violation(f, c)
                children.append((f, c, d + 1))
            stack.extend(reversed(children))
            expanded += 1
            if not expanded & 1023 and progress.due():
                progress.report(Stats(len(parents), self.generated, len(stack), self.depth))
        return 0

    # -- counterexamples -------------------------------------------------------------------------
    def _violation(self, f: _Found) -> Violation:
        path = rebuild_path(self.model, self.parents.get, f.fp)
        if f.last is not None:
            path.append(_matching_step(self.model, path[-1][1], f.state))
        if f.step and self.model.symmetry:  # the representative's failing instance, said of the path's own state
            fail = self.model.diagnose(path[-1][1])
            f = _Found(fail.kind, fail.action, fail.describe(), fail.location, f.fp, None, path[-1][1], step=True)
        kind = f.kind
        prop = {"kind": "invariant" if kind == "invariant" else ("deadlock" if kind == "deadlock" else "step"),
                "name": f.name}
        message = f.message
        trace = Trace.from_states(self.model, path, property=prop, message=message, location=f.location)
        return Violation(kind, f.name, message, f.location, trace)


def safe_predicates(model: Model) -> tuple[Callable[[Any], bool], Callable[[Any], int] | None]:
    """(bad, outside): invariant and constraint tests that never raise (a failure counts as bad)."""
    violated = model.violated

    def bad(st: Any) -> bool:
        try:
            return violated(st) >= 0
        except Exception:
            return True

    if not model.invariant_names:
        bad = lambda st: False  # noqa: E731
    outside = None
    if model.constraint_names:
        raw = model.outside

        def outside(st: Any) -> int:
            try:
                return raw(st)
            except Exception:
                return -1

    return bad, outside


def expander(model: Model, deadlock: bool, partitioned: bool, flat: bool = False) -> Callable[..., Any]:
    """The level-expansion function for `model` (compiled for typed specs; see codegen.expand_source)."""
    fast = getattr(model, "level_expander", None)
    if fast is not None:
        return fast(deadlock=deadlock, partitioned=partitioned, flat=flat)
    return generic_expander(model, deadlock, partitioned)


def generic_expander(model: Model, deadlock: bool, partitioned: bool) -> Callable[..., Any]:
    """The same protocol as codegen.expand_source, for any model (plain specs)."""
    successors, fingerprint = model.successors, model.fingerprint

    def expand(frontier, P, N, bad, canon, outside, cap, tick, S, out, nw, me):  # noqa: N803
        gen = 0
        for k, (pf, st) in enumerate(frontier):
            if not k & 63:  # plain specs may take milliseconds per state: look at the clock often
                tick(k, gen)
            try:
                succs = successors(st)
            except Exception:
                return ("step", pf, st, gen)
            gen += len(succs)
            if not succs and deadlock:
                return ("deadlock", pf, st, gen)
            for _, t in succs:
                c = canon(t) if canon is not None else t
                f = fingerprint(c)
                if f in P:
                    continue
                if partitioned:
                    o = f % nw
                    if o != me:
                        P[f] = S
                        out[o][0].append(f)
                        out[o][1].append(pf)
                        out[o][2].append(c)
                        continue
                if outside is not None and outside(c) >= 0:
                    if bad(c):
                        return ("invariant-last", pf, c, gen)
                    continue
                if len(P) >= cap:
                    return ("cut", pf, st, gen)
                P[f] = pf
                if bad(c):
                    return ("invariant", f, c, gen)
                N.append((f, c))
        return gen

    return expand


def rebuild_path(model: Model, parent_of: Any, fp: int) -> list[tuple[Any, Any]]:
    """The path [(None, s0), (label, s1), ...] from an initial state to the state with fingerprint `fp`."""
    chain = [fp]
    while True:
        p = parent_of(chain[-1])
        if p is None:
            break
        chain.append(p)
    chain.reverse()
    canon = model.canonical if model.symmetry else (lambda s: s)
    cur = None
    for s in model.initial_states():
        if model.fingerprint(canon(s)) == chain[0]:
            cur = s
            break
    if cur is None:
        raise RuntimeError("no initial state matches the counterexample's root")
    path: list[tuple[Any, Any]] = [(None, cur)]
    for target in chain[1:]:
        for lid, t in _steps(model, cur):
            if model.fingerprint(canon(t)) == target:
                path.append((lid, t))
                cur = t
                break
        else:
            raise RuntimeError("a counterexample step could not be regenerated")
    return path


def _matching_step(model: Model, cur: Any, target_canonical: Any) -> tuple[Any, Any]:
    """The step from `cur` to a state whose canonical form is `target_canonical`."""
    canon = model.canonical if model.symmetry else (lambda s: s)
    want = model.fingerprint(target_canonical)
    for lid, t in _steps(model, cur):
        if model.fingerprint(canon(t)) == want:
            return lid, t
    raise RuntimeError("the violating step could not be regenerated")


def _steps(model: Model, st: Any) -> list[tuple[Any, Any]]:
    """The steps from `st`; where one of them fails, those that do not (a search may stop at a successor
    found before it reached the failing step)."""
    try:
        return model.successors(st)
    except Exception:
        lenient = getattr(model, "steps_that_succeed", None)
        if lenient is None:
            raise
        return lenient(st)


def _dict_bytes(d: dict) -> int:
    """Bytes held by the visited map: the dict table plus its int keys (parent ints are shared)."""
    return sys.getsizeof(d) + 32 * len(d)
