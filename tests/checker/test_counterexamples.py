"""Counterexamples people can read: a violation found with partial-order reduction or depth-first is shortened to
a shortest one (exactly: the length of the unreduced breadth-first search's), replays, and says what was done;
within a budget, or kept with the reason; `--max-violations K` reports distinct violations, each saved."""

from __future__ import annotations

import pytest

import lockstep
from lockstep.checker.counterexample import Budget, Target, shorten
from lockstep.checker.counterexample.shorten import shortest_path
from lockstep.checker.counterexample.target import path_of
from lockstep.checker.explicit import Options
from lockstep.checker.loader import load_model
from lockstep.checker.progress import NoProgress
from lockstep.checker.replay import replay
from lockstep.checker.trace import Trace
from lockstep.checker.vector import choice
from tests.conftest import model_path

RING = model_path("ring_assert.py")


def steps(v) -> int:
    return len(v.trace.steps) - 1


def test_the_chang_roberts_bug_gives_its_shortest_counterexample_with_partial_order_reduction_on(cli, tmp_path):
    out = tmp_path / "cex.json"
    r = cli("check", "chang_roberts_forward_all", "--quiet", "--out", str(out))
    assert r.code == 1, r.out
    assert "partial-order reduction" in r.out.splitlines()[0]
    assert "invariant leader_is_max is violated" in r.out
    assert "shortened from 13 to 4 steps" in r.out and "Counterexample (4 steps)" in r.out
    trace = Trace.load(str(out))
    assert len(trace.steps) == 5 and trace.property == {"kind": "invariant", "name": "leader_is_max"}
    assert "invariant leader_is_max is violated in the last state" in cli("replay", str(out)).out
    kept = cli("check", "chang_roberts_forward_all", "--quiet", "--no-shorten")
    assert "Counterexample (13 steps)" in kept.out and "maybe not a shortest one" in kept.out
    full = cli("check", "chang_roberts_forward_all", "--quiet", "--no-por")
    assert "Counterexample (4 steps)" in full.out and "shortened" not in full.out
    assert cli("check", "chang_roberts", "--no-deadlock", "--quiet").code == 0  # the correct election holds


SEEDED = [  # (spec, deadlock): actor specs whose reduced search ends in a violation (invariant, deadlock, failing step)
    ("chang_roberts_forward_all", True),
    ("bracha_low_echo_quorum", False),
    ("two_phase_commit_eager", False),
    ("two_phase_commit", True),  # a deadlock
    (RING, True),  # a failing step; the full search fails another step first
    (model_path("actor_failing.py") + ":Fragile", True),
    (model_path("actor_gossip.py") + ":GossipObservedWrongClaim", True),
    pytest.param("autobahn_weak_poa", False, marks=pytest.mark.slow),  # at its small bounds (BOUNDS)
    pytest.param("psmr_first_key_cg", True, marks=pytest.mark.slow),
    pytest.param("psmr_no_acyclic_order", True, marks=pytest.mark.slow),
]

BOUNDS = {"autobahn_weak_poa": {"lanes": 1, "views": 1}}  # its defaults are beyond an exhaustive search


@pytest.mark.parametrize("engine", ["scalar", "vector"])
@pytest.mark.parametrize("spec, deadlock", SEEDED)
def test_every_seeded_bug_is_shortened_to_the_length_of_the_unreduced_search_and_replays(spec, deadlock, engine):
    m = load_model(spec, BOUNDS.get(spec, {}))
    reduced = Options(deadlock=deadlock, por=True)
    chosen, vm, _ = choice.choose(engine, m, reduced)
    found = choice.run(chosen, m, vm, reduced, NoProgress()).violation
    full = choice.run(chosen, m, vm, Options(deadlock=deadlock), NoProgress()).violation
    before = steps(found)
    got = shorten(m, found, "partial-order reduction", chosen, vm)
    v = got.violation
    assert got.shortest and got.why is None
    assert (v.kind, v.name) == (found.kind, found.name)
    assert steps(v) <= before and steps(v) <= steps(full)
    if (full.kind, full.name) == (found.kind, found.name):
        assert steps(v) == steps(full)  # a shortest one: the unreduced breadth-first search's length
    assert replay(v.trace).states
    assert v.note.startswith("shortened from" if steps(v) < before else "shortest:")


def test_symmetry_reduction_keeps_counterexamples_shortest_and_shortening_runs_with_it():
    """Breadth-first over one state per orbit reaches each orbit at its least depth: no shortening is needed;
    with partial-order reduction too, the search without it keeps the symmetry reduction."""
    full = steps(lockstep.check("bracha_low_echo_quorum", deadlock=False, por=False).violation)
    assert steps(lockstep.check("bracha_low_echo_quorum", deadlock=False, por=False, symmetry=True).violation) == full
    both = lockstep.check("bracha_low_echo_quorum", deadlock=False, symmetry=True).violation
    assert steps(both) == full == 6 and both.note.startswith("shortened from 9 to 6 steps")
    assert replay(both.trace).states


