"""Validate implementation logs against a spec, and the text report of the outcome (the command's output)."""

from __future__ import annotations

import json
from typing import Any

from ...errors import UsageError
from .causal import Logs
from .search import DEFAULT_MAX_FRONTIER, Conformance, Search
from .spec_side import SpecSide


def validate_logs(paths: list[str], spec: str | type, params: dict[str, int], mapping: str | None, max_internal: int = 0,
                  max_frontier: int | None = None, one_order: bool = False) -> Conformance:
    """Validate the logs at `paths` (one per node) against spec `spec` (its name, or the spec class) through the
    mapping module at `mapping`; `one_order`: the first order consistent with happens-before decides (`Search`)."""
    if not paths:
        raise UsageError("give at least one log")
    if max_internal < 0:
        raise UsageError(f"--max-internal {max_internal}: a number of steps, at least 0")
    if max_frontier is not None and max_frontier < 1:
        raise UsageError(f"--max-frontier {max_frontier}: at least 1")
    logs = Logs.open(paths)
    side = SpecSide(spec, params, mapping)
    search = Search(side, logs, max_internal, max_frontier or DEFAULT_MAX_FRONTIER, one_order=one_order)
    res = search.run()
    res.model = side.model
    return res


def report(res: Conformance, model: Any = None) -> list[str]:
    """The outcome as the command prints it."""
    lines = []
    speed = f"{res.seconds:.2f} s, {res.rate:,.0f} events/s"
    if res.verdict == "valid":
        lines.append(f"Valid: the {res.events:,} events of {len(res.nodes)} logs are a behaviour of the spec ({speed}; "
                     f"largest frontier {res.frontier_max:,} state(s))")
    elif res.verdict == "violation":
        if res.violation:
            lines.append(f"Violation: invariant {res.violation} is violated in every state of the spec matching the logs "
                         f"up to event {res.last_event.seq} of node {res.last_event.node} ({res.last_event.where})"
                         if res.last_event else f"Violation: invariant {res.violation} is violated")
        else:
            e = res.failed_event
            at = f" at event {e.seq} of node {e.node} ({e.where})" if e else ""
            lines.append(f"Violation{at}: {res.reason}")
    elif res.verdict == "incomplete":
        lines.append(f"Incomplete: {res.events:,} events validated; {res.reason}")
    elif res.verdict == "inconclusive":
        lines.append(f"Inconclusive after {res.events:,} events: {res.reason}")
    else:
        lines += _invalid(res, model)
    lines += [f"  note: {n}" for n in res.notes]
    return lines


def _state(st: tuple, model: Any) -> str:
    if model is None:
        return "(not shown)"
    parts = []
    for name, text in model.show_state(st).items():
        parts.append(f"{name} = {text if len(text) <= 200 else text[:197] + '...'}")
    return ", ".join(parts)


def _invalid(res: Conformance, model: Any = None) -> list[str]:
    if res.reason:
        return [f"Invalid: {res.reason}"]
    if res.searched_orders:
        lines = [f"Invalid: no behaviour of the spec matches the logs: {res.events:,} "
                 "events matched in every order consistent with happens-before, and none of the next events can be taken"]
    else:
        lines = [f"Invalid: no behaviour of the spec matches the logs: {res.events:,} events matched in an order "
                 "consistent with happens-before (the mapping's steps at different nodes commute: every such order "
                 "gives this verdict), and the next event cannot be taken"]
    if res.last_event is not None:
        e = res.last_event
        lines.append(f"  the last event matched: event {e.seq} of node {e.node} ({e.where}): {e.action} {_args(e.args)}")
    lines.append(f"  the frontier there: {res.frontier_size:,} (cut, state) pair(s); "
                 f"{'the first ' + str(len(res.frontier)) if res.frontier_size > len(res.frontier) else 'each'} below")
    for i, f in enumerate(res.frontier, 1):
        taken = ", ".join(f"{n}: {k}" for n, k in f.taken.items())
        lines.append(f"  [{i}] events taken per node: {taken}")
        lines.append(f"      state: {_state(f.state, model)}")
        if not f.candidates:
            lines.append("      no node has an event whose causes are all taken")
        for c in f.candidates:
            e = c.event
            lines.append(f"      next: event {e.seq} of node {e.node} ({e.where}): {e.action} {_args(e.args)}")
            lines += [f"        {r}" for r in c.reasons]
    return lines


def _args(args: dict[str, Any]) -> str:
    text = json.dumps(args, separators=(", ", ": "), default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def is_log(path: str) -> bool:
    """Whether a file reads as a log in the event schema (its first line is a schema header or an event), not a
    run trace of Lockstep's own executors."""
    from ...safeio import open_input

    try:
        with open_input(path) as f:
            first = json.loads(f.readline(1 << 20))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(first, dict) and ("schema" in first or ("node" in first and "action" in first))


def run_command(paths: list[str], spec: str | None, params: dict[str, int], mapping: str | None, max_internal: int,
                max_frontier: int | None, out_json: bool) -> int:
    """`lockstep validate LOG... --spec SPEC [--map MAPPING.py]`: print the outcome; the exit code."""
    if not spec:
        raise UsageError("validating implementation logs needs the spec: --spec SPEC (a log never chooses the code "
                         "that checks it)")
    res = validate_logs(paths, spec, params, mapping, max_internal, max_frontier)
    model = res.model
    if out_json:
        print(json.dumps(to_json(res), indent=1))
    else:
        print(f"validating {len(res.nodes)} log(s) (nodes {', '.join(res.nodes)}) against {spec}"
              + (f" through the mapping {mapping}" if mapping else "")
              + (f", up to {max_internal} internal step(s) before each event" if max_internal else ""))
        for line in report(res, model):
            print(line)
    return res.exit_code


def to_json(res: Conformance) -> dict[str, Any]:
    """The outcome as JSON (`--format json`)."""
    def event(e: Any) -> dict[str, Any] | None:
        return None if e is None else {"node": e.node, "seq": e.seq, "action": e.action, "where": e.where}

    return {"verdict": res.verdict, "events": res.events, "total": res.total, "seconds": round(res.seconds, 3),
            "events_per_second": round(res.rate), "nodes": res.nodes, "frontier_max": res.frontier_max,
            "searched_orders": res.searched_orders, "last_event": event(res.last_event),
            "failed_event": event(res.failed_event), "violation": res.violation, "reason": res.reason,
            "frontier": [{"taken": f.taken, "candidates": [{"event": event(c.event), "reasons": c.reasons}
                                                           for c in f.candidates]} for f in res.frontier],
            "notes": res.notes}
