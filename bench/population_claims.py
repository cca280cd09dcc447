"""Reproduce the claims of the loosely-stabilizing phase clock and adaptive majority (Berenbrink,
Biermeier, Hahn, Kaaser, SAND 2022) on Lockstep's models, as tables and PNG plots:

1. recovery: from adversarial configurations the clock synchronizes in O(n log n) interactions
   (O(log n) parallel time), n = 10² … 10⁶;
2. holding: once synchronized it stays so for a long time — exactly for small n; against the
   hour length m at n = 100 (sequential simulation); and against n at m = Θ(log n), n = 10² … 10⁶
   (batched simulation, every batch checked), with fitted trends;
3. adaptive majority with undecided agents: the time to follow a switch of the majority, against
   the phase of the clock at the switch, and for supports Θ(log n), Θ(√n), Θ(n) with bias 2:1 at
   n = 10³ … 10⁵, then the fraction of time correct over many clock cycles (m = ⌈log₂ n⌉ minutes
   per hour: the rule table has one entry per pair of the 18·4m agent states, built in Python).

    python -m bench.population_claims [--out DIR] [--quick] [--only recovery,holding,majority]
    python -m bench.population_claims --grid 100000:12,13 --out /tmp/plots   # some points of 2c only
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

# ---------------------------------------------------------------------------------- 1. recovery


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


# ---------------------------------------------------------------------------------- 2. holding


def arc(present: np.ndarray, M: int) -> int:
    """Length of the shortest arc of the M-cycle holding every state marked in `present`."""
    idx = np.flatnonzero(present)
    gaps = np.diff(idx)
    widest = max(int(gaps.max()) if len(gaps) else 0, int(idx[0] + M - idx[-1]))
    return M - widest


def first_loss(p: PhaseClock, seed: int, cap: float) -> tuple[float | None, float | None]:
    """One run from every agent at 0 on the batched simulator: (the first batch during which the
    clocks may have left one arc of length m, the first batch after which they have), in parallel
    time; None past `cap`. The first is a lower bound of the holding time, the second an upper one:
    inside a batch every agent is in its state before or after it, so the states it passes through
    are the batch's `touched` set."""
    sim = Simulator(p, {0: p.n}, seed=seed, track=True)
    lower = None
    end = int(cap * p.n)
    while sim.t < end:
        sim.batch(end - sim.t)
        if lower is None and arc(sim.touched, p.M) > p.m:
            lower = sim.t / p.n
        if arc(sim.counts > 0, p.M) > p.m:
            return lower, sim.t / p.n
    return lower, None


def holding(out: str, quick: bool) -> None:
    exact_holding(quick)
    sequential_holding(out, quick)
    holding_against_n(out, quick)


def exact_holding(quick: bool) -> None:
    print("\n2a. Holding time, exact (expected parallel time until synchrony is lost, from all agents at 0)")
    print(f"{'n':>4}{'m':>4}{'configurations':>16}{'holding':>14}")
    exact = []
    cases = [(n, m) for n in range(3, 9) for m in (2, 3, 4) if (n, m) not in ((8, 4),)]
    for n, m in cases if not quick else cases[:9]:
        p = PhaseClock(n=n, m=m)
        chain = dtmc.build(p, "zero")
        h = analysis.holding_times(chain, chain.mask("synchronized"))[chain.index_of(p.start_configurations("zero")[0])]
        exact.append((n, m, h / n))
        print(f"{n:>4}{m:>4}{chain.size:>16,}{h / n:>14,.1f}")
    X = np.array([[1.0, m, -math.log(n)] for n, m, _ in exact])
    (alpha, beta, gamma), *_ = np.linalg.lstsq(X, np.log([h for _, _, h in exact]), rcond=None)
    print(f"    fit: ln H = {alpha:.2f} + {beta:.3f}·m − {gamma:.3f}·ln n (n = 3..8: far from the asymptotic regime)")


