"""Model-based testing of an implementation against a spec, driven and shrunk by hypothesis.

`conforms(Spec, Adapter)` builds a hypothesis state machine whose one rule draws an action the
spec enables (with its arguments) and performs it on a fresh implementation through the adapter;
after every step the implementation's observed state must be one the spec allows after that
action. Nondeterminism is handled by keeping every spec state consistent with what has been
observed so far. A failure is shrunk by hypothesis to a shortest action sequence and reported as a
`NonConformance` carrying an ITF trace that `lockstep replay` re-executes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from lockstep.checker.model import Model
from lockstep.checker.render.text import plain_listing
from lockstep.checker.trace import Trace
from lockstep.checker.typed_model import TypedModel


class NonConformance(AssertionError):
    """The implementation did something the spec does not allow; `trace` is the spec's side of it."""

    def __init__(self, message: str, trace: Trace):
        super().__init__(message)
        self.trace = trace


class Adapter:
    """What `conforms` needs from an adapter (subclassing this is optional).

    The adapter class is instantiated once per test case, so each case starts from a fresh
    implementation. An action is performed by calling the adapter's method of the same name with the
    action's arguments as keywords (or `perform(action, args)` if it has no such method); `observe()`
    returns the implementation's state as a dict of spec field names to Python values (a subset of the
    fields is fine), or, for a plain spec, the state itself.
    """

    def perform(self, action: str, args: dict[str, Any]) -> None:
        raise NotImplementedError(f"the adapter has no method {action}() and no perform()")

    def observe(self) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        """Release the implementation (a client, a process); called after each test case."""


def _view(model: Model) -> Callable[[Any], Any]:
    """A spec state as the adapter's observations are compared with it."""
    if isinstance(model, TypedModel):
        return model.prog.decode
    return lambda st: st


def _matches(observed: Any, spec_view: Any) -> bool:
    if isinstance(observed, dict) and isinstance(spec_view, dict):
        return all(k in spec_view and spec_view[k] == v for k, v in observed.items())
    return observed == spec_view


