"""Raft (specs/raft.py) at 3 servers: the seeded bug is caught; the whole space holds (slow)."""

from __future__ import annotations

import pytest

import lockstep


def test_voting_without_the_election_restriction_breaks_leader_completeness():
    res = lockstep.check("raft_vote_any_log", max_term=3, symmetry=True, deadlock=False)
    assert not res.holds and res.violation.kind == "invariant" and res.violation.name == "leader_completeness"
    assert len(res.violation.trace.steps) - 1 == 18  # the shortest counterexample (breadth-first)


@pytest.mark.slow
@pytest.mark.parametrize("pipelined, distinct", [(0, 283_321), (1, 538_656)])
def test_raft_holds_at_three_servers(pipelined, distinct):
    res = lockstep.check("raft", max_term=2, pipelined=pipelined, symmetry=True)
    assert res.holds and res.distinct == distinct
