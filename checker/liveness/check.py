"""Deciding temporal properties: build the state graph once (scalar or vector engine), then search a lasso
for each property in turn."""

from __future__ import annotations

import time
from typing import Any

from lockstep.specs.lang.errors import SpecError

from ..explicit import Options
from ..model import Model
from ..progress import NoProgress, Progress
from ..result import HOLDS, INCONCLUSIVE, VIOLATION, CheckResult, Violation
from ..temporal import Fairness, Property
from ..trace import Trace
from .explore import Stop, explore
from .graph import StateGraph
from .lasso import Lasso, find_lasso


def check_properties(model: Model, props: list[Property], fair: Fairness, opts: Options,
                     progress: Progress | None = None, engine: str = "scalar") -> CheckResult:
    """Explore `model` once and decide each of `props` under `fair`; the first violation comes with a lasso.
    `engine` is "scalar" (state by state) or "vector" (the compiled kernels, `opts.workers` threads)."""
    if model.symmetry:
        raise SpecError(f"spec {model.name}: temporal properties are checked without symmetry reduction "
                        "(it is not sound for per-process fairness); load the model with symmetry=False")
    progress = progress or NoProgress()
    t0 = time.monotonic()
    try:
        g = _build(model, fair, opts, progress, engine)
    except Stop as stop:
        return CheckResult(VIOLATION, stop.distinct, stop.generated, stop.depth, time.monotonic() - t0,
                           violation=stop.violation, fingerprinted=engine == "vector")
    finally:
        progress.close()
    unused = fair.unused()
    if unused:
        raise SpecError(f"fairness is declared for action {unused[0]!r}, but no step of spec {model.name} has that action")
    res = CheckResult(HOLDS, g.n, g.generated, int(g.depth.max(initial=-1)) + 1, 0.0, fingerprinted=engine == "vector")
    if g.outside:
        res.notes.append(f"{g.outside:,} states outside the state constraints were not expanded")
    for prop in props:
        lasso = find_lasso(g, prop, fair)
        if lasso is not None:
            res.verdict = VIOLATION
            res.violation = temporal_violation(model, g, prop, fair, lasso)
            break
    else:
        if g.cut:
            res.verdict = INCONCLUSIVE
            res.cut = g.cut
    res.seconds = time.monotonic() - t0
    return res


def _build(model: Model, fair: Fairness, opts: Options, progress: Progress, engine: str) -> StateGraph:
    if engine == "vector":
        from ..vector.graph import build_graph

        return build_graph(model, fair, opts, progress)
    return explore(model, fair, opts, progress)


def temporal_violation(model: Model, g: StateGraph, prop: Property, fair: Fairness, lasso: Lasso) -> Violation:
    """The violation of `prop` that `lasso` shows, with its trace."""
    path: list[tuple[Any, Any]] = [(None if lid is None else g.label_of(lid), g.state_of(i)) for lid, i in lasso.path]
    last = len(path) - 1
    how = (f"the behaviour stutters for ever in state {last}" if lasso.loop == last
           else f"states {lasso.loop}..{last} repeat for ever")
    message = f"temporal property {prop.name} ({prop.formula}) is violated: {how}"
    kinds = {"kind": "temporal", "name": prop.name, "fairness": fair.describe(), "overrides": fair.overrides}
    trace = Trace.from_states(model, path, property=kinds, message=message, loop=lasso.loop)
    return Violation("temporal", prop.name, message, None, trace)
