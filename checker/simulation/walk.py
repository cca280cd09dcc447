"""Random simulation of any spec (typed, actor, plain): random walks from initial states that check every
invariant, deadlock and step failure at each state they visit, as TLC's `-simulate` does.

Walk k draws from its own generator, seeded by (seed, k), so a run is reproducible whatever the number
of workers; the violation reported is the one of the lowest-numbered walk that has one (a worker stops
at its first, which is the lowest of its walks).
"""

from __future__ import annotations

import multiprocessing
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..coverage import Coverage
from ..model import Model
from ..result import Violation
from ..trace import Trace

ENDINGS = ("depth", "deadlock", "constraint")


@dataclass
class SimResult:
    """What the walks saw: their number and steps, distinct states, coverage, and the first violation."""

    runs: int
    steps: int
    distinct: int
    seconds: float
    coverage: Coverage
    endings: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENDINGS, 0))
    violation: Violation | None = None
    violating_walk: int | None = None

    @property
    def exit_code(self) -> int:
        return 1 if self.violation is not None else 0


@dataclass
class _Part:
    """One worker's share of the walks (the violation as its walk's path, rebuilt into a trace by the caller)."""

    runs: int = 0
    steps: int = 0
    seen: set = field(default_factory=set)
    coverage: Coverage = field(default_factory=Coverage)
    endings: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENDINGS, 0))
    found: tuple | None = None  # (walk, path, kind, name, message, location)


def walk_seed(seed: int, k: int) -> int:
    return seed * 1_000_003 + k


def _walks(model: Model, walks: range, depth: int, seed: int, deadlock: bool,
           tick: Callable[[int, int], None] | None) -> _Part:
    part = _Part()
    inits = model.initial_states()
    fp, succ_of = model.fingerprint, model.successors
    constrained = bool(model.constraint_names)
    checked = bool(model.invariant_names)
    enabled, taken, seen = part.coverage.enabled, part.coverage.taken, part.seen
    for k in walks:
        rng = random.Random(walk_seed(seed, k))
        st = inits[rng.randrange(len(inits))]
        path: list[tuple[Any, Any]] = [(None, st)]
        part.runs += 1
        end = "depth"
        for _ in range(depth + 1):
            seen.add(fp(st))
            bad = _invariant(model, st) if checked else None
            if bad is not None:
                part.found = (k, path, *bad)
                return part
            if constrained and model.outside(st) >= 0:
                end = "constraint"
                break
            if len(path) > depth:
                break
            try:
                succ = succ_of(st)
            except Exception:
                f = model.diagnose(st)
                part.found = (k, path, f.kind, f.action, f.describe(), f.location)
                return part
            if not succ:
                if deadlock:
                    part.found = (k, path, "deadlock", "", "deadlock: no action is enabled", None)
                    return part
                end = "deadlock"
                break
            enabled.update([lid for lid, _t in succ])
            lid, st = succ[rng.randrange(len(succ))]
            taken[lid] += 1
            path.append((lid, st))
            part.steps += 1
        part.endings[end] += 1
        if tick is not None:
            tick(part.runs, part.steps)
    return part


def _invariant(model: Model, st: Any) -> tuple[str, str, str, str | None] | None:
    try:
        i = model.violated(st)
    except Exception:
        f = model.diagnose_predicate(st)
        return "error", f.action, f.message, f.location
    if i < 0:
        return None
    name = model.invariant_names[i]
    return "invariant", name, f"invariant {name} is violated", None


_JOB: tuple | None = None  # (model, depth, seed, deadlock) for forked workers


def _worker(walks: range) -> _Part:
    model, depth, seed, deadlock = _JOB  # type: ignore[misc]
    return _walks(model, walks, depth, seed, deadlock, None)


def simulate(model: Model, runs: int, depth: int, seed: int = 1, deadlock: bool = True, workers: int = 1,
             tick: Callable[[int, int], None] | None = None) -> SimResult:
    """`runs` random walks of at most `depth` steps each."""
    global _JOB
    began = time.monotonic()
    if workers == 1:
        parts = [_walks(model, range(runs), depth, seed, deadlock, tick)]
    else:
        _JOB = (model, depth, seed, deadlock)
        try:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                parts = pool.map(_worker, [range(w, runs, workers) for w in range(workers)])
        finally:
            _JOB = None
    coverage, seen = Coverage(), set()
    res = SimResult(0, 0, 0, 0.0, coverage)
    for p in parts:
        res.runs += p.runs
        res.steps += p.steps
        seen |= p.seen
        coverage.merge(p.coverage)
        for e, n in p.endings.items():
            res.endings[e] += n
    res.distinct = len(seen)
    found = min((p.found for p in parts if p.found is not None), key=lambda f: f[0], default=None)
    if found is not None:
        k, path, kind, name, message, location = found
        prop = {"kind": kind if kind in ("invariant", "deadlock") else "step", "name": name}
        trace = Trace.from_states(model, path, property=prop, message=message, location=location)
        res.violation = Violation(kind, name, message, location, trace)
        res.violating_walk = k
    res.seconds = time.monotonic() - began
    return res
