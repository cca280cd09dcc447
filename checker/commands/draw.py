"""`lockstep draw TRACE --out FILE`: a picture of a trace, or of a client history.

Actor traces (counterexamples, simulations, recorded runs) become message-sequence charts
(`.svg`, or `.html` with a state panel); rounds traces a grid of rounds × nodes; population runs
a plot of the agent counts per state over time (`.png`, `.svg` or `.pdf`). A client history (the
formats `lockstep linearizable` reads) is checked and drawn as bars per client, with the window that
explains a violation highlighted (`.html` or `.svg`).
"""

from __future__ import annotations

import argparse
import json
import os
import time

from ..errors import UsageError
from ..linearizability.history import History
from ..loader import load_model
from ..safeio import open_input
from ..trace import Trace, TraceError
from ..typed_model import TypedModel
from ..validation.runtrace import MergedRun, Mismatch
from .common import output_file, read_trace_file, trace_spec, typed_for_pictures, write_text
from .linearizable import budget

NAME = "draw"
HELP = "draw a trace: a message-sequence chart (actors), a rounds grid, or agent counts over time (population runs)"
CHART_FORMATS = (".svg", ".html", ".htm")
PLOT_FORMATS = (".png", ".svg", ".pdf")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="TRACE", help="a counterexample or simulation (`--out` of check/simulate), a "
                                                 "run trace (`lockstep run --trace`), or a client history")
    p.add_argument("--out", required=True, type=output_file, metavar="FILE",
                   help="the picture: chart.svg or chart.html (plots: .png, .svg, .pdf)")
    p.add_argument("--spec", metavar="SPEC", help="the trace's spec (needed unless the trace names a registered spec)")
    p.add_argument("--model", "-m", metavar="MODEL", help="a history's sequential model, as for `lockstep linearizable` "
                                                          "(default: the built-in model its operations name)")
    p.add_argument("--budget", type=budget, metavar="S", help="seconds to check a history (default 60)")


def run(args: argparse.Namespace) -> int:
    ext = os.path.splitext(args.out)[1].lower()
    if is_history(args.file):
        if args.spec:
            raise UsageError("--spec names a trace's spec; a history is checked against a --model")
        return _draw_history(args, ext)
    if args.model or args.budget is not None:
        raise UsageError(f"{args.file} is a trace, not a client history: --model and --budget apply to histories")
    trace = read_trace_file(args.file)
    if isinstance(trace, MergedRun):
        return _draw_run(trace, args, ext)
    if ext not in CHART_FORMATS:
        raise UsageError(f"--out {args.out}: a chart is written as .svg or .html")
    model = typed_for_pictures(load_model(trace_spec(trace.spec, args.spec), trace.params))
    text = _chart_of_trace(trace, model, ext)
    write_text(args.out, text)
    print(f"{_kind(model)} of {len(trace.steps) - 1} steps written to {args.out}")
    return 0


def is_history(path: str) -> bool:
    """Whether a file holds a client history: a Jepsen log line, EDN maps, or JSON objects with a process and a
    type, first (a file that cannot be read is left to the trace reader to report)."""
    try:
        with open_input(path) as fh:
            head = fh.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return False
    first = next((ln.strip() for ln in head.splitlines() if ln.strip()), "")
    if first.startswith("INFO") and "jepsen.util" in first:
        return True
    if first.startswith("{:") or (first.startswith("[") and "{:" in head):
        return True
    if first.startswith("{\""):
        try:
            obj = json.loads(first)
        except json.JSONDecodeError:
            return False
        return isinstance(obj, dict) and "process" in obj and "type" in obj
    return False


def _infer_model(history: History) -> str:
    """The built-in model whose operations the history's are (UsageError if none fits)."""
    fs = {op.f for op in history.operations}
    if fs <= {"read", "write", "cas"}:
        return "cas-register"
    if fs <= {"acquire", "release"}:
        return "mutex"
    if fs == {"txn"}:
        return "multi-register"
    if fs <= {"get", "put", "append"} and ("append" in fs or all(isinstance(op.value, str) for op in history.operations
                                                                  if op.f != "get")):
        return "kv"
    if fs <= {"get", "put", "putall"}:
        return "psmr-kv"
    raise UsageError(f"no built-in model has the operations {', '.join(sorted(fs))}: name one with --model")


