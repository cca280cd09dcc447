"""Message-sequence charts of actor traces: what happened on which process, and which message went where.

A `Chart` has one lifeline per process and one row per step (a counterexample's or simulation's
step, or a recorded run's event, in linearization order). Rows are handler runs (start,
delivery, timeout), crashes, restarts, forged sends, drops and failures; arrows go from the row
that sent a message to the row that delivered it (matched first-in first-out per sender,
receiver and message). A message that never arrives is drawn to the end of the chart, a dropped
one ends in a cross, a second delivery of one copy is a duplicate, a forged one comes from a
Byzantine process. The violating row is marked. Each row carries the state of its process after
it, as hover text.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from lockstep.specs.lang.actors import ActorProgram, in_flight, step_key
from lockstep.specs.lang.jsonvalues import from_json

from ..codegen import compile_transitions
from ..itf import encode_typed
from ..trace import Trace, TraceError
from ..typed_model import TypedModel
from ..validation.runtrace import STEP_KINDS, MergedRun, check_shape
from .notation import ActorLayout, notation_of
from .text import action_text, nodes
from .values import NONE, Node, fmt, from_itf


@dataclass
class Row:
    """One step on one process's lifeline."""

    pid: int
    kind: str  # start | deliver | timeout | crash | restart | forge | drop | failure | step
    label: str  # what happened, in the spec's notation
    state: str = ""  # the process's local state after the step
    note: str = ""  # e.g. "violates follows_tm", "not a step of the spec: ..."
    byzantine: bool = False
    bad: bool = False  # the violating (or first invalid) step
    time: float | None = None
    y: int = -1  # the row's level in the chart (steps taken at once share one); -1: its own
    vc: list[int] | None = None  # the vector clock the process recorded with the event (runs)


@dataclass
class Arrow:
    """A message from the row that sent it to the row that delivered it (None: never delivered)."""

    src: int
    dst: int
    msg: str
    sent: int  # row index
    received: int | None = None
    kind: str = "delivered"  # delivered | in-flight | dropped | duplicate
    forged: bool = False


@dataclass
class Chart:
    """A message-sequence chart: processes, rows in order, arrows; `loop` is a lasso's loop-start row."""

    title: str
    pids: list[int]
    byzantine: frozenset[int]
    rows: list[Row] = field(default_factory=list)
    arrows: list[Arrow] = field(default_factory=list)
    loop: int | None = None
    caption: str = ""

    @property
    def delivered(self) -> list[Arrow]:
        return [a for a in self.arrows if a.kind in ("delivered", "duplicate")]

    def levels(self) -> list[int]:
        """Each row's level: its own `y`, or one below the previous row."""
        out, y = [], -1
        for r in self.rows:
            y = r.y if r.y >= 0 else y + 1
            out.append(y)
        return out


class _Matcher:
    """Pairs deliveries with sends, first in first out per (src, dst, message)."""

    def __init__(self, chart: Chart):
        self.chart = chart
        self.pending: dict[tuple, deque[Arrow]] = {}
        self.last: dict[tuple, Arrow] = {}

    def send(self, src: int, dst: int, key: Any, text: str, row: int, forged: bool = False) -> None:
        a = Arrow(src, dst, text, row, None, "in-flight", forged)
        self.chart.arrows.append(a)
        self.pending.setdefault((src, dst, key), deque()).append(a)

    def arrive(self, src: int, dst: int, key: Any, text: str, row: int, kind: str = "delivered") -> None:
        q = self.pending.get((src, dst, key))
        if q:
            a = q.popleft()
            a.received, a.kind = row, kind
            self.last[(src, dst, key)] = a
            return
        prior = self.last.get((src, dst, key))
        sent = prior.sent if prior is not None else row
        self.chart.arrows.append(Arrow(src, dst, text, sent, row, "duplicate" if kind == "delivered" else kind,
                                       prior.forged if prior is not None else False))


# ------------------------------------------------------------------------- from ITF traces


