"""Traces: counterexamples and runs, in one JSON format (ITF with Lockstep's `#meta`).

A trace file is an ITF trace (`vars`, `states`, optional `loop`, Apalache ADR-015). The top-level
`#meta` holds `varTypes` (each variable's type in Apalache's type syntax) and `lockstep`: the spec
reference, parameters, the property and the verdict, and for a lasso the step that closes the loop
(`loop_action`: an action, or `"stutter"`). Each state's `#meta` holds its index and the step that
produced it (`action`, `args`); each state also carries Quint's `mbt::actionTaken` and
`mbt::nondetPicks`, so Quint's model-based testing tools can read the actions.

A trace without `#meta.lockstep` (written by Quint or Apalache) is read as a *foreign* trace: its
variables, and the actions in `mbt::actionTaken`, are matched to a spec the user names.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from lockstep.specs.registry import SPECS

from .errors import TraceError
from .itf import UNIT, infer_type, normalize, type_string, variant
from .model import Model
from .safeio import replacing
from .safejson import JSONInputError, loads, read_text

ITF_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
FORMAT_VERSION = 2
ACTION_TAKEN, NONDET_PICKS = "mbt::actionTaken", "mbt::nondetPicks"
PROPERTY_KINDS = ("invariant", "deadlock", "step", "induction", "temporal", "run", "conformance", "witness")


def trusted_spec(named: Any, given: str | None, origin: str | None) -> str:
    """The spec to load for a trace that names `named`: the one the user gave (`--spec`), the trace's own
    reference if the trace was made in this process (`origin` None) or that reference is a registered spec
    name; otherwise a TraceError. A data file never chooses what code runs."""
    if given:
        return given
    if isinstance(named, str) and named and (origin is None or named in SPECS):
        return named
    where = origin or "the trace"
    if not named:
        raise TraceError(f"{where} does not say which Lockstep spec it is a trace of (it was not written by "
                         "Lockstep): name the spec with --spec SPEC")
    raise TraceError(f"{where} names spec {named!r}, which is not a registered spec name (see `lockstep list`): "
                     "a trace file does not choose the code that checks it; name the spec yourself with "
                     f"--spec SPEC (e.g. --spec {shell_word(str(named))}, if that is the code you mean to run)")


def follow_up(command: str, path: str, spec: str) -> str:
    """The command line that reads back a file a command wrote of spec `spec` (`lockstep replay cex.json`): with
    `--spec` unless the file records a registered name, which `trusted_spec` takes from the file itself."""
    line = f"lockstep {command} {shell_word(path)}"
    return line if registered_name(spec) in SPECS else f"{line} --spec {shell_word(spec)}"


def shell_word(text: str) -> str:
    """`text` as one shell word that no command reads as an option (a path starting with `-` is given as ./-...)."""
    return shlex.quote("./" + text if text.startswith("-") else text)


def registered_name(ref: str) -> str:
    """`ref` as a registered spec name when it names one's target (so the trace replays anywhere), else `ref`."""
    if ref in SPECS:
        return ref
    return next((name for name, target in SPECS.items() if target == ref), ref)


