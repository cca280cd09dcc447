"""Trace files (ITF) and replay: round trips, reproduction, and rejection of traces that do not fit."""

from __future__ import annotations

import json

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.replay import replay
from lockstep.checker.trace import Trace, TraceError
from tests.conftest import model_path


@pytest.fixture
def diehard_trace(tmp_path):
    res = check(load_model("diehard"), Options())
    path = tmp_path / "cex.json"
    res.violation.trace.save(str(path))
    return path


def test_trace_file_is_itf(diehard_trace):
    data = json.loads(diehard_trace.read_text())
    assert data["#meta"]["format"] == "ITF"
    assert data["vars"] == ["big", "small", "mbt::actionTaken", "mbt::nondetPicks"]
    assert data["#meta"]["varTypes"] == {"big": "Int", "small": "Int", "mbt::actionTaken": "Str", "mbt::nondetPicks": "{}"}
    assert data["states"][0] == {"#meta": {"index": 0, "action": "init"}, "big": {"#bigint": "0"}, "small": {"#bigint": "0"},
                                 "mbt::actionTaken": "init", "mbt::nondetPicks": {}}
    assert "params" not in data and all(set(s) == set(data["vars"]) | {"#meta"} for s in data["states"])
    assert data["states"][-1]["big"] == {"#bigint": "4"}
    meta = data["#meta"]["lockstep"]
    assert meta["spec"] == "diehard" and meta["params"] == {"big_cap": 5, "small_cap": 3}
    assert meta["property"] == {"kind": "invariant", "name": "not_solved"}
    assert data["states"][1]["#meta"]["action"] in ("fill_big", "fill_small")


def test_replay_reproduces_the_violation(diehard_trace):
    lines = []
    res = replay(Trace.load(str(diehard_trace)), say=lines.append)
    assert len(res.states) == 7 and "invariant not_solved is violated" in res.conclusion
    assert any("big = 4" in line for line in lines)


def test_replay_of_a_run_through_records_and_sets(tmp_path):
    """A TwoPhase run (sets of Prepared/Commit/Abort records) written and replayed step by step."""
    model = load_model("two_phase", {"rm": 2})
    path_states = [(None, model.initial_states()[0])]
    for _ in range(6):
        lid, nxt = model.successors(path_states[-1][1])[-1]
        path_states.append((lid, nxt))
    trace = Trace.from_states(model, path_states)
    path = tmp_path / "run.json"
    trace.save(str(path))
    data = json.loads(path.read_text())
    assert any("#set" in json.dumps(st["msgs"]) and "tag" in json.dumps(st["msgs"]) for st in data["states"])
    res = replay(Trace.load(str(path)))
    assert res.conclusion == "replayed 6 steps" and res.states == [s for _, s in path_states]


def test_edited_state_is_rejected_at_its_step(diehard_trace):
    data = json.loads(diehard_trace.read_text())
    data["states"][3]["small"] = {"#bigint": "2"}
    diehard_trace.write_text(json.dumps(data))
    with pytest.raises(TraceError, match=r"step 3 \(.*\): the spec's step gives another state: small: spec gives"):
        replay(Trace.load(str(diehard_trace)))


def test_a_mismatch_is_shown_element_by_element_in_the_spec_notation(cli, tmp_path):
    """An edited map entry and a dropped envelope are named as the trace listing names them, not as ITF JSON."""
    path = tmp_path / "cex.json"
    assert cli("check", "two_phase_commit", "--quiet", "--out", str(path)).code == 1
    data = json.loads(path.read_text())
    data["states"][2]["tm_state"]["#map"][1][1] = "aborted"
    path.write_text(json.dumps(data))
    r = cli("replay", str(path))
    assert r.code == 2 and r.err.strip().endswith('tm_state[1]: spec gives "init", trace has "aborted"'), r.err
    data = json.loads(path.read_text())
    data["states"][2]["tm_state"]["#map"][1][1] = "init"
    dropped = data["states"][2]["network"]["#set"].pop()
    assert dropped == {"src": {"#bigint": "1"}, "dst": {"#bigint": "0"}, "msg": {"tag": "No", "value": {"#tup": []}}}
    path.write_text(json.dumps(data))
    r = cli("replay", str(path))
    assert r.code == 2 and r.err.strip().endswith("network: the spec has Envelope(src=1, dst=0, msg=No()), the trace "
                                                  "does not"), r.err
    assert "#" not in r.err


def test_disabled_step_is_rejected_with_its_guard(tmp_path):
    res = check(load_model("peterson_buggy"), Options())
    data = res.violation.trace.to_json()
    data["states"][1]["#meta"]["action"] = "enter"  # not enabled from the initial state
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    expected = r"step 1 \(enter\(p=.*\)\): enter\(p=.*\) is not enabled here \(guard at .*peterson.py:\d+\)"
    with pytest.raises(TraceError, match=expected):
        replay(Trace.load(str(path)))


def test_trace_of_another_spec_or_parameters_is_rejected(diehard_trace):
    data = json.loads(diehard_trace.read_text())
    data["#meta"]["lockstep"]["spec"] = "two_phase"
    diehard_trace.write_text(json.dumps(data))
    with pytest.raises(TraceError, match="belongs to spec DieHard"):
        replay(Trace.load(str(diehard_trace)))
    data["#meta"]["lockstep"]["spec"] = "diehard"
    data["#meta"]["lockstep"]["params"] = {"big_cap": 7, "small_cap": 3}
    diehard_trace.write_text(json.dumps(data))
    with pytest.raises(TraceError, match="step .*"):
        replay(Trace.load(str(diehard_trace)))


def test_claimed_violation_must_hold_in_the_last_state(diehard_trace):
    data = json.loads(diehard_trace.read_text())
    data["states"] = data["states"][:-1]
    diehard_trace.write_text(json.dumps(data))
    with pytest.raises(TraceError, match="claims invariant not_solved is violated at step 5, but it holds"):
        replay(Trace.load(str(diehard_trace)))


def test_malformed_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TraceError, match="not valid JSON"):
        Trace.load(str(bad))
    bad.write_text('{"#meta": {"lockstep": {"spec": "diehard"}}, "vars": [], "states": [')
    with pytest.raises(TraceError, match="truncated"):
        Trace.load(str(bad))
    bad.write_text('{"vars": [], "states": []}')
    with pytest.raises(TraceError, match="not a trace"):
        Trace.load(str(bad))
    with pytest.raises(TraceError, match="cannot read"):
        Trace.load(str(tmp_path / "missing.json"))


def test_plain_spec_traces_replay(tmp_path):
    res = check(load_model(model_path("plain_counter.py")), Options())
    path = tmp_path / "plain.json"
    res.violation.trace.save(str(path))
    out = replay(Trace.load(str(path)), spec=model_path("plain_counter.py"))
    assert "sum_below_7" in out.conclusion and len(out.states) == 8


def test_step_failure_traces_replay(tmp_path):
    res = check(load_model(model_path("failing_action.py") + ":Divide"), Options())
    path = tmp_path / "div.json"
    res.violation.trace.save(str(path))
    assert "ZeroDivisionError" in replay(Trace.load(str(path)), spec=model_path("failing_action.py") + ":Divide").conclusion
