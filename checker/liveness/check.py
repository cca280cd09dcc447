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
from .symmetric import Quotient


def check_properties(model: Model, props: list[Property], fair: Fairness, opts: Options,
                     progress: Progress | None = None, engine: str = "scalar", vm: Any = None) -> CheckResult:
    """Explore `model` once and decide each of `props` under `fair`; the first violation comes with a lasso.
    `engine` is "scalar" (state by state, one worker) or "vector" (the compiled kernels, on two threads if
    `opts.workers` > 1; `vm`: the model prepared for it, `choose_engine`'s). A model loaded with symmetry is
    checked over its orbits' representatives, where that is sound (`symmetric`)."""
    quotient = Quotient(model, props, fair) if model.symmetry else None
    progress = progress or NoProgress()
    t0 = time.monotonic()
    red = None
    if opts.por:
        from ..reduction.liveness import liveness_reduction

        red = liveness_reduction(model, props, fair)
    try:
        g = _build(model, fair, opts, progress, engine, vm, props, quotient, red if red is None or not red.idle else None)
    except Stop as stop:
        return CheckResult(VIOLATION, stop.distinct, stop.generated, stop.depth, time.monotonic() - t0,
                           violation=stop.violation, fingerprinted=engine == "vector")
    finally:
        progress.close()
    unused = fair.unused()
    if unused:
        raise SpecError(f"fairness is declared for action {unused[0]!r}, but no step of spec {model.name} has that action")
    res = CheckResult(HOLDS, g.n, g.generated, int(g.depth.max(initial=-1)) + 1, 0.0, fingerprinted=g.fingerprinted)
    if g.outside:
        res.notes.append(f"{g.outside:,} states outside the state constraints were not expanded")
    if red is not None:
        res.notes.append(red.stats.note() if not red.idle else
                         "partial-order reduction: no event can be in a reduced set (each is fair or may write a "
                         "network slot that a fair event's guard or a property reads), so the whole graph was built")
    for prop in props:
        lasso = find_lasso(g, prop, fair)
        if lasso is not None:
            res.verdict = VIOLATION
            res.violation = temporal_violation(model, g, prop, fair, lasso, quotient)
            break
    else:
        if g.cut:
            res.verdict = INCONCLUSIVE
            res.cut = g.cut
    res.seconds = time.monotonic() - t0
    return res


def choose_engine(asked: str, model: Model, workers: int, por: bool = False) -> tuple[str, Any, str | None]:
    """(engine, the vector engine's prepared model or None, why auto chose the scalar engine) for
    `asked` in auto, vector, scalar, explicit. Refused: more than two workers (the graph is built by two
    threads at most), more than one on the scalar engine, the vector engine for a spec it cannot run, and with
    partial-order reduction (`por`, which the scalar engine's construction applies) the vector engine."""
    from ..errors import UsageError
    from ..vector.layout import VectorUnsupported
    from ..vector.search import VectorModel

    if por:
        if asked == "vector":
            raise UsageError("--engine vector with --por and --property: the reduced state graph is built by the "
                             "scalar engine; drop --engine vector or --por")
        return "scalar", None, "scalar engine chosen: it builds the state graph reduced by partial order"
    if workers > 2:
        raise UsageError(f"--workers {workers} with --property: the state graph is built by two threads at most; "
                         "use --workers 2")
    if asked in ("scalar", "explicit"):
        if workers > 1:
            raise UsageError("--workers with --property runs the vector engine; drop --engine scalar or --workers")
        return "scalar", None, None
    try:
        vm = VectorModel(model)
    except VectorUnsupported as e:
        if asked == "vector" or workers > 1:
            flag = "--engine vector" if asked == "vector" else "--workers"
            raise UsageError(f"{flag} cannot check {model.name}'s temporal properties: {e}; drop {flag}") from None
        return "scalar", None, f"scalar engine chosen: {e}"
    return "vector", vm, None


def _build(model: Model, fair: Fairness, opts: Options, progress: Progress, engine: str, vm: Any,
           props: list[Property], quotient: Quotient | None, red: Any) -> StateGraph:
    if engine == "vector":
        from ..vector.graph import build_graph
        from ..vector.search import VectorModel

        return build_graph(vm or VectorModel(model), fair, opts, progress, props, quotient)
    return explore(model, fair, opts, progress, quotient, red)


def temporal_violation(model: Model, g: StateGraph, prop: Property, fair: Fairness, lasso: Lasso,
                       quotient: Quotient | None = None) -> Violation:
    """The violation of `prop` that `lasso` shows, with its trace (of concrete states, lifted from the
    representatives by `quotient` under symmetry reduction)."""
    loop = lasso.loop
    if quotient is not None:
        path, loop = quotient.lift_lasso(g, lasso)
    else:
        states = g.path_states(lasso.path) if g.path_states is not None else [g.state_of(i) for _lid, i in lasso.path]
        path = [(None if lid is None else g.label_of(lid), st) for (lid, _i), st in zip(lasso.path, states)]
    last = len(path) - 1
    how = (f"the behaviour stutters for ever in state {last}" if loop == last
           else f"states {loop}..{last} repeat for ever")
    message = f"temporal property {prop.name} ({prop.formula}) is violated: {how}"
    kinds = {"kind": "temporal", "name": prop.name, "fairness": fair.describe(), "overrides": fair.overrides}
    trace = Trace.from_states(model, path, property=kinds, message=message, loop=loop)
    return Violation("temporal", prop.name, message, None, trace)
