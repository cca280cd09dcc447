"""PySyncObj, a Raft library no one here wrote, checked step by step against Lockstep's Raft spec.

    python -m bench.raft_conformance [--nodes 3,5] [--rounds 1] [--commands 3] [--no-faults] [--keep DIR]

For each cluster size: a PySyncObj cluster on 127.0.0.1 (one process per node, instrumented without changing
the library: examples/pysyncobj/node.py) runs client commands through `rounds` rounds of faults (the leader
crashed and restarted, the leader cut off by a partition and healed); each node's log in the event schema is
then validated against specs/raft.py through the mapping examples/pysyncobj/mapping.py, with the spec's
bounds taken from the logs. Prints each run's faults, the bounds, the verdict (with the explanation when the
logs are not a behaviour of the spec) and the events validated per second.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from examples.pysyncobj import scenario
from examples.pysyncobj.mapping import spec_params
from lockstep.checker.validation.conformance.run import report
from lockstep.trace import validate

MAPPING = os.path.join(os.path.dirname(__file__), "..", "examples", "pysyncobj", "mapping.py")


def one(n: int, directory: str, rounds: int, commands: int, faults: bool) -> int:
    """Run and validate one cluster of n nodes; the validation's exit code."""
    t0 = time.monotonic()
    c = scenario.run(directory, n, rounds=rounds, commands=commands, faults=faults)
    ran = time.monotonic() - t0
    print(f"\n{n} nodes: the run took {ran:.1f} s")
    for line in c.events:
        print(f"  {line}")
    params = spec_params(c.logs)
    print("  spec bounds from the logs: " + ", ".join(f"{k}={v}" for k, v in params.items()))
    t1 = time.monotonic()
    res = validate(c.logs, "raft", mapping=os.path.abspath(MAPPING), **params)
    total = time.monotonic() - t1
    for line in report(res, res.model):
        print(f"  {line}")
    print(f"  {res.events:,} events validated in {res.seconds:.2f} s of search ({res.rate:,.0f} events/s); "
          f"{total:.1f} s with building the spec")
    return res.exit_code


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default="3,5", help="cluster sizes, comma-separated (default 3,5)")
    p.add_argument("--rounds", type=int, default=1, help="rounds of faults per run (default 1)")
    p.add_argument("--commands", type=int, default=2, help="client commands per phase (default 2)")
    p.add_argument("--no-faults", action="store_true", help="no crashes or partitions")
    p.add_argument("--keep", metavar="DIR", help="keep the logs in DIR (default: a temporary directory)")
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.nodes.split(",")]
    worst = 0
    for n in sizes:
        if args.keep:
            d = os.path.join(args.keep, f"n{n}")
            os.makedirs(d, exist_ok=True)
            worst = max(worst, one(n, d, args.rounds, args.commands, not args.no_faults))
        else:
            with tempfile.TemporaryDirectory(prefix="raft-conformance-") as d:
                worst = max(worst, one(n, d, args.rounds, args.commands, not args.no_faults))
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
