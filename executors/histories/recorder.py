"""A client history as Jepsen records one: each call's invocation, then its completion — `ok`, `fail` (it
certainly did not take effect) or `info` (nobody knows: a timeout, a lost connection) — with the time of each
on one monotonic clock, written as the JSON lines `lockstep linearizable` reads."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from lockstep.checker.safeio import replacing


class Recorder:
    """Events of every client, in the order of their times (each taken under one lock as it is recorded)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        self.counts = {"ok": 0, "fail": 0, "info": 0}

    def now(self) -> float:
        return time.monotonic() - self.t0

    def invoke(self, process: int, f: str, key: Any, value: Any) -> None:
        with self.lock:
            self.events.append({"process": process, "type": "invoke", "f": f, "key": key, "value": value,
                                "time": round(self.now(), 6)})

    def complete(self, process: int, kind: str, f: str, key: Any, value: Any, output: Any = None) -> None:
        """`kind`: ok, fail or info; `output` (ok only): what the call returned where it is not `value` (a cas's
        success)."""
        ev = {"process": process, "type": kind, "f": f, "key": key, "value": value}
        if output is not None:
            ev["output"] = output
        with self.lock:
            ev["time"] = round(self.now(), 6)
            self.events.append(ev)
            self.counts[kind] += 1

    def write(self, path: str) -> str:
        """The history as JSON lines in `path` (replaced as a whole)."""
        with self.lock:
            lines = [json.dumps(ev, separators=(",", ":")) + "\n" for ev in self.events]
        with replacing(path) as fh:
            fh.writelines(lines)
        return path
