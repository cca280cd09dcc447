"""A block of random walks of any spec (typed, actor, plain) from its initial states, checking every
invariant, deadlock and step failure at each state they visit.

Walk k draws from its own generator, seeded by (seed, k), so a walk is the same wherever it runs. A
contiguous block of walks stops at its first violation and is summed up as a `Tally` of plain data
(counts, coverage entries, the states and values seen as arrays, the violating walk's number), which is all that
crosses processes: the driver re-runs that one walk to rebuild its trace.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..coverage import Coverage
from ..model import Model
from .seen import Seen

ENDINGS = ("depth", "deadlock", "constraint")


@dataclass
class _Part:
    """What a block of walks saw, in this process (the violation with its walk's path of states)."""

    seen: Seen
    runs: int = 0
    steps: int = 0
    coverage: Coverage = field(default_factory=Coverage)
    endings: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENDINGS, 0))
    found: tuple | None = None  # (walk, path, kind, name, message, location)


def walk_seed(seed: int, k: int) -> int:
    return seed * 1_000_003 + k


def _walks(model: Model, walks: range, depth: int, seed: int, deadlock: bool,
           tick: Callable[[int, int], None] | None) -> _Part:
    inits = model.initial_states()  # (a plain spec learns its variables' names from them)
    part = _Part(Seen(model))
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
        visited: dict[int, Any] = {}
        for _ in range(depth + 1):
            visited[fp(st)] = st
            bad = _invariant(model, st) if checked else None
            if bad is not None:
                seen.walk(k, visited)
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
                seen.walk(k, visited)
                f = model.diagnose(st)
                part.found = (k, path, f.kind, f.action, f.describe(), f.location)
                return part
            if not succ:
                if deadlock:
                    seen.walk(k, visited)
                    part.found = (k, path, "deadlock", "", "deadlock: no action is enabled", None)
                    return part
                end = "deadlock"
                break
            enabled.update([lid for lid, _t in succ])
            lid, st = succ[rng.randrange(len(succ))]
            taken[lid] += 1
            path.append((lid, st))
            part.steps += 1
        seen.walk(k, visited)
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




@dataclass
class Tally:
    """What a block of walks saw, as plain data: the walks up to and including the first violating one."""

    runs: int
    steps: int
    endings: dict[str, int]
    coverage: dict[str, list[int]]  # coverage entry -> [enabled, taken]
    seen: dict[str, Any]  # the states and values seen, as `Seen.plain` gives them
    found: tuple[int, str, str, str, str | None] | None  # (walk, kind, name, message, location)


def tally(model: Model, walks: range, depth: int, seed: int, deadlock: bool,
          tick: Callable[[int, int], None] | None = None) -> Tally:
    """Run the walks of `walks` (stopping at the first violation) and sum them up."""
    part = _walks(model, walks, depth, seed, deadlock, tick)
    cov = {k: [v["enabled"], v["taken"]] for k, v in part.coverage.table(model).items()}
    found = None if part.found is None else (part.found[0], *part.found[2:])
    return Tally(part.runs, part.steps, dict(part.endings), cov, part.seen.plain(), found)


def rewalk(model: Model, walk: int, depth: int, seed: int, deadlock: bool) -> tuple:
    """Walk number `walk` again, here: (walk, path, kind, name, message, location) of its violation."""
    found = _walks(model, range(walk, walk + 1), depth, seed, deadlock, None).found
    if found is None:
        raise RuntimeError(f"walk {walk + 1} found a violation elsewhere but not when re-run here: the spec's "
                           "steps are not a function of the state and the choices (a hidden source of randomness?)")
    return found
