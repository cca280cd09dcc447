"""`lockstep replay FILE [--spec SPEC]`: re-execute a trace against a spec, printing what each step changed."""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..loader import parse_params
from ..render.text import printer
from ..replay import replay
from ..trace import Trace, trusted_spec
from .common import add_full_argument
from .json_result import add_format_argument, of

NAME = "replay"
HELP = "re-execute a trace file against its spec, step by step"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a trace written by `lockstep check --out` (or an ITF trace of Quint or Apalache)")
    p.add_argument("--spec", metavar="SPEC",
                   help="the spec to replay it against (needed unless the trace names a registered spec): a registered "
                        "name, module:Object or file.py[:Object]; a trace never chooses the code that runs")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="a trace of another tool (Quint, Apalache): the spec's parameters (default: its defaults)")
    p.add_argument("--on-processes", action="store_true",
                   help="replay an actor or rounds spec's trace on real OS processes, in the trace's order")
    add_format_argument(p)
    add_full_argument(p)


def run(args: argparse.Namespace) -> int:
    trace = Trace.load(args.file)
    spec = trusted_spec(trace.spec, args.spec, trace.origin)
    params = parse_params(args.param)
    if args.on_processes:
        for flag, given, why in (("--param", bool(params), "the processes run the trace's own parameters"),
                                 ("--full", args.full, "the processes report each step as it happens, not whole states")):
            if given:
                raise UsageError(f"{flag} does not apply to --on-processes: {why}; drop {flag}")
        from lockstep.executors.replay import replay_on_processes  # the command line composes checker and executors

        print(f"replaying {args.file} on processes: spec {trace.spec_name or spec} {trace.params}")
        res = replay_on_processes(trace, say=print, spec=spec)
        prop = trace.property or {}
        if prop.get("kind") == "invariant" and res.violated != prop.get("name"):
            print(f"Not reproduced: the trace claims invariant {prop.get('name')} is violated")
            return 1
        if prop.get("kind") == "deadlock" and not res.deadlocked:
            print("Not reproduced: the trace claims a deadlock")
            return 1
        if prop.get("kind") == "step" and res.failed is None:
            print(f"Not reproduced: the trace claims step {prop.get('name')} fails")
            return 1
        if (rep := of(args)) is not None:
            rep.update(verdict="reproduced", spec=trace.spec_name or spec, params=dict(trace.params),
                       checked={"property": prop, "on_processes": True}, counts={"steps": len(trace.steps) - 1})
        return 0
    what = f"spec {trace.spec_name} {trace.params}" if not trace.foreign else \
        f"a trace of {trace.source or 'another tool'}, against spec {spec}"
    print(f"replaying {args.file}: {what}")
    res = replay(trace, say=printer(), spec=spec, params=params, full=args.full)
    if (rep := of(args)) is not None:
        rep.update(verdict="reproduced", spec=res.model.name, params=dict(res.model.params),
                   checked={"property": trace.property or {}}, counts={"steps": len(res.states) - 1},
                   notes=[res.conclusion])
    return 0
