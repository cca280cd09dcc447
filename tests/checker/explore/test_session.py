"""The explorer's session without a browser: plain specs, a choice of initial states, failing steps, traces."""

from __future__ import annotations

import pytest

from lockstep.checker.explore.session import ExploreError, Session
from lockstep.checker.loader import load_model
from lockstep.checker.trace import Step, Trace, TraceError
from tests.conftest import model_path


def test_plain_spec_steps_back_and_forth():
    s = Session(load_model(model_path("plain_counter.py")))
    v = s.view()
    assert v["step"] == 0 and [a["label"] for a in v["actions"]] == ["inc_a", "inc_b"]
    assert v["invariants"] == [{"name": "sum_below_7", "holds": True}] and v["chart"] is None
    for _ in range(4):
        s.step(0)
    for _ in range(3):
        s.step(0)  # only inc_b is left once a is at its bound
    v = s.view()
    assert v["state"] == [{"text": "state = (4, 3)", "changed": True}]
    assert v["changes"] == ["state[1] = 3  (was 2)"] and v["invariants"][0]["holds"] is False
    s.goto(2)
    assert s.view()["path"] == ["init", "inc_a", "inc_a"]
    s.back()
    s.back()
    s.back()  # the single initial state stays
    assert s.view()["step"] == 0
    with pytest.raises(ExploreError, match="no step 5"):
        s.step(5)


def test_several_initial_states_are_offered():
    model = load_model(model_path("term_corners.py") + ":Arith")
    inits = model.initial_states()
    s = Session(model)
    v = s.view()
    assert len(inits) > 1 and v["choosing_initial"] and v["step"] == -1 and len(v["actions"]) == len(inits)
    assert v["actions"][0]["label"].startswith("initial state 0: x = ")
    s.step(1)
    v = s.view()
    assert v["step"] == 0 and v["state"][0]["text"] == f"x = {model.prog.field('x').decode(inits[1])}"
    s.back()
    assert s.view()["choosing_initial"]


def test_a_failing_step_is_shown():
    s = Session(load_model(model_path("failing_action.py") + ":Divide"))
    for _ in range(3):
        s.step(0)
    v = s.view()
    assert v["actions"] == [] and "ZeroDivisionError" in v["failure"] and not v["deadlock"]
    with pytest.raises(ExploreError, match="no step is possible here"):
        s.step(0)


def test_a_trace_of_another_spec_is_refused():
    model = load_model("diehard")
    bad = Trace("diehard", "DieHard", {}, ["x"], [Step(None, {"x": 1})])
    with pytest.raises(TraceError, match="variables"):
        Session(model, bad)


def test_explore_refuses_a_trace_of_another_spec(cli, eager_cex):
    r = cli("explore", "diehard", "--trace", str(eager_cex))
    assert r.code == 2 and "a trace of spec TwoPhaseCommitEager, not of DieHard" in r.err
