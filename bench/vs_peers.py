"""Lockstep's vector engine (one and two workers) against SPIN and the Python checkers minicheck and musil.

    python -m bench.vs_peers                      # every model, once
    python -m bench.vs_peers --repeat 3           # medians of 3 rounds
    python -m bench.vs_peers --models two_phase:9 filter_lock:6
    python -m bench.vs_peers --peers-python /path/to/python3.12   # where minicheck and musil are installed
    python -m bench.vs_peers --tools vector vector-2w spin scalar spin-por

Models: TwoPhase (RM = 7, 8, 9), the filter lock (N = 5, 6) and the phase clock of 8 named agents
(every ordered pair interacting). SPIN runs the Promela models in bench/promela/ (one process, one
d_step per action, so its states are the spec's states), compiled with -DNOREDUCE (and, for
`spin-por`, with partial-order reduction, which finds nothing to reduce in one process). Both check
deadlocks. Lockstep checks every invariant the spec declares; the Promela models assert the TLA+ spec's
own: for TwoPhase, TPConsistent alone where the Python spec has it and six invariants that strengthen
it (`lockstep check two_phase --param rm=8 --invariant consistent` searches about 7 % faster).

Every run is a fresh process. For Lockstep, the run is the command a user types, `lockstep check
MODEL --param ...`: *wall* is that process's whole life (interpreter start-up, imports, building
the spec, the search; Python's bytecode cache on, as for an installed package), *search* is the
time the command reports for the search. Its C kernels are built once per machine and spec, like
SPIN's `pan` (whose compilation is not timed either): an untimed first run in a fresh cache builds
them, and its wall time is shown as "first run". For SPIN, *search* is pan's own elapsed time and
*wall* the pan process's life; *CPU* is a process's user and system time (what load stretches least). The
table shows distinct states, search, wall and CPU seconds, distinct
states per second of search, peak RSS, and SPIN's search time over each tool's ("SPIN ÷"),
measured in the same run; the targets are printed below it with the load average, since the
machine may be shared. With `--repeat`, the runs of a model go in rounds of one run per tool, so a slow
spell of the machine falls on every tool alike; the table shows medians, and the two-worker line gives
each round's one-worker time over its two-worker time as well.
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
MODELS = [("two_phase", 7), ("two_phase", 8), ("two_phase", 9), ("filter_lock", 5), ("filter_lock", 6),
          ("agent_clock", 8)]
TOOLS = ["vector", "vector-2w", "spin", "minicheck", "musil"]
EXTRA_TOOLS = ["scalar", "spin-por"]
LARGE = 1_000_000  # models with at least this many states must be searched SEARCH_TARGET times as fast as SPIN does
SEARCH_TARGET = 8.0
SPLIT = 5_000_000  # models with at least this many states: two workers at least TWO_WORKERS times one worker's speed
TWO_WORKERS = 1.6
WARM = """
import sys
from lockstep.checker.loader import load_model
from lockstep.checker.vector.kernels import Native
from lockstep.checker.vector.layout import Layout
model = load_model(sys.argv[1], {sys.argv[2]: int(sys.argv[3])})
Native(model.prog, Layout(model.prog), True, mode="always")
"""
CPU: list[float] = []  # CPU seconds (user and system) of each process `measure` ran, in order
_DONE = re.compile(r"([\d,]+) distinct states, ([\d,]+) generated, depth (\d+).*?, ([\d.]+) s \(")


def measure(cmd: list[str], cwd: str = ROOT, env: dict | None = None) -> tuple[str, float, float]:
    """Run `cmd`: its standard output, wall seconds and peak RSS in MB (and its CPU seconds in `CPU[-1]`)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    CPU.append(usage.ru_utime + usage.ru_stime)
    out, err = proc.stdout.read(), proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out[-2000:]}\n{err[-2000:]}")
    return out, wall, usage.ru_maxrss / 1024


