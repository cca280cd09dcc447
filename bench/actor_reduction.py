"""Partial-order and symmetry reduction of actor specs: states, time, states per second and reduction factors.

Each spec is checked (invariants, no deadlock check: the protocols end in quiescent states) with no
reduction, with partial-order reduction (POR), with symmetry reduction, and with both. Two factors are
measured in the same run against the full search: in states (its distinct states over the reduced
search's) and in time (its seconds over the reduced search's): a reduction that saves states but not
time shows a small time factor. Every mode runs on the vector engine unless `--engine scalar` is given
(both engines give the same counts), with `--workers` threads (default 1), its C kernels built before
each search starts (the seconds are the search's). `--rounds N` runs the modes
N times, interleaved (none, por, ..., none, por, ...), and reports each one's median time, so that a
loaded machine slows all modes alike. A search stopped by `--max-states` prints `>` before its count and
the factor is a lower bound. `--param k=v` sets a parameter of the specs that declare it (two-phase
commit at n = 4 processes: `--param rm=3`); a spec name may carry its own, `autobahn:slots=2,k=2`.
On Bracha with an equivocating sender at its defaults, with the full search in the run, the targets
are printed: POR at least 10 times and POR with symmetry at least 40 times faster than the full search.

    python -m bench.actor_reduction                        # 2PC, P-SMR (3 replicas x 2 workers x 5 commands),
                                                           # Bracha (Byzantine relay, low quorum)
    python -m bench.actor_reduction --all                  # also honest and equivocating Bracha (12.6 M states),
                                                           # Autobahn at its defaults and at slots=2 k=2
    python -m bench.actor_reduction --spec bracha_equivocating_sender --modes none,por,both --rounds 3
    python -m bench.actor_reduction --spec bracha_equivocating_sender --modes none,por --rounds 3 --two-workers

With `--two-workers` each mode also runs on the vector engine's two workers in the same rounds (a row marked
`2w`), and a line gives the median of the rounds' one-worker over two-worker times: a target of at least 1.6 for
a search of five million states or more; below, a note, since levels under 65,536 states run on one thread
either way (the two-worker search is then the one-worker search).
"""

from __future__ import annotations

import argparse
import os
import statistics

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model, parse_params, resolve
from lockstep.checker.reduction.actors import PorUnsupported
from lockstep.checker.vector import VectorOptions, check_vector
from lockstep.checker.vector.search import THREADED_LEVEL
from lockstep.specs.lang import SpecError, declared_params

QUICK = ["two_phase_commit", "psmr", "bracha_byzantine_relay", "bracha_low_echo_quorum"]
ALL = QUICK + ["bracha", "bracha_equivocating_sender", "autobahn", "autobahn:slots=2,k=2"]
MODES = {"none": (False, False), "por": (True, False), "symmetry": (False, True), "both": (True, True)}
TARGETS = {("bracha_equivocating_sender", "por"): 10.0, ("bracha_equivocating_sender", "both"): 40.0}  # time factor
SPLIT = 5_000_000  # searches of at least this many states: two workers at least TWO_WORKERS times one worker's speed
TWO_WORKERS = 1.6


def measure(spec: str, params: dict[str, int], mode: str, engine: str, max_states: int | None,
            workers: int) -> tuple[str, int, float, str, str] | None:
    """(mode, distinct, seconds, verdict, violated property) of one search; None if the mode does not apply."""
    por, symmetry = MODES[mode]
    try:
        model = load_model(spec, params, symmetry=symmetry)
    except SpecError:  # no symmetric Range to reduce by
        return None
    opts = Options(deadlock=False, por=por, max_states=max_states, workers=workers)
    try:
        if engine == "scalar":
            res = check(model, opts)
        else:  # the C kernels built (or loaded from the cache) before the search, not while it runs on numpy
            res = check_vector(model, opts, vopts=VectorOptions(native="always"))
    except PorUnsupported:
        return None
    prop = res.violation.name if res.violation is not None else "-"
    return mode, res.distinct, res.seconds, res.verdict, prop


def shown_of(run: tuple[str, int, float, str, str]) -> str:
    """A run's verdict as the table shows it, with the violated property."""
    return run[3] if run[4] == "-" else f"{run[3]} ({run[4]})"


def two_worker_target(label: str, mode: str, distinct: int, ratios: list[float]) -> str:
    """The line on two workers against one (each round's one-worker time over its two-worker time): a target from
    SPLIT states on; below, a note (the search's levels are mostly too small to split, and run on one thread)."""
    r = statistics.median(ratios)
    said = (f"{label}, {mode}, two workers {r:.2f}x one worker's speed (median of {len(ratios)} paired round(s), "
            f"rounds {min(ratios):.2f}-{max(ratios):.2f}x")
    if distinct < SPLIT:
        return f"note: {said}; no target below {SPLIT:,} states, where levels under {THREADED_LEVEL:,} states run on one thread)"
    return f"target: {said}; >= {TWO_WORKERS:g}x): {'met' if r >= TWO_WORKERS else 'missed'}"


