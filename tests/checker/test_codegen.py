"""The compiled concrete interpreter agrees with the reference evaluator of terms, everywhere.

Random states (reachable or not) of every registered typed spec and of the test models:
the compiled successors, invariant checks and fused level expansion must match the direct
evaluation of each transition's terms (`lockstep.checker.interpret`), including where a step fails.
"""

from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockstep.checker import interpret
from lockstep.checker.loader import load_model, resolve
from lockstep.checker.typed_model import TypedModel
from lockstep.specs.lang import Spec
from lockstep.specs.registry import SPECS
from tests.conftest import model_path


def typed(name: str) -> bool:
    obj, _ = resolve(name)
    return isinstance(obj, type) and issubclass(obj, Spec)


TYPED = sorted(filter(typed, SPECS)) + [model_path("failing_action.py") + f":{c}" for c in ("Divide", "Overflow", "Asserting")] \
    + [model_path("constrained.py") + f":{c}" for c in ("Counter", "Chain")] + ["tests.specs.test_lang:Network"]


_models: dict = {}


def cached_model(spec):
    """Each spec is built and compiled once for all of its examples."""
    if spec not in _models:
        _models[spec] = load_model(spec)
    return _models[spec]


def state_strategy(prog):
    parts = []
    for dom in prog.slot_doms:
        if dom.kind == "set":
            parts.append(st.integers(0, (1 << dom.elem.size) - 1))
        elif dom.kind == "bool":
            parts.append(st.booleans())
        else:
            parts.append(st.integers(dom.lo, dom.hi))
    return st.tuples(*parts)


def reference_successors(prog, state):
    out = []
    for tid, t in enumerate(prog.transitions):
        succ = interpret.run_transition(prog, t, state)  # raises interpret.Failure where it fails
        if succ is not None:
            out.append((tid, succ))
    return out


# Specs of hundreds of transitions (the reference evaluator takes a tenth of a second per state): fewer random
# states by default, as many as the others in the slow run.
LARGE = [s for s in TYPED if s.startswith(("autobahn", "psmr", "ssp_"))]
EXAMPLES, LARGE_EXAMPLES = 150, 40


@pytest.mark.parametrize("spec", [s for s in TYPED if s not in LARGE])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_code_matches_the_reference_evaluator(spec, data):
    matches_the_reference_evaluator(spec, data)


@pytest.mark.parametrize("spec", LARGE)
@settings(max_examples=LARGE_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_code_of_large_specs_matches_the_reference_evaluator(spec, data):
    matches_the_reference_evaluator(spec, data)


@pytest.mark.slow
@pytest.mark.parametrize("spec", LARGE)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_code_of_large_specs_matches_the_reference_evaluator_on_more_states(spec, data):
    matches_the_reference_evaluator(spec, data)


def matches_the_reference_evaluator(spec: str, data: st.DataObject) -> None:
    """One random state: the compiled successors, invariants and fused expansion are the reference's."""
    model = cached_model(spec)
    assert isinstance(model, TypedModel)
    prog = model.prog
    state = data.draw(state_strategy(prog))
    try:
        expected = reference_successors(prog, state)
    except interpret.Failure:
        with pytest.raises(Exception):  # noqa: B017 - any failure; the engine diagnoses it
            model.successors(state)
        return
    assert model.successors(state) == expected
    first_false = next((i for i, p in enumerate(prog.invariants) if not interpret.evaluate(p.term, state)), -1)
    assert model.violated(state) == first_false

    # the fused level expansion: same successors, incremental fingerprints equal to full ones
    expand = model.level_expander(deadlock=False, partitioned=False)
    parents, new = {}, []
    r = expand([(model.fingerprint(state), state)], parents, new, lambda t: False, None,
               (lambda t: -1) if not prog.constraints else model.outside, sys.maxsize, lambda k, g: None, None, None, 1, 0)
    assert r == len(expected)
    successors = {t for _, t in expected if not (prog.constraints and model.outside(t) >= 0)}
    assert {t for _, t in new} == successors
    assert all(f == model.fingerprint(t) for f, t in new)
