"""Time the linearizability checker on the Porcupine corpus: every history, its verdict against
EXPECTED.json, the time to the verdict, and the time to explain a violation (shortest illegal prefix and
operations involved). Run: python -m bench.linearizability [CORPUS_DIR] [--no-explain]."""

from __future__ import annotations

import json
import os
import sys
import time

from lockstep.checker.linearizability import check, load_model, read_history

DEFAULT = "/work/shared/corpora/porcupine"


def main(argv: list[str]) -> int:
    explain = "--no-explain" not in argv
    args = [a for a in argv if not a.startswith("--")]
    root = args[0] if args else DEFAULT
    with open(os.path.join(root, "EXPECTED.json")) as fh:
        expected = json.load(fh)["verdicts"]
    print(f"{'history':24} {'ops':>5} {'parts':>5} {'expected':>9} {'verdict':>9} {'check s':>8} {'explain s':>9}")
    total = total_explain = 0.0
    worst, wrong = (0.0, ""), 0
    for name, want in expected.items():
        h = read_history(os.path.join(root, name))
        model = load_model("kv" if name.startswith("kv/") else "cas-register")
        t = time.perf_counter()
        v = check(h, model, budget=60, explain=False)
        dt = time.perf_counter() - t
        ex = 0.0
        if explain and v.verdict == "not linearizable":
            t = time.perf_counter()
            check(h, model, budget=60)
            ex = time.perf_counter() - t - dt
        got = {"linearizable": "ok", "not linearizable": "bad"}.get(v.verdict, "unknown")
        wrong += got != ("ok" if want else "bad")
        total, total_explain = total + dt, total_explain + max(ex, 0.0)
        worst = max(worst, (dt, name))
        print(f"{name:24} {len(h):5} {v.partitions:5} {'ok' if want else 'bad':>9} {got:>9} {dt:8.3f} "
              f"{max(ex, 0.0) if ex else 0:9.3f}")
    print(f"\n{len(expected)} histories, {wrong} verdicts differ from EXPECTED.json")
    print(f"time to the verdicts: {total:.2f} s in all, slowest {worst[0]:.2f} s ({worst[1]})")
    if explain:
        print(f"time to explain the violations: {total_explain:.2f} s in all")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
