"""Autobahn on processes: throughput and latency without faults, and the hangover after a 1 s leader blip
and after a 1 s partial partition, for Autobahn and for the baseline without lanes, beside the paper's figures.

Four replicas (f = 1) and a client of 512-byte transactions run on this machine over TCP on 127.0.0.1,
every consensus and car message ed25519-signed. Throughput is executed transactions per second at the
client after the first second (warm-up); latency is from a transaction's send to its execution by the replica it was sent to. The
hangover is the time from a fault's end until the throughput (a 200 ms moving average) is back to
90 % of its level in the second before the fault. The baseline, as in the paper, is the same consensus without
Autobahn's lanes: each leader proposes a batch of its own transactions (a traditional leader-batching BFT,
`ReplicaConfig.lanes`); every run has the paper's coverage, 2f+1 lanes. Runs without faults are made for each k (slots
that run at once: 1, and the artifact's 4); the fault runs use the last k given.

    python -m bench.autobahn_run                       # rates 5000,20000; k 1 and 4; 6 s runs, faults at 2-3 s
    python -m bench.autobahn_run --rates 2000 --seconds 5 --ks 4
"""

from __future__ import annotations

import argparse
import os
import tempfile

from lockstep.executors.autobahn.run import parse_plan, run

PAPER = {"throughput": 234_000, "latency_ms": 280, "hangover_blip_s": 0.0, "hotstuff_hangover_s": 4.9,
         "partition_s": 1.7, "batchedhs_partition_s": 9.5}  # the paper's partial partition lasts 20 s
MODES = {"Autobahn": True, "baseline (no lanes)": False}  # ReplicaConfig.lanes
FAULTS = {
    "leader blip (replica 2 cut off)": {"groups": [[2], [0, 1, 3]]},
    "partial partition (0 and 3 cut)": {"groups": [[0, 1, 2], [1, 2, 3]]},
}


def hangover(timeline: list[int], bin_s: float, start: float, end: float) -> float | None:
    """Seconds from `end` until the 200 ms moving average is back to 90 % of the level in [start - 1, start)."""
    def rate(i: int, k: int) -> float:
        window = timeline[max(0, i - k + 1):i + 1]
        return sum(window) / (len(window) * bin_s) if window else 0.0
    b0, b1 = int(start / bin_s), int(end / bin_s)
    pre = rate(b0 - 1, int(1.0 / bin_s))
    k = max(1, int(0.2 / bin_s))
    for i in range(b1, len(timeline)):
        if rate(i, k) >= 0.9 * pre:
            return max(0.0, (i + 1) * bin_s - end)
    return None


def measure(rate: int, seconds: float, fault: dict | None, at: float, lanes: bool = True, k: int = 4) -> dict:
    plan = parse_plan({"partitions": [{"start": at, "end": at + 1.0, **fault}]} if fault else {}, 4)
    with tempfile.TemporaryDirectory(prefix="bench-autobahn-") as tmp:
        rep = run(seconds, tmp, plan, rate=rate, lanes=lanes, k=k)
    c = rep.client
    tl, b = c.get("timeline", []), c.get("bin", 0.05)
    steady = sum(tl[int(1.0 / b):int(seconds / b)]) / (seconds - 1.0)  # after the first second's warm-up
    out = {"tput": steady, "p50": c.get("p50_ms", 0.0), "p99": c.get("p99_ms", 0.0), "hang": None}
    if fault:
        out["hang"] = hangover(c.get("timeline", []), c.get("bin", 0.05), at, at + 1.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="5000,20000", help="client rates to try, tx/s (comma-separated)")
    ap.add_argument("--seconds", type=float, default=6.0, help="seconds per run")
    ap.add_argument("--fault-at", type=float, default=2.0, help="when each fault starts (it lasts 1 s)")
    ap.add_argument("--ks", default="1,4", help="slots running at once to try without faults (comma-separated, 1..16); "
                                                "the fault runs use the last")
    args = ap.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    ks = [int(k) for k in args.ks.split(",")]
    if not ks or not all(1 <= k <= 16 for k in ks):
        ap.error(f"--ks {args.ks}: each k between 1 and 16")
    print(f"Autobahn and the baseline without lanes, 4 replicas + 1 client on {os.cpu_count()} cores; "
          f"{args.seconds:g} s runs")
    print(f"{'mode':20} {'k':>2} {'run':34} {'offered':>9} {'tx/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'hangover s':>11}")
    best = None
    for mode, lanes in MODES.items():
        for k in ks:
            for rate in rates:
                r = measure(rate, args.seconds, None, args.fault_at, lanes, k)
                if lanes:
                    best = r if best is None or r["tput"] > best["tput"] else best
                print(f"{mode:20} {k:>2} {'no faults':34} {rate:>9,} {r['tput']:>9,.0f} {r['p50']:>8.0f} {r['p99']:>8.0f} "
                      f"{'':>11}")
    rate, k = rates[0], ks[-1]
    for name, fault in FAULTS.items():
        for mode, lanes in MODES.items():
            r = measure(rate, args.seconds, fault, args.fault_at, lanes, k)
            h = "not back" if r["hang"] is None else f"{r['hang']:.2f}"
            print(f"{mode:20} {k:>2} {name:34} {rate:>9,} {r['tput']:>9,.0f} {r['p50']:>8.0f} {r['p99']:>8.0f} {h:>11}")
    assert best is not None
    print()
    print("The paper (Rust, 16-core machines, WAN): "
          f"{PAPER['throughput']:,} tx/s, {PAPER['latency_ms']} ms; hangover ~0 s after a 1 s blip "
          f"(vanilla HotStuff {PAPER['hotstuff_hangover_s']} s), {PAPER['partition_s']} s after a 20 s partial "
          f"partition (BatchedHS {PAPER['batchedhs_partition_s']} s)")
    print(f"Ours / paper: throughput {best['tput'] / PAPER['throughput']:.3f}x, "
          f"p50 latency {best['p50'] / PAPER['latency_ms']:.2f}x")


if __name__ == "__main__":
    main()
