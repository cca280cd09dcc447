"""The vector engine on Ray actors against one process: states/s with 1 and 2 actors, the exchange
volume per level, and a projection for N machines from the measured numbers; random simulation on
1 and 2 actors against one process (steps/s).

All runs happen in one invocation on one local Ray instance (started once, not timed), so the
ratios compare like with like on a shared machine. On a 2-core machine the point is correctness
and the projection, not speed: the driver, the Ray raylet and the actors share the two cores.

    .venv/bin/python -m bench.cluster                  # TwoPhase RM=9, filter lock N=6 (several minutes)
    .venv/bin/python -m bench.cluster --quick          # TwoPhase RM=7, filter lock N=5
"""

from __future__ import annotations

import argparse
import time

from lockstep.checker.cluster import ClusterSearch, ClusterSimulation
from lockstep.checker.explicit import Options
from lockstep.checker.loader import load_model
from lockstep.checker.progress import NoProgress
from lockstep.checker.simulation import simulate
from lockstep.checker.vector import VectorModel, check_vector

BANDWIDTH = 1.25e9  # bytes/s between machines assumed by the projection (10 Gbit/s)
LATENCY = 0.005  # seconds of per-level synchronisation (two object-store rounds) assumed by the projection


def measure(spec: str, params: dict[str, int]) -> list[tuple]:
    vm = VectorModel(load_model(spec, params))
    one = check_vector(vm, Options())
    rows = [("one process", one, None)]
    for n in (1, 2):
        search = ClusterSearch(vm, spec, params, Options(), NoProgress(), "local", n, every=float("inf"))
        rows.append((f"{n} Ray actor{'s' if n > 1 else ''}", search.run(), search))
    return rows


def walk_rows(spec: str, params: dict[str, int], runs: int, depth: int) -> list[tuple]:
    """(label, result, seconds) for the walks in one process, on 1 and on 2 Ray actors (actor start-up timed)."""
    model = load_model(spec, params)
    one = simulate(model, runs, depth, seed=1, deadlock=False)
    rows = [("one process", one, one.seconds)]
    for n in (1, 2):
        t0 = time.monotonic()
        res = ClusterSimulation(model, spec, params, runs, depth, 1, False, "local", n).run()
        rows.append((f"{n} Ray actor{'s' if n > 1 else ''}", res, time.monotonic() - t0))
    return rows


def print_walks(cases: list[tuple[str, dict[str, int]]], runs: int, depth: int) -> None:
    print(f"\nRandom simulation: {runs:,} walks of {depth} steps (seed 1), actor start-up included:")
    print(f"{'spec':<22}{'run':<14}{'walks':>8}{'steps':>12}{'distinct':>10}{'seconds':>9}{'steps/s':>10}"
          f"{'ratio':>7}  same")
    for spec, params in cases:
        rows = walk_rows(spec, params, runs, depth)
        one, base = rows[0][1], rows[0][1].steps / rows[0][2]
        name = spec + " " + ",".join(f"{k}={v}" for k, v in params.items())
        for label, res, secs in rows:
            same = (res.runs, res.steps, res.distinct, res.endings) == (one.runs, one.steps, one.distinct, one.endings)
            rate = res.steps / secs
            print(f"{name:<22}{label:<14}{res.runs:>8,}{res.steps:>12,}{res.distinct:>10,}{secs:>9.1f}{rate:>10,.0f}"
                  f"{rate / base:>7.2f}  {'yes' if same else 'NO'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller instances (about a minute)")
    args = ap.parse_args()
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    cases = [("two_phase", {"rm": 7 if args.quick else 9}), ("filter_lock", {"n": 5 if args.quick else 6})]
    print(f"{'spec':<22}{'run':<14}{'distinct':>12}{'generated':>13}{'depth':>6}{'seconds':>9}{'states/s':>10}"
          f"{'ratio':>7}  same")
    projections = []
    for spec, params in cases:
        rows = measure(spec, params)
        one = rows[0][1]
        name = spec + " " + ",".join(f"{k}={v}" for k, v in params.items())
        for label, res, _s in rows:
            same = (res.verdict, res.distinct, res.generated, res.depth) == \
                (one.verdict, one.distinct, one.generated, one.depth)
            rate = res.distinct / res.seconds
            print(f"{name:<22}{label:<14}{res.distinct:>12,}{res.generated:>13,}{res.depth:>6}{res.seconds:>9.1f}"
                  f"{rate:>10,.0f}{rate / (one.distinct / one.seconds):>7.2f}  {'yes' if same else 'NO'}")
        search2 = rows[2][2]
        levels = search2.exchanged
        cross = sum(e[1] for e in levels)
        nbytes = sum(e[2] for e in levels)
        peak = max(e[2] for e in levels)
        print(f"{'':<22}exchange with 2 actors: {cross:,} rows ({nbytes / 2**20:,.1f} MiB) crossed partitions, "
              f"{nbytes / one.distinct:.1f} bytes per distinct state, {len(levels)} levels, "
              f"peak {peak / 2**20:,.1f} MiB in one level")
        projections.append((name, one, rows[1][1], rows[1][2], nbytes / one.distinct))
    print_walks(cases, 2000 if args.quick else 10_000, 100)
    ray.shutdown()
    print(f"\nProjection for N machines (per-actor throughput measured with 1 actor; {BANDWIDTH / 1e9:.2f} GB/s "
          f"between machines; {LATENCY * 1e3:.0f} ms per level; a fraction (N-1)/N of successors crosses):")
    print(f"{'spec':<22}" + "".join(f"{'N=' + str(n):>12}" for n in (1, 2, 4, 8, 16, 32)))
    for name, one, solo, search1, bytes_per_state in projections:
        compute = solo.seconds
        cells = []
        for n in (1, 2, 4, 8, 16, 32):
            # the 2-actor run sends about half its successor rows across; N actors send (N-1)/N of them
            exchange = bytes_per_state * 2 * (n - 1) / n * one.distinct / BANDWIDTH / n
            secs = compute / n + exchange + LATENCY * len(search1.exchanged)
            cells.append(f"{one.distinct / secs:>12,.0f}")
        print(f"{name:<22}" + "".join(cells) + "  states/s")


if __name__ == "__main__":
    main()