@dataclass
class Step:
    """One state of a trace and the action that produced it (None for the initial state)."""

    action: dict[str, Any] | None  # {"action": name, "args": {name: ITF value}} (+ "label" for plain specs)
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
    origin: str | None = None  # the file it was read from (None: built in this process)
    loop_action: dict[str, Any] | str | None = None  # the step from the last state back to `loop`, or "stutter"
    var_types: dict[str, str] | None = None  # Apalache types of the variables
    picks: dict[str, str] = field(default_factory=dict)  # every action parameter of the spec -> its type
    foreign: bool = False  # written by another tool (no #meta.lockstep)
    source: str | None = None  # a foreign trace's #meta.source

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
        trace = cls(registered_name(model.ref), model.name, dict(model.params), list(model.vars), steps, **kw)
        trace.var_types, trace.picks = _model_types(model)
        if trace.loop is not None and trace.loop_action is None:
            trace.loop_action = _closing_step(model, path, trace.loop)
        return trace

    def values(self) -> list[dict[str, Any]]:
        """Each step's state as Python values (see `itf.to_python`): `trace.values()[-1]["x"]`."""
        from .itf import to_python

        return [{k: to_python(v) for k, v in s.state.items()} for s in self.steps]

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
            states.append({"#meta": meta, **s.state, ACTION_TAKEN: meta["action"],
                           NONDET_PICKS: self._nondet_picks(s.action)})
        types = dict(self.var_types or _inferred_types(self))
        types[ACTION_TAKEN] = "Str"
        types[NONDET_PICKS] = "{ " + ", ".join(f"{n}: None(UNIT) | Some({t})" for n, t in self.picks.items()) + " }" \
            if self.picks else "{}"
        lockstep: dict[str, Any] = {"version": FORMAT_VERSION, "spec": self.spec, "spec_name": self.spec_name,
                                    "params": self.params, "property": self.property, "message": self.message,
                                    "location": self.location}
        if self.loop is not None:
            lockstep["loop_action"] = self.loop_action
        out: dict[str, Any] = {
            "#meta": {
                "format": "ITF",
                "format-description": ITF_DESCRIPTION,
                "source": self.spec,
                "description": f"Lockstep trace of {self.spec_name}",
                "varTypes": types,
                "lockstep": lockstep,
            },
            "vars": [*self.vars, ACTION_TAKEN, NONDET_PICKS],
            "states": states,
        }
        if self.loop is not None:
            out["loop"] = self.loop
        return out

    def _nondet_picks(self, action: dict[str, Any] | None) -> dict[str, Any]:
        args = (action or {}).get("args") or {}
        return {n: variant("Some", args[n]) if n in args else variant("None", UNIT) for n in self.picks}

    def save(self, path: str) -> None:
        try:
            with replacing(path) as f:
                json.dump(self.to_json(), f, indent=1)
                f.write("\n")
        except OSError as e:
            raise TraceError(f"cannot write the trace to {path}: {e.strerror}") from None

    @classmethod
    def load(cls, path: str) -> Trace:
        try:
            data = loads(read_text(path, "trace"), path)
        except JSONInputError as e:
            raise TraceError(str(e)) from None
        trace = cls.from_json(data, path)
        trace.origin = path
        return trace

    @classmethod
    def from_json(cls, data: Any, path: str = "<trace>") -> Trace:
        """A trace from its ITF JSON; every field is checked for its type (TraceError naming it)."""
        def need(cond: bool, what: str) -> None:
            if not cond:
                raise TraceError(f"{path}: not a trace: {what}")

        need(isinstance(data, dict), "the top level is not a JSON object")
        meta = data.get("#meta", {})
        need(isinstance(meta, dict), '"#meta" is not an object')
        lm = meta.get("lockstep")
        foreign = lm is None
        need(foreign or isinstance(lm, dict), '"#meta.lockstep" is not an object')
        lm = lm or {}
        spec = lm.get("spec", "")
        need(isinstance(spec, str) and (foreign or spec), '"#meta.lockstep.spec" is missing or not a string')
        spec_name = lm.get("spec_name", spec)
        need(isinstance(spec_name, str), '"#meta.lockstep.spec_name" is not a string')
        params = lm.get("params", {})
        need(isinstance(params, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in params.values()),
             '"#meta.lockstep.params" is not an object of integers')
        prop = lm.get("property", {})
        prop = {} if prop is None else prop
        need(isinstance(prop, dict), '"#meta.lockstep.property" is not an object')
        need(prop.get("kind") is None or prop.get("kind") in PROPERTY_KINDS,
             f'"#meta.lockstep.property.kind" is {prop.get("kind")!r}, not one of {", ".join(PROPERTY_KINDS)}')
        need(prop.get("name") is None or isinstance(prop.get("name"), str), '"#meta.lockstep.property.name" is not a string')
        message, location = lm.get("message") or "", lm.get("location")
        need(isinstance(message, str), '"#meta.lockstep.message" is not a string')
        need(location is None or isinstance(location, str), '"#meta.lockstep.location" is not a string')
        names = data.get("vars")
        need(isinstance(names, list) and all(isinstance(v, str) for v in names), '"vars" is missing or not a list of names')
        names = list(dict.fromkeys(v for v in names if not v.startswith("mbt::")))
        states = data.get("states")
        need(isinstance(states, list) and len(states) > 0, '"states" is missing or empty')
        steps = []
        for i, s in enumerate(states):
            need(isinstance(s, dict), f"state {i} is not an object")
            smeta = s.get("#meta", {})
            need(isinstance(smeta, dict), f"state {i} has a malformed #meta")
            values = {k: v for k, v in s.items() if k != "#meta" and not k.startswith("mbt::")}
            missing = [v for v in names if v not in values]
            need(not missing, f"state {i} has no value for variable {missing[0]!r}" if missing else "")
            action = None
            if i > 0:
                action = _step_action(smeta, s, foreign, lambda what, i=i: need(False, f"state {i} {what}"))
            label = smeta.get("label") if isinstance(smeta.get("label"), str) else (action or {}).get("action", "?")
            steps.append(Step(action, values, label=label if i else "init"))
        loop = data.get("loop")
        need(loop is None or (isinstance(loop, int) and not isinstance(loop, bool) and 0 <= loop < len(steps)),
             '"loop" is not a state index')
        closing = lm.get("loop_action")
        need(closing is None or closing == "stutter" or
             (isinstance(closing, dict) and isinstance(closing.get("action"), str)
              and isinstance(closing.get("args", {}), dict)),
             '"#meta.lockstep.loop_action" is neither "stutter" nor an action')
        source = meta.get("source")
        return cls(spec, spec_name, dict(params), names, steps, prop, message, location, loop,
                   loop_action=closing, foreign=foreign, source=source if isinstance(source, str) else None)


