"""Validation memory: bytes per event of validating a long run trace, streamed against held in memory.

Records a token-ring run on real processes (`--seconds` of it), then validates its merged trace twice
under tracemalloc: streaming, as `lockstep validate` does (events read as they are checked), and with
every event first read into a list, as validation did before it streamed (the baseline of the same
invocation). Prints peak traced memory and bytes per event for each, for the whole trace and for its
first half: streamed memory does not grow with the length of the run.

    .venv/bin/python -m bench.validation_memory [--seconds 20] [--tokens 6]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc

from lockstep.checker.validation.actors import Validator
from lockstep.checker.validation.runtrace import MergedRun, load, read_jsonl
from lockstep.executors.actors.run import run


def measure(path: str, held: bool) -> tuple[int, int, float]:
    """(events, peak bytes, seconds) of validating the trace at `path`."""
    merged = load(path)
    validator = Validator(merged.header["spec"], merged.header["params"])  # built before measuring: the spec's share
    tracemalloc.start()
    t0 = time.perf_counter()
    if held:
        lines, _ = read_jsonl(path)
        merged = MergedRun(lines[0], [e for e in lines[1:] if e.get("kind") != "end"], path=path)
    res = validator.run(merged)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return res.events, peak, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="length of the recorded run")
    ap.add_argument("--tokens", type=int, default=6)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.jsonl")
        run("token_ring", {"n": 3, "tokens": args.tokens}, args.seconds, trace=path)
        with open(path) as f:
            lines = f.readlines()
        half = os.path.join(tmp, "half.jsonl")
        with open(half, "w") as f:
            body = lines[1:-1]
            f.writelines([lines[0], *body[: len(body) // 2], lines[-1]])
        rows = []
        for name, trace in (("first half", half), ("whole run", path)):
            for held in (True, False):
                events, peak, secs = measure(trace, held)
                rows.append((name, "held in a list" if held else "streamed", events, peak, secs))
        size = os.path.getsize(path)
    print(f"token ring, 3 processes, {args.tokens} tokens, {args.seconds:g} s run: trace of {size:,} bytes")
    print(f"{'trace':<12}{'validation':<16}{'events':>10}{'peak MiB':>11}{'bytes/event':>13}{'seconds':>9}")
    for name, how, events, peak, secs in rows:
        print(f"{name:<12}{how:<16}{events:>10,}{peak / 2**20:>11.1f}{peak / max(events, 1):>13,.1f}{secs:>9.2f}")


if __name__ == "__main__":
    main()
