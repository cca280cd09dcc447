"""The symbolic engine's benchmark: BMC of TwoPhase (RM = 3) to depth 12 and `prove` of its consistency
invariant for RM = 5, under every encoding the engine offers, with the explicit engine on the same instances.

    python -m bench.smt [--repeat N] [--heavy] [--default-only]

Each task is timed under each encoding (median of N runs); the ratio column is against the default
encoding, measured in the same run. Targets: BMC to depth 12 under 60 s, `prove` under 10 s. `--heavy`
adds BMC of TwoPhase with RM = 4 and of the seeded-bug filter lock (N = 3, a 14-step counterexample),
where the encodings differ most.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.smt.bmc import bmc
from lockstep.checker.smt.encode import DEFAULT, ENCODINGS, Encoding
from lockstep.checker.smt.induction import prove
from lockstep.proofs.two_phase import STRENGTHENING


@dataclass
class Task:
    name: str
    target: float | None  # seconds, for the default encoding
    run: Callable[[Encoding], str]  # returns the verdict, to show that every encoding agrees
    explicit: Callable[[], str]


def bmc_task(ref: str, params: dict[str, int], depth: int, completeness: bool) -> Callable[[Encoding], str]:
    def run(enc: Encoding) -> str:
        res = bmc(load_model(ref, params), depth, encoding=enc, completeness=completeness)
        steps = f" in {len(res.violation.trace.steps) - 1} steps" if res.violation else f" at depth {res.depth}"
        return res.verdict + steps

    return run


def prove_task(rm: int) -> Callable[[Encoding], str]:
    def run(enc: Encoding) -> str:
        return prove(load_model("two_phase", {"rm": rm}), "consistent", STRENGTHENING, encoding=enc).verdict

    return run


def explicit_task(ref: str, params: dict[str, int]) -> Callable[[], str]:
    def run() -> str:
        res = check(load_model(ref, params), Options())
        return f"{res.verdict}, {res.distinct} states"

    return run


def tasks(heavy: bool) -> list[Task]:
    out = [
        Task("BMC TwoPhase rm=3 to depth 12", 60.0, bmc_task("two_phase", {"rm": 3}, 12, False),
             explicit_task("two_phase", {"rm": 3})),
        Task("BMC TwoPhase rm=3 until complete", 60.0, bmc_task("two_phase", {"rm": 3}, 12, True),
             explicit_task("two_phase", {"rm": 3})),
        Task("prove TwoPhase rm=5 consistent", 10.0, prove_task(5), explicit_task("two_phase", {"rm": 5})),
    ]
    if heavy:
        out += [
            Task("BMC TwoPhase rm=4 to depth 12", None, bmc_task("two_phase", {"rm": 4}, 12, False),
                 explicit_task("two_phase", {"rm": 4})),
            Task("BMC FilterLockSwapped n=3", None, bmc_task("filter_lock_buggy", {"n": 3}, 16, True),
                 explicit_task("filter_lock_buggy", {"n": 3})),
        ]
    return out


def timed(fn: Callable[[], str], repeat: int) -> tuple[float, str]:
    times, verdict = [], ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        verdict = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), verdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement (the median is shown)")
    ap.add_argument("--heavy", action="store_true", help="add the larger BMC instances")
    ap.add_argument("--default-only", action="store_true", help="time only the default encoding")
    args = ap.parse_args()
    encodings = [DEFAULT] + ([] if args.default_only else [e for e in ENCODINGS if e != DEFAULT])
    print(f"{'task':<34} {'engine / encoding':<40} {'seconds':>8} {'ratio':>6}  {'target':<10} verdict")
    for task in tasks(args.heavy):
        secs, verdict = timed(task.explicit, args.repeat)
        print(f"{task.name:<34} {'explicit engine (baseline)':<40} {secs:>8.2f} {'':>6}  {'':<10} {verdict}")
        base = None
        for enc in encodings:
            secs, verdict = timed(lambda enc=enc: task.run(enc), args.repeat)
            base = base or secs
            mark = "" if task.target is None or enc != DEFAULT else ("met" if secs < task.target else "MISSED") + \
                f" <{task.target:.0f}s"
            label = str(enc) + (" (default)" if enc == DEFAULT else "")
            print(f"{'':<34} {label:<40} {secs:>8.2f} {secs / base:>6.2f}  {mark:<10} {verdict}", flush=True)


if __name__ == "__main__":
    main()
