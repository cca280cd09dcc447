"""Exhaustive checks of Autobahn, n = 4, f = 1: each configuration's bounds, verdict, states, depth and time,
and each seeded bug's time to its counterexample at its small bounds, on the scalar explicit engine (one core, no
reduction: Autobahn's handlers are too large for the partial-order reduction's static analysis, and it declares no
symmetric range). A configuration stops at --max-states and is then reported as inconclusive, with the
rate at which it was exploring. Then each seeded safety bug at the default bounds (two lanes, two views), caught by
the random walks of the `lockstep simulate` command in its docstring: the property, the counterexample's steps,
the walks to it and the command's time (building the spec and its kernel included).

    python -m bench.autobahn_check                   # both tables (tens of minutes on a loaded machine)
    python -m bench.autobahn_check --max-states 200000
    python -m bench.autobahn_check --seeded          # only the seeded bugs at the default bounds (about a minute)
    python -m bench.autobahn_check --compile         # the vector engine's compile time per configuration: its
                                                     # numpy program, and its fused C kernel (lines, parts, build)
    python -m bench.autobahn_check --growth 13       # the default bounds' breadth-first levels, on the vector
                                                     # engine's C path: states per level and growth per level
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model, resolve
from lockstep.checker.vector import VectorModel, VectorOptions, check_vector
from lockstep.checker.vector.kernels.cbuild import Background
from lockstep.checker.vector.kernels.fused import fuse

CONFIGS: list[tuple[str, dict[str, int]]] = [
    ("autobahn", {"lanes": 0, "views": 1}),
    ("autobahn", {"lanes": 0, "views": 2}),
    ("autobahn", {"lanes": 0, "views": 1, "slots": 2, "k": 1}),
    ("autobahn", {"lanes": 0, "views": 1, "slots": 2, "k": 2}),
    ("autobahn", {"lanes": 1, "views": 1, "fetch": 0}),
    ("autobahn_byzantine", {"lanes": 0, "views": 1}),  # the Byzantine replica leads view 1
    ("autobahn_byzantine", {"lanes": 0, "views": 1, "offset": 0}),  # it votes
    ("autobahn_byzantine", {"lanes": 1, "views": 1, "fetch": 0, "offset": 0}),  # its lane forks
    # the seeded bugs at the small bounds of the exhaustive command in their docstrings
    ("autobahn_quorum_2f", {"lanes": 0, "views": 1}),
    ("autobahn_double_vote", {"lanes": 0, "views": 1}),
    ("autobahn_weak_poa", {"lanes": 1, "views": 1}),
    ("autobahn_weak_fast_path", {"lanes": 0}),
    ("autobahn_no_override", {"lanes": 0}),
]
# the seeded safety bugs whose docstrings catch them at the default bounds, by random walks
SEEDED = ["autobahn_quorum_2f", "autobahn_double_vote", "autobahn_weak_poa", "autobahn_weak_fast_path",
          "autobahn_no_override"]

# the paper's shape at larger bounds: two lanes, two views (view change), the fast path; k = 2 pipelining
COMPILE_ONLY: list[tuple[str, dict[str, int]]] = [
    ("autobahn", {}),
    ("autobahn", {"slots": 2, "k": 2}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-states", type=int, default=2_000_000, help="stop a configuration after this many states")
    ap.add_argument("--compile", action="store_true", help="only time building each configuration and compiling it "
                    "for the vector engine")
    ap.add_argument("--growth", type=int, metavar="DEPTH", help="only measure the default bounds' levels up to "
                    "DEPTH (each depth one vector search bounded by --max-depth)")
    ap.add_argument("--seeded", action="store_true", help="only run the seeded bugs' documented commands at the "
                    "default bounds")
    args = ap.parse_args()
    if args.compile:
        compile_times()
        return
    if args.growth:
        growth(args.growth)
        return
    if args.seeded:
        seeded()
        return
    print(f"{'spec':<30}{'bounds':<34}{'verdict':<14}{'distinct':>11}{'depth':>7}{'seconds':>9}{'states/s':>10}")
    for spec, params in CONFIGS:
        model = load_model(spec, params)
        res = check(model, Options(deadlock=False, max_states=args.max_states))
        v = res.violation.name if res.violation is not None else res.verdict
        z = model.params
        bounds = f"slots={z['slots']} views={z['views']} lanes={z['lanes']} cars={z['cars']} k={z['k']}"
        print(f"{spec:<30}{bounds:<34}{v:<14}{res.distinct:>11,}{res.depth:>7}{res.seconds:>9.1f}"
              f"{res.distinct / max(res.seconds, 1e-9):>10,.0f}", flush=True)
    print()
    seeded()


def seeded() -> None:
    """Each seeded safety bug's documented `lockstep simulate` command (its variant's defaults: the default bounds),
    run as a user runs it: the property it finds violated, the counterexample's steps, the walks and the time."""
    print(f"{'command (in the docstring; the default bounds)':<94}{'violated':<26}{'steps':>6}{'walks':>8}"
          f"{'walk s':>8}{'total s':>8}")
    for spec in SEEDED:
        (line,) = [ln.strip() for ln in inspect.getdoc(resolve(spec)[0]).splitlines()
                   if ln.strip().startswith("lockstep simulate ")]
        args = line.split()[1:]
        t = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "lockstep.checker.cli", *args, "--format", "json"],
                             capture_output=True, text=True, check=False)
        took = time.perf_counter() - t
        out = json.loads(run.stdout)
        v = out["violation"]
        found = f"{v['name']}" if v else out["verdict"]
        steps = v["steps"] if v else ""
        print(f"{line:<94}{found:<26}{steps:>6}{out['counts']['runs']:>8,}{out['seconds']:>8.1f}{took:>8.1f}",
              flush=True)