def sequential_holding(out: str, quick: bool) -> None:
    # every interaction observed (a brief excursion ends synchrony too): the sequential scheduler
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
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.semilogy(ms, means, "o-")
    ax.set(xlabel="m (minutes per hour = synchrony window)", ylabel="mean holding time (parallel time)",
           title="Phase clock at n = 100: holding time grows (at least) exponentially in m")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "holding.png"), dpi=110)
    plt.close(fig)


# (n, m) points of the grid: m from where synchrony is lost within tens of parallel time to where
# one run costs about 10⁸ interactions; the lines m = ⌈c·log₂ n⌉ for c = 3/4 and c = 1 are on it
GRID = {100: (5, 6, 7, 8), 1000: (7, 8, 9, 10), 10_000: (10, 11, 12, 13, 14), 100_000: (12, 13, 14),
        1_000_000: (14, 15)}
QUICK_GRID = {100: (5, 6, 7), 1000: (8, 9, 10), 10_000: (10, 11, 12)}


BUDGET = 3 * 10**8  # interactions per grid point: runs stop there (but at least MIN_RUNS are made)
MIN_RUNS = 3


def parse_grid(text: str) -> dict[int, tuple[int, ...]]:
    """'100000:12,13;1000000:15' as {100000: (12, 13), 1000000: (15,)}."""
    grid = {}
    for part in filter(None, text.split(";")):
        n, _, ms = part.partition(":")
        grid[int(n)] = tuple(int(m) for m in ms.split(","))
    return grid


def holding_against_n(out: str, quick: bool, grid: dict[int, tuple[int, ...]] | None = None) -> None:
    grid = grid or (QUICK_GRID if quick else GRID)
    runs = 6 if quick else 10
    cap = 20_000.0
    print("\n2c. Holding time against n (batched simulation, all agents at 0; every batch checked: the run ends at the")
    print("    first batch after which the counters span more than one hour; mean ± 95% CI. 'early' counts the runs in")
    print("    which an earlier batch may have passed through such a configuration and come back, and 'lower' is the")
    print("    mean holding time if every such batch ended synchrony: the true mean lies between 'lower' and 'holding')")
    print(f"{'n':>10}{'m':>4}{'m/log2 n':>10}{'runs':>6}{'holding (parallel time)':>26}{'median':>9}{'early':>7}"
          f"{'lower':>9}{'seconds':>9}")
    points = []  # (n, m, mean, runs)
    for n, ms in grid.items():
        for m in ms:
            p = PhaseClock(n=n, m=m)
            began = time.monotonic()
            got: list[tuple[float | None, float | None]] = []
            spent = 0.0
            while len(got) < runs and (len(got) < MIN_RUNS or spent < BUDGET):
                got.append(first_loss(p, len(got), cap))
                spent += n * (got[-1][1] if got[-1][1] is not None else cap)
            done = len(got)
            ups = [u for _, u in got if u is not None]
            early = sum(1 for lo, up in got if lo is not None and (up is None or lo < up))
            if len(ups) < done:
                print(f"{n:>10,}{m:>4}{m / math.log2(n):>10.2f}{done:>6}   > {cap:,.0f} in {done - len(ups)} runs")
                continue
            mean, half = smc.mean_interval(ups, 0.95)
            lower = float(np.mean([lo if lo is not None else up for lo, up in got]))
            points.append((n, m, mean, done))
            print(f"{n:>10,}{m:>4}{m / math.log2(n):>10.2f}{done:>6}{mean:>15,.1f} ± {half:<9,.1f}"
                  f"{float(np.median(ups)):>9,.1f}{early:>7}{lower:>9,.1f}{time.monotonic() - began:>9.0f}", flush=True)
    fits(points, out)