def user_env(cache: str) -> dict:
    """The environment of a user's `lockstep` command: its kernel cache, and Python writing and reusing
    bytecode as an installed package does (pip compiles it at install), whatever this shell says."""
    env = {**os.environ, "LOCKSTEP_CACHE": cache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def lockstep_check(cmd: list[str], cache: str) -> tuple[dict, str]:
    """Run a `lockstep check` command that finds no violation, as a user runs it: its distinct states, search and
    wall seconds, peak RSS and CPU seconds, and its output."""
    out, wall, rss = measure(cmd, env=user_env(cache))
    m = _DONE.search(out)
    if m is None or "No violation" not in out:
        raise RuntimeError(f"unexpected output of {' '.join(cmd)}:\n{out}")
    return {"distinct": int(m.group(1).replace(",", "")), "seconds": float(m.group(4)), "wall": wall, "rss_mb": rss,
            "cpu": CPU[-1]}, out


def run_lockstep(tool: str, model: str, n: int, cache: str) -> dict:
    """One `lockstep check` command, as a user runs it."""
    cmd = [sys.executable, "-m", "lockstep", "check", model, "--param", f"{PARAM[model][0]}={n}", "--quiet"]
    if tool == "vector-2w":
        cmd += ["--workers", "2"]
    if tool == "scalar":
        cmd += ["--engine", "scalar"]
    res, out = lockstep_check(cmd, cache)
    return {**res, "notes": [line.strip() for line in out.splitlines() if "numpy passes" in line]}


def compile_spin(model: str, n: int, reduce: bool, workdir: str) -> str:
    """Generate and compile pan for one model (not timed); the path of the executable."""
    d = os.path.join(workdir, f"{model}-{n}-{'por' if reduce else 'noreduce'}")
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(PROMELA, f"{model}.pml"), d)
    subprocess.run(["spin", f"-D{PARAM[model][1]}={n}", "-a", f"{model}.pml"], cwd=d, check=True, capture_output=True)
    flags = ["-O2", "-DSAFETY", "-DMEMLIM=16384"] + ([] if reduce else ["-DNOREDUCE"])
    subprocess.run(["gcc", *flags, "-o", "pan", "pan.c"], cwd=d, check=True, capture_output=True)
    return os.path.join(d, "pan")


def run_spin(pan: str, expected: int) -> dict:
    """pan with a hash table of twice the expected states and a depth bound above any path."""
    w = max(18, math.ceil(math.log2(expected * 2)))
    out, wall, rss = measure([pan, f"-m{max(10_000, 2 * expected)}", f"-w{w}"], cwd=os.path.dirname(pan))
    stored = int(re.search(r"(\d+) states, stored", out).group(1))
    secs = float(re.search(r"pan: elapsed time ([\d.e+-]+) seconds", out).group(1))
    if "errors: 0" not in out:
        raise RuntimeError(f"{pan} reported errors:\n{out}")
    return {"distinct": stored, "seconds": secs, "wall": wall, "rss_mb": rss, "cpu": CPU[-1]}


def run_peer(tool: str, model: str, n: int, python: str) -> dict | None:
    if subprocess.run([python, "-c", f"import {tool}"], capture_output=True).returncode != 0:
        return None
    out, wall, rss = measure([python, os.path.join(ROOT, "bench", "peers", "run_peer.py"), tool, model, str(n)])
    data = json.loads(out.strip().splitlines()[-1])
    return {**data, "wall": wall, "rss_mb": rss}


