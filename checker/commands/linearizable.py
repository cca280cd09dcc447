"""`lockstep linearizable HISTORY --model M`: is a client history linearizable with respect to a sequential model?"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import UsageError
from ..linearizability import FORMATS, MODELS, HistoryError, ModelError, check, load_model, read_history
from .common import output_file

NAME = "linearizable"
HELP = ("check that a client history (recorded by `lockstep run`, a Porcupine log, or a Jepsen/Knossos EDN history) "
        "is linearizable with respect to a sequential model")


def budget(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < v <= 86400:
        raise argparse.ArgumentTypeError(f"{v} is not between 0 and 86400 seconds")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("history", metavar="HISTORY", help="the history file")
    p.add_argument("--model", "-m", required=True, metavar="MODEL",
                   help=f"{', '.join(MODELS)}, or a class of your own as path/to/model.py:Class")
    p.add_argument("--format", default="auto", choices=FORMATS, help="the history's format (default: from its content)")
    p.add_argument("--budget", type=budget, default=60.0, metavar="S",
                   help="seconds the search may take before the verdict is 'unknown' (default 60)")
    p.add_argument("--out", type=output_file, metavar="FILE", help="write the verdict (and any illegal prefix) as JSON to FILE")


def run(args: argparse.Namespace) -> int:
    try:
        model = load_model(args.model)
        history = read_history(args.history, args.format)
        v = check(history, model, budget=args.budget)
    except (HistoryError, ModelError) as e:
        raise UsageError(str(e)) from None
    parts = f", {v.partitions} partitions" if v.partitions > 1 else ""
    print(f"{args.history}: {len(history):,} operations ({history.format}{parts}), model {model.name}")
    for note in history.notes:
        print(f"  note: {note}")
    if v.verdict == "linearizable":
        print(f"Linearizable ({v.seconds:.2f} s, {v.steps:,} search steps).")
    elif v.verdict == "unknown":
        print(f"Unknown: {v.note} ({v.seconds:.2f} s). Give more time with --budget.")
    else:
        key = f" (key {v.failing_key!r})" if v.failing_key is not None else ""
        print(f"Not linearizable{key} ({v.seconds:.2f} s).")
        print(f"Shortest illegal prefix: {len(v.prefix)} operations, made illegal by the completion of")
        print(f"  {v.last.describe()}   [{v.last.where}]")
        what = "the operations involved" if v.minimal else "operations involved (not fully minimised)"
        print(f"{what.capitalize()}: every state change of that prefix and the reads it needs "
              f"({len(v.involved)}), in invocation order; ? = outcome unknown:")
        for op in v.involved:
            print(f"  {op.describe():50s} [{op.where}]")
        if v.note:
            print(f"  note: {v.note}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(v.to_json(history), fh, indent=1)
        print(f"Verdict written to {args.out}")
    sys.stdout.flush()
    return v.exit_code
