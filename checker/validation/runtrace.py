"""Run traces: what executors record, one JSON object per line, and how per-process traces merge.

A process's trace starts with a header `{"kind": "header", "spec", "spec_name", "params", "pid"}`;
then one line per event:

- `start`, `message`, `timeout`: a handler ran. `pid`, Lamport `clock`, vector clock `vc` (one entry
  per process; entry p counts p's recorded events; actor runs), `seq` (per process),
  `time` (seconds since the run began), the input (`src` and `msg`, or `timer`), `choice` (the
  values of the handler's choice parameters), `sends` (`[dst, msg]` pairs in send order),
  `timers` (the timers it started or restarted), `observed` (client-visible operations, if
  any) and `state` (the local state after);
- `forge`: a Byzantine process forged a message (`dst`, `msg`), in a spec with `forge = True`;
- `restart`: the process was restarted from its last recorded `state` (not a step of the spec);
- `failure`: a handler failed (`message`); the process stops;
- `rejected`: a frame was dropped as malformed (`reason`); not a step.

A merged trace has one header `{"kind": "run", "spec", "spec_name", "params", "processes", "notes"}`
and every event ordered by (clock, pid, seq): a linearization consistent with the Lamport order.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from ..trace import TraceError


class Mismatch(Exception):
    """An event that is not a step of the spec."""

    def __init__(self, event: dict[str, Any], reason: str, expected: Any = None, observed: Any = None):
        super().__init__(reason)
        self.event, self.reason, self.expected, self.observed = event, reason, expected, observed

    def render(self) -> str:
        e = self.event
        where = f"line {e['_line']}: " if "_line" in e else ""
        what = {k: v for k, v in e.items() if k in ("kind", "pid", "clock", "src", "msg", "timer", "choice")}
        text = f"{where}event {json.dumps(what)}: {self.reason}"
        if self.expected is not None or self.observed is not None:
            text += f"\n  expected: {_compact(self.expected)}\n  observed: {_compact(self.observed)}"
        return text


def _compact(v: Any) -> str:
    text = json.dumps(v, separators=(",", ":"), default=str)
    return text if len(text) <= 300 else text[:297] + "..."

STEP_KINDS = ("start", "message", "timeout")
"""Events that run a handler (a `forge` event is a step of the spec too, but runs none)."""


def read_jsonl(path: str, tolerate_torn_end: bool = False) -> tuple[list[dict[str, Any]], bool]:
    """The objects of a JSONL file, and whether a torn last line was dropped (a killed writer)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise TraceError(f"cannot read trace {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not a text file (expected JSON lines)") from None
    out: list[dict[str, Any]] = []
    torn = False
    last = max((i for i, text in enumerate(lines) if text.strip()), default=-1)
    for i, text in enumerate(lines):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            if i == last and tolerate_torn_end:
                torn = True
                break
            hint = " (the line ends early: truncated?)" if e.pos >= len(text.rstrip()) else ""
            raise TraceError(f"{path}:{i + 1}: not valid JSON: {e.msg}{hint}") from None
        if not isinstance(obj, dict):
            raise TraceError(f"{path}:{i + 1}: expected a JSON object per line, got {type(obj).__name__}")
        out.append(obj)
    return out, torn


@dataclass
class MergedRun:
    """A merged run trace: its header and its events in linearization order."""

    header: dict[str, Any]
    events: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def event_order(e: dict[str, Any]) -> tuple:
    return (e.get("clock", 0), e.get("pid", 0), e.get("seq", 0))


def merge(paths: dict[int, str], out: str, spec: str, spec_name: str, params: dict[str, int],
          notes: list[str] | None = None, extra: dict[str, Any] | None = None) -> MergedRun:
    """Merge per-process traces (pid -> file) into one file ordered by Lamport clock (`extra`: more header fields)."""
    notes = list(notes or [])
    events: list[dict[str, Any]] = []
    for pid, path in sorted(paths.items()):
        if not os.path.exists(path):
            notes.append(f"process {pid} wrote no trace")
            continue
        lines, torn = read_jsonl(path, tolerate_torn_end=True)
        if torn:
            notes.append(f"process {pid}: its trace ends in a torn line (it was killed while writing); dropped it")
        events.extend(e for e in lines if e.get("kind") != "header")
    events.sort(key=event_order)
    header = {"kind": "run", "spec": spec, "spec_name": spec_name, "params": params, "processes": len(paths),
              "notes": notes, **(extra or {})}
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps(header) + "\n")
        for e in events:
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
    return MergedRun(header, events, notes)


def load(path: str) -> MergedRun:
    """Read a merged run trace (as written by `lockstep run --trace`)."""
    lines, _ = read_jsonl(path)
    if not lines:
        raise TraceError(f"{path}: empty trace")
    header = lines[0]
    if header.get("kind") != "run" or not isinstance(header.get("spec"), str) \
            or not isinstance(header.get("params", {}), dict):
        raise TraceError(f"{path}:1: not a Lockstep run trace: the first line must be the run header "
                         '{"kind": "run", "spec": ..., "params": ...} written by `lockstep run --trace`')
    events = lines[1:]
    for i, e in enumerate(events, start=2):
        if not isinstance(e.get("kind"), str) or not isinstance(e.get("pid"), int) or isinstance(e.get("pid"), bool):
            raise TraceError(f"{path}:{i}: an event needs a \"kind\" and an integer \"pid\"")
        if e["kind"] in (*STEP_KINDS, "restart", "forge"):
            if not isinstance(e.get("clock"), int) or not isinstance(e.get("seq"), int):
                raise TraceError(f"{path}:{i}: a {e['kind']} event needs integer \"clock\" and \"seq\"")
        e["_line"] = i
    return MergedRun(header, events, list(header.get("notes") or []))