def run_rounds(tools: list[str], model: str, n: int, args: argparse.Namespace, cache: str, work: str,
               expected: int, have_spin: bool) -> dict[str, list[dict]]:
    """Each tool's runs on one model, in rounds of one run per tool (so that a slow spell of a shared machine
    falls on every tool alike, not on one tool's block of runs); a tool that cannot run gets none."""
    runs: dict[str, list[dict]] = {tool: [] for tool in tools}
    pans: dict[str, str] = {}
    skip: set[str] = set()
    for _ in range(args.repeat):
        for tool in tools:
            if tool in skip:
                continue
            if tool in ("vector", "vector-2w", "scalar"):
                r = run_lockstep(tool, model, n, cache)
            elif tool in ("spin", "spin-por"):
                if have_spin and tool not in pans:
                    pans[tool] = compile_spin(model, n, tool == "spin-por", work)
                r = run_spin(pans[tool], expected) if have_spin else None
            else:
                r = run_peer(tool, model, n, args.peers_python or sys.executable)
            if r is None:
                skip.add(tool)
                continue
            runs[tool].append(r)
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool and model; the median is shown")
    ap.add_argument("--models", nargs="*", metavar="MODEL:N", help="e.g. two_phase:7 (default: all)")
    ap.add_argument("--tools", nargs="*", choices=TOOLS + EXTRA_TOOLS, help=f"default: {' '.join(TOOLS)}")
    ap.add_argument("--peers-python", help="a Python with minicheck and musil installed (musil needs >= 3.12)")
    args = ap.parse_args()
    models = [(m.split(":")[0], int(m.split(":")[1])) for m in args.models] if args.models else MODELS
    tools = args.tools or TOOLS
    if "vector" not in tools:
        tools = ["vector", *tools]  # its count sizes SPIN's table
    have_spin = shutil.which("spin") is not None and shutil.which("gcc") is not None
    print(f"load average at the start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; cores: {os.cpu_count()}")
    results: dict[tuple[str, int], dict[str, dict]] = {}
    with tempfile.TemporaryDirectory(prefix="lockstep-bench-") as work:
        cache = os.path.join(work, "cache")
        print(f"{'model':<22}{'tool':<11}{'distinct':>12}{'search s':>10}{'wall s':>9}{'CPU s':>8}{'states/s':>12}"
              f"{'peak MB':>9}{'SPIN ÷':>9}  first run")
        for model, n in models:
            label = f"{model} {PARAM[model][0]}={n}"
            rows: dict[str, dict] = {}
            first = run_lockstep("vector", model, n, cache)  # starts building the kernels (untimed)
            warm = [sys.executable, "-c", WARM, model, PARAM[model][0], str(n)]
            subprocess.run(warm, check=True, cwd=ROOT, env=user_env(cache))
            expected = first["distinct"]
            runs = run_rounds(tools, model, n, args, cache, work, expected, have_spin)
            spin = statistics.median(x["seconds"] for x in runs["spin"]) if runs.get("spin") else None
            for tool in tools:
                if not runs[tool]:
                    why = "spin or gcc not installed" if tool.startswith("spin") else "not installed; see --peers-python"
                    print(f"{label:<22}{tool:<11}  ({why})")
                    continue
                r = dict(runs[tool][0])
                r["seconds"] = statistics.median(x["seconds"] for x in runs[tool])
                r["wall"] = statistics.median(x["wall"] for x in runs[tool])
                r["cpu"] = statistics.median(x.get("cpu", math.nan) for x in runs[tool])
                r["rss_mb"] = max(x["rss_mb"] for x in runs[tool])
                if tool == "vector-2w":  # each round's one-worker time over its two-worker time
                    r["paired"] = [a["seconds"] / b["seconds"] for a, b in zip(runs["vector"], runs[tool])
                                   if b["seconds"] > 0]
                rows[tool] = r
                ratio = f"{spin / r['seconds']:.2f}x" if spin and r["seconds"] else "-"
                same = "" if r["distinct"] == expected else "  (different count!)"
                rate = f"{r['distinct'] / r['seconds']:>12,.0f}" if r["seconds"] > 0 else f"{'-':>12}"
                cold = f"  {first['wall']:.2f} s" if tool == "vector" else ""
                print(f"{label:<22}{tool:<11}{r['distinct']:>12,}{r['seconds']:>10.2f}{r['wall']:>9.2f}{r['cpu']:>8.2f}{rate}"
                      f"{r['rss_mb']:>9.0f}{ratio:>9}{cold}{same}", flush=True)
                for note in r.get("notes", []):
                    print(f"{'':<33}{note}")
            results[(model, n)] = rows
    print()
    targets(results)
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def targets(results: dict) -> None:
    """The issue's targets, met or missed, from this run's numbers: one line each, `target: WHAT: met|missed`."""
    for (model, n), rows in results.items():
        spin, vec = rows.get("spin"), rows.get("vector")
        if not vec:
            continue
        label = f"{model} {PARAM[model][0]}={n}"
        if spin and vec["distinct"] >= LARGE:
            for tool in ("vector", "vector-2w"):
                if tool in rows:
                    x = spin["seconds"] / rows[tool]["seconds"]
                    _target(f"{label}, {tool} search {rows[tool]['seconds']:.2f} s, SPIN {spin['seconds']:.2f} s: "
                            f"{x:.2f}x SPIN's speed (>= {SEARCH_TARGET:g}x)", x >= SEARCH_TARGET)
        if spin:
            _target(f"{label}, whole-process wall {vec['wall']:.2f} s, SPIN's pan {spin['wall']:.2f} s (CPU {vec['cpu']:.2f} "
                    f"and {spin['cpu']:.2f} s; wall at most SPIN's)", vec["wall"] <= spin["wall"])
        if "vector-2w" in rows and vec["distinct"] >= LARGE:
            paired = sorted(rows["vector-2w"]["paired"])
            x = statistics.median(paired) if paired else vec["seconds"] / rows["vector-2w"]["seconds"]
            goal = TWO_WORKERS if vec["distinct"] >= SPLIT else 1.0
            spread = f", rounds {paired[0]:.2f}-{paired[-1]:.2f}x" if len(paired) > 1 else ""
            _target(f"{label}, two workers {x:.2f}x one worker's search speed (median of paired rounds{spread}; "
                    f">= {goal:g}x)", x >= goal)
        for peer in ("minicheck", "musil"):
            if peer in rows:
                print(f"{label}: {peer} takes {rows[peer]['seconds'] / vec['seconds']:.1f}x the vector engine's time")


def _target(what: str, met: bool) -> None:
    print(f"target: {what}: {'met' if met else 'missed'}")


if __name__ == "__main__":
    main()