def test_a_failing_step_is_shortened_to_the_same_action_failing():
    """The reduced search fails node 1's election (8 steps); the full search fails node 0's first, so the
    shortening looks for node 1's alone: 3 steps, the same failing action."""
    m = load_model(RING, {})
    found = lockstep.check(RING, shorten=False).violation
    assert (found.kind, steps(found)) == ("assertion", 8)
    got = shorten(m, found, "partial-order reduction")
    assert got.violation.name == found.name and steps(got.violation) == 3
    assert lockstep.check(RING, por=False).violation.name != found.name


def test_the_budget_keeps_the_counterexample_and_says_why_and_how_short_any_other_is():
    m = load_model("chang_roberts_forward_all", {})
    found = lockstep.check("chang_roberts_forward_all", engine="scalar", shorten=False).violation
    got = shorten(m, found, "partial-order reduction", budget=Budget(states=20))
    assert not got.shortest and got.violation is found and steps(found) == 13
    assert "kept as found with partial-order reduction (13 steps)" in found.note
    assert "stopped at its budget of 20 states" in found.note and f"fewer than {got.least} steps" in found.note
    assert 0 < got.least <= 4  # the shortest has 4 steps: the levels searched prove no fewer than `least`
    path, states, least, why = shortest_path(m, Target.of(m, found), 12, Budget(states=20))
    assert path is None and why == "its budget of 20 states" and least <= 4
    bounded = lockstep.check("chang_roberts_forward_all", max_states=30).violation  # the check's own bound holds
    assert steps(bounded) == 13 and "stopped at its budget of 30 states" in bounded.note


def test_the_fallback_search_finds_the_shortest_violation_of_another_invariant_than_the_first():
    """one_leader is violated 8 steps deep; leader_is_max (4 steps) stops the engine first."""
    several = lockstep.check("chang_roberts_forward_all", max_violations=2)
    v = several.violations[1]
    assert v.name == "one_leader" and steps(v) == 8
    m = load_model("chang_roberts_forward_all", {})
    got = shorten(m, v, "partial-order reduction")
    assert got.shortest and steps(got.violation) == 8 and got.violation.name == "one_leader"


def test_a_depth_first_counterexample_is_shortened(cli):
    r = cli("check", "filter_lock_buggy", "--dfs", "--quiet")
    bfs = lockstep.check("filter_lock_buggy").violation
    assert r.code == 1 and f"Counterexample ({steps(bfs)} steps)" in r.out
    assert "found with depth-first search" in r.out
    plain = lockstep.check(model_path("plain_counter.py"), dfs=True)
    assert steps(plain.violation) == steps(lockstep.check(model_path("plain_counter.py")).violation)


def test_several_distinct_violations_each_saved_and_replayable(cli, tmp_path):
    out = tmp_path / "cex.json"
    r = cli("check", "chang_roberts_forward_all", "--max-violations", "3", "--quiet", "--out", str(out))
    assert r.code == 1, r.out
    assert "2 distinct violations" in r.out and "partial-order reduction off with --max-violations" in r.out
    first, second = Trace.load(str(tmp_path / "cex-1.json")), Trace.load(str(tmp_path / "cex-2.json"))
    assert not (tmp_path / "cex-3.json").exists() and not out.exists()
    assert first.property["name"] == "leader_is_max" and len(first.steps) == 5
    assert second.property["name"] == "one_leader" and len(second.steps) == 9
    for f in ("cex-1.json", "cex-2.json"):
        assert cli("replay", str(tmp_path / f)).code == 0
    one = lockstep.check("chang_roberts_forward_all", max_violations=1, por=False)
    assert [(s.action, s.state) for s in one.violation.trace.steps] == [(s.action, s.state) for s in first.steps]


def test_several_violations_differ_in_the_last_action_and_stop_at_k():
    """DieHard's not_solved (TLC's big jug at 4 gallons) is reached by pouring either way: 6 and 8 steps."""
    res = lockstep.check("diehard", max_violations=5)
    assert [(v.name, v.note, steps(v)) for v in res.violations] == [
        ("not_solved", "last action: big_to_small", 6), ("not_solved", "last action: small_to_big", 8)]
    assert res.exit_code == 1 and res.violation is res.violations[0]
    assert steps(lockstep.check("diehard").violation) == 6
    every = lockstep.check("alternating_bit_reordering", max_violations=5).violations
    assert len(every) == 3
    two = lockstep.check("alternating_bit_reordering", max_violations=2).violations
    assert [(v.name, v.note) for v in two] == [(v.name, v.note) for v in every[:2]]  # stopped at K = 2