def fits(points: list[tuple[int, int, float, int]], out: str) -> None:
    """Least-squares fits of ln(mean holding time): over the whole grid as α + β·m − γ·ln n (so along
    m = c·log₂ n it is a power of n, of degree c·β/ln 2 − γ), and along each line m = ⌈c·log₂ n⌉
    as a power of n, an exponential of n, and an exponential of (ln n)²."""
    n = np.array([p[0] for p in points], dtype=float)
    m = np.array([p[1] for p in points], dtype=float)
    h = np.log([p[2] for p in points])
    w = np.sqrt([p[3] for p in points])  # holding times are near exponential: ln(mean) has variance ≈ 1/runs
    X = np.column_stack([np.ones_like(n), m, -np.log(n)])
    coef, *_ = np.linalg.lstsq(X * w[:, None], h * w, rcond=None)
    resid = (h - X @ coef) * w
    sigma = math.sqrt(float(resid @ resid) / max(1, len(h) - 3))
    cov = sigma**2 * np.linalg.inv((X * w[:, None]).T @ (X * w[:, None]))
    alpha, beta, gamma = coef
    print(f"\n2d. Fit over the grid: ln H = {alpha:.2f} + {beta:.3f}·m − {gamma:.3f}·ln n  "
          f"(± {2 * math.sqrt(cov[1, 1]):.3f} and ± {2 * math.sqrt(cov[2, 2]):.3f}, two standard errors; "
          f"weighted residual s.d. {sigma:.2f}, 1 expected; {len(h)} points)")
    print("    along m = c·log₂ n: H ≈ e^α · n^(c·β/ln 2 − γ), a polynomial in n of degree")
    for c in (0.75, 1.0, 2.0):
        k = c * beta / math.log(2) - gamma
        var = (c / math.log(2)) ** 2 * cov[1, 1] + cov[2, 2] - 2 * (c / math.log(2)) * cov[1, 2]
        note = "   (the default m = 2⌈log₂ n⌉; extrapolated)" if c == 2 else ""
        print(f"      c = {c:g}: {k:.2f} ± {2 * math.sqrt(var):.2f}{note}")
    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    for c, mark in ((0.75, "o"), (1.0, "s")):
        line = [(nn, mm, hh) for nn, mm, hh, _ in points if mm == math.ceil(c * math.log2(nn))]
        if len(line) < 3:
            continue
        ln_n = np.log([x[0] for x in line])
        lh = np.log([x[2] for x in line])
        print(f"    measured along m = ⌈{c:g}·log₂ n⌉ ({', '.join(f'n={x[0]:,}: m={x[1]}' for x in line)}):")
        for name, feature in (("power n^k", ln_n), ("exponential e^(k·n)", np.exp(ln_n)), ("e^(k·(ln n)²)", ln_n**2)):
            A = np.column_stack([np.ones_like(feature), feature])
            (a0, k), *_ = np.linalg.lstsq(A, lh, rcond=None)
            r = lh - A @ np.array([a0, k])
            print(f"      {name:<22} k = {k:.3g}, residual s.d. {math.sqrt(float(r @ r) / max(1, len(lh) - 2)):.2f} in ln H")
        ax.loglog([x[0] for x in line], [x[2] for x in line], mark + "-", label=f"m = ⌈{c:g}·log₂ n⌉ (measured)")
    ns = np.logspace(2, 6, 50)
    for c in (0.75, 1.0):
        ax.loglog(ns, np.exp(alpha + beta * c * np.log2(ns) - gamma * np.log(ns)), "--", lw=1,
                  label=f"grid fit, m = {c:g}·log₂ n: degree {c * beta / math.log(2) - gamma:.2f}")
    ax.set(xlabel="n (agents)", ylabel="mean holding time (parallel time)",
           title="Phase clock: holding time at m = Θ(log n) is polynomial in n")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "holding_n.png"), dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------- 3. majority


