"""Population-protocol benchmarks: simulator throughput against ppsim, start-up, and the exact chain's reach.

1. Throughput: Lockstep's two simulators (the agent array and the batched one on the configuration;
   "default" is the one `Simulator` picks at that size) and ppsim (the Rust multibatch simulator,
   installed with `pip install -e '.[bench]'`) run the same phase-clock rule table from the same
   start for the same number of interactions at n = 10⁴, 10⁵ and 10⁶, null interactions counted by
   both (each checks its interaction counter afterwards). Each first runs n interactions untimed
   (Lockstep loads or compiles its kernel then), then the timed interactions; best of three seeds,
   interleaved. The ratio is default / ppsim. Without ppsim the baseline column is left out.
2. Start-up: `lockstep simulate phase_clock -p n=10000` (one short run) in a fresh process, with the
   kernel cache warm and with an empty cache (the C compiler builds the kernels), and `import ppsim`.
3. Exact chain: for growing n, the time to build the configuration chain from every configuration
   and solve the worst expected time to synchronize; the largest n done within 60 s is reported.

    python -m bench.population [--quick] [--only throughput|startup|exact]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from lockstep.checker.probabilistic import analysis, dtmc
from lockstep.checker.probabilistic.batched import Simulator, auto_method
from lockstep.specs.phase_clock import PhaseClock

SEEDS = (1, 2, 3)


def ppsim_rule(protocol: PhaseClock) -> dict:
    """The protocol's (deterministic) rule table in ppsim's dict form, without the null interactions."""
    rule = {}
    for k, outs in enumerate(protocol.outcomes):
        a, b = divmod(k, protocol.Q)
        ((a2, b2, _),) = outs
        if (a2, b2) != (a, b):
            rule[(protocol.states[a], protocol.states[b])] = (protocol.states[a2], protocol.states[b2])
    return rule


def lockstep_rate(protocol: PhaseClock, start: tuple, interactions: int, seed: int, method: str) -> float:
    """Interactions per second of `method` over `interactions`, after n untimed ones."""
    sim = Simulator(protocol, start, seed=seed, method=method)
    sim.run(protocol.n)  # loads the compiled kernel (compiles it on a first run): not part of the rate
    began = time.perf_counter()
    sim.run(interactions)
    took = time.perf_counter() - began
    assert sim.t == protocol.n + interactions
    return interactions / took


def ppsim_rate(protocol: PhaseClock, start: tuple, interactions: int, seed: int) -> float | None:
    """ppsim's interactions per second over `interactions`, after n untimed ones (its null interactions count)."""
    try:
        import ppsim
    except ImportError:
        return None
    init = protocol.view(start).as_dict()
    sim = ppsim.Simulation(init, ppsim_rule(protocol), transition_order="asymmetric", seed=seed)
    sim.run(1, history_interval=1, timer=False)
    before = sim.simulator.t
    units = interactions / protocol.n
    began = time.perf_counter()
    sim.run(units, history_interval=units, timer=False)
    took = time.perf_counter() - began
    assert sim.simulator.t - before == interactions
    return interactions / took


def throughput(quick: bool) -> None:
    print(f"Simulator throughput (interactions per second, best of {len(SEEDS)} seeds; ratio = default / ppsim; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'protocol':<26}{'n':>10}{'states':>7}{'default':>9}{'agents /s':>13}{'batched /s':>13}{'ppsim /s':>13}"
          f"{'ratio':>7}{'batched/ppsim':>15}")
    for n in (10**4, 10**5, 10**6):
        interactions = max(5 * n, 5 * 10**5) if quick else max(20 * n, 2 * 10**6)
        if n >= 10**6:
            interactions = (2 if quick else 10) * n
        for hours, m in ((8, 2), (4, 0)):
            p = PhaseClock(n=n, hours=hours, m=m)
            start = p.start_configurations("spread_out")[0]
            rates: dict[str, list[float]] = {"agents": [], "batched": [], "ppsim": []}
            for seed in SEEDS:
                for method in ("agents", "batched"):
                    rates[method].append(lockstep_rate(p, start, interactions, seed, method))
                base = ppsim_rate(p, start, interactions, seed)
                if base is not None:
                    rates["ppsim"].append(base)
            best = {k: max(v) if v else None for k, v in rates.items()}
            default = auto_method(n, p.Q)
            theirs = best["ppsim"]
            name = f"phase_clock hours={p.hours} m={p.m}"
            ratio = f"{best[default] / theirs:.2f}" if theirs else "-"
            batched_ratio = f"{best['batched'] / theirs:.2f}" if theirs else "-"
            print(f"{name:<26}{n:>10,}{p.Q:>7}{default:>9}{best['agents']:>13,.0f}{best['batched']:>13,.0f}"
                  f"{(f'{theirs:,.0f}' if theirs else 'n/a'):>13}{ratio:>7}{batched_ratio:>15}", flush=True)


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run of `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def startup(quick: bool) -> None:
    simulate = [sys.executable, "-m", "lockstep", "simulate", "phase_clock", "-p", "n=10000", "--start", "spread_out",
                "--runs", "1", "--time", "5", "--quiet"]
    env = dict(os.environ)
    runs = 1 if quick else 3
    _timed(simulate, env)  # the kernel cache as a user has it after the first simulation
    rows = [("lockstep simulate phase_clock -p n=10000, warm cache", [_timed(simulate, env) for _ in range(runs)])]
    cold = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as empty:
            cold.append(_timed(simulate, {**env, "LOCKSTEP_CACHE": empty}))
    rows.append(("the same, empty cache (the C compiler builds the kernels)", cold))
    try:
        import ppsim  # noqa: F401
        rows.append(("python -c 'import ppsim'", [_timed([sys.executable, "-c", "import ppsim"], env)
                                                  for _ in range(runs)]))
    except ImportError:
        pass
    print(f"\nStart-up in a fresh process (median of {runs}; load average {os.getloadavg()[0]:.1f})")
    print(f"{'command':<56}{'wall s':>8}{'CPU s':>8}")
    for name, times in rows:
        print(f"{name:<56}{statistics.median(w for w, _ in times):>8.2f}{statistics.median(c for _, c in times):>8.2f}")


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
    ap.add_argument("--only", choices=("throughput", "startup", "exact"), help="one part only")
    args = ap.parse_args()
    if args.only in (None, "throughput"):
        throughput(args.quick)
    if args.only in (None, "startup"):
        startup(args.quick)
    if args.only in (None, "exact"):
        exact_reach(60.0, args.quick)
        print(f"\n(n ln n at n = 10^6 is {1e6 * math.log(1e6):,.0f} interactions)")


if __name__ == "__main__":
    main()
