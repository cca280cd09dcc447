"""Population-protocol benchmarks: simulator throughput against ppsim, and the exact chain's reach.

1. Throughput: Lockstep's simulator (the default, the agent-array scheduler up to 2^24 agents; and
   the batched one) and ppsim (the Rust multibatch simulator, installed with
   `pip install -e '.[bench]'`) run the same phase-clock rule table from the same start for the
   same number of interactions at n = 10⁴, 10⁵ and 10⁶; the table gives interactions per second
   and the ratio of the default to ppsim. Without ppsim the baseline column is left out.
2. Exact chain: for growing n, the time to build the configuration chain from every configuration
   and solve the worst expected time to synchronize; the largest n done within 60 s is reported.

    python -m bench.population [--quick]
"""

from __future__ import annotations

import argparse
import math
import time

from lockstep.checker.probabilistic import analysis, dtmc
from lockstep.checker.probabilistic.batched import Simulator
from lockstep.specs.phase_clock import PhaseClock


def ppsim_rule(protocol: PhaseClock) -> dict:
    """The protocol's (deterministic) rule table in ppsim's dict form, without the null interactions."""
    rule = {}
    for k, outs in enumerate(protocol.outcomes):
        a, b = divmod(k, protocol.Q)
        ((a2, b2, _),) = outs
        if (a2, b2) != (a, b):
            rule[(protocol.states[a], protocol.states[b])] = (protocol.states[a2], protocol.states[b2])
    return rule


def lockstep_rate(protocol: PhaseClock, start: tuple, interactions: int, seed: int, method: str = "auto") -> float:
    sim = Simulator(protocol, start, seed=seed, method=method)
    sim.run(min(interactions, 1000))  # compiles the agent kernel (cached after the first run)
    began = time.perf_counter()
    sim.run(interactions)
    return sim.t / (time.perf_counter() - began)


def ppsim_rate(protocol: PhaseClock, start: tuple, interactions: int, seed: int) -> float | None:
    try:
        import ppsim
    except ImportError:
        return None
    init = protocol.view(start).as_dict()
    sim = ppsim.Simulation(init, ppsim_rule(protocol), transition_order="asymmetric", seed=seed)
    units = interactions / protocol.n
    began = time.perf_counter()
    sim.run(units, history_interval=units, timer=False)
    return units * protocol.n / (time.perf_counter() - began)


def throughput(quick: bool) -> None:
    print("Simulator throughput (interactions per second, best of 2 seeds; ratio = default / ppsim)")
    print(f"{'protocol':<34}{'n':>10}{'states':>7}{'default /s':>14}{'batched /s':>14}{'ppsim /s':>14}{'ratio':>8}")
    for n in (10**4, 10**5, 10**6):
        interactions = (5 if quick else 20) * n if n < 10**6 else (2 if quick else 10) * n
        for hours, m in ((8, 2), (4, 0)):
            p = PhaseClock(n=n, hours=hours, m=m)
            start = p.start_configurations("spread_out")[0]
            ours = max(lockstep_rate(p, start, interactions, s) for s in (1, 2))
            batched = max(lockstep_rate(p, start, interactions, s, "batched") for s in (1, 2))
            base = [ppsim_rate(p, start, interactions, s) for s in (1, 2)]
            theirs = None if base[0] is None else max(base)
            name = f"phase_clock hours={p.hours} m={p.m}"
            ratio = f"{ours / theirs:.2f}" if theirs else "-"
            print(f"{name:<34}{n:>10,}{p.Q:>7}{ours:>14,.0f}{batched:>14,.0f}"
                  f"{(f'{theirs:,.0f}' if theirs else 'n/a'):>14}{ratio:>8}")


def exact_reach(budget: float, quick: bool) -> None:
    print(f"\nExact chain from every configuration: worst expected time to synchronize (budget {budget:.0f} s)")
    print(f"{'parameters':<30}{'configurations':>16}{'transitions':>14}{'seconds':>9}{'worst (parallel time)':>24}")
    series = [("hours=4 m=2", lambda n: PhaseClock(n=n, m=2), range(4, 40, 2)),
              ("default m", lambda n: PhaseClock(n=n), range(3, 12))]
    for label, make, ns in series:
        best = None
        for n in ns:
            p = make(n)
            if p.configuration_count() > (3_000_000 if quick else 12_000_000):
                break
            began = time.perf_counter()
            chain = dtmc.build(p, limit=20_000_000)
            h = analysis.hitting_times(chain, chain.mask("synchronized"))
            took = time.perf_counter() - began
            print(f"{label + f' n={n} (Q={p.Q})':<30}{chain.size:>16,}{chain.P.nnz:>14,}{took:>9.1f}"
                  f"{h.max() / n:>24.3f}")
            if took > budget:
                break
            best = n
        print(f"  largest n solved within {budget:.0f} s ({label}): {best}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter runs and smaller chains")
    args = ap.parse_args()
    throughput(args.quick)
    exact_reach(60.0, args.quick)
    print(f"\n(n ln n at n = 10^6 is {1e6 * math.log(1e6):,.0f} interactions)")


if __name__ == "__main__":
    main()
