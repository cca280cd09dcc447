"""Traces: counterexamples and runs, in one JSON format (ITF with Lockstep's `#meta`).

A trace file is an ITF trace (`vars`, `states`, optional `loop`); the top-level `#meta`
holds `lockstep`: the spec reference, parameters, the property and the verdict; each
state's `#meta` holds its index and the step that produced it (`action`, `args`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .model import Model

ITF_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
FORMAT_VERSION = 1


class TraceError(Exception):
    """A trace file is malformed or does not belong to the spec it names."""


@dataclass
class Step:
    """One state of a trace and the action that produced it (None for the initial state)."""

    action: dict[str, Any] | None
    state: dict[str, Any]  # ITF values per variable
    shown: dict[str, str] = field(default_factory=dict)  # readable values, for printing
    label: str = "init"


@dataclass
class Trace:
    """A sequence of states of one spec instance, with what it demonstrates."""

    spec: str
    spec_name: str
    params: dict[str, Any]
    vars: list[str]
    steps: list[Step]
    property: dict[str, Any] = field(default_factory=dict)  # {"kind": ..., "name": ...}
    message: str = ""
    location: str | None = None
    loop: int | None = None
    loop_action: dict[str, Any] | None = None  # the step from the last state back to `loop`

    @classmethod
    def from_states(cls, model: Model, path: list[tuple[Any, Any]], **kw: Any) -> Trace:
        """Build from [(None, s0), (label id, s1), ...] of model states."""
        steps = []
        for lid, st in path:
            steps.append(Step(
                None if lid is None else model.label_json(lid),
                model.encode_state(st),
                model.show_state(st),
                "init" if lid is None else model.label(lid),
            ))
        loop = kw.get("loop")
        if loop is not None and loop < len(path) - 1 and "loop_action" not in kw:
            back = path[loop][1]
            kw["loop_action"] = next((model.label_json(lid) for lid, t in model.successors(path[-1][1]) if t == back), None)
        return cls(model.ref, model.name, dict(model.params), list(model.vars), steps, **kw)

    # -- file format ---------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        states = []
        for i, s in enumerate(self.steps):
            meta: dict[str, Any] = {"index": i}
            if s.action is not None:
                meta.update(s.action)
                meta["label"] = s.label
            else:
                meta["action"] = "init"
            states.append({"#meta": meta, **s.state})
        out: dict[str, Any] = {
            "#meta": {
                "format": "ITF",
                "format-description": ITF_DESCRIPTION,
                "source": self.spec,
                "description": f"Lockstep trace of {self.spec_name}",
                "lockstep": {
                    "version": FORMAT_VERSION,
                    "spec": self.spec,
                    "spec_name": self.spec_name,
                    "params": self.params,
                    "property": self.property,
                    "message": self.message,
                    "location": self.location,
                },
            },
            "vars": self.vars,
            "states": states,
        }
        if self.loop is not None:
            out["loop"] = self.loop
            if self.loop_action is not None:
                out["#meta"]["lockstep"]["loop_action"] = self.loop_action
        return out

    def save(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f, indent=1)
            f.write("\n")

    @classmethod
    def load(cls, path: str) -> Trace:
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            raise TraceError(f"cannot read trace {path}: {e.strerror}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            hint = " (the file ends early: truncated?)" if e.pos >= len(text.rstrip()) else ""
            raise TraceError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}{hint}") from None
        return cls.from_json(data, path)

    @classmethod
    def from_json(cls, data: Any, path: str = "<trace>") -> Trace:
        def need(cond: bool, what: str) -> None:
            if not cond:
                raise TraceError(f"{path}: not a Lockstep trace: {what}")

        need(isinstance(data, dict), "the top level is not a JSON object")
        meta = data.get("#meta")
        need(isinstance(meta, dict) and isinstance(meta.get("lockstep"), dict),
             'no "#meta.lockstep" section (written by `lockstep check --out`)')
        lm = meta["lockstep"]
        need(isinstance(lm.get("spec"), str), '"#meta.lockstep.spec" is missing')
        need(isinstance(lm.get("params", {}), dict), '"#meta.lockstep.params" is not an object')
        need(isinstance(data.get("vars"), list), '"vars" is missing')
        states = data.get("states")
        need(isinstance(states, list) and len(states) > 0, '"states" is missing or empty')
        steps = []
        for i, s in enumerate(states):
            need(isinstance(s, dict), f"state {i} is not an object")
            smeta = s.get("#meta", {})
            need(isinstance(smeta, dict), f"state {i} has a malformed #meta")
            action = None
            if i > 0:
                need(isinstance(smeta.get("action"), str), f"state {i} does not name its action in #meta")
                action = {"action": smeta["action"], "args": smeta.get("args", {})}
                if "label" in smeta and not isinstance(smeta["label"], str):
                    action["label"] = smeta["label"]
            values = {k: v for k, v in s.items() if k != "#meta"}
            steps.append(Step(action, values, label=smeta.get("label", "init") if i else "init"))
        loop = data.get("loop")
        need(loop is None or (isinstance(loop, int) and 0 <= loop < len(steps)), '"loop" is not a state index')
        closing = lm.get("loop_action")
        need(closing is None or (isinstance(closing, dict) and isinstance(closing.get("action"), str)),
             '"#meta.lockstep.loop_action" does not name an action')
        return cls(lm["spec"], lm.get("spec_name", lm["spec"]), dict(lm.get("params", {})), list(data["vars"]),
                   steps, lm.get("property", {}) or {}, lm.get("message", "") or "", lm.get("location"), loop, closing)

