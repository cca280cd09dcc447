"""`lockstep run PROTOCOL --interactions K`: a population protocol on agent processes, then its validation."""

from __future__ import annotations

import argparse
import sys

from lockstep.checker.commands.validate import validate_population_run
from lockstep.checker.trace import TraceError, follow_up
from lockstep.runs import fault_plan

from ..interrupted import interrupted_exit
from .run import PopulationRunReport, run_population

DEFAULT_INTERACTIONS = 10_000


def run_population_command(args: argparse.Namespace, params: dict[str, int]) -> int:
    """Run, show what the processes did, and validate the merged trace (unless told not to)."""
    from lockstep.checker.loader import load_protocol

    protocol = load_protocol(args.spec, params)
    protocol.start_configurations(args.start)  # an unknown start is refused before anything runs
    faults = fault_plan(args.faults, protocol.n)
    k = args.interactions or DEFAULT_INTERACTIONS
    ps = ", ".join(f"{name}={v}" for name, v in protocol.params.items())
    print(f"Running {protocol.name} ({ps}): {protocol.n} agent processes and a scheduler, {k:,} interactions"
          + (f" from start {args.start}" if args.start else "") + (f", faults from {args.faults}" if args.faults else ""))
    rep = run_population(args.spec, params, k, args.seed, args.start, args.trace, tracing=not args.no_trace,
                         faults=faults, progress=lambda c: print(f"progress: {c:,} of {k:,} interactions",
                                                                 file=sys.stderr, flush=True))
    show(rep)
    if rep.merged is None or args.no_validate:
        return interrupted_exit(rep.interrupted, 0, rep.trace)
    try:
        return interrupted_exit(rep.interrupted, validate_population_run(rep.merged), rep.trace)
    except TraceError as e:
        print(f"Not validated: {e}")
        return 1


def show(rep: PopulationRunReport) -> None:
    """Print what the processes did."""
    agents = [s for p, s in rep.stats.items() if p < rep.agents]
    rejected = sum(s.get("rejected", 0) for s in rep.stats.values())
    print(f"  {rep.completed:,} of {rep.interactions:,} interactions in {rep.seconds:.2f} s "
          f"({rep.rate:,.0f} interactions/s), {rejected:,} frames rejected")
    silent = [p for p, s in rep.stats.items() if not s]
    for p in silent:
        print(f"  {'the scheduler' if p == rep.agents else f'agent {p}'}: no report (it did not stop normally)")
    if agents and not silent:
        per = [s.get("interactions", 0) for s in agents]
        print(f"  interactions per agent: {min(per):,} to {max(per):,}")
    for note in rep.notes:
        print(f"  note: {note}")
    if rep.trace:
        print(f"Trace written to {rep.trace} (validate it: {follow_up('validate', rep.trace, rep.spec)})")
