"""Explicit-state benchmark: Lockstep (1 and 2 workers) against a hand-written tuple BFS and the
Python checkers minicheck and musil, on the filter lock and TwoPhase.

    python bench/explicit.py                 # all models, 3 repetitions, median wall time
    python bench/explicit.py --quick         # smaller models, 1 repetition
    python bench/explicit.py --peers-python /path/to/python3.12   # where minicheck/musil are installed

Every measurement runs in a fresh process; the table shows distinct and generated states,
median search seconds, distinct states per second, the peak RSS of the measured process (for
2 workers: the coordinating process, which holds the first levels), and the ratio to the
hand-written BFS measured in the same run. The machine's own parallel ceiling (two independent
one-worker runs at the same time) is printed too, since it bounds what 2 workers can gain.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = [("filter_lock", "n", 4), ("filter_lock", "n", 5), ("two_phase", "rm", 5), ("two_phase", "rm", 6),
          ("two_phase", "rm", 7)]
QUICK = [("filter_lock", "n", 4), ("two_phase", "rm", 5), ("two_phase", "rm", 6)]


def run_one(tool: str, model: str, n: int) -> dict:
    """Inside the measuring child: run one tool once, return its counts and seconds."""
    sys.path.insert(0, ROOT)
    if tool == "handwritten":
        from bench import handwritten

        t0 = time.perf_counter()
        distinct, generated, _depth = getattr(handwritten, model)(n)
        return {"distinct": distinct, "generated": generated, "seconds": time.perf_counter() - t0}
    from lockstep.checker.explicit import Options, check
    from lockstep.checker.loader import load_model

    param = {"filter_lock": "n", "two_phase": "rm"}[model]
    m = load_model(model, {param: n})
    workers = 2 if tool == "lockstep-2" else 1
    t0 = time.perf_counter()
    res = check(m, Options(workers=workers))
    secs = time.perf_counter() - t0
    assert res.verdict == "holds", res.verdict
    return {"distinct": res.distinct, "generated": res.generated, "seconds": secs,
            "bytes_per_state": (res.visited_bytes or 0) / max(res.distinct, 1), "workers_used": res.workers}


def measure(cmd: list[str]) -> dict:
    """Run `cmd` (which prints one JSON line) in a child; add its peak RSS in MB."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    _pid, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read()
    err = proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{err}")
    data = json.loads(out.strip().splitlines()[-1])
    data["rss_mb"] = usage.ru_maxrss / 1024
    return data


def command(tool: str, model: str, n: int, peers_python: str | None) -> list[str] | None:
    if tool in ("handwritten", "lockstep-1", "lockstep-2"):
        return [sys.executable, os.path.abspath(__file__), "--one", tool, model, str(n)]
    python = peers_python or sys.executable
    probe = subprocess.run([python, "-c", f"import {tool}"], capture_output=True)
    if probe.returncode != 0:
        return None
    return [python, os.path.join(ROOT, "bench", "peers", "run_peer.py"), tool, model, str(n)]


def parallel_ceiling(model: str, n: int) -> float:
    """Search time of each of two simultaneous one-worker runs over that of one run alone (1.0: no slowdown)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--one", "lockstep-1", model, str(n)]
    alone = measure(cmd)["seconds"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(2)]
    together = [json.loads(p.communicate()[0].strip().splitlines()[-1])["seconds"] for p in procs]
    return statistics.mean(together) / alone


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--peers-python", help="a Python with minicheck and musil installed (musil needs >= 3.12)")
    ap.add_argument("--one", nargs=3, metavar=("TOOL", "MODEL", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        tool, model, n = args.one
        print(json.dumps(run_one(tool, model, int(n))))
        return
    models = QUICK if args.quick else MODELS
    repeat = args.repeat or (1 if args.quick else 3)
    tools = ["handwritten", "lockstep-1", "lockstep-2", "minicheck", "musil"]
    print(f"{'model':<16}{'tool':<13}{'distinct':>10}{'generated':>12}{'wall s':>8}{'states/s':>11}"
          f"{'peak MB':>9}{'vs hand':>9}")
    largest = None
    for model, pname, n in models:
        base = None
        for tool in tools:
            cmd = command(tool, model, n, args.peers_python)
            if cmd is None:
                print(f"{model + ' ' + pname + '=' + str(n):<16}{tool:<13}  (not installed; see --peers-python)")
                continue
            runs = [measure(cmd) for _ in range(repeat)]
            secs = statistics.median(r["seconds"] for r in runs)
            r = runs[0]
            if tool == "handwritten":
                base = secs
            ratio = f"{secs / base:.2f}x" if base else "-"
            gen = f"{r['generated']:,}" if r.get("generated") else "-"
            print(f"{model + ' ' + pname + '=' + str(n):<16}{tool:<13}{r['distinct']:>10,}{gen:>12}{secs:>8.2f}"
                  f"{r['distinct'] / secs:>11,.0f}{max(x['rss_mb'] for x in runs):>9.0f}{ratio:>9}")
            if tool == "lockstep-1":
                largest = (model, n, r["bytes_per_state"])
    if largest:
        model, n, bps = largest
        print(f"\nvisited set at {model} {n}: {bps:.0f} bytes per distinct state (dict of 64-bit fingerprint -> parent)")
        slow = parallel_ceiling(model, n)
        print(f"machine parallel ceiling: two independent 1-worker runs of {model} {n} at once each take {slow:.2f}x "
              f"as long as one alone, so 2 workers can gain at most {2 / slow:.2f}x")
    if shutil.which("nproc"):
        print(f"cores: {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()
