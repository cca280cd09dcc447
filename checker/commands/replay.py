"""`lockstep replay FILE`: re-execute a trace against its spec, printing what each step changed."""

from __future__ import annotations

import argparse

from ..replay import replay
from ..trace import Trace

NAME = "replay"
HELP = "re-execute a trace file against its spec, step by step"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a trace written by `lockstep check --out`")


def run(args: argparse.Namespace) -> int:
    trace = Trace.load(args.file)
    print(f"replaying {args.file}: spec {trace.spec_name} {trace.params}")
    replay(trace, say=print)
    return 0