def _draw_history(args: argparse.Namespace, ext: str) -> int:
    """Check a client history and draw it with the evidence of its verdict."""
    from ..linearizability import HistoryError, ModelError, check, read_history
    from ..linearizability import load_model as load_history_model
    from ..render.history import history_svg
    from ..render.svg import wrap

    if ext not in CHART_FORMATS:
        raise UsageError(f"--out {args.out}: a history is drawn as .html or .svg")
    allowed = args.budget if args.budget is not None else 60.0
    start = time.monotonic()  # as `lockstep linearizable`: reading may take half the budget
    try:
        history = read_history(args.file, deadline=start + allowed / 2)
        name = args.model or _infer_model(history)
        model = load_history_model(name)
        v = check(history, model, budget=allowed, deadline=start + allowed)
    except (HistoryError, ModelError) as e:
        raise UsageError(str(e)) from None
    if not args.model:
        print(f"model {model.name} (from the operations' names; --model to choose another)")
    picture = history_svg(history, v, standalone=ext == ".svg")
    write_text(args.out, picture if ext == ".svg" else wrap(f"{history.source}: {v.verdict}", picture))
    what = {"not linearizable": f"not linearizable: the window of {len(v.window)} operation(s) highlighted",
            "unknown": "unknown: where the longest linearizable prefix found ends marked",
            "linearizable": "linearizable"}[v.verdict]
    print(f"history of {len(history):,} operations ({what}) drawn to {args.out}")
    return 0


def _kind(model: TypedModel) -> str:
    from lockstep.specs.lang.actors import ActorProgram

    return "sequence chart" if isinstance(model.prog, ActorProgram) else "rounds grid"


def _chart_of_trace(trace: Trace, model: TypedModel, ext: str) -> str:
    """The SVG or HTML picture of an ITF trace of an actor or rounds spec."""
    from lockstep.specs.lang.actors import ActorProgram
    from lockstep.specs.lang.rounds.spec import RoundsProgram

    from ..render.chart import chart_of_trace
    from ..render.rounds import grid_of_trace, grid_svg
    from ..render.svg import page, svg, wrap

    if isinstance(model.prog, ActorProgram):
        chart = chart_of_trace(trace, model)
        return svg(chart) if ext == ".svg" else page(chart)
    if isinstance(model.prog, RoundsProgram):
        grid = grid_of_trace(trace, model)
        return grid_svg(grid) if ext == ".svg" else wrap(grid.title, grid_svg(grid, standalone=False))
    raise TraceError(f"spec {model.name} is neither an actor nor a rounds spec: it has no sequence chart "
                     "(for a state graph: lockstep check SPEC --dump-graph FILE.dot)")


def _draw_run(merged: MergedRun, args: argparse.Namespace, ext: str) -> int:
    from ..validation.population import is_population_run
    from ..validation.rounds import is_rounds_trace

    h = merged.header
    if is_population_run(merged):
        return _plot_population(merged, args, ext)
    if ext not in CHART_FORMATS:
        raise UsageError(f"--out {args.out}: a chart is written as .svg or .html")
    spec = trace_spec(h["spec"], args.spec)
    model = typed_for_pictures(load_model(spec, h.get("params") or {}))
    if is_rounds_trace(merged):
        from ..render.rounds import grid_of_run, grid_svg
        from ..render.svg import wrap
        from ..validation.rounds import validate_rounds

        bad = note = None
        try:
            res = validate_rounds(merged)
            if res.violation:
                bad, note = res.rounds, f"violates {res.violation}"
        except Mismatch as m:
            r = m.event.get("round")
            bad = r if isinstance(r, int) and not isinstance(r, bool) else None
            note = f"not a round of the spec: {m.reason}"
        grid = grid_of_run(merged, model, bad, note or "")
        text = grid_svg(grid) if ext == ".svg" else wrap(grid.title, grid_svg(grid, standalone=False))
        write_text(args.out, text)
        print(f"rounds grid of {len(grid.rounds)} rounds written to {args.out}")
        return 0
    from ..render.chart import chart_of_run
    from ..render.svg import page, svg
    from ..validation.actors import validate

    bad, note = None, ""
    try:
        res = validate(merged)
        if res.violation or res.failure:
            bad, note = res.violation_event, (f"violates {res.violation}" if res.violation else "handler failed")
    except Mismatch as m:
        bad, note = m.event, f"not a step of the spec: {m.reason}"
    chart = chart_of_run(merged, model, bad, note)
    write_text(args.out, svg(chart) if ext == ".svg" else page(chart))
    print(f"sequence chart of {len(chart.rows)} events written to {args.out}" + (f" ({note})" if note else ""))
    return 0


def _plot_population(merged: MergedRun, args: argparse.Namespace, ext: str) -> int:
    from ..render.population import plot_counts
    from ..validation.population import PopulationValidator

    if ext not in PLOT_FORMATS:
        raise UsageError(f"--out {args.out}: a population run is plotted as .png, .svg or .pdf")
    if args.spec:
        merged.header["spec"] = args.spec
    else:
        trace_spec(merged.header["spec"], None)
    try:
        res = PopulationValidator(merged).validate()
    except Mismatch as m:
        raise TraceError("the run is not a behaviour of its protocol, so its configurations cannot be drawn: "
                         + m.render()) from None
    p = res.protocol
    ps = ", ".join(f"{k}={v}" for k, v in p.params.items())
    plot_counts(p, res.path, args.out, f"run of {p.name} ({ps}): agents per state")
    print(f"agent counts over {res.interactions:,} interactions written to {args.out}")
    return 0

