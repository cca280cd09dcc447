"""Replay: re-execute a trace against its spec, step by step, and confirm what it claims.

The spec is the one the user names (`spec=`, `--spec`); a trace read from a file chooses it only when
it names a registered spec. A foreign trace (written by Quint or Apalache) is matched to the spec by
variable names (exactly, or ignoring case and underscores, and Quint's `module::` prefixes); its
steps are the spec's steps that produce its states, preferring the action `mbt::actionTaken` names.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lockstep.specs.lang.errors import SpecError

from .loader import LoadError, display_name, load_model, resolve
from .model import Model
from .trace import Trace, TraceError, same_values, trusted_spec

MAX_INITIAL = 1_000_000  # initial states replay may enumerate to find a trace's first state


@dataclass
class ReplayResult:
    """The states the spec produced for the trace, and what the last one shows."""

    model: Model
    states: list[Any]
    labels: list[str]
    conclusion: str
    lines: list[str] = field(default_factory=list)


def _differences(model: Model, produced: dict[str, Any], recorded: dict[str, Any]) -> str:
    """Where the spec's state and the trace's differ, element by element, in the notation of the trace listing
    (`tm_state[1]: spec gives "init", trace has "aborted"`), never as ITF JSON."""
    from .render.notation import notation_of
    from .render.values import diff, from_itf

    doms = notation_of(model).doms
    diffs = []
    for k in model.vars:
        if k not in recorded:
            diffs.append(f"{k} is missing from the trace")
        elif not same_values(produced.get(k), recorded[k]):
            try:
                spec_side, trace_side = from_itf(produced.get(k), doms.get(k)), from_itf(recorded[k], doms.get(k))
            except (TypeError, ValueError, KeyError):  # a value the notation cannot read: shown as it is
                diffs.append(f"{k}: spec gives {_compact(produced.get(k))}, trace has {_compact(recorded[k])}")
                continue
            diffs += [_said(c) for c in diff(k, spec_side, trace_side)] or [
                f"{k}: spec gives {_shown(spec_side)}, trace has {_shown(trace_side)}"]
    extra = [k for k in recorded if k not in model.vars]
    if extra:
        diffs.append("the trace has variables the spec does not: " + ", ".join(extra))
    return "; ".join(diffs[:4]) + (" ..." if len(diffs) > 4 else "")


def _said(c: Any) -> str:
    """One difference (a `render.values.Change` from the spec's value to the trace's) as a phrase."""
    at = f" at position {c.at}" if c.at is not None else ""
    if c.kind == "changed":
        return f"{c.path}: spec gives {_shown(c.old)}, trace has {_shown(c.new)}"
    if c.kind == "added":
        return (f"{c.path}: the trace has entry {_shown(c.new)}, the spec none" if c.entry
                else f"{c.path}: the trace has {_shown(c.new)}{at}, the spec does not")
    return (f"{c.path}: the spec has entry {_shown(c.old)}, the trace none" if c.entry
            else f"{c.path}: the spec has {_shown(c.old)}{at}, the trace does not")


def _shown(node: Any) -> str:
    from .render.values import fmt

    return _cut(fmt(node).plain)


def _compact(v: Any) -> str:
    """An ITF value in the spec notation (`Envelope(src=0, ...)`, `{0: "init"}`), cut at 120 characters."""
    from .render.values import fmt, from_itf

    try:
        return _cut(fmt(from_itf(v)).plain)
    except (TypeError, ValueError, KeyError):
        return _cut(json.dumps(v, separators=(",", ":")))


def _cut(text: str) -> str:
    return text if len(text) <= 120 else text[:117] + "..."


def _key(name: str) -> str:
    """A name as matched across tools: Quint's module prefix dropped, case and underscores ignored."""
    return name.rsplit("::", 1)[-1].replace("_", "").lower()


