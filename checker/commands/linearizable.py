"""`lockstep linearizable HISTORY --model M`: is a client history linearizable with respect to a sequential model?"""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..errors import UsageError
from ..linearizability import FORMATS, MODELS, HistoryError, ModelError, check, load_model, read_history
from ..linearizability.report import verdict_lines
from ..trace import shell_word
from .common import output_file, write_text
from .json_result import of

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


def output_format(text: str) -> str:
    """--format text|json; a history's format (edn, jepsen-log, ...) is named with --history-format."""
    if text in ("text", "json"):
        return text
    if text in FORMATS:
        raise argparse.ArgumentTypeError(f"{text!r} is a history format: give it as --history-format {text} "
                                         "(--format is the output's: text or json)")
    raise argparse.ArgumentTypeError(f"{text!r}: the output is text or json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("history", metavar="HISTORY", help="the history file")
    p.add_argument("--model", "-m", required=True, metavar="MODEL",
                   help=f"{', '.join(MODELS)}, or a class of your own as path/to/model.py:Class")
    p.add_argument("--history-format", default="auto", choices=FORMATS,
                   help="the history's format (default: from its content)")
    p.add_argument("--format", type=output_format, default="text",
                   help="the verdict as text for people (default), or one JSON object for scripts (docs/json.md)")
    p.add_argument("--budget", type=budget, default=60.0, metavar="S",
                   help="seconds the check may take, before the verdict is 'unknown' with how far the search got; "
                        "reading the history may take half of them (default 60)")
    p.add_argument("--out", type=output_file, metavar="FILE", help="write the verdict (and any illegal prefix) as JSON to FILE")


def run(args: argparse.Namespace) -> int:
    start = time.monotonic()  # reading counts against the budget: it may take half, the search the rest
    deadline = start + args.budget
    try:
        model = load_model(args.model)
        history = read_history(args.history, args.history_format, deadline=start + args.budget / 2)
        v = check(history, model, budget=args.budget, deadline=deadline)
    except (HistoryError, ModelError) as e:
        raise UsageError(str(e)) from None
    parts = f", {v.partitions} partitions" if v.partitions > 1 else ""
    print(f"{args.history}: {len(history):,} operations ({history.format}{parts}), model {model.name}")
    for note in history.notes:
        print(f"  note: {note}")
    for line in verdict_lines(v):
        print(line)
    if v.verdict == "not linearizable":
        print(f"Draw it: lockstep draw {shell_word(args.history)} --model {shell_word(args.model)} --out window.html")
    if args.out:
        write_text(args.out, json.dumps(v.to_json(history), indent=1))
        print(f"Verdict written to {args.out}")
    sys.stdout.flush()
    if (rep := of(args)) is not None:
        rep.update(verdict=v.verdict, checked={"model": model.name, "history": args.history},
                   counts={"operations": len(history), "partitions": v.partitions},
                   seconds=time.monotonic() - start, options={"budget": args.budget, "history_format": history.format},
                   notes=list(history.notes), trace=args.out, details=v.to_json(history))
    return v.exit_code
