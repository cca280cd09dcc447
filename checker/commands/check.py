"""`lockstep check SPEC`: explore a spec and report whether its properties hold."""

from __future__ import annotations

import argparse
import sys

from ..explicit import Options
from ..loader import load_model, parse_params
from ..progress import NoProgress, Progress
from ..result import CheckResult
from ..trace import render
from ..vector import choice

NAME = "check"
HELP = "model-check a spec: invariants, deadlocks and step failures"


def _at_least(minimum: int, what: str):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{v} is {what}")
        return v

    return parse


positive = _at_least(1, "not positive")
natural = _at_least(0, "negative")


def add_spec_arguments(p: argparse.ArgumentParser) -> None:
    """SPEC and --param, shared by the commands that load a spec."""
    p.add_argument("spec", metavar="SPEC", help="a registered name (see `lockstep list`), module:Object, or file.py[:Object]")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="set a spec parameter (repeatable), e.g. --param rm=5")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_spec_arguments(p)
    p.add_argument("--invariant", action="append", default=[], metavar="NAME",
                   help="check only this invariant (repeatable; default: all)")
    p.add_argument("--no-deadlock", action="store_true", help="do not report states without successors")
    p.add_argument("--symmetry", action="store_true", help="reduce by the spec's symmetric Ranges")
    p.add_argument("--workers", type=positive, default=1, metavar="N", help="worker processes (breadth-first only)")
    p.add_argument("--max-depth", type=natural, metavar="D", help="explore at most D steps from an initial state")
    p.add_argument("--max-states", type=positive, metavar="S", help="store at most S distinct states")
    p.add_argument("--dfs", action="store_true", help="depth-first instead of breadth-first")
    p.add_argument("--engine", choices=choice.ENGINES, default="auto",
                   help="auto (default): vector for typed specs, scalar for plain ones; explicit = scalar")
    p.add_argument("--out", metavar="FILE", help="write the counterexample trace (JSON, ITF) to FILE")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def run(args: argparse.Namespace) -> int:
    from ..cli import UsageError

    if args.dfs and args.workers > 1:
        raise UsageError("--dfs runs on one worker; drop --workers or --dfs")
    if args.engine == "smt":
        return choice.run_smt(args)
    params = parse_params(args.param)
    model = load_model(args.spec, params, symmetry=args.symmetry, invariants=args.invariant or None)
    opts = Options(deadlock=not args.no_deadlock, max_depth=args.max_depth, max_states=args.max_states,
                   dfs=args.dfs, workers=args.workers)
    engine, vm, why = choice.choose(args.engine, model, opts)
    ps = ", ".join(f"{k}={v}" for k, v in model.params.items())
    mode = "depth-first" if args.dfs else "breadth-first"
    print(f"Checking {model.name}" + (f" ({ps})" if ps else "") +
          f": {engine} {mode}, {opts.workers} worker{'s' if opts.workers > 1 else ''}"
          + (", symmetry reduction" if args.symmetry else ""))
    invs = ", ".join(model.invariant_names) or "none"
    print(f"  invariants: {invs}; deadlock: {'checked' if opts.deadlock else 'not checked'}")
    progress = NoProgress() if args.quiet else Progress()
    res = choice.run(engine, model, vm, opts, progress)
    if why and engine != args.engine:
        res.notes.append(why)
    report(res, args.out)
    return res.exit_code


def report(res: CheckResult, out: str | None) -> None:
    """Print a check's outcome (and save its counterexample)."""
    v = res.violation
    if v is not None:
        steps = len(v.trace.steps) - 1
        print(f"\nViolation: {v.message}" + (f" at {v.location}" if v.location and v.location not in v.message else ""))
        print(f"Counterexample ({steps} step{'s' if steps != 1 else ''}):")
        print(render(v.trace))
        if out:
            v.trace.save(out)
            print(f"Trace written to {out} (replay it: lockstep replay {out})")
    elif res.verdict == "inconclusive":
        print(f"\nInconclusive: {res.cut}; no violation among the states explored.")
    else:
        print("\nNo violation: all reachable states explored.")
    rate = res.distinct / res.seconds if res.seconds > 0 else 0.0
    print(f"  {res.distinct:,} distinct states, {res.generated:,} generated, depth {res.depth}, "
          f"{res.seconds:.2f} s ({rate:,.0f} distinct states/s)")
    if res.queued:
        print(f"  {res.queued:,} states left unexplored")
    print(f"  fingerprint collision probability (optimistic, as TLC): {res.collision_probability:.1e}")
    for note in res.notes:
        print(f"  note: {note}")
    sys.stdout.flush()
