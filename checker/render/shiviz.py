"""ShiViz logs: a run's events with their vector clocks, in the format ShiViz reads.

The file starts with the parsing regular expression and an empty line (one execution), then two
lines per event: what happened, and `HOST {"HOST": n, ...}`, the vector clock as JSON over host
names (entries that are 0 left out; a host's own entry counts its events from 1). Run traces
carry the clocks the processes recorded; for a counterexample they are computed from the chart
(each step ticks its process, a delivery merges the sender's clock at the send).
"""

from __future__ import annotations

import json
from typing import Any

from ..trace import TraceError
from .chart import Chart

REGEX = r"(?<event>.*)\n(?<host>\S*) (?<clock>{.*})"


def host(pid: int, what: str = "process") -> str:
    return f"{what}{pid}"


def _clock(vc: list[int], what: str) -> str:
    return json.dumps({host(p, what): c for p, c in enumerate(vc) if c > 0}, separators=(", ", ": "))


def _log(entries: list[tuple[str, int, list[int]]], what: str = "process") -> str:
    out = [REGEX, ""]
    for text, pid, vc in entries:
        out += [text.replace("\n", " "), f"{host(pid, what)} {_clock(vc, what)}"]
    return "\n".join(out) + "\n"


def shiviz_of_rounds(events: list[tuple[str, int, list[int] | None]]) -> str:
    """The ShiViz log of a recorded rounds run (`render.rounds.rounds_events`)."""
    for _, q, vc in events:
        if vc is None:
            raise TraceError(f"an event of node {q} has no vector clock (\"vc\"); runs recorded by this version of "
                             "`lockstep run` have them: record the run again")
    if not events:
        raise TraceError("the run has no events to export")
    return _log([(t, q, vc) for t, q, vc in events], "node")  # type: ignore[misc]


def shiviz_of_run(chart: Chart) -> str:
    """The ShiViz log of a recorded actor run's chart, with the vector clocks the processes recorded."""
    entries = []
    for r in chart.rows:
        if r.kind == "crash":  # a kill is not an event of the process
            continue
        if r.vc is None:
            raise TraceError(f"a {r.kind} event of process {r.pid} has no vector clock (\"vc\"); runs recorded by "
                             "this version of `lockstep run` have them: record the run again")
        entries.append((_text(r), r.pid, r.vc))
    if not entries:
        raise TraceError("the run has no events to export")
    return _log(entries)


def _text(r: Any) -> str:
    return r.label + (f"; {r.state}" if r.state else "") + (f" [{r.note}]" if r.note else "")


def shiviz_of_chart(chart: Chart) -> str:
    """The ShiViz log of a counterexample's chart, with vector clocks computed from its sends and deliveries."""
    n = max(chart.pids) + 1
    clocks: list[list[int]] = []
    vc = {p: [0] * n for p in chart.pids}
    # a delivery whose send the trace never shows (its message was not in flight: a trace that does not follow
    # its spec) is drawn as an arrow from its own row; it takes no sender's clock
    sent_by = {a.received: a.sent for a in chart.arrows
               if a.received is not None and a.kind != "dropped" and a.sent < a.received}
    entries = []
    for i, r in enumerate(chart.rows):
        cur = list(vc[r.pid])
        if i in sent_by:
            cur = [max(a, b) for a, b in zip(cur, clocks[sent_by[i]])]
        cur[r.pid] += 1
        vc[r.pid] = cur
        clocks.append(cur)
        entries.append((_text(r), r.pid, cur))
    return _log(entries)
