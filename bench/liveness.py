"""Liveness against safety and against SPIN: the same property on the same model, in turn.

    python -m bench.liveness                        # every row, once
    python -m bench.liveness --repeat 3             # medians of 3 rounds
    python -m bench.liveness --rows lock_weak:17 two_phase:8
    python -m bench.liveness --repeat 3 --rows two_phase:9   # the largest row: 10.3 M states, without SPIN

Each row is a spec, a size and a temporal property that holds under the spec's weak fairness:

- `lock_weak` (every action weakly fair) and `lock_used_infinitely_often` (□◇ locked): a graph of cycles;
- `two_phase` (every action weakly fair) and `every_rm_decides` (◇ every RM committed or aborted).

Per row, in rounds of one run per tool (so a slow spell of the shared machine falls on every tool alike):
Lockstep's safety check of the model (`lockstep check`, the vector engine: the baseline), its liveness check
(`lockstep check --property`, one and two workers), and SPIN on the Promela model written for the bench
(bench/promela/lock_live.pml, two_phase_live.pml: each action a process, so SPIN's per-process weak fairness
is the spec's), compiled with -DNOREDUCE and run as `pan -a -f` (acceptance cycles under weak fairness).
Every run is a fresh process; its time is the search time it reports (Lockstep: the whole check, graph and
fair cycles; SPIN: pan's elapsed time), compilation untimed for both (Lockstep's C kernels are built by an
untimed first run, as SPIN's pan.c is compiled untimed). The table gives distinct states (SPIN: its stored
states, the product with the property's automaton and fairness counters), seconds, peak RSS, and the
ratios the targets are about: liveness over safety (target: at most 3), SPIN over Lockstep (target: above 1
on rows of a million states or more; SPIN is left out beyond two million states, where one round would take
it an hour or more), one worker over two (target: 1.4 on the largest row), each a median of the rounds' own
ratios. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from .vs_peers import ROOT, lockstep_check, measure

PROMELA = os.path.join(ROOT, "bench", "promela")
# spec -> (parameter, Promela macro, Promela file, property)
MODELS = {"lock_weak": ("n", "N", "lock_live.pml", "lock_used_infinitely_often"),
          "two_phase": ("rm", "RM", "two_phase_live.pml", "every_rm_decides")}
ROWS = [("lock_weak", 14), ("lock_weak", 17), ("two_phase", 7), ("two_phase", 8), ("two_phase", 9)]
LARGE = 1_000_000  # rows of at least this many states: the liveness check faster than SPIN's
WITHIN = 3.0  # the liveness check takes at most this many times the safety check's time
TWO_WORKERS = 1.4  # on the largest row, two workers at least this many times one worker's speed
SPIN_MAX = 2_000_000  # SPIN runs on rows up to this many states: its `pan -a -f` takes 12 minutes on two_phase rm=8
TOOLS = ["safety", "liveness", "liveness-2w", "spin"]


def run_lockstep(tool: str, spec: str, n: int, cache: str) -> dict:
    """One `lockstep check` command, as a user runs it."""
    param, _macro, _pml, prop = MODELS[spec]
    cmd = [sys.executable, "-m", "lockstep", "check", spec, "--param", f"{param}={n}", "--no-deadlock", "--quiet"]
    if tool != "safety":
        cmd += ["--property", prop]
    if tool == "liveness-2w":
        cmd += ["--workers", "2"]
    return lockstep_check(cmd, cache)[0]


def processes(spec: str, n: int) -> int:
    """The Promela model's processes, the never claim not counted (each needs room in pan's fairness counters)."""
    return n if spec == "lock_weak" else 3 + 5 * n


def compile_pan(spec: str, n: int, workdir: str) -> str:
    """Generate and compile pan for a row (untimed); the path of the executable."""
    _param, macro, pml, _prop = MODELS[spec]
    d = os.path.join(workdir, f"{spec}-{n}")
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(PROMELA, pml), d)
    subprocess.run(["spin", f"-D{macro}={n}", "-a", pml], cwd=d, check=True, capture_output=True)
    nfair = max(2, math.ceil((processes(spec, n) + 3) / 4))  # pan holds 4 * NFAIR - 2 processes, the claim one of them
    flags = ["-O2", "-DNOREDUCE", "-DMEMLIM=16384", f"-DNFAIR={nfair}"]
    subprocess.run(["gcc", *flags, "-o", "pan", "pan.c"], cwd=d, check=True, capture_output=True)
    return os.path.join(d, "pan")


def run_pan(pan: str, expected: int) -> dict:
    """pan -a -f with a hash table for the expected product and a depth bound above any path."""
    w = max(18, math.ceil(math.log2(expected * 4)))
    out, wall, rss = measure([pan, "-a", "-f", f"-m{max(100_000, 4 * expected)}", f"-w{w}"], cwd=os.path.dirname(pan))
    if "errors: 0" not in out:
        raise RuntimeError(f"{pan} reported errors (the property holds in the spec):\n{out[-3000:]}")
    stored = int(re.search(r"(\d+) states, stored", out).group(1))
    secs = float(re.search(r"pan: elapsed time ([\d.e+-]+) seconds", out).group(1))
    return {"distinct": stored, "seconds": secs, "wall": wall, "rss_mb": rss}


def rounds(spec: str, n: int, repeat: int, cache: str, work: str, have_spin: bool, expected: int) -> dict[str, list]:
    runs: dict[str, list] = {tool: [] for tool in TOOLS}
    pan = compile_pan(spec, n, work) if have_spin else None
    for _ in range(repeat):
        for tool in TOOLS:
            if tool == "spin":
                if pan is not None:
                    runs[tool].append(run_pan(pan, expected))
            else:
                runs[tool].append(run_lockstep(tool, spec, n, cache))
    return runs


def _target(what: str, met: bool, bound: str) -> None:
    print(f"target: {what} ({bound}): {'met' if met else 'missed'}")


def paired(a: list[dict], b: list[dict]) -> float | None:
    """The median over rounds of a's time over b's."""
    ratios = [x["seconds"] / y["seconds"] for x, y in zip(a, b) if y["seconds"] > 0]
    return statistics.median(ratios) if ratios else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1, help="rounds per row; medians are shown")
    ap.add_argument("--rows", nargs="*", metavar="SPEC:N", help="e.g. lock_weak:17 (default: all)")
    args = ap.parse_args()
    rows = [(r.split(":")[0], int(r.split(":")[1])) for r in args.rows] if args.rows else ROWS
    for spec, _n in rows:
        if spec not in MODELS:
            ap.error(f"no bench model {spec!r}: use one of {', '.join(MODELS)}")
    have_spin = shutil.which("spin") is not None and shutil.which("gcc") is not None
    print(f"load average at the start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; cores: {os.cpu_count()}")
    if not have_spin:
        print("spin or gcc is not installed (apt-get install spin gcc): SPIN's rows are left out")
    print(f"{'model':<16}{'property':<28}{'tool':<13}{'distinct':>12}{'search s':>10}{'wall s':>9}{'peak MB':>9}"
          f"{'ratio':>8}  (ratio: liveness ÷ safety; spin: SPIN ÷ liveness; liveness-2w: one worker ÷ two)")
    results: list[tuple[str, int, dict]] = []  # per row: its name, states and ratios
    with tempfile.TemporaryDirectory(prefix="lockstep-bench-") as work:
        cache = os.path.join(work, "cache")
        for spec, n in rows:
            param, _macro, _pml, prop = MODELS[spec]
            first = run_lockstep("liveness", spec, n, cache)  # builds the kernels (untimed)
            spin = have_spin and first["distinct"] <= SPIN_MAX
            if have_spin and not spin:
                print(f"{spec} {param}={n}: {first['distinct']:,} states, beyond the {SPIN_MAX:,} up to which SPIN runs")
            runs = rounds(spec, n, args.repeat, cache, work, spin, first["distinct"])
            ratio = {"safety": None, "liveness": paired(runs["liveness"], runs["safety"]),
                     "liveness-2w": paired(runs["liveness"], runs["liveness-2w"]),
                     "spin": paired(runs["spin"], runs["liveness"])}
            for tool in TOOLS:
                if not runs[tool]:
                    continue
                r = runs[tool]
                secs, wall = statistics.median(x["seconds"] for x in r), statistics.median(x["wall"] for x in r)
                rss = max(x["rss_mb"] for x in r)
                shown = f"{ratio[tool]:.2f}x" if ratio[tool] is not None else "-"
                print(f"{spec + ' ' + param + '=' + str(n):<16}{prop:<28}{tool:<13}{r[0]['distinct']:>12,}{secs:>10.2f}"
                      f"{wall:>9.2f}{rss:>9.0f}{shown:>8}", flush=True)
            results.append((f"{spec} {param}={n} {prop}", first["distinct"], ratio))
    largest = max(results, key=lambda r: r[1])[0] if results else None
    for row, distinct, ratio in results:  # one line per target, which `bench.report` gathers
        _target(f"{row}, liveness {ratio['liveness']:.2f}x safety's time", ratio["liveness"] <= WITHIN, f"<= {WITHIN:g}x")
        if ratio["spin"] is not None and distinct >= LARGE:
            _target(f"{row}, SPIN's pan -a -f takes {ratio['spin']:.2f}x liveness's time", ratio["spin"] > 1, "> 1x")
        if row == largest and ratio["liveness-2w"] is not None:
            _target(f"{row} (the largest row), two workers {ratio['liveness-2w']:.2f}x one worker's speed",
                    ratio["liveness-2w"] >= TWO_WORKERS, f">= {TWO_WORKERS:g}x")
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
