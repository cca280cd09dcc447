"""A block of random walks of any spec (typed, actor, plain) from its initial states, checking every
invariant, deadlock and step failure at each state they visit.

Walk k makes counter-based choices, functions of (seed, k) (`rng`), so a walk is the same wherever it runs, and
the same in a typed spec's compiled kernel (`kernel`) as here. A contiguous block of walks stops at its first
violation and is summed up as a `Tally` of plain data (counts, coverage entries, the states and values seen as
arrays, the violating walk's number), which is all that crosses processes: the driver re-runs that one walk to
rebuild its trace.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..coverage import Coverage
from ..model import Model
from .rng import pick, walk_key
from .seen import Seen

if TYPE_CHECKING:
    from .kernel import CompiledWalks

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


def _walks(model: Model, walks: range, depth: int, seed: int, deadlock: bool,
           tick: Callable[[int, int], None] | None) -> _Part:
    inits = model.initial_states()  # (a plain spec learns its variables' names from them)
    part = _Part(Seen(model))
    fp, succ_of = model.fingerprint, model.successors
    constrained = bool(model.constraint_names)
    checked = bool(model.invariant_names)
    enabled, taken, seen = part.coverage.enabled, part.coverage.taken, part.seen
    for k in walks:
        key = walk_key(seed, k)
        st = inits[pick(key, 0, len(inits))]
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
            if constrained and _outside(model, st):
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
            lid, st = succ[pick(key, len(path), len(succ))]
            taken[lid] += 1
            path.append((lid, st))
            part.steps += 1
        seen.walk(k, visited)
        part.endings[end] += 1
        if tick is not None:
            tick(part.runs, part.steps)
    return part


def _outside(model: Model, st: Any) -> bool:
    """Whether `st` is outside the state constraints (one that fails to evaluate keeps it inside, as in the
    searches and the compiled kernel)."""
    try:
        return model.outside(st) >= 0
    except Exception:
        return False


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
          tick: Callable[[int, int], None] | None = None, kernel: CompiledWalks | None = None) -> Tally:
    """Run the walks of `walks` (stopping at the first violation), in the compiled `kernel` if given, and sum them
    up."""
    if kernel is not None:
        return _compiled(model, kernel, walks, depth, seed, deadlock, tick)
    part = _walks(model, walks, depth, seed, deadlock, tick)
    cov = {k: [v["enabled"], v["taken"]] for k, v in part.coverage.table(model).items()}
    found = None if part.found is None else (part.found[0], *part.found[2:])
    return Tally(part.runs, part.steps, dict(part.endings), cov, part.seen.plain(), found)


def _compiled(model: Model, kernel: CompiledWalks, walks: range, depth: int, seed: int, deadlock: bool,
              tick: Callable[[int, int], None] | None) -> Tally:
    """`tally` in the compiled kernel: the same walks, counts and violation (the states and values hashed by the
    kernel)."""
    seen = Seen(model)
    enabled = np.zeros(max(1, kernel.transitions), dtype=np.int64)
    taken = np.zeros_like(enabled)
    runs = steps = 0
    ends = np.zeros(6, dtype=np.int64)
    found = None
    size, scratch = kernel.chunk(depth), kernel.scratch(depth)
    for a in range(walks.start, walks.stop, size):
        b = kernel.run(a, min(size, walks.stop - a), depth, seed, deadlock, enabled, taken, scratch)
        seen.walks(a, b.fps, b.sizes, b.values)
        runs += b.done
        steps += int(b.steps.sum())
        ends += np.bincount(b.end, minlength=6)
        if b.done and b.end[-1] >= 3:
            k = a + b.done - 1
            got = _walks(model, range(k, k + 1), depth, seed, deadlock, None).found
            if got is None or len(got[1]) - 1 != int(b.steps[-1]):
                raise RuntimeError(f"walk {k + 1} ended differently in the spec's compiled kernel and in Python: "
                                   "the kernel does not run this spec as the explicit engine does")
            found = (k, *got[2:])
            break
        if tick is not None:
            tick(runs, steps)
    counts = Coverage()
    counts.enabled = Counter({t: int(n) for t, n in enumerate(enabled) if n})
    counts.taken = Counter({t: int(n) for t, n in enumerate(taken) if n})
    cov = {k: [v["enabled"], v["taken"]] for k, v in counts.table(model).items()}
    endings = {e: int(ends[i]) for i, e in enumerate(ENDINGS)}
    return Tally(runs, steps, endings, cov, seen.plain(), found)


def rewalk(model: Model, walk: int, depth: int, seed: int, deadlock: bool) -> tuple:
    """Walk number `walk` again, here: (walk, path, kind, name, message, location) of its violation."""
    found = _walks(model, range(walk, walk + 1), depth, seed, deadlock, None).found
    if found is None:
        raise RuntimeError(f"walk {walk + 1} found a violation elsewhere but not when re-run here: the spec's "
                           "steps are not a function of the state and the choices (a hidden source of randomness?)")
    return found