def load_for(trace: Trace, spec: str | None = None, params: dict[str, int] | None = None) -> Model:
    """The model a trace is replayed against: the trusted spec (see `trusted_spec`) with the trace's parameters
    (a foreign trace: `params`, else the spec's defaults)."""
    ref = trusted_spec(trace.spec, spec, trace.origin)
    if params and not trace.foreign:
        raise TraceError(f"the trace fixes its parameters ({trace.params}); --param applies to traces of other tools")
    try:
        obj, _ = resolve(ref)
    except (LoadError, SpecError) as e:
        raise TraceError(f"spec {ref!r} cannot be loaded: {e}") from None
    name = display_name(obj)
    if not trace.foreign and trace.spec_name and trace.spec_name != name:
        raise TraceError(f"the trace belongs to spec {trace.spec_name}, but {ref!r} is spec {name}")
    values = dict(params or {}) if trace.foreign else trace.params
    try:
        return load_model(ref, values, symmetry=False)
    except (LoadError, SpecError) as e:
        raise TraceError(f"the parameters {values} do not fit spec {name}: {e}") from None


def _rename(trace: Trace, model: Model) -> None:
    """Map a foreign trace's variables onto the spec's, by name (TraceError if they do not correspond)."""
    by_key: dict[str, str] = {}
    for v in trace.vars:
        by_key.setdefault(_key(v), v)
    mapping = {}
    for mv in model.vars:
        tv = mv if mv in trace.vars else by_key.get(_key(mv))
        if tv is None:
            raise TraceError(f"the trace has no variable for {model.name}'s {mv!r} (its variables: "
                             f"{', '.join(trace.vars)}); variables are matched by name")
        mapping[tv] = mv
    extra = [v for v in trace.vars if v not in mapping]
    if extra:
        raise TraceError(f"the trace's variables {', '.join(extra)} are not variables of {model.name} "
                         f"({', '.join(model.vars)})")
    for step in trace.steps:
        step.state = {mapping[k]: v for k, v in step.state.items() if k in mapping}
    trace.vars = list(model.vars)


def replay(trace: Trace, say: Callable[[Any], None] = lambda _s: None, spec: str | None = None,
           params: dict[str, int] | None = None, full: bool = False) -> ReplayResult:
    """Re-run `trace` against `spec` (default: see `trusted_spec`), saying each step (rich Text lines; `full`:
    whole states); raise TraceError at the first step the spec cannot reproduce, or when what the trace claims
    does not hold."""
    model = load_for(trace, spec, params)
    learn = getattr(model, "learn_vars", None)
    if callable(learn):  # a plain spec names its variables by its states' fields
        head = next(iter(_initial_states(model)), None)
        if head is not None:
            learn(head)
    if trace.foreign:
        _rename(trace, model)
    elif sorted(trace.vars) != sorted(model.vars):
        raise TraceError(f"the trace's variables ({', '.join(trace.vars)}) are not spec {model.name}'s "
                         f"({', '.join(model.vars)}): it belongs to another spec")
    anywhere = (trace.property or {}).get("kind") == "induction"
    cur = _first_state(model, trace, anywhere)
    states, labels, lids = [cur], ["init"], [None]
    show = _Shower(say, model, full)
    show(0, None, "start" if anywhere else "init", cur, trace.loop == 0)
    for i, step in enumerate(trace.steps[1:], start=1):
        lid, nxt, label = _step(model, trace, i, step, cur)
        show(i, None if lid is None else model.label_json(lid), label, nxt, trace.loop == i)
        cur = nxt
        states.append(cur)
        labels.append(label)
        lids.append(lid)
    conclusion = _confirm(trace, model, states, lids)
    say(conclusion)
    return ReplayResult(model, states, labels, conclusion)


def _decoded(model: Model, values: dict[str, Any], i: int) -> Any:
    try:
        return model.decode_state(values)
    except ValueError as e:
        raise TraceError(f"step {i}: not a state of {model.name}: {e}") from None


def _matches(model: Model, st: Any, recorded: dict[str, Any], decoded: Any) -> bool:
    if decoded is not None:
        return st == decoded
    enc = model.encode_state(st)
    return all(same_values(enc[k], recorded.get(k)) for k in model.vars)


def _typed(model: Model) -> bool:
    return getattr(model, "prog", None) is not None


