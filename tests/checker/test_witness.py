"""`@witness`: each must be reachable (with the trace that reaches it); an unreachable one fails the check."""

from __future__ import annotations

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.replay import replay
from lockstep.checker.vector import check_vector
from lockstep.checker.witnesses import search_witness, witness_names
from tests.conftest import model_path

WITNESSED = model_path("vacuous.py") + ":Witnessed"


def test_an_unreachable_witness_exits_1_and_a_reachable_one_shows_its_trace(cli):
    r = cli("check", WITNESSED, "--quiet")
    assert r.code == 1, r.out
    assert "witness reaches_three reached in 3 steps" in r.out
    assert "witness reaches_five is unreachable" in r.out
    assert cli("check", model_path("vacuous.py") + ":Reachable", "--quiet").code == 0


def test_a_bound_leaves_a_witness_inconclusive(cli):
    r = cli("check", model_path("vacuous.py") + ":Reachable", "--quiet", "--max-depth", "2")
    assert r.code == 3 and "not reached within the bounds" in r.out


def test_actor_witness_with_and_without_reduction():
    model = load_model("two_phase_commit", {})
    assert witness_names(model) == ["all_commit"]
    full = search_witness(model, "all_commit", lambda m: check(m, Options(deadlock=False)))
    assert full.found and len(full.trace.steps) - 1 == 6  # 2 Prepares, 2 Prepareds, 2 Commits delivered
    reduced = search_witness(model, "all_commit", lambda m: check_vector(m, Options(deadlock=False, por=True)))
    assert reduced.found and len(reduced.trace.steps) - 1 >= 6
    for w in (full, reduced):
        assert replay(w.trace).states


def test_the_check_command_reports_the_actor_witness(cli):
    r = cli("check", "two_phase_commit", "--no-deadlock", "--quiet")
    assert r.code == 0 and "witness all_commit reached in" in r.out
