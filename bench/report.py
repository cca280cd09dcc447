"""One page of performance truth: every benchmark's quick setting run in one go, and its tables written, with the
machine, the load average, the date and the exact commands, to docs/performance.md.

    python -m bench.report                              # every section, into docs/performance.md
    python -m bench.report --only vs_peers,datalog      # some sections
    python -m bench.report --out /tmp/perf.md --list    # where to write; the sections and their commands

Each benchmark measures its baselines in the same run, interleaved with lockstep's (round by round, or pair by
pair), so a slow spell of a shared machine falls on both sides. A benchmark that states a target prints it as
`target: WHAT: met|missed`; the page gathers those lines into one table at the top (a section run several times
gives each run's line). Timings carry the machine's load, which the page gives before and after every section:
a target shown missed under load is a measurement of that load as much as of the code.
"""

from __future__ import annotations

import argparse
import datetime
import html
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 1500  # seconds a run of a section may take (--timeout)
_TARGET = re.compile(r"^target: (.*): (met|missed)$", re.MULTILINE)


@dataclass(frozen=True)
class Section:
    """One benchmark at its quick setting: `runs` invocations of `args` (after `python -m`)."""

    name: str
    title: str
    args: tuple[str, ...]
    runs: int = 1


SECTIONS = [
    Section("vs_peers", "Model checking: lockstep (one and two workers) against SPIN",
            ("bench.vs_peers", "--models", "filter_lock:5", "two_phase:7", "two_phase:8", "two_phase:9", "filter_lock:6",
             "--tools", "vector", "vector-2w", "spin", "--repeat", "2")),
    Section("two_workers", "Two workers against one on the phase clock of ten agents (9.8 M states)",
            ("bench.vs_peers", "--models", "agent_clock:10", "--tools", "vector", "vector-2w", "--repeat", "2")),
    Section("datalog", "Datalog at 10^6 edges against scipy (and networkx)",
            ("bench.datalog", "--skip-workers", "--rounds", "5")),
    Section("psmr", "P-SMR: W = 2 against classic SMR (W = 1), I/O-like commands",
            ("bench.psmr", "--workers", "1,2", "--dependent", "0", "--kinds", "io", "--seconds", "2")),
    Section("startup", "Start-up of lockstep check against the interpreter with numpy", ("bench.startup", "--runs", "9")),
    Section("explicit", "The scalar engine, one and two workers", ("bench.explicit", "--quick")),
    Section("liveness", "Temporal properties", ("bench.liveness", "--repeat", "2")),
    Section("simulation", "Random walks", ("bench.simulation", "--runs", "500")),
    Section("population", "Population protocols", ("bench.population", "--quick")),
    Section("smt", "Bounded model checking and induction", ("bench.smt", "--default-only")),
    Section("actor_reduction", "Partial-order and symmetry reduction on actor specs", ("bench.actor_reduction",)),
    Section("bracha_reduction", "Reductions on Bracha with an equivocating sender (n = 4, 12.6 M states)",
            ("bench.actor_reduction", "--spec", "bracha_equivocating_sender", "--modes", "none,por,both", "--rounds", "3",
             "--two-workers")),
]


def machine() -> str:
    """The CPU, cores, memory, OS and the versions that the timings depend on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    mem = ""
    try:
        mem = f", {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB memory"
    except (ValueError, OSError):
        pass
    return (f"{cpu}, {os.cpu_count()} cores{mem}; {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}, numpy {np.__version__}")


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run_section(sec: Section, timeout: float) -> tuple[list[str], list[tuple[str, bool]], float, str, str]:
    """(each run's output, the targets it printed, seconds, load average before, after)."""
    before, t0 = load(), time.perf_counter()
    outputs: list[str] = []
    for _ in range(sec.runs):
        try:
            proc = subprocess.run([sys.executable, "-m", *sec.args], cwd=ROOT, capture_output=True, text=True,
                                  timeout=timeout)
            text = proc.stdout + (f"\n(exit {proc.returncode})\n{proc.stderr[-3000:]}" if proc.returncode else "")
        except subprocess.TimeoutExpired:
            text = f"(stopped after {timeout:g} s)"
        outputs.append(text.strip())
        print(f"  {sec.name}: run done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    found = [(m.group(1), m.group(2) == "met") for out in outputs for m in _TARGET.finditer(out)]
    return outputs, found, time.perf_counter() - t0, before, load()


def page(results: list[tuple[Section, list[str], list[tuple[str, bool]], float, str, str]], started: str,
         start_load: str, pending: list[Section] = ()) -> str:
    """The Markdown page (`pending`: the sections chosen and not run yet, listed as such)."""
    lines = ["# Performance", "",
             f"Written by `python -m bench.report` ({started} UTC). Every number on this page is from that one run; "
             "each ratio is against a baseline timed in the same run, interleaved with lockstep's. The machine may "
             "be shared: the load average is given before and after each section, and timings carry it.", "",
             f"- machine: {machine()}",
             f"- load average (1, 5, 15 min) at the start: {start_load}; when this page was written: {load()}"]
    if pending:
        commands = ", ".join(f"`python -m {' '.join(s.args)}`" for s in pending)
        lines.append(f"- not run (the report stopped or is still running): {commands}")
    lines.append("")
    lines += ["## Targets", "", "| section | target, as measured | this run |", "|---|---|---|"]
    for sec, _, found, *_ in results:
        for what, met in found:
            lines.append(f"| {sec.name} | {what.replace('|', '/')} | {'met' if met else '**missed**'} |")
    if not any(found for _, _, found, *_ in results):
        lines.append("| | (no section printed a target) | |")
    for sec, outputs, _, seconds, before, after in results:
        cmd = f"python -m {' '.join(sec.args)}"
        lines += ["", f"## {sec.title}", "",
                  f"`{cmd}`" + (f", {sec.runs} times" if sec.runs > 1 else "") +
                  f" — {seconds:.0f} s; load average before {before}, after {after}", ""]
        for i, out in enumerate(outputs):
            if len(outputs) > 1:
                lines += [f"Run {i + 1}:", ""]
            lines += [f"<pre>{html.escape(out)}</pre>", ""]  # raw text: no line of it reads as a command to test
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help=f"comma-separated sections (default: all: {','.join(s.name for s in SECTIONS)})")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"), help="the page to write")
    ap.add_argument("--list", action="store_true", help="print the sections and their commands, and stop")
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds a run of a section may take")
    args = ap.parse_args()
    chosen = SECTIONS
    if args.only:
        names = args.only.split(",")
        unknown = [n for n in names if n not in {s.name for s in SECTIONS}]
        if unknown:
            ap.error(f"no section {unknown[0]!r}; the sections: {', '.join(s.name for s in SECTIONS)}")
        chosen = [s for s in SECTIONS if s.name in names]
    if args.list:
        for s in chosen:
            print(f"{s.name:<16} python -m {' '.join(s.args)}" + (f"  ({s.runs} runs)" if s.runs > 1 else ""))
        return
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M")
    start_load = load()
    results = []
    for i, sec in enumerate(chosen):  # the page is written after every section: a stopped run keeps its measurements
        print(f"{sec.name}: python -m {' '.join(sec.args)}", file=sys.stderr, flush=True)
        results.append((sec, *run_section(sec, args.timeout)))
        write(args.out, page(results, started, start_load, chosen[i + 1:]))
    print(f"wrote {args.out}", file=sys.stderr)


def write(path: str, text: str) -> None:
    """Replace the page (a new file renamed over it)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
