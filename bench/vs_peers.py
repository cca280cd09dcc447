"""Lockstep's vector and scalar engines against SPIN and the Python checkers minicheck and musil.

    python bench/vs_peers.py                      # every model, once
    python bench/vs_peers.py --repeat 3           # medians of 3
    python bench/vs_peers.py --models two_phase:7 filter_lock:5
    python bench/vs_peers.py --peers-python /path/to/python3.12   # where minicheck and musil are installed

Models: the filter lock (N = 4, 5), TwoPhase (RM = 6, 7, 8) and the phase clock of 8 named
agents (every ordered pair interacting). SPIN runs the Promela models in bench/promela/ (one
process, one d_step per action, so its states are the spec's states), compiled with
-DNOREDUCE and again with partial-order reduction on; compilation is not timed, and the time is
pan's own elapsed search time. The single-process models give partial-order reduction nothing
to reduce, so both SPIN rows count the same states. Every run is a fresh process; the table
shows distinct states, search seconds, distinct states per second, the peak RSS of the process,
and each tool's time over the vector engine's, measured in the same run. The targets below the
table compare the vector engine with the scalar engine, the fastest Python peer and SPIN.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMELA = os.path.join(ROOT, "bench", "promela")
PARAM = {"filter_lock": ("n", "N"), "two_phase": ("rm", "RM"), "agent_clock": ("agents", "AGENTS")}
MODELS = [("filter_lock", 4), ("filter_lock", 5), ("two_phase", 6), ("two_phase", 7), ("two_phase", 8),
          ("agent_clock", 8)]
TOOLS = ["vector", "scalar", "spin", "spin-por", "minicheck", "musil"]


def run_lockstep(engine: str, model: str, n: int) -> dict:
    """Inside the measuring child: one Lockstep search."""
    sys.path.insert(0, ROOT)
    from lockstep.checker.explicit import Options, check
    from lockstep.checker.loader import load_model
    from lockstep.checker.vector import check_vector

    m = load_model(model, {PARAM[model][0]: n})
    t0 = time.perf_counter()
    res = check_vector(m, Options()) if engine == "vector" else check(m, Options())
    secs = time.perf_counter() - t0
    assert res.verdict == "holds", res.verdict
    return {"distinct": res.distinct, "generated": res.generated, "seconds": secs}


def measure(cmd: list[str], cwd: str = ROOT) -> tuple[str, float]:
    """Run `cmd`; its standard output and peak RSS in MB."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    _pid, status, usage = os.wait4(proc.pid, 0)
    out, err = proc.stdout.read(), proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out[-2000:]}\n{err[-2000:]}")
    return out, usage.ru_maxrss / 1024


def compile_spin(model: str, n: int, reduce: bool, workdir: str) -> str:
    """Generate and compile pan for one model (not timed); the path of the executable."""
    d = os.path.join(workdir, f"{model}-{n}-{'por' if reduce else 'noreduce'}")
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(PROMELA, f"{model}.pml"), d)
    subprocess.run(["spin", f"-D{PARAM[model][1]}={n}", "-a", f"{model}.pml"], cwd=d, check=True, capture_output=True)
    flags = ["-O2", "-DSAFETY"] + ([] if reduce else ["-DNOREDUCE"])
    subprocess.run(["gcc", *flags, "-o", "pan", "pan.c"], cwd=d, check=True, capture_output=True)
    return os.path.join(d, "pan")


def run_spin(pan: str, expected: int | None) -> dict:
    w = max(18, math.ceil(math.log2(max(expected or 1, 1) * 2)))
    depth = max(10_000, 2 * (expected or 0))
    out, rss = measure([pan, f"-m{depth}", f"-w{w}"], cwd=os.path.dirname(pan))
    stored = int(re.search(r"(\d+) states, stored", out).group(1))
    trans = int(re.search(r"(\d+) transitions \(= stored\+matched\)", out).group(1))
    secs = float(re.search(r"pan: elapsed time ([\d.e+-]+) seconds", out).group(1))
    if "errors: 0" not in out:
        raise RuntimeError(f"{pan} reported errors:\n{out}")
    return {"distinct": stored, "generated": trans, "seconds": secs, "rss_mb": rss}


