"""Bounded model checking: the same shortest counterexamples as the explicit engine, and honest verdicts."""

from __future__ import annotations

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.replay import replay
from lockstep.checker.smt.bmc import bmc
from lockstep.checker.trace import Trace
from lockstep.specs.lang import SpecError


def both(ref: str, depth: int, deadlock: bool = True, **params: int):
    explicit = check(load_model(ref, params), Options(deadlock=deadlock))
    symbolic = bmc(load_model(ref, params), depth, deadlock=deadlock)
    return explicit, symbolic


def steps(v) -> int:
    return len(v.trace.steps) - 1


def test_diehard_solution_in_six_steps(tmp_path):
    explicit, res = both("diehard", 10)
    v = res.violation
    assert res.verdict == "violation" and res.exit_code == 1
    assert (v.kind, v.name, steps(v)) == ("invariant", "not_solved", 6) == \
        (explicit.violation.kind, explicit.violation.name, steps(explicit.violation))
    assert v.trace.steps[-1].shown["big"] == "4"
    path = tmp_path / "cex.json"
    v.trace.save(str(path))
    done = replay(Trace.load(str(path)))
    assert len(done.states) == 7 and "invariant not_solved is violated" in done.conclusion


def test_peterson_seeded_bug_in_eight_steps():
    explicit, res = both("peterson_buggy", 12)
    v = res.violation
    assert (v.kind, v.name, steps(v)) == ("invariant", "mutual_exclusion", 8) == \
        (explicit.violation.kind, explicit.violation.name, steps(explicit.violation))
    assert v.trace.steps[-1].shown["pc"] == "{0: 'cs', 1: 'cs'}"
    assert res.depth == 8 and len(res.times) == 9
    replay(v.trace)


def test_below_the_shortest_counterexample_the_result_is_inconclusive():
    res = bmc(load_model("peterson_buggy"), 7)
    assert res.verdict == "inconclusive" and res.exit_code == 3 and res.violation is None
    assert "no violation within 7 steps" in res.reason


def test_correct_specs_hold_once_no_longer_loop_free_path_exists():
    """TwoPhase (rm = 3) has diameter 10 (TLC's depth 11 counts states): complete at depth 10."""
    res = bmc(load_model("two_phase", {"rm": 3}), 12)
    assert (res.verdict, res.depth, res.complete) == ("holds", 10, True)


def test_without_the_completeness_check_the_bound_is_all_there_is():
    res = bmc(load_model("two_phase", {"rm": 3}), 12, completeness=False)
    assert (res.verdict, res.depth, res.complete) == ("inconclusive", 12, False)


@pytest.mark.parametrize("name,kind,action,message", [
    ("Divide", "error", "step", "ZeroDivisionError"),
    ("Overflow", "type", "inc", "n := 3 is outside Int(0, 2)"),
    ("Asserting", "assertion", "inc", "n must skip 2"),
])
def test_failing_steps_are_reported_like_the_explicit_engine(name, kind, action, message):
    explicit, res = both(f"tests/models/failing_action.py:{name}", 10, deadlock=False)
    v, e = res.violation, explicit.violation
    assert (v.kind, v.name, steps(v), v.location) == (e.kind, e.name, steps(e), e.location)
    assert (v.kind, v.name) == (kind, action) and message in v.message
    assert v.trace.property == {"kind": "step", "name": action}
    assert "as recorded" in replay(v.trace).conclusion


def test_deadlock_is_checked_unless_disabled():
    explicit, res = both("tcommit", 10)
    assert res.violation.kind == "deadlock" and steps(res.violation) == steps(explicit.violation) == 3
    assert "working" not in res.violation.trace.steps[-1].shown["rm_state"]
    res = bmc(load_model("tcommit"), 10, deadlock=False)
    assert (res.verdict, res.complete, res.depth) == ("holds", True, 6)


def test_constraints_bound_the_paths():
    """Counter: x < 10 is expanded; x = 11 (reached from 9 by add2) breaks below_11 — 6 steps, as explicit."""
    explicit, res = both("tests/models/constrained.py:Counter", 15)
    assert (res.violation.name, steps(res.violation)) == ("below_11", steps(explicit.violation)) == ("below_11", 6)
    assert res.violation.trace.steps[-1].shown["x"] == "11"


def test_initial_states_from_initial_functions():
    """Arith's initial states come from an @initial function; its store step fails at once on x < 0."""
    explicit, res = both("tests/models/term_corners.py:Arith", 3, deadlock=False)
    assert steps(res.violation) == steps(explicit.violation) == 0
    assert res.violation.kind == "type" and "outside its type" in res.violation.message


@pytest.mark.slow
def test_filter_lock_seeded_bug_in_fourteen_steps():
    explicit, res = both("filter_lock_buggy", 16, n=3)
    assert steps(res.violation) == steps(explicit.violation) == 14


def test_an_invariant_that_cannot_be_built_fails_on_the_first_state():
    explicit, res = both("tests/models/broken_predicates.py:BrokenInvariant", 3)
    v, e = res.violation, explicit.violation
    assert (v.kind, v.message, v.location, steps(v)) == (e.kind, e.message, e.location, 0)
    assert "IndexError" in v.message and v.location.endswith("broken_predicates.py:15")


def test_a_constraint_that_cannot_be_built_is_refused():
    with pytest.raises(SpecError) as e:
        bmc(load_model("tests/models/broken_predicates.py:BrokenConstraint"), 3)
    assert "constraint broken cannot be built: IndexError" in str(e.value) and e.value.location.line == 30
