"""`lockstep validate TRACE`: check that a recorded run of real processes is a behaviour of its spec."""

from __future__ import annotations

import argparse
import time

from ..rounds_validate import is_rounds_trace, report_rounds
from ..runtrace import load
from ..validate import Mismatch, Validation, validate

NAME = "validate"
HELP = "check a run trace (from `lockstep run --trace`) against its spec, event by event"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a merged run trace (JSON lines) written by `lockstep run --trace`")


def run(args: argparse.Namespace) -> int:
    merged = load(args.file)
    h = merged.header
    print(f"validating {args.file}: spec {h.get('spec_name', h['spec'])} {h.get('params', {})}, "
          f"{len(merged.events)} events from {h.get('processes', '?')} processes")
    for note in merged.notes:
        print(f"  note: {note}")
    t0 = time.monotonic()
    if is_rounds_trace(merged):
        return report_rounds(merged, t0)
    try:
        res = validate(merged)
    except Mismatch as m:
        print("Invalid: the run is not a behaviour of the spec at " + m.render())
        return 1
    return report(res, time.monotonic() - t0)


def report(res: Validation, seconds: float) -> int:
    """Print a validation's outcome; 0 if the run is a behaviour satisfying the invariants, 1 if not.

    (A run that is not a behaviour at all is exit code 1 too; a trace that cannot be read is 2.)"""
    rate = res.events / seconds if seconds > 0 else 0.0
    if res.failure:
        e = res.violation_event or {}
        print(f"Violation: a handler failed in process {e.get('pid')} (clock {e.get('clock')}), as the spec's "
              f"step fails there: {res.failure}")
        print(f"  the run is a behaviour of the spec up to there: {res.events} steps checked")
        return 1
    if res.violation:
        e = res.violation_event or {}
        print(f"Violation: invariant {res.violation} is violated after event "
              f"{e.get('kind')} of process {e.get('pid')} (clock {e.get('clock')})")
        print(f"  the run is a behaviour of the spec up to there: {res.events} steps checked")
        return 1
    print(f"Valid: all {res.events} steps are steps of the spec and the invariants hold after each "
          f"({seconds:.2f} s, {rate:,.0f} events/s)")
    return 0
