"""Lockstep in a user's own tests: assertions that a spec holds or is violated, hypothesis strategies
for spec values and reachable states, and model-based testing of a real implementation (`conforms`).

    from lockstep.testing import assert_holds, assert_violates, conforms

    def test_two_phase():
        assert_holds(TwoPhase, rm=3)

    def test_the_store_follows_the_spec():
        conforms(KVSpec, KVAdapter)        # hypothesis drives the implementation, shrinks a failure

The pytest plugin (registered on install) adds the `lockstep` marker, which runs a test once per
combination of spec parameters: `@pytest.mark.lockstep(rm=[2, 3, 4])` with the `spec_params` fixture.
"""

from __future__ import annotations

from typing import Any

from lockstep.checker.result import CheckResult, Violation

from .conformance import Adapter, NonConformance
from .strategies import values

__all__ = ["Adapter", "NonConformance", "assert_holds", "assert_violates", "conforms", "reachable_states", "values"]


def assert_holds(spec: Any, **options: Any) -> CheckResult:
    """Check `spec` exhaustively (as `lockstep.check`, same options and spec parameters) and fail with the
    numbered counterexample if a property is violated or the search was cut short, or if a `@witness` of the
    spec is unreachable (the spec may check less than it seems) or fails to evaluate."""
    __tracebackhide__ = True  # a failing test starts with the spec's message, not Lockstep's frames
    from lockstep.api import check

    res = check(spec, **options)
    if res.violation is not None:
        raise AssertionError(res.violation.text(res.model))
    if not res.holds:
        raise AssertionError(f"inconclusive: {res.cut}; {res.distinct:,} states explored without a violation")
    for w in res.witnesses:
        if w.found is False:
            raise AssertionError(f"witness {w.name} is unreachable: no reachable state satisfies it "
                                 f"({w.result.distinct:,} states) — the spec may check less than it seems")
        if w.failed:
            raise AssertionError(f"witness {w.name} failed to evaluate: {w.result.violation.text(res.model)}")
        if not w.found:
            raise AssertionError(f"witness {w.name} not reached within the bounds ({w.result.cut})")
    return res


def assert_violates(spec: Any, property: str | None = None, max_steps: int | None = None,
                    **options: Any) -> Violation:
    """Check `spec` and fail unless it violates a property — `property` if named (an invariant, an action
    whose step fails, or "deadlock") — within `max_steps` steps; returns the violation."""
    __tracebackhide__ = True  # a failing test starts with the spec's message, not Lockstep's frames
    from lockstep.api import check

    res = check(spec, max_depth=max_steps, **options)
    v = res.violation
    if v is None:
        within = f" within {max_steps} steps" if max_steps is not None else ""
        raise AssertionError(f"expected a violation{within}, but {res.verdict}: {res.distinct:,} states explored")
    if property is not None and property not in (v.name, v.kind):
        raise AssertionError(f"expected {property} to be violated, but {v.kind} {v.name} was:\n{v.text(res.model)}")
    return v


def conforms(spec: Any, adapter: Any, *, max_steps: int = 20, max_examples: int = 100, settings: Any = None,
             **params: int) -> None:
    """Drive the implementation behind `adapter` (a class: one fresh instance per test case; see `Adapter`)
    with random sequences of the actions `spec` enables and check after every step that its observed
    state is one the spec allows; raises `NonConformance` with a shrunk trace (`.trace`, replayable with
    `lockstep replay`) otherwise."""
    __tracebackhide__ = True  # a failing test starts with the spec's message, not Lockstep's frames
    from lockstep.api import model

    from .conformance import conforms as run

    run(model(spec, **params), adapter, max_steps=max_steps, max_examples=max_examples, settings=settings)


def reachable_states(spec: Any, max_steps: int = 20, **params: int) -> Any:
    """A hypothesis strategy for states of `spec` reached by random walks of at most `max_steps` steps
    (dicts of field values for typed specs)."""
    from lockstep.api import model

    from .strategies import reachable

    return reachable(model(spec, **params), max_steps)
