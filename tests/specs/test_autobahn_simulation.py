"""Autobahn's seeded bugs found by random simulation at the default bounds (as `lockstep simulate SPEC
--no-deadlock` runs it), and a simulated counterexample reproduced on real replica processes."""

from __future__ import annotations

import multiprocessing

import pytest

import lockstep
from lockstep.executors.replay import replay_on_processes

SEEDED = {"autobahn_weak_poa": "committed_cars_certified", "autobahn_weak_fast_path": "locked_after_commit",
          "autobahn_no_override": "locked_after_commit"}


@pytest.mark.parametrize("spec", [s if s == "autobahn_weak_poa" else pytest.param(s, marks=pytest.mark.slow)
                                  for s in sorted(SEEDED)])
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
