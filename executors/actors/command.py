"""`lockstep run` for actor specs: one process per actor for a while, with faults, then validation."""

from __future__ import annotations

import argparse
import sys

from lockstep.checker.commands.validate import print_validation
from lockstep.checker.trace import TraceError, follow_up
from lockstep.runs import fault_plan, validate_merged

from ..interrupted import interrupted_exit
from .run import RunReport, actor_program
from .run import run as run_processes


def run_actor_command(args: argparse.Namespace, params: dict[str, int]) -> int:
    """Run the actor spec `args.spec`, print what happened and validate the trace (exit code as `check`)."""
    args.duration = args.duration or 2.0
    prog = actor_program(args.spec, params)
    n = prog.system.proc.size
    faults = fault_plan(args.faults, n, dict(prog.params))
    ps = ", ".join(f"{k}={v}" for k, v in prog.params.items())
    print(f"Running {prog.name} ({ps}): {n} processes for {args.duration:g} s"
          + (f", faults from {args.faults}" if args.faults else ""))
    rep = run_processes(args.spec, params, args.duration, faults, args.trace, args.seed, tracing=not args.no_trace,
                        progress=lambda t: print(f"progress: {t:.0f} s of {args.duration:g} s", file=sys.stderr,
                                                 flush=True))
    show(rep)
    if rep.trace is None or args.no_validate:
        return interrupted_exit(rep.interrupted, 0, rep.trace)
    try:
        res = validate_merged(rep.merged)  # type: ignore[arg-type]
    except TraceError as e:
        print(f"Not validated: {e}")
        return 1
    return interrupted_exit(rep.interrupted, print_validation(res), rep.trace)



def show(rep: RunReport) -> None:
    """Print what the processes did."""
    total = {k: sum(s.get(k, 0) for s in rep.stats.values()) for k in ("events", "sent", "rejected", "deferred", "lost")}
    print(f"  {total['events']:,} handler events, {total['sent']:,} messages sent, "
          f"{total['rejected']:,} frames rejected, {total['deferred']:,} deliveries deferred")
    for pid, s in sorted(rep.stats.items()):
        if not s:
            print(f"  process {pid}: no report (it did not stop normally)")
    if rep.relay:
        print("  relay: " + ", ".join(f"{v:,} {k}" for k, v in rep.relay.items() if v))
    for note in rep.notes:
        print(f"  note: {note}")
    if rep.trace:
        print(f"Trace written to {rep.trace} (validate it: {follow_up('validate', rep.trace, rep.spec)})")

