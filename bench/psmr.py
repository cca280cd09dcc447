"""Throughput of the P-SMR key-value service against classic SMR, measured in the same invocation.

Classic SMR is the same service with one worker per replica (W = 1: every command in one group,
executed in the total order by one process); P-SMR runs W = 2, 4, 8 workers per replica. Each
configuration runs for --seconds with enough commands in flight to keep every worker busy, for
each fraction of dependent commands (putall, which every worker must synchronise on), and for
two kinds of service time: "io" (a blocking wait of --service-ms, like the paper's file-system
case: parallel on any number of cores) and "cpu" (a busy loop: on this 2-core machine at most
two workers can run at once). The speed-up column is throughput / classic SMR's at the same
fraction and service kind.

    python -m bench.psmr                       # the full table (about 10 minutes on a quiet machine)
    python -m bench.psmr --workers 1,2 --dependent 0 --kinds io --seconds 2
"""

from __future__ import annotations

import argparse
import os
import tempfile

from lockstep.executors.psmr.layout import ServiceConfig
from lockstep.executors.psmr.run import run


def measure(workers: int, dependent: float, kind: str, seconds: float, service_ms: float) -> float:
    cfg = ServiceConfig(replicas=2, workers=workers, clients=4, outstanding=max(2, 2 * workers), keys=256,
                        dependent=dependent, service_ms=service_ms, service=kind)
    with tempfile.TemporaryDirectory(prefix="bench-psmr-") as tmp:
        rep = run(cfg, seconds, tmp)
    return rep.throughput


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="1,2,4,8", help="W values (1 is classic SMR, always run)")
    ap.add_argument("--dependent", default="0,0.01,0.1,0.5", help="fractions of dependent commands")
    ap.add_argument("--kinds", default="io,cpu", help="service kinds: io, cpu")
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds per configuration")
    ap.add_argument("--service-ms", type=float, default=1.0, help="service time of a command")
    args = ap.parse_args()
    ws = sorted({1, *(int(x) for x in args.workers.split(","))})
    print(f"P-SMR vs classic SMR: 2 replicas, {args.service_ms:g} ms per command, {args.seconds:g} s per run, "
          f"{os.cpu_count()} cores")
    for kind in args.kinds.split(","):
        print(f"\n{kind} service time")
        print(f"{'dependent':>9} {'W':>3} {'commands/s':>11} {'speed-up':>9} {'ideal':>6}")
        for dep in (float(x) for x in args.dependent.split(",")):
            classic = None
            for w in ws:
                tput = measure(w, dep, kind, args.seconds, args.service_ms)
                classic = tput if w == 1 else classic
                ratio = tput / classic if classic else 0.0
                print(f"{dep:>9.0%} {w:>3} {tput:>11,.0f} {ratio:>9.2f} {w:>6}", flush=True)


if __name__ == "__main__":
    main()
