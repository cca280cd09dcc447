"""Start-up time of `lockstep check two_phase` against the interpreter alone and the interpreter with numpy.

Runs each command `--runs` times, interleaved (the machine is shared: the three see the same load), and
prints the median wall time and CPU time (user + system, of the child process) of each, and the difference
the target is about: `lockstep check two_phase` should take at most 0.35 s more than `python -c "import
numpy"`. On a loaded machine wall times stretch with the load; CPU time does not, so the verdict is given
for both. `--importtime` also prints the slowest imports of the check (`python -X importtime`).

    .venv/bin/python -m bench.startup [--runs 15] [--importtime]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

TARGET = 0.35  # seconds over `python -c "import numpy"`
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed: bytecode is cached

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
    "lockstep check two_phase": [sys.executable, "-m", "lockstep", "check", "two_phase", "--quiet"],
}


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def slowest_imports(count: int = 15) -> list[tuple[int, str]]:
    """(cumulative microseconds, module) of the slowest top-level imports of the check."""
    proc = subprocess.run([sys.executable, "-X", "importtime", *COMMANDS["lockstep check two_phase"][1:]],
                          capture_output=True, text=True, env=ENV)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (x.strip() for x in line.removeprefix("import time:").split("|"))
        if cumulative.isdigit() and len(name) - len(name.lstrip()) <= 2:
            rows.append((int(cumulative), name.strip()))
    return sorted(rows, reverse=True)[:count]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--importtime", action="store_true", help="also list the slowest imports")
    args = ap.parse_args()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
    for cmd in COMMANDS.values():
        timed(cmd)  # warm the file cache and write the bytecode caches
    for _ in range(args.runs):
        for name, cmd in COMMANDS.items():
            times[name].append(timed(cmd))
    wall = {name: statistics.median(w for w, _ in ts) for name, ts in times.items()}
    cpu = {name: statistics.median(c for _, c in ts) for name, ts in times.items()}
    base = "python -c 'import numpy'"
    print(f"median of {args.runs} interleaved runs (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'command':<28}{'wall s':>9}{'over numpy':>12}{'CPU s':>9}{'over numpy':>12}")
    for name in COMMANDS:
        print(f"{name:<28}{wall[name]:>9.3f}{wall[name] - wall[base]:>12.3f}{cpu[name]:>9.3f}{cpu[name] - cpu[base]:>12.3f}")
    for what, t in (("wall", wall), ("CPU", cpu)):
        over = t["lockstep check two_phase"] - t[base]
        print(f"target: {what}, lockstep check two_phase takes {over:.3f} s more than python with numpy (at most "
              f"{TARGET} s): " + ("met" if over <= TARGET else "missed"))
    if args.importtime:
        print("\nslowest imports of the check (python -X importtime, cumulative):")
        for us, name in slowest_imports():
            print(f"  {us / 1e6:>7.3f} s  {name}")


if __name__ == "__main__":
    main()