def split_spec(spec: str) -> tuple[str, dict[str, int]]:
    """`name:k=v,k=v` as (name, parameters)."""
    name, _, given = spec.partition(":")
    return name, {k: int(v) for k, v in (kv.split("=") for kv in given.split(",") if kv)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="also the larger specs (Bracha at 12.6 M states, Autobahn)")
    ap.add_argument("--spec", action="append", help="only this spec, name or name:k=v,k=v (repeatable)")
    ap.add_argument("--modes", default="none,por,symmetry,both", help="comma-separated: none, por, symmetry, both")
    ap.add_argument("--engine", choices=("vector", "scalar"), default="vector", help="explicit engine (default vector)")
    ap.add_argument("--workers", type=int, default=1, help="threads of the vector engine (default 1)")
    ap.add_argument("--rounds", type=int, default=1, help="run the modes this many times, interleaved; report medians")
    ap.add_argument("--param", "-p", action="append", default=[], metavar="K=V",
                    help="a parameter, for the specs that declare it (repeatable)")
    ap.add_argument("--max-states", type=int, default=None, help="stop each search after this many states")
    ap.add_argument("--two-workers", action="store_true",
                    help="also run each mode on the vector engine's two workers, in the same rounds, with the target "
                         f"of at least {TWO_WORKERS:g}x one worker's speed from {SPLIT:,} states")
    args = ap.parse_args()
    if args.two_workers and (args.workers != 1 or args.engine != "vector"):
        ap.error("--two-workers compares the vector engine's two workers with one: drop --workers and --engine")
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            ap.error(f"unknown mode {m!r} (choose from {', '.join(MODES)})")
    if args.rounds < 1 or args.workers < 1:
        ap.error("--rounds and --workers take a positive number")
    given = parse_params(args.param)
    specs = args.spec or (ALL if args.all else QUICK)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.rounds} round(s), medians; "
          f"{args.workers} worker(s)")
    print(f"{'spec':<36}{'mode':<10}{'distinct':>13}{'seconds':>10}{'states/s':>12}{'states×':>9}{'time×':>8}"
          f"  verdict ({args.engine} engine)")
    targets: list[str] = []
    for spec in specs:
        name, own = split_spec(spec)
        declared = declared_params(resolve(name)[0])
        params = {**{k: v for k, v in given.items() if k in declared}, **own}
        label = name + "".join(f" {k}={v}" for k, v in params.items())
        runs: dict[str, list] = {m: [] for m in modes}
        pairs: dict[str, list] = {m: [] for m in modes}  # (one worker's run, two workers') per round
        for _ in range(args.rounds):
            for mode in modes:
                one = measure(name, params, mode, args.engine, args.max_states, args.workers)
                runs[mode].append(one)
                if args.two_workers:
                    pairs[mode].append((one, measure(name, params, mode, args.engine, args.max_states, 2)))
        base = None
        for mode in modes:
            rows = [r for r in runs[mode] if r is not None]
            if not rows:
                print(f"{label:<36}{mode:<10}{'-':>13}{'-':>10}{'-':>12}{'-':>9}{'-':>8}  (does not apply)", flush=True)
                continue
            m, distinct, _secs, verdict, _prop = rows[0]
            secs = statistics.median(r[2] for r in rows)
            cut = verdict == "inconclusive"
            if m == "none":
                base = (distinct, secs, cut)
            states_f = time_f = ""
            if base is not None and m != "none" and not cut:
                states_f = ("≥" if base[2] else "") + f"{base[0] / max(distinct, 1):.1f}"
                time_f = ("≥" if base[2] else "") + f"{base[1] / max(secs, 1e-9):.1f}"
            shown = shown_of(rows[0])
            print(f"{label:<36}{m:<10}{('>' if cut else '') + f'{distinct:,}':>13}{secs:>10.2f}"
                  f"{distinct / max(secs, 1e-9):>12,.0f}{states_f:>9}{time_f:>8}  {shown}", flush=True)
            goal = TARGETS.get((name, m))
            if goal is not None and time_f and not params:
                factor = base[1] / max(secs, 1e-9)  # type: ignore[index]
                targets.append(f"target: {label}, {m} {factor:.1f}x faster than the full search (>= {goal:g}x, "
                               f"medians of {args.rounds} interleaved round(s)): {'met' if factor >= goal else 'missed'}")
            both = [(a, b) for a, b in pairs[mode] if a is not None and b is not None]
            if both:
                two = statistics.median(b[2] for _a, b in both)
                print(f"{label:<36}{m + ' 2w':<10}{both[0][1][1]:>13,}{two:>10.2f}{both[0][1][1] / max(two, 1e-9):>12,.0f}"
                      f"{'':>9}{'':>8}  {shown_of(both[0][1])}", flush=True)
                targets.append(two_worker_target(label, m, distinct, [a[2] / max(b[2], 1e-9) for a, b in both]))
    for line in targets:
        print(line)


if __name__ == "__main__":
    main()
