"""Projections of a run's logs (in the event schema) onto the logs a spec instance is validated on.

An executor's process logs everything it does; a spec instance sees only some of it (one slot of a
consensus protocol, one stretch of a lane, the events a mapping turns into steps). A projection keeps,
for each node, the events that `keep` rewrites (their spec-level arguments), renumbers them 1, 2, 3, ...,
and folds the events it leaves out into the causal order of those it keeps: the ids of the messages a
left-out event received are carried to the node's next kept event, which happens after it anyway. A
left-out event must send nothing (a message whose send is not logged would have no cause); `keep` says
so by keeping every event that sends a message the instance's events receive.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any

from lockstep.checker.errors import TraceError
from lockstep.checker.safeio import create_fresh
from lockstep.checker.validation.conformance.schema import SCHEMA
from lockstep.checker.validation.origins import Origins

Keep = Callable[[dict[str, Any]], "dict[str, Any] | None"]
LINE = "_line"  # the key of an event read by `read_log` that holds its line in the log


def project(events: Iterable[dict[str, Any]], node: Any, path: str, keep: Keep, ended: bool,
            header: dict[str, Any] | None = None, origins: Origins | None = None, source: str | None = None) -> int:
    """Write the projection of one node's events (JSON forms, in its order) to a new log at `path`: each event
    `keep` returns a rewritten event for (its `action`, `args`, `vars`, `sent`, `recv`), with the receipts of
    the events before it that `keep` dropped. The number of events written. `origins` (with `source`, the log the
    events were read from by `read_log`) learns the line of `source` each written event comes from."""
    pending: list[str] = []
    lines: list[int | None] = [None]
    seq = 0
    with create_fresh(path) as f:
        f.write(json.dumps({"schema": SCHEMA, "node": node, **(header or {})}) + "\n")
        for e in events:
            out = keep(e)
            if out is None:
                pending.extend(e.get("recv") or ())
                continue
            seq += 1
            line: dict[str, Any] = {"node": node, "seq": seq, "action": out["action"]}
            for key in ("args", "vars", "sent"):
                if out.get(key):
                    line[key] = out[key]
            recv = [*pending, *(out.get("recv") or ())]
            pending = []
            if recv:
                line["recv"] = list(dict.fromkeys(recv))
            if e.get("time") is not None:
                line["time"] = e["time"]
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
            lines.append(e.get(LINE))
        if ended:
            f.write(json.dumps({"node": node, "end": True}) + "\n")
    if origins is not None and source is not None:
        origins.add(path, source, lines)
    return seq


def read_log(path: str) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
    """A process's log in the schema: (its header, its events as JSON objects, each with its line in `LINE`, whether
    it has its end record). A torn last line (a process killed while writing it) is left out."""
    header: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    ended = False
    if not os.path.exists(path):
        return header, events, ended
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            if i >= len(lines) - 2:  # the last line, cut by a kill
                break
            raise TraceError(f"{path}:{i + 1}: not a JSON object") from None
        if not isinstance(obj, dict):
            continue
        if "schema" in obj:
            header = obj
        elif obj.get("end") is True:
            ended = True
        elif "action" in obj:
            obj[LINE] = i + 1
            events.append(obj)
    return header, events, ended
