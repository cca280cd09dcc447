"""`lockstep.run` and `lockstep.validate`: real processes and the validation of their runs, from Python."""

from __future__ import annotations

import json
import multiprocessing

import pytest

import lockstep
from lockstep.specs.two_phase_commit import TwoPhaseCommit


@pytest.fixture(scope="module")
def tpc(tmp_path_factory):
    """A short run of two-phase commit (a TM and two RMs) through the API, from its class."""
    path = tmp_path_factory.mktemp("api-run") / "tpc.jsonl"
    return lockstep.run(TwoPhaseCommit, rm=2, duration=0.3, seed=1, trace=str(path)), path


def steps_in(path) -> int:
    lines = path.read_text().splitlines()[1:]
    return sum(1 for x in lines if json.loads(x).get("kind") in ("start", "message", "timeout"))


def test_a_run_of_a_spec_class_is_recorded_and_validated(tpc):
    res, path = tpc
    assert multiprocessing.active_children() == []
    assert res.model == "actors" and res.spec == "two_phase_commit" and res.params["rm"] == 2
    assert res.verdict == "valid" and res.valid and res.exit_code == 0 and res.trace == str(path)
    assert sorted(res.stats) == [0, 1, 2] and res.counts["events"] == sum(s["events"] for s in res.stats.values())
    assert res.counts["sent"] >= 4 and res.counts["rejected"] == 0
    assert res.validation.events == steps_in(path) == res.counts["events"]


def test_validate_the_recorded_file_alone(tpc):
    _, path = tpc
    v = lockstep.validate(path)
    assert v.verdict == "valid" and v.model == "actors" and v.events == steps_in(path) and v.exit_code == 0
    assert v.result.events == v.events and v.result.violation is None and v.trace is None  # the validator's own
    assert lockstep.validate(str(path), spec=TwoPhaseCommit).events == v.events  # the class, as a spec


def test_an_edited_state_is_invalid_at_its_line(tpc, tmp_path):
    _, path = tpc
    lines = path.read_text().splitlines()
    i = next(i for i, x in enumerate(lines) if i and json.loads(x).get("kind") == "message"
             and json.loads(x)["msg"]["tag"] == "Prepare")
    e = json.loads(lines[i])
    e["state"]["rm_state"] = "committed"
    lines[i] = json.dumps(e)
    bad = tmp_path / "edited.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    v = lockstep.validate(bad)
    assert v.verdict == "invalid" and v.exit_code == 1 and not v.valid
    assert f"line {i + 1}: event" in v.mismatch and "differs from the spec's" in v.mismatch


def test_a_cut_trace_is_incomplete(tpc, tmp_path):
    _, path = tpc
    lines = path.read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-3]) + "\n")  # no end record
    v = lockstep.validate(cut)
    assert v.verdict == "incomplete" and v.exit_code == 3 and v.incomplete


def test_a_trace_never_chooses_the_code(tpc, tmp_path):
    _, path = tpc
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    head["spec"] = "lockstep.specs.two_phase_commit:TwoPhaseCommit"  # importable, but not a registered name
    other = tmp_path / "named.jsonl"
    other.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    with pytest.raises(lockstep.TraceError, match="not a registered spec name"):
        lockstep.validate(other)
    assert lockstep.validate(other, spec=TwoPhaseCommit).valid


def test_bad_input_is_refused_before_anything_runs():
    with pytest.raises(lockstep.FaultsError, match="duplicating = 0"):
        lockstep.run(TwoPhaseCommit, faults={"duplicate": 0.5})
    with pytest.raises(lockstep.FaultsError, match="drop"):
        lockstep.run(TwoPhaseCommit, faults={"drop": 2})
    with pytest.raises(lockstep.UsageError, match="faults="):
        lockstep.run(TwoPhaseCommit, faults=42)
    with pytest.raises(lockstep.UsageError, match="duration"):
        lockstep.run(TwoPhaseCommit, duration=0)
    with pytest.raises(lockstep.LoadError, match="not an actor spec"):
        lockstep.run("two_phase")
    with pytest.raises(lockstep.SpecError):
        lockstep.run(TwoPhaseCommit, no_such_param=1)
    with pytest.raises(lockstep.TraceError):
        lockstep.validate(__file__)
    assert multiprocessing.active_children() == []


@pytest.mark.slow
def test_run_and_validate_a_population_protocol_and_a_rounds_spec(tmp_path):
    from lockstep.specs.lang.rounds.trees import parse_tree, tree_params

    pop = lockstep.run("phase_clock", n=4, interactions=300, seed=5, trace=str(tmp_path / "clock.jsonl"))
    assert pop.model == "population" and pop.valid and pop.counts["interactions"] == 300
    assert pop.validation.events == 300
    v = lockstep.validate(tmp_path / "clock.jsonl", configurations=True)
    assert v.valid and v.trace is not None and lockstep.replay(v.trace).states
    assert lockstep.validate(tmp_path / "clock.jsonl").trace is None
    with pytest.raises(lockstep.UsageError, match="only for actors and population runs; d2_coloring is a rounds spec"):
        lockstep.run("d2_coloring", faults={"drop": 0.1})
    rounds = lockstep.run("d2_coloring", initiator=2, trace=str(tmp_path / "star.jsonl"),
                          **tree_params(parse_tree("star:6", 0)))
    assert rounds.model == "rounds" and rounds.valid and rounds.finished and rounds.problems == []
    assert lockstep.validate(tmp_path / "star.jsonl").valid
    assert multiprocessing.active_children() == []