def _step_action(smeta: dict[str, Any], state: dict[str, Any], foreign: bool, bad: Any) -> dict[str, Any] | None:
    """The action a state records: Lockstep's `#meta` (action, args, label), else Quint's mbt:: variables."""
    name = smeta.get("action")
    if name is None and foreign:
        name = state.get(ACTION_TAKEN)
        if name is None:
            return None
        if not isinstance(name, str):
            bad(f"has a {ACTION_TAKEN} that is not a string")
        picks = state.get(NONDET_PICKS, {})
        if not isinstance(picks, dict):
            bad(f"has a {NONDET_PICKS} that is not a record")
        args = {k: v["value"] for k, v in picks.items()
                if isinstance(v, dict) and v.get("tag") == "Some" and "value" in v}
        return {"action": name, "args": args}
    if not isinstance(name, str):
        if foreign:
            return None
        bad("does not name its action in #meta")
    args = smeta.get("args", {})
    if not isinstance(args, dict):
        bad('has "#meta.args" that is not an object')
    action: dict[str, Any] = {"action": name, "args": args}
    if "label" in smeta and not isinstance(smeta["label"], str):
        action["label"] = smeta["label"]  # a plain spec's label that is not a string (its ITF value)
    return action


def _model_types(model: Model) -> tuple[dict[str, str] | None, dict[str, str]]:
    """(variable -> Apalache type, action parameter -> type) of a typed model; (None, {}) for a plain one."""
    prog = getattr(model, "prog", None)
    if prog is None:
        return None, {}
    types = {f.name: type_string(f.dom) for f in prog.fields}
    picks: dict[str, str] = {}
    for t in prog.transitions:
        for (name, _), dom in zip(t.args, t.arg_doms):
            picks.setdefault(name, type_string(dom))
    return types, picks


def _inferred_types(trace: Trace) -> dict[str, str]:
    return {v: infer_type([s.state.get(v) for s in trace.steps]) for v in trace.vars}


def _closing_step(model: Model, path: list[tuple[Any, Any]], loop: int) -> dict[str, Any] | str:
    """How a lasso's last state goes back to state `loop`: the first action that leads there, or "stutter"
    when the lasso ends by stuttering in its last state."""
    last = path[-1][1]
    if loop == len(path) - 1:
        return "stutter"
    target = path[loop][1]
    for lid, t in model.successors(last):
        if t == target:
            return model.label_json(lid)
    return "stutter"


def same_values(a: Any, b: Any) -> bool:
    """Whether two ITF values are the same value (whatever integer and set forms their writers used)."""
    return a == b or normalize(a) == normalize(b)

