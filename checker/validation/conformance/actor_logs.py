"""A run of Lockstep's actor runtime written as implementation logs in the event schema: one log per
process, each handler event with its input as arguments, its local state as the logged variables and its
vector clock. The default mapping of actor specs reads them back (`mapping.actor_steps`)."""

from __future__ import annotations

import json
import os

from ...errors import TraceError
from ...safeio import create_fresh
from ..runtrace import STEP_KINDS, load, vector_clock
from .schema import SCHEMA


def run_to_logs(trace: str, out_dir: str) -> dict[int, str]:
    """Write the handler events of the merged actor run trace `trace` as per-process logs in `out_dir`
    (`process-P.jsonl`); the paths by process. Memory holds one event at a time."""
    run = load(trace)
    if run.header.get("model", "actors") != "actors":
        raise TraceError(f"{trace}: a run of a {run.header.get('model')} spec; only actor runs become per-process logs")
    n = run.header.get("processes")
    if not isinstance(n, int) or n < 1:
        raise TraceError(f"{trace}:1: the run header does not say how many processes ran")
    os.makedirs(out_dir, exist_ok=True)
    paths = {p: os.path.join(out_dir, f"process-{p}.jsonl") for p in range(n)}
    files = {p: create_fresh(path) for p, path in paths.items()}  # closed below
    dumps = json.dumps
    names = [str(p) for p in range(n)]
    try:
        for p, f in files.items():
            f.write(dumps({"schema": SCHEMA, "node": p, "spec": run.header["spec"], "params": run.header.get("params")})
                    + "\n")
        for e in run.events:
            kind = e["kind"]
            if kind not in STEP_KINDS:
                continue
            pid = e["pid"]
            vc = vector_clock(e, n)
            if vc is None or not isinstance(pid, int) or not 0 <= pid < n:
                raise TraceError(f"{trace}:{e.get('_line')}: a {kind} event without a vector clock or a process id")
            args: dict = {}
            if kind == "message":
                args = {"src": e.get("src"), "msg": e.get("msg")}
            elif kind == "timeout":
                args = {"timer": e.get("timer")}
            if e.get("choice"):
                args["choice"] = e["choice"]
            out = {"node": pid, "seq": e["seq"], "action": kind, "args": args, "vars": e.get("state") or {},
                   "vc": {names[i]: c for i, c in enumerate(vc) if c}}
            files[pid].write(dumps(out, separators=(",", ":")) + "\n")
        if run.ended:
            for p, f in files.items():
                f.write(dumps({"node": p, "end": True}) + "\n")
    finally:
        for f in files.values():
            f.close()
    return paths
