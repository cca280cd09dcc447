"""Distance-2 colouring on real processes: start-up, rounds, memory and validation, by start method.

    python -m bench.rounds_run [--nodes 60] [--seed 1]

Runs `d2_coloring` on a random labelled tree with one OS process per node twice: started by
`spawn` (the baseline: every process imports Lockstep itself) and by a preloaded `forkserver`
(the default of `lockstep run` for rounds specs). Prints one row per method: seconds to start
and connect every process, rounds and their seconds, the mean proportional set size per node
process after round 1, and seconds to validate the trace, with ratios against spawn.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from lockstep.checker.validation.rounds import validate_rounds
from lockstep.executors.rounds.run import run
from lockstep.specs.lang.rounds.trees import parse_tree, tree_params


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    tree = tree_params(parse_tree(f"random:{args.nodes}", args.seed))
    rows = []
    for method in ("spawn", "forkserver"):
        with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
            rep = run("d2_coloring", tree, trace=f.name, seed=args.seed, start_method=method, measure_memory=True)
            t0 = time.monotonic()
            res = validate_rounds(rep.merged)  # type: ignore[arg-type]
            took = time.monotonic() - t0
        assert rep.finished and res.incomplete is None and res.violation is None
        pss = sum(rep.memory_kib.values()) / max(len(rep.memory_kib), 1) / 1024
        rows.append((method, rep.start_seconds, rep.rounds, rep.seconds, pss, took))
    base = rows[0]
    print(f"d2_coloring on random:{args.nodes} (seed {args.seed}), one process per node")
    print(f"{'start method':>12} {'start s':>8} {'x spawn':>8} {'rounds':>7} {'rounds s':>9} {'MiB/node':>9} "
          f"{'x spawn':>8} {'validate s':>10}")
    for method, start, rounds, secs, pss, took in rows:
        print(f"{method:>12} {start:>8.2f} {start / base[1]:>8.2f} {rounds:>7} {secs:>9.2f} {pss:>9.1f} "
              f"{pss / base[4] if base[4] else 0:>8.2f} {took:>10.2f}")


if __name__ == "__main__":
    main()
