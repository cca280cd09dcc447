"""Replay: re-execute a trace against its spec, step by step, and confirm what it claims."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lockstep.specs.lang.errors import SpecError

from .loader import LoadError, display_name, load_model, resolve
from .model import Model
from .trace import Trace, TraceError


@dataclass
class ReplayResult:
    """The states the spec produced for the trace, and what the last one shows."""

    model: Model
    states: list[Any]
    labels: list[str]
    conclusion: str
    lines: list[str] = field(default_factory=list)


def _differences(model: Model, produced: dict[str, Any], recorded: dict[str, Any]) -> str:
    diffs = []
    for k in model.vars:
        if k not in recorded:
            diffs.append(f"{k} is missing from the trace")
        elif produced.get(k) != recorded[k]:
            diffs.append(f"{k}: spec gives {_compact(produced.get(k))}, trace has {_compact(recorded[k])}")
    extra = [k for k in recorded if k not in model.vars]
    if extra:
        diffs.append("the trace has variables the spec does not: " + ", ".join(extra))
    return "; ".join(diffs[:4]) + (" ..." if len(diffs) > 4 else "")


def _compact(v: Any) -> str:
    text = json.dumps(v, separators=(",", ":"))
    return text if len(text) <= 120 else text[:117] + "..."


def replay(trace: Trace, say: Callable[[Any], None] = lambda _s: None, full: bool = False) -> ReplayResult:
    """Re-run `trace`, saying each step (rich Text lines; `full`: whole states); raise TraceError at
    the first step the spec cannot reproduce."""
    try:
        obj, _ = resolve(trace.spec)
    except (LoadError, SpecError) as e:
        raise TraceError(f"the trace names spec {trace.spec!r}, which cannot be loaded: {e}") from None
    name = display_name(obj)
    if trace.spec_name and trace.spec_name != name:
        raise TraceError(f"the trace belongs to spec {trace.spec_name}, but {trace.spec!r} is spec {name}")
    try:
        model = load_model(trace.spec, trace.params, symmetry=False)
    except (LoadError, SpecError) as e:
        raise TraceError(f"the trace's parameters {trace.params} do not fit spec {name}: {e}") from None
    inits = model.initial_states()
    if sorted(trace.vars) != sorted(model.vars):
        raise TraceError(f"the trace's variables ({', '.join(trace.vars)}) are not spec {model.name}'s "
                         f"({', '.join(model.vars)}): it belongs to another spec")
    first = trace.steps[0].state
    anywhere = (trace.property or {}).get("kind") == "induction"
    if anywhere:  # a counterexample to induction starts from any state satisfying the invariants
        try:
            cur = model.decode_state(first)
        except ValueError as e:
            raise TraceError(f"step 0: not a state of {model.name}: {e}") from None
    else:
        cur = next((s for s in inits if model.encode_state(s) == first), None)
    if cur is None:
        near = _differences(model, model.encode_state(inits[0]), first) if inits else "the spec has no initial state"
        raise TraceError(f"step 0: not an initial state of {model.name} {trace.params}: {near}")
    states, labels, lids = [cur], ["init"], [None]
    show = _Shower(say, model, full)
    show(0, None, "start" if anywhere else "init", cur, trace.loop == 0)
    for i, step in enumerate(trace.steps[1:], start=1):
        try:
            succs = model.successors(cur)
        except Exception:
            f = model.diagnose(cur)
            raise TraceError(f"step {i}: the spec fails before this step: {f.describe()}") from None
        same_label = [(lid, t) for lid, t in succs if model.label_json(lid) == step.action]
        if not same_label:
            raise TraceError(f"step {i} ({_label(step.action)}): {model.explain_disabled(cur, step.action or {})}")
        match = next(((lid, t) for lid, t in same_label if model.encode_state(t) == step.state), None)
        if match is None:
            produced = model.encode_state(same_label[0][1])
            raise TraceError(f"step {i} ({model.label(same_label[0][0])}): the spec's step gives another state: "
                             + _differences(model, produced, step.state))
        show(i, model.label_json(match[0]), "", match[1], trace.loop == i)
        cur = match[1]
        states.append(cur)
        labels.append(model.label(match[0]))
        lids.append(match[0])
    conclusion = _confirm(trace, model, states, lids)
    say(conclusion)
    return ReplayResult(model, states, labels, conclusion)


def _confirm_temporal(trace: Trace, model: Model, states: list[Any], lids: list[Any]) -> str:
    """Check that the lasso is a fair behaviour that violates the temporal property it names."""
    from .liveness import lasso_violates
    from .temporal import fairness, select

    prop = trace.property
    try:
        formula = select(model, str(prop.get("name")))
        overrides = prop.get("overrides") or {}
        fair = fairness(model, {str(k): str(v) for k, v in overrides.items()} if isinstance(overrides, dict) else {})
    except SpecError as e:
        raise TraceError(f"the trace's property cannot be checked: {e}") from None
    why = lasso_violates(model, formula, fair, states, lids, trace.loop)
    if why is not None:
        raise TraceError(f"the trace claims that it violates {formula.name} ({formula.formula}), but it does not: {why}")
    return f"a fair behaviour ({fair.describe()}) that violates {formula.name} ({formula.formula}), as recorded"


def _label(action: dict[str, Any] | None) -> str:
    if not action:
        return "?"
    args = action.get("args") or {}
    if not args:
        return str(action.get("action"))
    return f"{action.get('action')}(" + ", ".join(f"{k}={_compact(v)}" for k, v in args.items()) + ")"


class _Shower:
    """Says each replayed step as the trace listing shows it (`lockstep.checker.render.text`)."""

    def __init__(self, say: Callable[[Any], None], model: Model, full: bool):
        from .render.notation import notation_of

        self.say, self.model, self.full = say, model, full
        self.notation = notation_of(model)
        self.prev: dict[str, Any] | None = None

    def __call__(self, i: int, action: dict[str, Any] | None, fallback: str, st: Any, loop: bool) -> None:
        from .render.text import nodes, step_lines

        cur = nodes(self.model.encode_state(st), self.notation)
        for line in step_lines(i, action, self.prev, cur, self.notation, self.full, loop, fallback):
            self.say(line)
        self.prev = cur


def _confirm(trace: Trace, model: Model, states: list[Any], lids: list[Any]) -> str:
    """Check that the final state shows what the trace claims (a violation, a deadlock, a failure)."""
    prop = trace.property or {}
    kind, name = prop.get("kind"), prop.get("name")
    n = len(trace.steps) - 1
    last = states[-1]
    if kind == "induction":
        return _confirm_induction(model, states, name, prop.get("assumed") or [name])
    if trace.loop is not None:
        if trace.loop == n:
            shape = f"the behaviour stutters in state {n} for ever"
        else:
            target = trace.steps[trace.loop].state
            back = [lid for lid, t in model.successors(last) if model.encode_state(t) == target]
            if not back:
                raise TraceError(f"the trace's loop does not close: no step leads from state {n} back to state {trace.loop}")
            shape = f"the loop back to state {trace.loop} closes ({model.label(back[0])})"
        if kind == "temporal":
            return f"replayed {n} steps; {shape}; " + _confirm_temporal(trace, model, states, lids)
        return f"replayed {n} steps; {shape}"
    if kind == "invariant":
        i = model.violated(last)
        if i < 0 or model.invariant_names[i] != name:
            raise TraceError(f"the trace claims invariant {name} is violated at step {n}, but it holds there")
        return f"replayed {n} steps; invariant {name} is violated in the last state, as recorded"
    if kind == "deadlock":
        if model.successors(last):
            raise TraceError(f"the trace claims a deadlock at step {n}, but actions are enabled there")
        return f"replayed {n} steps; the last state is a deadlock, as recorded"
    if kind == "step":
        try:
            model.successors(last)
        except Exception:
            f = model.diagnose(last)
            return f"replayed {n} steps; then {f.describe()}, as recorded"
        raise TraceError(f"the trace claims a step fails after state {n}, but no step fails there")
    return f"replayed {n} steps"


def _confirm_induction(model: Model, states: list[Any], goal: Any, assumed: Any) -> str:
    """A counterexample to induction: the assumed invariants hold up to the last state, the goal fails there."""
    if not isinstance(goal, str) or not isinstance(assumed, list) or not all(isinstance(a, str) for a in assumed):
        raise TraceError("the trace's property does not name the invariants of a counterexample to induction")
    try:
        for i, st in enumerate(states[:-1]):
            broken = next((a for a in assumed if not model.invariant_holds(a, st)), None)
            if broken is not None:
                raise TraceError(f"the trace assumes {broken} in state {i}, but it does not hold there")
        if model.invariant_holds(goal, states[-1]):
            raise TraceError(f"the trace claims invariant {goal} is violated at step {len(states) - 1}, but it holds there")
    except ValueError as e:
        raise TraceError(str(e)) from None
    return (f"replayed {len(states) - 1} steps from a state satisfying {', '.join(assumed)}; invariant {goal} is "
            "violated in the last state: a counterexample to induction, as recorded")
