"""The vector engine against its own earlier version, measured in the same run.

    python -m bench.vector                          # TwoPhase RM=9, RM=10, the filter lock N=6
    python -m bench.vector --models two_phase:11    # add or choose models (spec:size)
    python -m bench.vector --baseline REV           # the git revision compared against
    python -m bench.vector --tree HEAD              # measure a commit instead of the working tree

The baseline is the engine as it was at `--baseline` (default: the numpy engine, before the C
kernels), exported with `git archive` into a temporary directory and imported from there. Every
run is a fresh process: this tree's engine on one worker and on two (`--workers 2`), and the
baseline's engine on one and two (this tree's C kernels are built by an untimed warm-up run first
and cached, once per machine and spec, as SPIN's pan is compiled before it runs). The table shows distinct
states, depth, wall seconds of the search (start-up excluded), distinct states per second, the
peak RSS of the process and its bytes per distinct state, the visited table's bytes per
distinct state (parent links add 8 bytes in this engine, 16 in the one before it), and the baseline's time over each
run's, and each engine's one-worker time over each of its runs ("vs 1 w"), so the ratios hold
under whatever load the machine has. The load average is printed
before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = "74187a1"  # the numpy vector engine, before the C kernels
PACKAGES = ("checker", "specs", "executors", "proofs")
PARAM = {"two_phase": "rm", "filter_lock": "n", "agent_clock": "agents"}
MODELS = ["two_phase:9", "two_phase:10", "filter_lock:6"]

CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1]) if sys.argv[1] else None
from lockstep.checker.explicit import Options
from lockstep.checker.loader import load_model
from lockstep.checker.vector import check_vector
model = load_model(sys.argv[2], {sys.argv[3]: int(sys.argv[4])})
import lockstep.checker.vector.search as engine
t0, c0 = time.perf_counter(), time.process_time()
res = check_vector(model, Options(workers=int(sys.argv[5])))
secs, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"engine": engine.__file__, "verdict": res.verdict, "distinct": res.distinct,
                  "generated": res.generated, "depth": res.depth, "secs": secs, "cpu": cpu, "rss": rss + kids,
                  "table": res.visited_bytes, "notes": res.notes}))
"""

WARM = """
import sys
sys.path.insert(0, sys.argv[1]) if sys.argv[1] else None
from lockstep.checker.loader import load_model
from lockstep.checker.vector.kernels import Native
from lockstep.checker.vector.layout import Layout
model = load_model(sys.argv[2], {sys.argv[3]: int(sys.argv[4])})
Native(model.prog, Layout(model.prog), True, mode="always")
"""


def export(rev: str, into: str) -> str:
    """A directory from which `import lockstep` gives revision `rev`'s packages."""
    src = os.path.join(into, "src")
    os.makedirs(src)  # (and its parent)
    archive = subprocess.run(["git", "archive", rev, "lockstep", *PACKAGES], cwd=ROOT, check=True,
                             capture_output=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(src, filter="data")
    for top in PACKAGES:
        os.symlink(os.path.join(src, top), os.path.join(src, "lockstep", top))
    return src


def run(path: str, model: str, size: int, workers: int) -> dict:
    cmd = [sys.executable, "-c", CHILD, path, model, PARAM[model], str(size), str(workers)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{model}:{size} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=MODELS, metavar="SPEC:SIZE")
    ap.add_argument("--baseline", default=BASELINE, metavar="REV")
    ap.add_argument("--tree", metavar="REV", help="measure this revision instead of the working tree")
    args = ap.parse_args()
    print(f"load average before: {load()}")
    print(f"{'model':<15} {'engine':<10} {'distinct':>12} {'depth':>6} {'search s':>9} {'states/s':>11} "
          f"{'CPU s':>7} {'peak RSS':>9} {'B/state':>8} {'speed-up':>9} {'vs 1 w':>7} {'table B/st':>10}", flush=True)
    with tempfile.TemporaryDirectory(prefix="lockstep-bench-") as tmp:
        base = export(args.baseline, os.path.join(tmp, "baseline"))
        tree = export(args.tree, os.path.join(tmp, "tree")) if args.tree else ""
        for spec in args.models:  # builds this tree's kernels (cached per machine and spec), untimed
            model, size = spec.split(":")
            subprocess.run([sys.executable, "-c", WARM, tree, model, PARAM[model], size], check=True, cwd=ROOT)
        for spec in args.models:
            model, size = spec.split(":")
            want, one = None, {}
            for name, path, workers in (("baseline", base, 1), ("base 2 w", base, 2), ("1 worker", tree, 1),
                                        ("2 workers", tree, 2)):
                r = run(path, model, int(size), workers)
                if workers == 1:
                    one[path] = r["secs"]
                got = {k: r[k] for k in ("verdict", "distinct", "generated", "depth")}
                if workers == 1 and path == base:
                    want, base_secs = got, r["secs"]
                elif got != want:
                    raise SystemExit(f"{spec} {name} disagrees with the baseline: {got} vs {want}")
                if path == base:
                    assert r["engine"].startswith(base), "the baseline run imported this tree's engine"
                print(f"{spec:<15} {name:<10} {r['distinct']:>12,} {r['depth']:>6} {r['secs']:>9.1f} "
                      f"{r['distinct'] / r['secs']:>11,.0f} {r['cpu']:>7.1f} {r['rss'] / 2**30:>7.2f} G "
                      f"{r['rss'] / r['distinct']:>8.1f} {base_secs / r['secs']:>8.2f}x "
                      f"{one[path] / r['secs']:>6.2f}x {(r['table'] or 0) / r['distinct']:>10.1f}", flush=True)
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