def _first_state(model: Model, trace: Trace, anywhere: bool) -> Any:
    first = trace.steps[0].state
    decoded = _decoded(model, first, 0) if _typed(model) else None
    if anywhere:  # a counterexample to induction starts from any state satisfying the invariants
        if decoded is None:
            raise TraceError("a counterexample to induction needs a typed spec")
        return decoded
    inits = _initial_states(model)
    match = next((s for s in inits if _matches(model, s, first, decoded)), None)
    if match is None:
        inits = _initial_states(model)
        head = next(iter(inits), None)
        near = _differences(model, model.encode_state(head), first) if head is not None else "the spec has no initial state"
        raise TraceError(f"step 0: not an initial state of {model.name} {model.params}: {near}")
    return match


def _initial_states(model: Model):
    """The spec's initial states, lazily; refused (estimated first where the spec can count them) when
    there are more than MAX_INITIAL to search for the trace's first state."""
    prog = getattr(model, "prog", None)
    if prog is not None:
        count = math.prod(len(prog.init_choices.get(i, (0,))) for i in range(prog.nslots))
        if count > MAX_INITIAL:
            raise _too_many_initial(model, count)
        return model.initial_states()
    obj = getattr(model, "obj", None)
    counter = getattr(obj, "initial_count", None)
    if callable(counter):
        count = counter()
        if count > MAX_INITIAL:
            raise _too_many_initial(model, count)
    return _bounded_init(model)


def _bounded_init(model: Model):
    init = getattr(getattr(model, "obj", None), "init", None)
    if not callable(init):
        yield from model.initial_states()
        return
    for n, st in enumerate(init()):
        if n >= MAX_INITIAL:
            raise _too_many_initial(model, None)
        yield st


def _too_many_initial(model: Model, count: int | None) -> TraceError:
    size = f"{count:,}" if count is not None else f"more than {MAX_INITIAL:,}"
    return TraceError(f"spec {model.name} {model.params} has {size} initial states, more than the limit of "
                      f"{MAX_INITIAL:,} that replay searches for the trace's first state; replay a trace of a "
                      "smaller instance (or validate the run it comes from, which does not enumerate them)")


def _same_label(model_json: dict[str, Any], recorded: dict[str, Any] | None, foreign: bool) -> bool:
    if not recorded:
        return False
    if foreign:
        if _key(str(model_json.get("action"))) != _key(str(recorded.get("action"))):
            return False
        given = recorded.get("args") or {}
        mine = model_json.get("args") or {}
        return all(k in mine and same_values(mine[k], v) for k, v in given.items())
    if model_json.get("action") != recorded.get("action"):
        return False
    if "label" in model_json or "label" in recorded:
        return same_values(model_json.get("label"), recorded.get("label"))
    return same_values(model_json.get("args") or {}, recorded.get("args") or {})


def _step(model: Model, trace: Trace, i: int, step: Any, cur: Any) -> tuple[Any, Any, str]:
    """(label id, state, label) of the spec's step that the trace's step i is."""
    decoded = _decoded(model, step.state, i) if _typed(model) else None
    try:
        succs = model.successors(cur)
    except Exception:
        f = model.diagnose(cur)
        raise TraceError(f"step {i}: the spec fails before this step: {f.describe()}") from None
    same_label = [(lid, t) for lid, t in succs if _same_label(model.label_json(lid), step.action, trace.foreign)]
    match = next(((lid, t) for lid, t in same_label if _matches(model, t, step.state, decoded)), None)
    if match is not None:
        return match[0], match[1], model.label(match[0])
    if trace.foreign:  # another tool's action names may not be ours: any step to the recorded state
        match = next(((lid, t) for lid, t in succs if _matches(model, t, step.state, decoded)), None)
        if match is not None:
            return match[0], match[1], model.label(match[0])
        if _matches(model, cur, step.state, decoded):
            return None, cur, "(stutter)"
        produced = model.encode_state(succs[0][1]) if succs else {}
        raise TraceError(f"step {i}: no step of {model.name} leads to the recorded state"
                         + (f"; e.g. {model.label(succs[0][0])} gives: " + _differences(model, produced, step.state)
                            if succs else ": no action is enabled"))
    if not same_label:
        raise TraceError(f"step {i} ({_label(step.action)}): {model.explain_disabled(cur, step.action or {})}")
    produced = model.encode_state(same_label[0][1])
    raise TraceError(f"step {i} ({model.label(same_label[0][0])}): the spec's step gives another state: "
                     + _differences(model, produced, step.state))


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


