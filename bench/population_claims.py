"""Reproduce the qualitative claims of the loosely-stabilizing phase clock and adaptive majority
(Berenbrink, Biermeier, Hahn, Kaaser, SAND 2022) on Lockstep's models, as tables and PNG plots:

1. recovery: from adversarial configurations the clock synchronizes in O(n log n) interactions
   (O(log n) parallel time), n = 10² … 10⁶;
2. holding: once synchronized it stays so for a long time — exactly for small n, and growing
   exponentially in the hour length m (so polynomially in n when m = Θ(log n)) in simulation;
3. adaptive majority: after the input majority switches, the outputs follow within O(log n)
   parallel time, and track the majority under input churn (with m = ⌈log₂ n⌉ minutes per hour:
   the rule table has one entry per pair of the 12·4m agent states, built in Python).

    python -m bench.population_claims [--out DIR] [--quick]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lockstep.checker.probabilistic import analysis, dtmc, smc  # noqa: E402
from lockstep.checker.probabilistic.batched import Simulator  # noqa: E402
from lockstep.specs.adaptive_majority import AdaptiveMajority  # noqa: E402
from lockstep.specs.phase_clock import PhaseClock  # noqa: E402


def recovery(out: str, quick: bool) -> None:
    print("1. Recovery from adversarial configurations (parallel time to synchronize; mean ± 95% CI)")
    print(f"{'n':>9}{'m':>4}{'states':>7}{'start':>11}{'runs':>5}{'time':>18}{'time / ln n':>13}")
    sizes = [10**2, 10**3, 10**4, 10**5] + ([] if quick else [10**6])
    rows = {}
    for start in ("spread_out", "split"):
        for n in sizes:
            p = PhaseClock(n=n)
            runs = 30 if n <= 10**4 else 6 if n <= 10**5 else 3
            test = lambda c, p=p: p.holds("synchronized", c)
            times = []
            for seed in range(runs):
                sim = Simulator(p, p.start_configurations(start)[0], seed=seed)
                times.append(sim.run_until(test, 400 * n, every=max(1, n // 200)) / n)
            mean, half = smc.mean_interval(times, 0.95)
            rows.setdefault(start, []).append((n, mean, half))
            print(f"{n:>9,}{p.m:>4}{p.Q:>7}{start:>11}{runs:>5}{mean:>11.2f} ± {half:<5.2f}{mean / math.log(n):>13.2f}")
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for start, pts in rows.items():
        ns, means, halves = zip(*pts)
        ax.errorbar(ns, means, yerr=halves, marker="o", capsize=3, label=f"start: {start}")
    ns = np.array(sizes, dtype=float)
    ax.plot(ns, 3 * np.log(ns), "k--", lw=1, label="3 ln n")
    ax.set(xscale="log", xlabel="n (agents)", ylabel="parallel time to synchronize",
           title="Phase clock: recovery time grows like log n")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "recovery.png"), dpi=110)
    plt.close(fig)


def holding(out: str, quick: bool) -> None:
    print("\n2a. Holding time, exact (expected parallel time until synchrony is lost, from all agents at 0)")
    print(f"{'n':>4}{'m':>4}{'configurations':>16}{'holding':>14}")
    for n, m in ((3, 2), (3, 3), (3, 4), (4, 2), (4, 3), (4, 4), (5, 2), (5, 3), (5, 4)):
        p = PhaseClock(n=n, m=m)
        chain = dtmc.build(p, "zero")
        h = analysis.holding_times(chain, chain.mask("synchronized"))[chain.index_of(p.start_configurations("zero")[0])]
        print(f"{n:>4}{m:>4}{chain.size:>16,}{h / n:>14,.1f}")
    # holding times need every interaction observed (a brief excursion ends synchrony too), so these
    # runs use the sequential scheduler (max_batch=1) at n = 100
    n = 100
    print(f"\n2b. Holding time by sequential simulation at n = {n} (parallel time until synchrony is lost, from all at 0)")
    print(f"{'m':>4}{'runs':>6}{'mean holding':>22}")
    ms, means = [], []
    cap = 2000.0 if quick else 5000.0
    for m in range(4, 12):
        p = PhaseClock(n=n, m=m)
        lost = lambda c, p=p: not p.holds("synchronized", c)
        times, censored = [], 0
        for seed in range(12):
            t = Simulator(p, p.start_configurations("zero")[0], seed=seed, max_batch=1).run_until(lost, int(cap * n))
            if t is None:
                censored += 1
            else:
                times.append(t / n)
        if censored:
            print(f"{m:>4}{12:>6}   > {cap:,.0f} in {censored} of 12 runs (stopping here)")
            break
        mean, half = smc.mean_interval(times, 0.95)
        ms.append(m)
        means.append(mean)
        print(f"{m:>4}{12:>6}{mean:>13,.1f} ± {half:<7,.1f}")
    p = PhaseClock(n=n)  # the default m = 2⌈log₂ n⌉
    horizon = 2000 if quick else 10000
    lost = lambda c: not p.holds("synchronized", c)
    t = Simulator(p, p.start_configurations("zero")[0], seed=99, max_batch=1).run_until(lost, horizon * n)
    print(f"  default m = {p.m} at n = {n}: synchrony {'lost after ' + format(t / n, '.0f') if t else 'never lost in'} "
          f"{horizon:,} parallel time")
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.semilogy(ms, means, "o-")
    ax.set(xlabel="m (minutes per hour = synchrony window)", ylabel="mean holding time (parallel time)",
           title="Phase clock at n = 100: holding time grows (at least) exponentially in m")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "holding.png"), dpi=110)
    plt.close(fig)


def majority(out: str, quick: bool) -> None:
    print("\n3. Adaptive majority: outputs follow a switch of the input majority (2/3 A -> 1/3 A) under churn 1/n")
    print(f"{'n':>8}{'m':>4}{'runs':>5}{'time to follow (parallel time)':>34}{'correct afterwards':>20}")
    sizes = [10**3, 10**4] + ([] if quick else [10**5])
    for n in sizes:
        p = AdaptiveMajority(n=n, m=math.ceil(math.log2(n)))  # hours of log₂ n keep the rule table small
        follow, kept = [], []
        runs = 8 if n <= 10**4 else 3
        for seed in range(runs):
            sim = Simulator(p, p.start_configurations("settled")[0], seed=seed)
            sim.run(3 * p.M * n)  # let it settle for three cycles
            sim.change_inputs("A", "B", n // 3)
            t = sim.run_until(lambda c: p.holds("correct", c), 20 * p.M * n, every=max(1, n // 100))
            follow.append(math.inf if t is None else t / n)
            ok = []
            sim.run(5 * p.M * n, every=n, observe=lambda s: ok.append(p.holds("correct", s.config())))
            kept.append(np.mean(ok))
        mean, half = smc.mean_interval(follow, 0.95)
        print(f"{n:>8,}{p.m:>4}{runs:>5}{mean:>23.1f} ± {half:<8.1f}{np.mean(kept):>20.3f}")
    n = 10**4
    p = AdaptiveMajority(n=n, m=math.ceil(math.log2(n)))
    sim = Simulator(p, p.start_configurations("settled")[0], seed=7)
    ts, out_a, in_a = [], [], []

    def record(s: Simulator) -> None:
        ts.append(s.t / n)
        out_a.append(s.fractions(p.output).get("A", 0.0))
        in_a.append(s.fractions(p.input).get("A", 0.0))

    cycle = p.M
    # the majority switches to B, back to A, then A loses some support but keeps the majority
    for old, new, frac in (("A", "B", 1 / 3), ("B", "A", 1 / 3), ("A", "B", 0.15)):
        sim.run(4 * cycle * n, every=n // 4, observe=record)
        sim.change_inputs(old, new, int(frac * n))
    sim.run(4 * cycle * n, every=n // 4, observe=record)
    fig, ax = plt.subplots(figsize=(9, 4.2))
    ax.plot(ts, in_a, label="inputs A", color="tab:blue", lw=1)
    ax.plot(ts, out_a, label="outputs A", color="tab:red", lw=1.5)
    ax.axhline(0.5, color="0.6", lw=0.8, ls=":")
    ax.set(xlabel="parallel time", ylabel="fraction of agents", ylim=(-0.02, 1.02),
           title=f"Adaptive majority, n = {n:,}, churn 1/n: outputs follow switches of the input majority")
    ax.legend(loc="center right")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "majority.png"), dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/population", help="directory for the PNG plots")
    ap.add_argument("--quick", action="store_true", help="smaller n and fewer runs")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    began = time.monotonic()
    recovery(args.out, args.quick)
    holding(args.out, args.quick)
    majority(args.out, args.quick)
    print(f"\nplots in {args.out}/ ({time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
