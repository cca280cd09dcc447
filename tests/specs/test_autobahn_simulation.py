"""Autobahn's seeded bugs found by random simulation at the default bounds (as `lockstep simulate SPEC
--no-deadlock` runs it), counterexamples reproduced on real replica processes (`lockstep replay CEX
--on-processes`), and a liveness lasso, which cannot be."""

from __future__ import annotations

import multiprocessing

import pytest

import lockstep
from lockstep.executors.replay import replay_on_processes

SEEDED = {"autobahn_weak_poa": "committed_cars_certified", "autobahn_weak_fast_path": "locked_after_commit",
          "autobahn_no_override": "locked_after_commit", "autobahn_quorum_2f": "locked_after_commit",
          "autobahn_double_vote": "vote_once"}


@pytest.mark.slow  # the quick run has each bug's documented command at the default bounds (tests/specs/test_autobahn.py)
@pytest.mark.parametrize("spec", sorted(SEEDED))
def test_simulation_finds_the_seeded_bug(spec):
    res = lockstep.simulate(spec, runs=10_000, seed=1, deadlock=False)
    assert res.violation is not None and (res.violation.kind, res.violation.name) == ("invariant", SEEDED[spec])
    assert f"invariant {SEEDED[spec]}" in lockstep.replay(res.violation.trace).conclusion


@pytest.mark.slow
def test_a_simulated_counterexample_is_reproduced_on_processes():
    res = lockstep.simulate("autobahn_weak_poa", runs=2000, seed=1, deadlock=False)
    out = replay_on_processes(res.violation.trace, say=lambda _line: None)
    assert out.violated == "committed_cars_certified" and out.steps == len(res.violation.trace.steps) - 1 and out.validated
    assert multiprocessing.active_children() == []


@pytest.mark.slow
def test_the_byzantine_leaders_two_commits_are_reproduced_on_processes(cli, tmp_path):
    """The quorum-of-2f counterexample (the Byzantine leader commits cut 0 at replica 0 and cut 1 at replica 1)
    run by four processes, the Byzantine one with its own handlers, in the counterexample's order."""
    cex = tmp_path / "cex.json"
    found = cli("check", "autobahn_quorum_2f", "-p", "lanes=0", "-p", "views=1", "--no-deadlock", "--engine", "explicit",
                "--quiet", "--out", str(cex))
    assert found.code == 1 and "invariant agreement is violated" in found.out
    r = cli("replay", str(cex), "--on-processes")
    assert r.code == 0 and "replayed 12 steps on 4 processes; their final state violates invariant agreement" in r.out
    assert multiprocessing.active_children() == []


def test_a_liveness_lasso_is_not_replayed_on_processes(cli, tmp_path):
    """A lasso is an infinite behaviour, and its GST step is the scheduler's, not a process's: the replay stops
    there with a usage error (after the crash of the leader, which it does reproduce)."""
    cex = tmp_path / "lasso.json"
    found = cli("check", "autobahn_wrong_tc_quorum", "--property", "every_slot_commits", "--no-deadlock", "--engine",
                "explicit", "--quiet", "--out", str(cex))
    assert found.code == 1
    r = cli("replay", str(cex), "--on-processes")
    assert r.code == 2 and "crash(p=2): process 2 killed" in r.out and "gst steps cannot be replayed on processes" in r.err
    assert multiprocessing.active_children() == []