def one_run(tool: str, model: str, n: int, peers_python: str | None, pans: dict, expected: int | None) -> dict | None:
    if tool in ("vector", "scalar"):
        out, rss = measure([sys.executable, os.path.abspath(__file__), "--one", tool, model, str(n)])
        data = json.loads(out.strip().splitlines()[-1])
        data["rss_mb"] = rss
        return data
    if tool in ("spin", "spin-por"):
        pan = pans.get((model, n, tool))
        return run_spin(pan, expected) if pan else None
    python = peers_python or sys.executable
    if subprocess.run([python, "-c", f"import {tool}"], capture_output=True).returncode != 0:
        return None
    out, rss = measure([python, os.path.join(ROOT, "bench", "peers", "run_peer.py"), tool, model, str(n)])
    data = json.loads(out.strip().splitlines()[-1])
    data["rss_mb"] = rss
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool and model; the median is shown")
    ap.add_argument("--models", nargs="*", metavar="MODEL:N", help="e.g. two_phase:7 (default: all)")
    ap.add_argument("--tools", nargs="*", choices=TOOLS, help="default: all")
    ap.add_argument("--peers-python", help="a Python with minicheck and musil installed (musil needs >= 3.12)")
    ap.add_argument("--one", nargs=3, metavar=("TOOL", "MODEL", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        tool, model, n = args.one
        print(json.dumps(run_lockstep(tool, model, int(n))))
        return
    models = [(m.split(":")[0], int(m.split(":")[1])) for m in args.models] if args.models else MODELS
    tools = args.tools or TOOLS
    have_spin = shutil.which("spin") is not None and shutil.which("gcc") is not None
    results: dict[tuple[str, int], dict[str, dict]] = {}
    with tempfile.TemporaryDirectory(prefix="lockstep-bench-") as work:
        pans = {}
        if have_spin:
            for model, n in models:
                for tool in ("spin", "spin-por"):
                    if tool in tools:
                        pans[(model, n, tool)] = compile_spin(model, n, tool == "spin-por", work)
        print(f"{'model':<22}{'tool':<11}{'distinct':>11}{'wall s':>9}{'states/s':>12}{'peak MB':>9}{'÷ vector':>10}")
        for model, n in models:
            label = f"{model} {PARAM[model][0]}={n}"
            rows: dict[str, dict] = {}
            expected = None
            for tool in tools:
                runs = []
                for _ in range(args.repeat):
                    r = one_run(tool, model, n, args.peers_python, pans, expected)
                    if r is None:
                        break
                    runs.append(r)
                if not runs:
                    why = "spin or gcc not installed" if tool.startswith("spin") else "not installed; see --peers-python"
                    print(f"{label:<22}{tool:<11}  ({why})")
                    continue
                r = dict(runs[0])
                r["seconds"] = statistics.median(x["seconds"] for x in runs)
                r["rss_mb"] = max(x["rss_mb"] for x in runs)
                rows[tool] = r
                expected = expected or r["distinct"]
                base = rows.get("vector", {}).get("seconds")
                ratio = f"{r['seconds'] / base:.2f}x" if base else "-"
                same = "" if r["distinct"] == expected else "  (different count!)"
                rate = f"{r['distinct'] / r['seconds']:>12,.0f}" if r["seconds"] > 0 else f"{'-':>12}"
                print(f"{label:<22}{tool:<11}{r['distinct']:>11,}{r['seconds']:>9.2f}{rate}"
                      f"{r['rss_mb']:>9.0f}{ratio:>10}{same}", flush=True)
            results[(model, n)] = rows
    print()
    targets(results)
    print(f"cores: {os.cpu_count()}; load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def targets(results: dict) -> None:
    """The issue's targets, met or missed, from this run's numbers."""

    def secs(model: str, n: int, tool: str) -> float | None:
        return results.get((model, n), {}).get(tool, {}).get("seconds")

    v7, s7 = secs("two_phase", 7, "vector"), secs("two_phase", 7, "scalar")
    if v7 and s7:
        print(f"TwoPhase RM=7: vector is {s7 / v7:.1f}x the scalar engine (target >= 10x): "
              f"{'met' if s7 / v7 >= 10 else 'missed'}")
    peers = [t for t in (secs("two_phase", 7, "minicheck"), secs("two_phase", 7, "musil")) if t]
    if v7 and peers:
        print(f"TwoPhase RM=7: vector is {min(peers) / v7:.1f}x the fastest Python peer (target >= 5x): "
              f"{'met' if min(peers) / v7 >= 5 else 'missed'}")
    for model, n in (("two_phase", 8), ("filter_lock", 5), ("agent_clock", 8)):
        v, s = secs(model, n, "vector"), secs(model, n, "spin")
        if v and s:
            print(f"{model} {PARAM[model][0]}={n}: vector {v:.2f} s vs SPIN -DNOREDUCE {s:.2f} s "
                  f"(target: at least as fast): {'met' if v <= s else 'missed'} ({s / v:.2f}x)")


if __name__ == "__main__":
    main()