def _loop_shape(trace: Trace, model: Model, states: list[Any]) -> str:
    """Check that the lasso's loop closes as recorded; say how."""
    n, loop, closing = len(states) - 1, trace.loop, trace.loop_action
    assert loop is not None
    if closing == "stutter" or (closing is None and loop == n):
        if loop != n:
            raise TraceError(f"the trace says it ends by stuttering, but its loop starts at state {loop}, not at "
                             f"its last state {n}")
        return f"the behaviour stutters in state {n} for ever"
    target = states[loop]
    steps = [(lid, t) for lid, t in model.successors(states[-1]) if t == target]
    if isinstance(closing, dict):
        steps = [(lid, t) for lid, t in steps if _same_label(model.label_json(lid), closing, False)]
        if not steps:
            raise TraceError(f"the trace's loop does not close: {_label(closing)} does not lead from state {n} "
                             f"back to state {loop}")
    elif not steps:
        raise TraceError(f"the trace's loop does not close: no step leads from state {n} back to state {loop}")
    return (f"{model.label(steps[0][0])} leads from state {n} back to itself" if loop == n
            else f"the loop back to state {loop} closes ({model.label(steps[0][0])})")


def _confirm(trace: Trace, model: Model, states: list[Any], lids: list[Any]) -> str:
    """Check that the final state shows what the trace claims (a violation, a deadlock, a failure, a lasso)."""
    prop = trace.property or {}
    kind, name = prop.get("kind"), prop.get("name")
    n = len(trace.steps) - 1
    last = states[-1]
    if kind == "temporal" and trace.loop is None:
        raise TraceError(f"the trace claims that it violates temporal property {name}, but it is not a lasso: it has "
                         'no "loop" (an infinite behaviour needs one)')
    if trace.loop is not None and kind not in ("temporal", None):
        raise TraceError(f"the trace is a lasso, but claims a {kind} violation, which a finite trace shows")
    if kind == "induction":
        return _confirm_induction(model, states, name, prop.get("assumed") or [name])
    if trace.loop is not None:
        shape = _loop_shape(trace, model, states)
        if kind == "temporal":
            return f"replayed {n} steps; {shape}; " + _confirm_temporal(trace, model, states, lids)
        return f"replayed {n} steps; {shape}"
    if kind == "invariant":  # the one claimed: others may be violated too (a check of --invariant NAME)
        if name not in model.invariant_names:
            raise TraceError(f"the trace claims invariant {name} is violated, but spec {model.name} has no such "
                             f"invariant ({', '.join(model.invariant_names)})")
        if _holds(model, name, last):
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
    if kind == "witness":  # `lockstep check --out` of a spec whose witnesses are reached
        from .witnesses import witness_holds

        try:
            reached = witness_holds(model, str(name), last)
        except ValueError as e:
            raise TraceError(f"the trace claims a witness is reached: {e}") from None
        if not reached:
            raise TraceError(f"the trace claims witness {name} holds at step {n}, but it does not hold there")
        return f"replayed {n} steps; witness {name} holds in the last state: it is reached, as recorded"
    if kind == "conformance":  # a model-based test: the spec's run, and what the implementation did instead
        return (f"replayed {n} steps: a run of {model.name}; its last step ({name}) is where the implementation "
                f"differed (it observed {prop.get('observed', '?')})")
    if trace.foreign:
        broken = [inv for inv in model.invariant_names if not _holds(model, inv, last)]
        where = f"; in the last state invariant {', '.join(broken)} {'is' if len(broken) == 1 else 'are'} violated" \
            if broken else "; the invariants hold in the last state"
        return f"replayed {n} steps of a trace {'from ' + trace.source if trace.source else 'of another tool'}: a " \
               f"behaviour of {model.name}{where}"
    return f"replayed {n} steps"


def _holds(model: Model, name: str, st: Any) -> bool:
    try:
        return model.invariant_holds(name, st)
    except (ValueError, NotImplementedError):
        idx = model.violated(st)
        return idx < 0 or model.invariant_names[idx] != name


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

