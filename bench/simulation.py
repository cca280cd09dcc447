"""Random simulation throughput against exhaustive search: steps per second of `lockstep simulate`'s
walks and transitions generated per second by the scalar and vector engines, on the same spec in the
same run (the ratio column is simulation over the scalar engine). A walk step computes every successor of
its state (to check for failing steps and count coverage) and follows one, so a walk step costs about
as much as expanding a state; the search columns count each successor generated.

    python -m bench.simulation                 # two-phase commit (rm=4), Bracha (low echo quorum, honest)
    python -m bench.simulation --runs 5000
"""

from __future__ import annotations

import argparse

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.simulation import simulate
from lockstep.checker.vector import check_vector

SPECS = [("two_phase_commit", {"rm": 4}), ("bracha", {}), ("bracha_low_echo_quorum", {})]
SEARCH_STATES = 200_000  # each exhaustive search stops here (the rate is what is measured)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000, help="walks per spec (default 2000)")
    ap.add_argument("--depth", type=int, default=100, help="steps per walk (default 100)")
    args = ap.parse_args()
    print(f"{'spec':<26}{'walk steps/s':>14}{'distinct seen':>15}{'scalar gen/s':>14}{'vector gen/s':>14}"
          f"{'ratio':>8}  first violation")
    for spec, params in SPECS:
        model = load_model(spec, params)
        sim = simulate(model, args.runs, args.depth, seed=1, deadlock=False)
        walk_rate = sim.steps / max(sim.seconds, 1e-9)
        opts = Options(deadlock=False, max_states=SEARCH_STATES, por=False)
        scalar = check(load_model(spec, params), opts)
        vector = check_vector(load_model(spec, params), opts)
        s_rate = scalar.generated / max(scalar.seconds, 1e-9)
        v_rate = vector.generated / max(vector.seconds, 1e-9)
        found = (f"{sim.violation.name}, walk {sim.violating_walk + 1}" if sim.violation is not None else "none")
        print(f"{spec:<26}{walk_rate:>14,.0f}{sim.distinct:>15,}{s_rate:>14,.0f}{v_rate:>14,.0f}"
              f"{walk_rate / s_rate:>8.2f}  {found}", flush=True)


if __name__ == "__main__":
    main()
