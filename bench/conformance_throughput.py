"""Validation throughput of implementation logs: a token-ring run's events as per-process logs in the event schema.

    python -m bench.conformance_throughput [--seconds 40] [--keep DIR]

Runs `lockstep run token_ring` for the given time, writes each process's handler events as a log in the
schema (`actor_logs.run_to_logs`), and validates the logs with the default actor mapping three times, printing
events, CPU seconds and wall seconds of each validation (the spec is built once, before), and the run-trace
validator's time on the same run for comparison.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import lockstep
from lockstep.checker.validation.conformance.actor_logs import run_to_logs
from lockstep.checker.validation.conformance.causal import Logs
from lockstep.checker.validation.conformance.search import Search
from lockstep.checker.validation.conformance.spec_side import SpecSide


def measure(directory: str, seconds: float) -> None:
    trace = os.path.join(directory, "run.jsonl")
    run = lockstep.run("token_ring", duration=seconds, trace=trace, validate=False)
    print(f"token ring: {run.counts['events']:,} handler events in {seconds:.0f} s")
    paths = sorted(run_to_logs(trace, os.path.join(directory, "logs")).values())
    side = SpecSide("token_ring", {})
    for k in range(3):
        c0, w0 = time.process_time(), time.perf_counter()
        res = Search(side, Logs.open(paths)).run()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        print(f"  logs, try {k + 1}: {res.verdict}, {res.events:,} events, {cpu:.2f} s CPU ({res.events / cpu:,.0f} "
              f"events per CPU-second), {wall:.2f} s wall ({res.events / wall:,.0f} events/s)")
    c0, w0 = time.process_time(), time.perf_counter()
    v = lockstep.validate(trace)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    print(f"  the run trace (lockstep validate TRACE): {v.verdict}, {v.events:,} steps, {cpu:.2f} s CPU, {wall:.2f} s wall")
    print(f"  load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=40.0, help="length of the token-ring run (default 40)")
    p.add_argument("--keep", metavar="DIR", help="keep the run and the logs in DIR")
    args = p.parse_args(argv)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        measure(args.keep, args.seconds)
    else:
        with tempfile.TemporaryDirectory(prefix="conformance-throughput-") as d:
            measure(d, args.seconds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
