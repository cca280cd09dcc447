"""Executor throughput: messages delivered per second across 4 processes on loopback.

Runs the token ring (`specs/token_ring.py`, 4 processes, many tokens in flight) as real OS
processes, with tracing off and on, and then validates the traced run. Prints a table; the
ratio column is against the untraced run of the same invocation.

    .venv/bin/python bench/executor_throughput.py [--duration 3] [--tokens 256]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from lockstep.checker.validation.actors import Validator
from lockstep.checker.validation.runtrace import load
from lockstep.executors.actors.run import run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--processes", type=int, default=4)
    args = ap.parse_args()
    params = {"n": args.processes, "tokens": args.tokens, "laps": 8}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.jsonl")
        for tracing in (False, True):
            rep = run("token_ring", params, args.duration, trace=path if tracing else None, tracing=tracing)
            rows.append(("traced" if tracing else "untraced", rep.delivered, rep.delivered / args.duration))
        merged = load(path)
        v = Validator(merged.header["spec"], merged.header["params"])
        t0 = time.perf_counter()
        res = v.run(merged)
        secs = time.perf_counter() - t0
    base = rows[0][2]
    print(f"token ring, {args.processes} processes, {args.tokens} tokens, {args.duration:g} s per run")
    print(f"{'run':<10}{'delivered':>12}{'msgs/s':>12}{'ratio':>8}")
    for name, n, rate in rows:
        print(f"{name:<10}{n:>12,}{rate:>12,.0f}{rate / base:>8.2f}")
    print(f"validation of the traced run: {res.events:,} events in {secs:.2f} s = {res.events / secs:,.0f} events/s")


if __name__ == "__main__":
    main()
