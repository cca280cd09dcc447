"""`import lockstep`: the API on spec classes, plain specs, modules and names."""

import pytest

import lockstep
from lockstep.specs.examples.diehard import DieHard
from lockstep.specs.examples.two_phase import TwoPhase
from tests.models import plain_counter
from tests.models.plain_counter import Counters


@pytest.mark.parametrize("engine", ["auto", "vector", "scalar"])
def test_check_a_spec_class_on_every_explicit_engine(engine):
    res = lockstep.check(TwoPhase, rm=3, engine=engine)
    assert res.holds and res.distinct == 288 and res.depth == 11


def test_a_class_and_its_name_give_the_same_result():
    assert lockstep.check(TwoPhase, rm=4).distinct == lockstep.check("two_phase", rm=4).distinct == 1568


def test_the_counterexample_is_a_trace_that_names_the_spec():
    v = lockstep.check(DieHard).violation
    assert v.name == "not_solved" and len(v.trace.steps) - 1 == 6
    assert v.trace.spec == "diehard"  # a registered spec is named by its registered name
    assert v.trace.steps[-1].state["big"] == {"#bigint": "4"}  # the file format
    assert v.trace.values()[-1] == {"big": 4, "small": 3} and v.trace.values()[0] == {"big": 0, "small": 0}


def test_trace_values_are_python_values():
    from lockstep.checker.itf import Tagged, encode_plain, to_python

    v = {"s": frozenset({1, 2}), "m": {0: None, 1: (1, "a")}, "q": [1, 2], "b": True}
    assert to_python(encode_plain(v)) == v
    rec = to_python({"tag": "Prepare", "value": {"slot": {"#bigint": "3"}}})
    assert rec == Tagged("Prepare", {"slot": 3}) and rec.slot == 3 and hash(rec) == hash(Tagged("Prepare", {"slot": 3}))
    assert to_python({"tag": "Some", "value": {"#bigint": "1"}}) == 1
    assert to_python({"tag": "None", "value": {"#tup": []}}) is None
    with pytest.raises(AttributeError, match="Prepare has no field 'view'"):
        rec.view  # noqa: B018


def test_plain_specs_as_class_object_and_module():
    by_class = lockstep.check(Counters, bound=3, limit=20)
    assert by_class.holds and by_class.distinct == 16 == lockstep.check(Counters(bound=3, limit=20)).distinct
    assert lockstep.check(plain_counter).verdict in ("holds", "violation")


def test_options_and_bad_input():
    assert lockstep.check(TwoPhase, rm=3, max_depth=3).verdict == "inconclusive"
    assert lockstep.check(TwoPhase, rm=3, invariants=["consistent"]).holds
    with pytest.raises(lockstep.LoadError):
        lockstep.check(42)
    with pytest.raises(lockstep.LoadError):
        lockstep.check("no_such_spec")
    with pytest.raises(lockstep.UsageError):
        lockstep.check(TwoPhase, engine="fast")
    with pytest.raises(lockstep.SpecError):
        lockstep.check(TwoPhase, no_such_param=1)


def test_the_api_reference_builds(tmp_path):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "pdoc", "lockstep.api", "lockstep.testing", "-o", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    page = (tmp_path / "lockstep" / "testing.html").read_text()
    assert "conforms" in page and "Drive the implementation behind" in page


def test_prove_by_induction_and_its_counterexample():
    weak = lockstep.prove(TwoPhase, "consistent", rm=3)
    assert weak.verdict == "not inductive" and weak.trace is not None and len(weak.trace.steps) == 2
    strong = lockstep.prove(TwoPhase, "consistent", rm=3, assumed=[
        "commit_msg_means_tm_committed", "abort_msg_means_tm_aborted", "committed_rm_saw_commit",
        "commit_msg_means_all_prepared", "tm_prepared_were_sent", "prepared_rm_aborts_only_on_abort_msg"])
    assert strong.verdict == "proved" and strong.exit_code == 0


def test_bmc_finds_the_shortest_counterexample():
    res = lockstep.bmc(DieHard, depth=8)
    assert res.violation is not None and res.violation.name == "not_solved"
    assert len(res.violation.trace.steps) - 1 == 6 and res.violation.trace.values()[-1]["big"] == 4
    assert lockstep.bmc(TwoPhase, depth=4, rm=2).violation is None


def test_symbolic_engines_refuse_plain_specs_and_bad_bounds():
    with pytest.raises(lockstep.LoadError, match="plain spec"):
        lockstep.bmc(Counters, bound=3, limit=20)
    with pytest.raises(lockstep.UsageError, match="k=0"):
        lockstep.prove(TwoPhase, "consistent", k=0)


def test_simulate_finds_the_bug_and_the_seed_fixes_the_walks():
    a = lockstep.simulate(DieHard, runs=500, depth=20, seed=3)
    b = lockstep.simulate(DieHard, runs=500, depth=20, seed=3)
    assert a.violation is not None and a.violation.name == "not_solved"
    assert a.violating_walk == b.violating_walk and a.violation.trace.values() == b.violation.trace.values()
    assert lockstep.simulate(TwoPhase, runs=50, depth=30, rm=3).violation is None
    with pytest.raises(lockstep.UsageError, match="runs=0"):
        lockstep.simulate(TwoPhase, runs=0)


def test_replay_a_counterexample_from_a_file_and_refuse_a_foreign_path(tmp_path):
    v = lockstep.check(DieHard).violation
    v.trace.save(str(tmp_path / "cex.json"))
    res = lockstep.replay(tmp_path / "cex.json")
    assert "invariant not_solved is violated in the last state" in res.conclusion
    assert lockstep.replay(v.trace, spec=DieHard).states[-1] == res.states[-1]
