"""`lockstep export TRACE --shiviz FILE`: a trace in another tool's format."""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..loader import load_model
from ..validation.runtrace import MergedRun
from .common import output_file, read_trace_file, trace_spec, typed_for_pictures, write_text

NAME = "export"
HELP = "export a trace for another tool: ShiViz (vector clocks) for actor and rounds runs and actor counterexamples"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="TRACE", help="a run trace (`lockstep run --trace`) or a counterexample of an actor spec")
    p.add_argument("--shiviz", type=output_file, metavar="FILE", required=True,
                   help="write ShiViz's log format (the parsing regex, then each event and its vector clock)")
    p.add_argument("--spec", metavar="SPEC", help="the trace's spec (needed unless the trace names a registered spec)")


def run(args: argparse.Namespace) -> int:
    from ..render.chart import chart_of_run, chart_of_trace
    from ..render.rounds import rounds_events
    from ..render.shiviz import shiviz_of_chart, shiviz_of_rounds, shiviz_of_run
    from ..validation.population import is_population_run
    from ..validation.rounds import is_rounds_trace

    trace = read_trace_file(args.file)
    if isinstance(trace, MergedRun):
        if is_population_run(trace):
            raise UsageError("--shiviz exports runs of actor and rounds specs; population agents record no vector "
                             "clocks (plot the run instead: lockstep draw RUN --out counts.png)")
        h = trace.header
        model = typed_for_pictures(load_model(trace_spec(h["spec"], args.spec), h.get("params") or {}))
        if is_rounds_trace(trace):
            text = shiviz_of_rounds(rounds_events(trace, model))
        else:
            text = shiviz_of_run(chart_of_run(trace, model))
        what = f"{len(text.splitlines()) // 2 - 1} events"
    else:
        model = typed_for_pictures(load_model(trace_spec(trace.spec, args.spec), trace.params))
        text = shiviz_of_chart(chart_of_trace(trace, model))
        what = f"{len(trace.steps) - 1} steps"
    write_text(args.shiviz, text)
    print(f"ShiViz log of {what} written to {args.shiviz} (open it at ShiViz's upload page, or paste it there)")
    return 0