def test_max_violations_is_refused_where_it_cannot_be_honoured(cli):
    r = cli("check", "chang_roberts_forward_all", "--max-violations", "2", "--engine", "vector")
    assert r.code == 2 and "vector engine stops at the first violation" in r.err
    for extra in (["--dfs"], ["--workers", "2"]):
        r = cli("check", "two_phase", "--max-violations", "2", *extra)
        assert r.code == 2 and f"--max-violations with {extra[0]}" in r.err, r.err
    r = cli("check", "chang_roberts_forward_all", "--max-violations", "2", "--por")
    assert r.code == 2 and "--por with --max-violations" in r.err
    r = cli("check", "two_phase", "--max-violations", "2", "--engine", "smt")
    assert r.code == 2 and "--max-violations" in r.err
    r = cli("check", "two_phase_commit", "--property", "all_decide", "--no-shorten")
    assert r.code == 2 and "--no-shorten" in r.err
    with pytest.raises(lockstep.UsageError, match="vector engine"):
        lockstep.check("two_phase", engine="vector", max_violations=2)


# -- random walks: minimised, regrouped by process, then shortest within a budget --------------------------------

def test_a_walk_is_minimised_then_shown_shortest_and_replays(cli, tmp_path):
    out = tmp_path / "cex.json"
    r = cli("simulate", "bracha_low_echo_quorum", "--runs", "10000", "--no-deadlock", "--quiet", "--out", str(out))
    assert r.code == 1 and "found by walk 5 (seed 1)" in r.out
    assert "minimised from 9 steps (3 steps dropped" in r.out and "shortest: no counterexample is shorter" in r.out
    assert len(Trace.load(str(out)).steps) == 7  # 6 steps: the length of the breadth-first search's counterexample
    assert steps(lockstep.check("bracha_low_echo_quorum", deadlock=False, por=False).violation) == 6
    assert cli("replay", str(out)).code == 0
    raw = cli("simulate", "bracha_low_echo_quorum", "--runs", "10000", "--no-deadlock", "--quiet", "--no-shorten")
    assert "Counterexample (9 steps)" in raw.out and "minimised" not in raw.out


def test_minimising_moves_each_process_s_events_together_where_they_commute():
    from lockstep.checker.counterexample.minimise import minimise, owner_function, switches
    from lockstep.checker.simulation import simulate

    m = load_model("filter_lock_buggy", {})
    res = simulate(m, 400, 100, seed=3, deadlock=False)
    got = minimise(m, res.path, res.violation, search=None)
    owner = owner_function(m)
    before = switches([owner(lid) for lid, _ in res.path[1:]])
    path = path_of(m, got.violation)
    after = switches([owner(lid) for lid, _ in path[1:]])
    assert got.moved > 0 and after < before and got.switches == (before, after)
    assert steps(got.violation) == len(res.path) - 1 - got.dropped
    assert got.shortest is None and "process switches before" in got.note
    assert replay(got.violation.trace).states
    assert got.violation.name == res.violation.name


def test_minimising_a_plain_spec_drops_steps_and_keeps_to_its_allowance():
    from lockstep.checker.counterexample.minimise import minimise
    from lockstep.checker.simulation import simulate

    m = load_model("two_phase_commit", {})
    res = simulate(m, 50, 100, seed=1, deadlock=True)
    assert res.violation.kind == "deadlock"
    full = minimise(m, res.path, res.violation)
    assert full.shortest and steps(full.violation) == steps(lockstep.check("two_phase_commit", por=False).violation)
    cut = minimise(m, res.path, res.violation, search=None, allowance=5)
    assert "minimising stopped at its allowance" in cut.note and replay(cut.violation.trace).states
    plain = model_path("plain_counter.py")
    pm = load_model(plain, {})
    walk = simulate(pm, 200, 100, seed=1)
    got = minimise(pm, walk.path, walk.violation)
    assert got.moved == 0 and got.switches == (0, 0)  # a plain spec's steps have no known process
    assert steps(got.violation) == steps(lockstep.check(plain).violation)


def test_a_witness_reached_with_partial_order_reduction_is_reached_by_a_shortest_trace():
    """Two-phase commit's all_commit: 12 steps in the reduced graph, 9 in the full one."""
    def reached(**kw) -> int:
        (w,) = lockstep.check("two_phase_commit", deadlock=False, rm=3, **kw).witnesses
        assert w.found and replay(w.trace).states
        return len(w.trace.steps) - 1

    assert reached(por=False) == reached() == 9
    assert reached(shorten=False) == 12
