"""Random simulation throughput: walk steps per second in Python (the per-walk path) and in the spec's compiled
kernel (one and two worker processes), measured in turns (Python, C, C on 2 workers, again) so that the load
of a shared machine weighs on each alike, against the successors per second of the scalar and vector engines.
The median of the turns is printed, with the compiled walks' steps per CPU second (the rate on an idle core).
Both walkers take the same walks: the table's last column says whether their counts and violations agree.

    python -m bench.simulation                  # two-phase commit (actors, and TLA+'s), Bracha
    python -m bench.simulation --autobahn       # and Autobahn at its default bounds (walks without deadlock)
    python -m bench.simulation --turns 5 --runs 4000
"""

from __future__ import annotations

import argparse
import statistics
import time

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.simulation import simulate
from lockstep.checker.vector import check_vector

SPECS = [("two_phase_commit", {}), ("bracha", {}), ("two_phase", {})]
SEARCH_STATES = 200_000  # each exhaustive search stops here (the rate is what is measured)
TARGETS = {"two_phase_commit": 1_000_000, "bracha": 1_000_000, "autobahn": 100_000}  # walk steps/s (issue 38)


def _rate(res) -> float:
    return res.steps / max(res.seconds, 1e-9)


def _same(a, b) -> bool:
    """Whether two simulations of the same walks counted the same (their fingerprints differ, not their counts)."""
    keys = lambda r: (r.runs, r.steps, r.distinct, r.endings, r.violating_walk,  # noqa: E731
                      None if r.violation is None else (r.violation.name, len(r.violation.trace.steps)))
    return keys(a) == keys(b)


def measure(spec: str, params: dict, runs: int, slow_runs: int, depth: int, turns: int) -> tuple[float, float]:
    """Print the spec's row; (the compiled walks' best wall-clock rate of one and two workers, their rate per CPU
    second)."""
    model = load_model(spec, params)
    simulate(model, 1, depth, deadlock=False)  # builds (or loads) the kernel, outside the measurement
    py, c1, c2, cpu = [], [], [], []
    agree = True
    for _ in range(turns):
        slow = simulate(model, slow_runs, depth, deadlock=False, compiled=False)
        py.append(_rate(slow))
        began = time.process_time()
        fast = simulate(model, runs, depth, deadlock=False)
        cpu.append(fast.steps / max(time.process_time() - began, 1e-9))
        c1.append(_rate(fast))
        c2.append(_rate(simulate(model, runs, depth, deadlock=False, workers=2)))
        agree &= _same(slow, simulate(model, slow_runs, depth, deadlock=False))
    opts = Options(deadlock=False, max_states=SEARCH_STATES, por=False)
    scalar = check(load_model(spec, params), opts)
    vector = check_vector(load_model(spec, params), opts)
    s_rate = scalar.generated / max(scalar.seconds, 1e-9)
    v_rate = vector.generated / max(vector.seconds, 1e-9)
    med = statistics.median
    print(f"{spec:<24}{med(py):>12,.0f}{med(c1):>13,.0f}{med(c2):>13,.0f}{med(cpu):>13,.0f}{med(c2) / med(py):>9,.0f}x"
          f"{s_rate:>13,.0f}{v_rate:>13,.0f}  {'yes' if agree else 'NO'}", flush=True)
    return max(med(c1), med(c2)), med(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20_000, help="compiled walks per turn (default 20,000)")
    ap.add_argument("--python-runs", type=int, default=100, help="Python walks per turn (default 100)")
    ap.add_argument("--depth", type=int, default=100, help="steps per walk (default 100)")
    ap.add_argument("--turns", type=int, default=3, help="turns of measurements (default 3)")
    ap.add_argument("--autobahn", action="store_true", help="also Autobahn at its default bounds (slow to load)")
    args = ap.parse_args()
    print("walk steps/s (median of the turns); C/CPU: the compiled walks' steps per CPU second; speed-up: C on 2 workers "
          "over Python; search: successors generated per second")
    print(f"{'spec':<24}{'Python':>12}{'C':>13}{'C, 2 work.':>13}{'C/CPU':>13}{'speed-up':>10}{'scalar gen':>13}"
          f"{'vector gen':>13}  same walks")
    specs = SPECS + ([("autobahn", {})] if args.autobahn else [])
    targets = []
    for spec, params in specs:
        slow_runs = min(args.python_runs, 20) if spec == "autobahn" else args.python_runs
        wall, cpu = measure(spec, params, args.runs, slow_runs, args.depth, args.turns)
        if spec in TARGETS:
            targets.append(f"target: {spec}: compiled walks >= {TARGETS[spec]:,} steps/s (measured {wall:,.0f} "
                           f"wall-clock, {cpu:,.0f} per CPU second): {'met' if wall >= TARGETS[spec] else 'missed'}")
    print("\n".join(targets))


if __name__ == "__main__":
    main()
