"""`lockstep replay FILE`: re-execute a trace against its spec, printing what each step changed."""

from __future__ import annotations

import argparse

from ..render.text import printer
from ..replay import replay
from ..trace import Trace
from .common import add_full_argument

NAME = "replay"
HELP = "re-execute a trace file against its spec, step by step"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a trace written by `lockstep check --out`")
    p.add_argument("--on-processes", action="store_true",
                   help="replay an actor or rounds spec's trace on real OS processes, in the trace's order")
    add_full_argument(p)


def run(args: argparse.Namespace) -> int:
    trace = Trace.load(args.file)
    if args.on_processes:
        from lockstep.executors.replay import replay_on_processes  # the command line composes checker and executors

        print(f"replaying {args.file} on processes: spec {trace.spec_name} {trace.params}")
        res = replay_on_processes(trace, say=print)
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
        return 0
    print(f"replaying {args.file}: spec {trace.spec_name} {trace.params}")
    replay(trace, say=printer(), full=args.full)
    return 0