def chart_of_trace(trace: Trace, model: TypedModel) -> Chart:
    """The chart of a counterexample or simulation of an actor spec (the model must be the trace's spec)."""
    prog = model.prog
    if not isinstance(prog, ActorProgram):
        raise TraceError(f"spec {model.name} is not an actor spec: a sequence chart needs processes and messages")
    notation = notation_of(model)
    lay = notation.actors
    assert lay is not None
    system = prog.system
    chart = Chart(_title(trace), lay.pids, system.byzantine, loop=None, caption=trace.message)
    match = _Matcher(chart)
    try:
        states = [model.decode_state(s.state) for s in trace.steps]
    except ValueError as e:
        raise TraceError(f"the trace does not fit spec {model.name}: {e}") from None
    values = [nodes(s.state, notation) for s in trace.steps]
    by_label = {json.dumps(model.label_json(i), sort_keys=True): t for i, t in enumerate(prog.transitions)}
    local = dict(zip((s.key for s in system.steps),
                     compile_transitions(system.local, [s.transition for s in system.steps])))
    msgdom = system.message
    for p in lay.pids:  # the start handlers, all at once
        chart.rows.append(Row(p, "start", "start", _local_text(values[0], lay, p), byzantine=p in system.byzantine, y=0))
    for s, d, m in in_flight(prog, states[0]):
        match.send(s, d, m, _msg_text(msgdom, m), s)
    if trace.loop == 0:
        chart.loop = 0
    for i in range(1, len(trace.steps)):
        step = trace.steps[i]
        t = by_label.get(json.dumps(step.action, sort_keys=True))
        if t is None:
            raise TraceError(f"step {i} ({action_text(step.action).plain}) is not an action of spec {model.name}")
        args = dict(t.args)
        choice = tuple(v for _, v in t.args[3 if t.action == "deliver" else 2:])
        row = len(chart.rows)
        if trace.loop == i:
            chart.loop = row
        byz = bool(t.meta.get("byzantine"))
        if t.action == "deliver":
            src, pid, msg = args["src"], args["dst"], args["msg"]
            label = f"{_msg_text(msgdom, msg)} from {src}"
            chart.rows.append(Row(pid, "deliver", label, _local_text(values[i], lay, pid), byzantine=byz))
            match.arrive(src, pid, msg, _msg_text(msgdom, msg), row)
            key = step_key("message", pid, src, msg, None, choice)
        elif t.action == "timeout":
            pid = args["p"]
            chart.rows.append(Row(pid, "timeout", f"timer {args['timer']}", _local_text(values[i], lay, pid),
                                  byzantine=byz))
            key = step_key("timeout", pid, None, None, args["timer"], choice)
        elif t.action == "crash":
            chart.rows.append(Row(args["p"], "crash", "crash"))
            continue
        elif t.action == "drop":
            src, dst = args["src"], args["dst"]
            msg = args.get("msg")
            if msg is None:  # an ordered channel: the message at position `pos`
                queue = [m for s, d, m in in_flight(prog, states[i - 1]) if (s, d) == (src, dst)]
                msg = queue[args["pos"]]
            chart.rows.append(Row(dst, "drop", f"{_msg_text(msgdom, msg)} from {src} lost"))
            match.arrive(src, dst, msg, _msg_text(msgdom, msg), row, "dropped")
            continue
        elif t.action == "forge":
            src, dst, msg = args["src"], args["dst"], args["msg"]
            chart.rows.append(Row(src, "forge", f"forges {_msg_text(msgdom, msg)} to {dst}", byzantine=True))
            match.send(src, dst, msg, _msg_text(msgdom, msg), row, forged=True)
            continue
        else:
            chart.rows.append(Row(0, "step", action_text(step.action).plain))
            continue
        out = local[key](system.pad(tuple(states[i - 1][j] for j in system.gslots[pid])))
        sends, _ = system.outputs(out[0][1], len(system.by_key[key].sends)) if out else ([], {})
        for dst, m in sends:
            match.send(pid, dst, m, _msg_text(msgdom, m), row)
    prop = trace.property or {}
    if prop.get("kind") in ("invariant", "deadlock", "step") and chart.rows:
        last = chart.rows[-1]
        last.bad = True
        last.note = {"invariant": f"violates {prop.get('name')}", "deadlock": "deadlock: no step is possible",
                     "step": f"the next step fails: {trace.message}"}[prop["kind"]]
    return chart


def _title(trace: Trace) -> str:
    ps = ", ".join(f"{k}={v}" for k, v in trace.params.items())
    return f"{trace.spec_name}" + (f" ({ps})" if ps else "")


def _msg_text(dom: Any, m: Any) -> str:
    return fmt(from_itf(encode_typed(dom, m), dom)).plain