class Tracker:
    """Adaptive majority on the batched simulator: the predicate `correct` as numpy masks, and the
    majority switched between the two sides (inputs and the input law swapped)."""

    def __init__(self, p: AdaptiveMajority, swapped: AdaptiveMajority, seed: int):
        self.p, self.swapped, self.n = p, swapped, p.n
        self.inA = np.array([q.input == "A" for q in p.states])
        self.inB = np.array([q.input == "B" for q in p.states])
        self.outA = np.array([q.output == "A" for q in p.states])
        self.swap = np.array([p.index[p.with_input(q, {"A": "B", "B": "A"}.get(q.input, q.input))] for q in p.states])
        self.rng_seed = seed
        self.sim = Simulator(swapped, swapped.start_configurations("settled")[0], seed=seed)

    def correct(self, counts: np.ndarray) -> bool:
        a, b, out_a = counts @ self.inA, counts @ self.inB, counts @ self.outA
        return bool((a > b and out_a == self.n) or (b > a and out_a == 0))

    def switch(self) -> None:
        """Every supporter of A now supports B and vice versa; the input law becomes p's."""
        counts = np.bincount(self.swap, weights=self.sim.counts, minlength=self.p.Q).astype(np.int64)
        t = self.sim.t
        self.sim = Simulator(self.p, tuple(counts.tolist()), seed=self.rng_seed + 7919)
        self.sim.t = t

    def follow(self, limit: float) -> float | None:
        """Parallel time until every output is the (new) majority, tested every n/100 interactions."""
        began = self.sim.t
        every = max(1, self.n // 100)
        while self.sim.t - began < limit * self.n:
            self.sim.run(every)
            if self.correct(self.sim.counts):
                return (self.sim.t - began) / self.n
        return None

    def track(self, cycles: int) -> tuple[float, int]:
        """Over `cycles` clock cycles, checked once per unit of parallel time: the fraction of checks
        at which the outputs are correct, and the number of lapses (a correct check followed by an
        incorrect one)."""
        ok: list[bool] = []
        self.sim.run(cycles * self.p.M * self.n, every=self.n, observe=lambda s: ok.append(self.correct(s.counts)))
        lapses = sum(1 for x, y in zip(ok, ok[1:]) if x and not y)
        return float(np.mean(ok)), lapses


def regimes(n: int) -> list[tuple[str, int, int]]:
    """(name, a, b): supports Θ(log n), Θ(√n) and Θ(n) of the majority, with bias 2:1."""
    log_a = math.ceil(4 * math.log(n))
    sqrt_a = math.ceil(2 * math.sqrt(n))
    return [("4 ln n", log_a, log_a // 2), ("2 √n", sqrt_a, sqrt_a // 2), ("n/2", n // 2, n // 4)]


def majority(out: str, quick: bool) -> None:
    n = 10**4
    m = math.ceil(math.log2(n))
    p = AdaptiveMajority(n=n, m=m, a=n // 2, b=n // 4)
    q = AdaptiveMajority(n=n, m=m, a=n // 4, b=n // 2)
    print(f"\n3a. Adaptive majority, n = {n:,}, m = {m}, a = n/2, b = n/4: parallel time to follow a switch of the majority,")
    print("    against the clock's phase at the switch (minutes since the start of the reset hour; 3 runs each)")
    print(f"{'phase':>8}{'follow':>10}{'range':>16}")
    phases = [0, m // 2, m, 2 * m, 3 * m, 4 * m - 1]
    for phase in phases:
        times = []
        for seed in range(3):
            tr = Tracker(p, q, seed)
            tr.sim.run((p.M + phase) * n)  # one cycle from clock 0, then to the phase
            tr.switch()
            times.append(tr.follow(20 * p.M))
        print(f"{phase:>8}{np.mean(times):>10.1f}{f'{min(times):.1f} .. {max(times):.1f}':>16}")
    sizes = [10**3, 10**4] + ([] if quick else [10**5])
    print("\n3b. Adaptive majority with undecided agents, bias 2:1, churn 1/n, m = ⌈log₂ n⌉: after the majority switches at a")
    print("    uniformly random phase, the parallel time until every output is the new majority (mean ± 95% CI, and")
    print("    the largest), then the fraction of checks (one per unit of parallel time) at which every output is")
    print("    correct over the following cycles, and how often it lapsed")
    print(f"{'n':>8}{'m':>4}{'support a':>11}{'a':>8}{'b':>8}{'runs':>5}{'follow':>17}{'max':>7}{'cycles':>8}"
          f"{'correct':>9}{'lapses':>8}{'seconds':>9}")
    for n in sizes:
        m = math.ceil(math.log2(n))
        runs = 2 if n >= 10**5 else 4 if quick else 10 if n <= 10**3 else 6
        cycles = 10 if n >= 10**5 else 20 if quick else 50 if n <= 10**3 else 40
        for name, a, b in regimes(n):
            began = time.monotonic()
            p = AdaptiveMajority(n=n, m=m, a=a, b=b)
            q = AdaptiveMajority(n=n, m=m, a=b, b=a)
            rng = np.random.default_rng(n + a)
            follow, fracs, lapses = [], [], 0
            for seed in range(runs):
                tr = Tracker(p, q, seed)
                tr.sim.run(int((p.M + rng.integers(p.M)) * n))
                tr.switch()
                t = tr.follow(20 * p.M)
                follow.append(math.inf if t is None else t)
                frac, lapsed = tr.track(cycles)
                fracs.append(frac)
                lapses += lapsed
            mean, half = smc.mean_interval(follow, 0.95)
            print(f"{n:>8,}{m:>4}{name:>11}{a:>8,}{b:>8,}{runs:>5}{mean:>9.1f} ± {half:<5.1f}{max(follow):>7.1f}"
                  f"{runs * cycles:>8}{np.mean(fracs):>9.4f}{lapses:>8}{time.monotonic() - began:>9.0f}", flush=True)
    plot_majority(out, 10**3)


def plot_majority(out: str, n: int) -> None:
    m = math.ceil(math.log2(n))
    name, a, b = regimes(n)[0]
    p = AdaptiveMajority(n=n, m=m, a=a, b=b)
    q = AdaptiveMajority(n=n, m=m, a=b, b=a)
    tr = Tracker(p, q, 7)
    ts, out_a, sup_a, sup_b = [], [], [], []

    def record(s: Simulator) -> None:
        ts.append(s.t / n)
        out_a.append(float(s.counts @ tr.outA) / n)
        sup_a.append(int(s.counts @ tr.inA))
        sup_b.append(int(s.counts @ tr.inB))

    for _ in range(3):  # B leads, then A, then B, then A
        tr.sim.run(3 * p.M * n, every=n // 4, observe=record)
        tr.switch()
        tr.p, tr.swapped = tr.swapped, tr.p
    tr.sim.run(3 * p.M * n, every=n // 4, observe=record)
    fig, ax = plt.subplots(figsize=(9, 4.4))
    ax.plot(ts, out_a, label="outputs A (fraction of all agents)", color="tab:red", lw=1.5)
    ax.set(xlabel="parallel time", ylabel="fraction of agents outputting A", ylim=(-0.02, 1.02),
           title=f"Adaptive majority, n = {n:,}: {name} = {a} supporters against {b}, the rest undecided")
    right = ax.twinx()
    right.plot(ts, sup_a, color="tab:blue", lw=1, label="supporters of A")
    right.plot(ts, sup_b, color="tab:green", lw=1, label="supporters of B")
    right.set(ylabel="supporters", ylim=(0, 1.6 * a))
    lines = ax.get_legend_handles_labels()
    more = right.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="center right", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "majority.png"), dpi=110)
    plt.close(fig)


PARTS = {"recovery": recovery, "holding": holding, "majority": majority}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/population", help="directory for the PNG plots")
    ap.add_argument("--quick", action="store_true", help="smaller n and fewer runs")
    ap.add_argument("--only", default=",".join(PARTS), help="comma-separated parts to run (default: all)")
    ap.add_argument("--grid", help="only the holding time against n, at these points: N:M,M;N:M (e.g. 100000:13)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    began = time.monotonic()
    if args.grid:
        holding_against_n(args.out, args.quick, parse_grid(args.grid))
    else:
        for part in args.only.split(","):
            PARTS[part.strip()](args.out, args.quick)
    print(f"\nplots in {args.out}/ ({time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
