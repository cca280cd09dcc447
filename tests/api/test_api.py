"""`import lockstep`: the API on spec classes, plain specs, modules and names."""

import json

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

    run = subprocess.run([sys.executable, "-m", "pdoc", "lockstep.api", "lockstep.runs", "lockstep.testing", "-o", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    page = (tmp_path / "lockstep" / "testing.html").read_text()
    assert "conforms" in page and "Drive the implementation behind" in page
    runs = (tmp_path / "lockstep" / "runs.html").read_text()
    assert "ValidationResult" in runs and "Run <code>spec</code> as real OS processes" in runs


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


def test_an_actor_spec_class_is_checked_as_the_command_checks_it(cli):
    from lockstep.specs.two_phase_commit import TwoPhaseCommit

    reduced = lockstep.check(TwoPhaseCommit, deadlock=False, engine="scalar")
    r = cli("check", "two_phase_commit", "--no-deadlock", "--quiet", "--engine", "scalar")
    assert reduced.holds and r.code == 0 and f"{reduced.distinct:,} distinct states" in r.out  # one code path
    full = lockstep.check(TwoPhaseCommit, deadlock=False, por=False, engine="scalar", witnesses=False)
    assert full.holds and full.distinct == 716 > reduced.distinct == 394
    assert "partial-order reduction off with dfs=True: its cycle proviso is the breadth-first one" in \
        lockstep.check(TwoPhaseCommit, deadlock=False, dfs=True, witnesses=False).notes
    with pytest.raises(lockstep.UsageError, match="por=True with dfs=True"):
        lockstep.check(TwoPhaseCommit, por=True, dfs=True)
    with pytest.raises(lockstep.UsageError, match="not an actor spec"):
        lockstep.check(TwoPhase, por=True)


def test_the_witnesses_of_a_check_and_their_traces():
    from lockstep.specs.two_phase_commit import TwoPhaseCommit

    res = lockstep.check(TwoPhaseCommit, deadlock=False, por=False, engine="scalar")
    [w] = res.witnesses
    assert w.name == "all_commit" and w.found and len(w.trace.steps) - 1 == 6
    assert w.trace.property == {"kind": "witness", "name": "all_commit"}
    assert "witness all_commit holds in the last state" in lockstep.replay(w.trace).conclusion
    assert lockstep.check(TwoPhaseCommit, deadlock=False, engine="scalar", witnesses=False).witnesses == []


def test_assert_holds_fails_on_an_unreachable_witness():
    from lockstep.testing import assert_holds
    from tests.models.vacuous import Reachable, Witnessed

    assert assert_holds(Reachable).witnesses[0].found
    with pytest.raises(AssertionError, match="witness reaches_five is unreachable"):
        assert_holds(Witnessed)
    res = lockstep.check(Witnessed)
    assert res.holds and res.exit_code == 1  # the invariants hold, the check fails: as `lockstep check` exits
    assert lockstep.check(Reachable, max_depth=2).exit_code == 3


def test_check_out_saves_the_witness_and_replay_confirms_it(cli, tmp_path):
    out = tmp_path / "witness.json"
    r = cli("check", "two_phase_commit", "--no-deadlock", "--quiet", "--engine", "scalar", "--out", str(out))
    assert r.code == 0 and f"Trace written to {out}" in r.out
    r = cli("replay", str(out))
    assert r.code == 0 and "witness all_commit holds in the last state: it is reached, as recorded" in r.out
    data = json.loads(out.read_text())
    data["states"] = data["states"][:-1]  # one step short of the witness
    out.write_text(json.dumps(data))
    r = cli("replay", str(out))
    assert r.code == 2 and "claims witness all_commit holds" in r.err


def test_check_out_with_several_witnesses_writes_one_file_each(cli, tmp_path):
    from tests.conftest import model_path

    spec = model_path("vacuous.py") + ":TwoReachable"
    r = cli("check", spec, "--quiet", "--out", str(tmp_path / "w.json"))
    assert r.code == 0 and not (tmp_path / "w.json").exists()
    for name, steps in (("reaches_one", 1), ("reaches_three", 3)):
        path = tmp_path / f"w.{name}.json"
        assert f"Trace written to {path}" in r.out
        r2 = cli("replay", str(path), "--spec", spec)
        assert r2.code == 0 and f"replayed {steps} steps; witness {name} holds in the last state" in r2.out


def test_temporal_properties_under_fairness():
    from lockstep.specs.examples.ewd840 import EWD840

    live = lockstep.check(EWD840, properties=["Liveness"], deadlock=False)
    assert live.holds and live.distinct == 302  # as `lockstep check ewd840 --property Liveness --no-deadlock`
    unfair = lockstep.check(EWD840, properties=["Liveness"], fairness={"system": "none"}, deadlock=False)
    v = unfair.violation
    assert v.kind == "temporal" and v.trace.loop is not None and "Liveness" in v.message
    assert "fair behaviour" in lockstep.replay(v.trace).conclusion
    with pytest.raises(lockstep.SpecError, match="no temporal property 'Safety'"):
        lockstep.check(EWD840, properties=["Safety"])
    with pytest.raises(lockstep.UsageError, match="fairness applies to temporal properties"):
        lockstep.check(EWD840, fairness={"system": "none"})
    for engine, workers in (("scalar", 1), ("vector", 1), ("vector", 2)):  # the same graph, the same verdicts
        again = lockstep.check(EWD840, properties=["Liveness"], fairness={"system": "none"}, deadlock=False,
                               engine=engine, workers=workers)
        assert (again.verdict, again.distinct, len(again.violation.trace.steps)) == ("violation", 302, len(v.trace.steps))
    with pytest.raises(lockstep.UsageError, match="two threads at most"):
        lockstep.check(EWD840, properties=["Liveness"], workers=3)


def test_simulate_an_actor_spec_class():
    from lockstep.specs.two_phase_commit import TwoPhaseCommit

    res = lockstep.simulate(TwoPhaseCommit, runs=30, depth=40, seed=2, deadlock=False)
    assert res.violation is None and res.runs == 30 and res.distinct > 1
