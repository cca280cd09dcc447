"""The reference specs against published results: TLC's counts and known counterexamples."""

from __future__ import annotations

import pytest

from bench import handwritten
from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model


def run(spec: str, deadlock: bool = True, workers: int = 1, symmetry: bool = False, **params: int):
    return check(load_model(spec, params, symmetry=symmetry), Options(deadlock=deadlock, workers=workers))


def test_two_phase_matches_tlc():
    """TLC, TwoPhase with RM = 3: 288 distinct states, 1146 generated, depth 11."""
    res = run("two_phase", rm=3)
    assert (res.verdict, res.distinct, res.generated, res.depth) == ("holds", 288, 1146, 11)


@pytest.mark.parametrize("rm", [2, 4, 5, 6])
def test_two_phase_agrees_with_a_handwritten_bfs(rm):
    """An independent tuple BFS (bench/handwritten.py) gives the same three numbers."""
    res = run("two_phase", rm=rm)
    assert res.verdict == "holds"
    assert (res.distinct, res.generated, res.depth) == handwritten.two_phase(rm)


def test_tcommit_matches_tlc():
    """TLC, TCommit with RM = 3 (deadlock checking off): 34 distinct, 94 generated, depth 7."""
    res = run("tcommit", deadlock=False, rm=3)
    assert (res.verdict, res.distinct, res.generated, res.depth) == ("holds", 34, 94, 7)


def test_tcommit_deadlocks_when_checked():
    """Its terminal states have no successors: with deadlock checking the search reports one."""
    res = run("tcommit", rm=3)
    assert res.verdict == "violation" and res.violation.kind == "deadlock"
    last = res.violation.trace.steps[-1].shown["rm_state"]
    assert "working" not in last and "prepared" not in last


def test_diehard_shortest_solution_is_six_steps():
    res = run("diehard")
    v = res.violation
    assert res.verdict == "violation" and v.kind == "invariant" and v.name == "not_solved"
    assert len(v.trace.steps) == 7  # the initial state and 6 steps
    assert v.trace.steps[-1].shown["big"] == "4"
    labels = [s.label for s in v.trace.steps[1:]]
    assert labels[0] in ("fill_big", "fill_small")


def test_peterson_mutual_exclusion_holds():
    res = run("peterson")
    assert (res.verdict, res.distinct) == ("holds", 42)


def test_peterson_seeded_bug_shortest_counterexample():
    res = run("peterson_buggy")
    v = res.violation
    assert v.kind == "invariant" and v.name == "mutual_exclusion"
    assert len(v.trace.steps) - 1 == 8
    assert v.trace.steps[-1].shown["pc"] == "{0: 'cs', 1: 'cs'}"


@pytest.mark.parametrize("n", [2, 3, 4])
def test_filter_lock_holds_and_agrees_with_a_handwritten_bfs(n):
    res = run("filter_lock", n=n)
    assert res.verdict == "holds"
    assert (res.distinct, res.generated, res.depth) == handwritten.filter_lock(n)


def test_filter_lock_seeded_bug_found():
    res = run("filter_lock_buggy", n=3)
    v = res.violation
    assert v.kind == "invariant" and v.name == "mutual_exclusion"
    assert len(v.trace.steps) - 1 == 14


@pytest.mark.slow
def test_filter_lock_five_processes():
    """N = 5: 344,805 distinct states (the Promela model in bench/ gives the same)."""
    res = run("filter_lock", n=5)
    assert (res.verdict, res.distinct, res.generated, res.depth) == ("holds", 344805, 1205326, 55)


@pytest.mark.slow
def test_two_phase_seven_rms():
    res = run("two_phase", rm=7)
    assert (res.distinct, res.generated, res.depth) == (296448, 2744706, 23)


def test_alternating_bit_matches_tlc():
    """TLC, MCAlternatingBit (Data = {d1, d2}, msgQLen = ackQLen = 2): 240 distinct, 1392 generated, depth 10
    (the TLA+ Examples manifest); the vector engine counts the same."""
    from lockstep.checker.vector import check_vector

    model = load_model("alternating_bit")
    for res in (check(model, Options()), check_vector(model, Options())):
        assert (res.verdict, res.distinct, res.generated, res.depth) == ("holds", 240, 1392, 10)


def test_alternating_bit_over_a_reordering_channel_is_caught(cli):
    """The seeded bug, by the command its docstring gives: a stale message flips the receiver's bit back."""
    r = cli("check", "alternating_bit_reordering", "--quiet")
    assert r.code == 1 and "invariant ack_means_received is violated" in r.out and "Counterexample (10 steps)" in r.out
    r = cli("check", "alternating_bit_reordering", "--invariant", "delivered", "--quiet")
    assert r.code == 1 and "invariant delivered is violated" in r.out and "Counterexample (11 steps)" in r.out


def test_alternating_bit_delivers_under_its_fairness_and_not_with_a_weakly_fair_receiver(cli):
    props = ["--property", "SentLeadsToRcvd_d1", "--property", "SentLeadsToRcvd_d2"]
    r = cli("check", "alternating_bit", *props, "--quiet")
    assert r.code == 0 and "No violation" in r.out
    r = cli("check", "alternating_bit", *props, "--fairness", "rcv_msg=weak", "--quiet")
    assert r.code == 1 and "SentLeadsToRcvd_d1" in r.out and "repeat for ever" in r.out