def _local_text(state: dict[str, Node], lay: ActorLayout, pid: int) -> str:
    key = from_itf(pid)
    parts = []
    for f in lay.owned.get(pid, []):
        v = state.get(f)
        if v is not None and v.kind == "map":
            parts.append(f"{f} = {fmt(dict(v.items).get(key, NONE)).plain}")
    return f"process {pid}: " + (", ".join(parts) if parts else "(no local state)")


# ---------------------------------------------------------------------------- from run traces

_KILLED = re.compile(r"process (\d+) killed \(SIGKILL\) at ([0-9.]+) s")


def chart_of_run(run: MergedRun, model: TypedModel, bad: dict[str, Any] | None = None, note: str = "") -> Chart:
    """The chart of a recorded run of an actor spec (`bad`: the event to mark, with `note`)."""
    prog = model.prog
    if not isinstance(prog, ActorProgram):
        raise TraceError(f"spec {model.name} is not an actor spec: a sequence chart needs processes and messages")
    system = prog.system
    lay = notation_of(model).actors
    assert lay is not None
    h = run.header
    ps = ", ".join(f"{k}={v}" for k, v in (h.get("params") or {}).items())
    chart = Chart(f"run of {h.get('spec_name', h.get('spec'))}" + (f" ({ps})" if ps else ""), lay.pids,
                  system.byzantine, caption="; ".join(run.notes))
    match = _Matcher(chart)
    found = [_KILLED.search(n) for n in run.notes]
    kills = sorted((float(m.group(2)), int(m.group(1))) for m in found if m is not None)
    msgs: dict[str, Any] = {}

    def message(e: dict[str, Any], j: Any) -> tuple[Any, str]:
        k = json.dumps(j, sort_keys=True)
        if k not in msgs:
            try:
                m = from_json(system.message, j, "msg")
            except ValueError as err:
                raise TraceError(f"line {e.get('_line', '?')}: not a message of spec {model.name}: {err}") from None
            msgs[k] = (m, _msg_text(system.message, m))
        return msgs[k]

    for e in run.events:
        kind, pid = e.get("kind"), e.get("pid")
        if kind not in (*STEP_KINDS, "restart", "forge", "failure") or not isinstance(pid, int):
            continue
        check_shape(e, system.proc.size)
        while kills and e.get("time") is not None and kills[0][0] <= e["time"]:
            t, p = kills.pop(0)
            chart.rows.append(Row(p, "crash", "killed", time=t))
        row = len(chart.rows)
        state = _run_state(system, lay, pid, e.get("state"))
        vc = e.get("vc") if isinstance(e.get("vc"), list) else None
        r = Row(pid, kind, kind, state, byzantine=pid in system.byzantine, time=e.get("time"), vc=vc)
        if kind == "message":
            m, text = message(e, e.get("msg"))
            r.kind, r.label = "deliver", f"{text} from {e.get('src')}"
            match.arrive(e.get("src"), pid, m, text, row)
        elif kind == "timeout":
            r.label = f"timer {e.get('timer')}"
        elif kind == "forge":
            m, text = message(e, e.get("msg"))
            r.label, r.byzantine = f"forges {text} to {e.get('dst')}", True
            match.send(pid, e.get("dst"), m, text, row, forged=True)
        elif kind == "failure":
            r.label, r.bad, r.note = "handler failed", True, str(e.get("message", ""))
        elif kind == "restart":
            r.label = "restarted"
        if e is bad:
            r.bad, r.note = True, note
        chart.rows.append(r)
        for dst, j in e.get("sends") or []:
            m, text = message(e, j)
            match.send(pid, dst, m, text, row)
    for t, p in kills:
        chart.rows.append(Row(p, "crash", "killed", time=t))
    return chart


def _run_state(system: Any, lay: ActorLayout, pid: int, j: Any) -> str:
    if j is None:
        return ""
    try:
        local = system.local_from_json(j)
    except ValueError:
        return f"process {pid}: " + json.dumps(j)
    owned = set(lay.owned.get(pid, []))
    parts = [f"{f.name} = {fmt(from_itf(encode_typed(f.dom, f.decode(local)), f.dom)).plain}"
             for f in system.state_fields if f.name in owned]
    return f"process {pid}: " + (", ".join(parts) if parts else "(no local state)")
