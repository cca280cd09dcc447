"""`--format json`: a command's outcome as one JSON object on standard output, for scripts and CI.

Every command that gives a verdict (`check`, `simulate`, `prove`, `replay`, `validate`, `linearizable`) and `list`
print one object of the shape `SCHEMA` describes (docs/json.md): the verdict and exit code, the spec and its
parameters, what was checked, the violation, counts, seconds, the options and reductions in force, the path of any
trace written, notes; an error (exit 2, 4 or 5) is an object too, with `error` set. The text the command prints
otherwise is not printed; progress lines still go to standard error.
"""

from __future__ import annotations

import argparse
import io
from typing import Any

VERSION = 1
COMMANDS = ("check", "simulate", "prove", "replay", "validate", "linearizable", "list")
VERDICTS = {0: "holds", 1: "violation", 2: "error", 3: "inconclusive", 4: "internal error", 5: "spec error"}
"""The verdict of an exit code, where the command names none of its own."""

_COUNT = {"type": ["integer", "null"], "minimum": 0}
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "lockstep result",
    "type": "object",
    "required": ["lockstep", "command", "verdict", "exit_code", "spec", "params", "checked", "violation", "counts",
                 "seconds", "options", "reductions", "trace", "notes", "error"],
    "additionalProperties": False,
    "properties": {
        "lockstep": {"const": VERSION},
        "command": {"enum": [*COMMANDS, None]},  # None: a command line that names none of them
        "verdict": {"type": "string"},
        "exit_code": {"enum": [0, 1, 2, 3, 4, 5, 130]},  # 130: interrupted
        "spec": {"type": ["string", "null"]},
        "params": {"type": "object"},
        "checked": {"type": "object"},
        "violation": {
            "type": ["object", "null"],
            "required": ["kind", "name", "message", "location", "steps"],
            "properties": {"kind": {"type": "string"}, "name": {"type": "string"}, "message": {"type": "string"},
                           "location": {"type": ["string", "null"]}, "steps": {"type": "integer", "minimum": 0}},
        },
        "counts": {"type": "object", "additionalProperties": _COUNT},
        "seconds": {"type": ["number", "null"], "minimum": 0},
        "options": {"type": "object"},
        "reductions": {"type": "object", "properties": {"symmetry": {"type": "boolean"},
                                                         "partial_order": {"type": "boolean"}}},
        "trace": {"type": ["string", "null"]},
        "notes": {"type": "array", "items": {"type": "string"}},
        "error": {"type": ["string", "null"]},
        "details": {"type": "object"},
        "specs": {"type": "array"},
    },
}
"""The JSON Schema of every object `--format json` prints (docs/json.md says what each field holds)."""


def add_format_argument(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """--format text|json, for the commands that print a verdict."""
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help=help or "text for people (default), or one JSON object for scripts (docs/json.md)")


class Report:
    """The JSON object of one command, filled in as the command learns its outcome."""

    def __init__(self, command: str | None) -> None:
        self.data: dict[str, Any] = {"lockstep": VERSION, "command": command, "verdict": None, "exit_code": None,
                                     "spec": None, "params": {}, "checked": {}, "violation": None, "counts": {},
                                     "seconds": None, "options": {}, "reductions": {}, "trace": None, "notes": [],
                                     "error": None}

    def update(self, **fields: Any) -> None:
        self.data.update({k: v for k, v in fields.items() if v is not None})

    def finish(self, code: int, text: str, error: str | None = None) -> dict[str, Any]:
        """The object for a command that returned `code` having printed `text` (a command that already printed JSON
        of its own, such as `validate` on logs, keeps it under `details`)."""
        d = self.data
        if d["verdict"] is None and text.lstrip().startswith("{"):
            import json

            try:
                own = json.loads(text)
            except ValueError:
                own = None
            if isinstance(own, dict):
                d["details"] = own
                d["verdict"] = own.get("verdict")
                d["counts"] = d["counts"] or {k: own[k] for k in ("events", "total") if isinstance(own.get(k), int)}
                d["seconds"] = own.get("seconds") if d["seconds"] is None else d["seconds"]
                d["notes"] = d["notes"] or [str(n) for n in own.get("notes", [])]
                d["spec"] = d["spec"] or (own["spec"] if isinstance(own.get("spec"), str) else None)
                d["params"] = d["params"] or (own["params"] if isinstance(own.get("params"), dict) else {})
        d["exit_code"] = code
        if error is not None:
            d["error"], d["verdict"] = error, VERDICTS.get(code, "error")
        if d["verdict"] is None:
            d["verdict"] = VERDICTS.get(code, "error")
        if isinstance(d["seconds"], float):
            d["seconds"] = round(d["seconds"], 3)
        return d


def of(args: argparse.Namespace) -> Report | None:
    """The report a command fills (None when it prints text)."""
    return getattr(args, "report", None)


def violation_json(v: Any) -> dict[str, Any] | None:
    """A `Violation` (or None) as the report's `violation`."""
    if v is None:
        return None
    return {"kind": v.kind, "name": v.name, "message": v.message, "location": v.location,
            "steps": len(v.trace.steps) - 1}


def check_fields(res: Any, model: Any) -> dict[str, Any]:
    """The fields of an explicit-state check's `CheckResult`."""
    from ..result import SPEC_ERROR_EXIT

    res.settle_depth()
    notes = list(res.notes)
    verdict = "spec error" if res.exit_code == SPEC_ERROR_EXIT else res.verdict
    fields: dict[str, Any] = {
        "verdict": verdict, "spec": model.name, "params": dict(model.params),
        "violation": violation_json(res.violation),
        "counts": {"distinct": res.distinct, "generated": res.generated, "depth": res.depth,
                   "steps": max(res.depth - 1, 0), "queued": res.queued},
        "seconds": res.seconds, "notes": notes,
        "reductions": {"symmetry": bool(getattr(model, "symmetry", False)),
                       "partial_order": any(n.startswith("partial-order reduction:") for n in notes)},
    }
    if res.bitstate_omitted is not None:
        fields["bitstate"] = {"expected_omitted": res.bitstate_omitted}
    if res.cut:
        fields["notes"] = [f"stopped: {res.cut}", *notes]
    if res.violations:
        fields["details"] = {"violations": [violation_json(v) for v in res.violations]}
    if res.witnesses:
        fields.setdefault("details", {})["witnesses"] = [
            {"name": w.name, "found": w.found, "steps": None if w.trace is None else len(w.trace.steps) - 1}
            for w in res.witnesses]
    return fields


def captured() -> io.StringIO:
    """Where a command's text goes while its JSON is made."""
    return io.StringIO()