def machine(model: Model, adapter: Callable[[], Any]) -> type:
    """The hypothesis `RuleBasedStateMachine` class that tests `adapter` against `model`."""
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, rule

    decode = _view(model)
    memo: dict[Any, Any] = {}

    def view(state: Any) -> Any:  # shrinking re-runs the same paths many times: decode each state once
        v = memo.get(state)
        if v is None:
            v = memo[state] = decode(state)
        return v

    steps_of: dict[Any, list[tuple[str, Any, Any]]] = {}

    def successors(state: Any) -> list[tuple[str, Any, Any]]:
        """(label, label id, successor) of every enabled step of `state`."""
        out = steps_of.get(state)
        if out is None:
            out = steps_of[state] = [(model.label(lid), lid, t) for lid, t in model.successors(state)]
        return out

    inits = model.initial_states()
    if isinstance(model, TypedModel):
        fields = {f.name for f in model.prog.fields}
    else:
        fields = None

    class Conformance(RuleBasedStateMachine):
        def __init__(self) -> None:
            __tracebackhide__ = True
            super().__init__()
            self.impl = adapter()
            first = self.impl.observe()
            self._check_fields(first)
            # each possible spec state, with the path (label ids and states) that reached it
            self.possible = [(s, [(None, s)]) for s in inits if _matches(first, view(s))]
            if not self.possible:
                raise NonConformance(f"the implementation starts in {first!r}, which is no initial state of "
                                     f"{model.name}", Trace.from_states(model, [(None, inits[0])],
                                                                         property=self._claim("start", first)))

        def _check_fields(self, observed: Any) -> None:
            __tracebackhide__ = True
            if fields is not None and isinstance(observed, dict):
                unknown = sorted(set(observed) - fields)
                if unknown:
                    raise TypeError(f"the adapter observes {', '.join(unknown)}, which spec {model.name} does not "
                                    f"have (its fields: {', '.join(sorted(fields))})")

        def _claim(self, action: str, observed: Any) -> dict[str, Any]:
            return {"kind": "conformance", "name": action, "observed": repr(observed)}

        @rule(data=st.data())
        def step(self, data: Any) -> None:
            __tracebackhide__ = True
            options: dict[str, tuple[Any, dict[str, Any]]] = {}
            for s, _ in self.possible:
                for lab, lid, _t in successors(s):
                    if lab not in options:
                        options[lab] = (lid, model.label_json(lid))
            if not options:
                return  # the spec deadlocks here: nothing more to try
            label = data.draw(st.sampled_from(sorted(options)), label="action")
            act = options[label][1]
            name, args = act["action"], dict(act.get("args", {}))
            call = getattr(self.impl, name, None)
            python_args = _python_args(model, options[label][0], args)
            try:
                if callable(call) and name not in ("observe", "close", "perform"):
                    call(**python_args)
                else:
                    self.impl.perform(name, python_args)
            except Exception as e:
                self._diverged(label, None, f"the implementation raised {type(e).__name__}: {e}")
            observed = self.impl.observe()
            self._check_fields(observed)
            after = []
            for s, path in self.possible:
                for lab, lid, t in successors(s):
                    if lab == label and _matches(observed, view(t)):
                        after.append((t, [*path, (lid, t)]))
            if not after:
                self._diverged(label, observed)
            self.possible = _dedupe(after)

        def _diverged(self, label: str, observed: Any, failure: str | None = None) -> None:
            __tracebackhide__ = True
            s, path = self.possible[0]
            lid, t = next((lid, t) for lab, lid, t in successors(s) if lab == label)
            expected = view(t)
            if failure is not None:
                what = failure
            elif isinstance(observed, dict) and isinstance(expected, dict):
                diff = {k: (v, expected.get(k)) for k, v in observed.items() if expected.get(k) != v}
                what = "; ".join(f"{k}: implementation {a!r}, spec {b!r}" for k, (a, b) in diff.items())
            else:
                what = f"implementation {observed!r}, spec {expected!r}"
            steps = len(path)
            message = (f"step {steps} ({label}) leaves the implementation in a state the spec does not allow: "
                       f"{what}" if failure is None else f"step {steps} ({label}): {what}")
            trace = Trace.from_states(model, [*path, (lid, t)], property=self._claim(label, observed),
                                      message=message)
            raise NonConformance(message + "\nThe spec's run (its last state is what the spec expected):\n"
                                 + plain_listing(trace, model), trace)

        def teardown(self) -> None:
            close = getattr(self.impl, "close", None)
            if callable(close):
                close()

    Conformance.__name__ = f"Conformance_{model.name}"
    return Conformance


def _dedupe(pairs: list[tuple[Any, list]]) -> list[tuple[Any, list]]:
    seen, out = set(), []
    for st, path in pairs:
        if st not in seen:
            seen.add(st)
            out.append((st, path))
    return out


def _python_args(model: Model, lid: Any, args: dict[str, Any]) -> dict[str, Any]:
    """The action's arguments as Python values (typed specs keep them so; plain labels carry JSON)."""
    if isinstance(model, TypedModel):
        return dict(model.prog.transitions[lid].args)
    return args


def conforms(model: Model, adapter: Callable[[], Any], *, max_steps: int = 20, max_examples: int = 100,
             settings: Any = None) -> None:
    """Test the implementation behind `adapter` against `model` with hypothesis; raises `NonConformance`
    (a shrunk counterexample with its trace) if it ever leaves the spec."""
    __tracebackhide__ = True  # a failing test starts with the divergence, not Lockstep's frames
    from hypothesis import HealthCheck, Phase
    from hypothesis import settings as Settings
    from hypothesis.stateful import run_state_machine_as_test

    if not (inspect.isclass(adapter) or callable(adapter)):
        raise TypeError("adapter must be a class (or a callable) that makes a fresh adapter per test case")
    cls = machine(model, adapter)
    # no explain phase: its list of the lines only failing cases ran would name Lockstep's, not the test's
    chosen = settings or Settings(max_examples=max_examples, stateful_step_count=max_steps, deadline=None,
                                  suppress_health_check=[HealthCheck.too_slow], database=None,
                                  phases=[p for p in Phase if p is not Phase.explain])
    try:
        run_state_machine_as_test(cls, settings=chosen)
    except NonConformance as e:  # raised afresh here: the failure shows the test's line, not hypothesis's frames
        raise e.with_traceback(None) from None