def growth(depth: int) -> None:
    """States per breadth-first level of Autobahn at its default bounds, up to `depth`: each depth is a vector
    search bounded there (C kernels, no reduction), the level's states the difference of successive counts."""
    model = load_model("autobahn", {})
    print(f"{'depth':>6}{'level states':>14}{'cumulative':>14}{'growth':>8}{'seconds':>9}{'states/s':>10}")
    before = last = 0
    for d in range(1, depth + 1):
        res = check_vector(model, Options(deadlock=False, max_depth=d), vopts=VectorOptions(native="always"))
        level = res.distinct - before
        grown = f"{level / last:>8.2f}" if last else f"{'':>8}"
        print(f"{d:>6}{level:>14,}{res.distinct:>14,}{grown}{res.seconds:>9.1f}"
              f"{res.distinct / max(res.seconds, 1e-9):>10,.0f}", flush=True)
        before, last = res.distinct, level
        if res.verdict != "inconclusive":
            print(f"the search ends at depth {res.depth}: {res.verdict}")
            return


def compile_times() -> None:
    """Seconds to build each configuration's program, to compile it to the vector engine's numpy code, to generate
    its fused C kernel and to build that kernel's libraries (in a fresh cache, each part by its own compiler
    process, at once)."""
    print(f"{'spec':<30}{'bounds':<34}{'transitions':>12}{'build s':>9}{'numpy s':>9}{'C lines':>9}{'parts':>6}"
          f"{'C gen s':>8}{'C build s':>10}")
    for spec, params in CONFIGS + COMPILE_ONLY:
        t = time.perf_counter()
        model = load_model(spec, params)
        built = time.perf_counter() - t
        t = time.perf_counter()
        vm = VectorModel(model)
        compiled = time.perf_counter() - t
        with tempfile.TemporaryDirectory(prefix="lockstep-bench-") as cache:
            before = os.environ.get("LOCKSTEP_CACHE")
            os.environ["LOCKSTEP_CACHE"] = cache
            try:
                t = time.perf_counter()
                kernel = fuse(model.prog, vm.layout)
                generated = time.perf_counter() - t
                t = time.perf_counter()
                bg = Background(kernel.libraries)
                bg.wait()
                cbuilt = time.perf_counter() - t
            finally:
                if before is None:
                    del os.environ["LOCKSTEP_CACHE"]
                else:
                    os.environ["LOCKSTEP_CACHE"] = before
        lines = kernel.source.text.count(chr(10)) + sum(p.count(chr(10)) for p in kernel.source.parts)
        z = model.params
        bounds = f"slots={z['slots']} views={z['views']} lanes={z['lanes']} cars={z['cars']} k={z['k']}"
        status = f"{cbuilt:>10.1f}" if bg.error is None else f"  failed: {bg.error[:60]}"
        print(f"{spec:<30}{bounds:<34}{vm.ntrans:>12,}{built:>9.1f}{compiled:>9.1f}{lines:>9,}{len(kernel.parts):>6}"
              f"{generated:>8.1f}{status}", flush=True)


if __name__ == "__main__":
    main()
