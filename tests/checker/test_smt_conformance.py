"""The symbolic interpreter means what the explicit one means: same initial states, same labelled
successors, same failing steps, from every reachable state of every spec in the repository."""

from __future__ import annotations

import pytest

from lockstep.checker.loader import load_model
from lockstep.checker.smt import encode
from lockstep.checker.smt.conformance import compare
from lockstep.checker.smt.encode import DEFAULT, ENCODINGS
from lockstep.specs.lang import SpecError
from tests.conftest import typed_spec_refs

LIMIT = 1000  # reachable states compared per spec (breadth-first); specs at their default parameters
# Specs whose states take the solver a tenth of a second or more each: the default run compares
# their first states; the slow run compares them as far as every other spec.
COSTLY = {"bracha": 12, "bracha_equivocating_sender": 12, "bracha_low_echo_quorum": 12, "bracha_byzantine_relay": 12,
          "agent_clock": 25, "agent_clock_buggy": 25, "chang_roberts": 300, "chang_roberts_forward_all": 300,
          "filter_lock": 300, "filter_lock_buggy": 300, "tests/models/sparse_sets.py:SparseSet": 300,
          "tests/models/sparse_sets.py:HugeSet": 300, "tests/models/ring_assert.py:RingAssert": 300,
          "two_phase_commit": 300, "two_phase_commit_eager": 300,
          "tests/models/vector_edges.py:WideSet": 100, "psmr": 5, "psmr_no_acyclic_order": 5, "psmr_first_key_cg": 5,
          "psmr_read_wrong_group": 5,
          "alternating_bit": 80, "alternating_bit_reordering": 60, "tests/models/sequences.py:Channel": 100,
          "tests/models/quorums.py:Vote": 100, "tests/models/quorums.py:VoteTwice": 60,
          "tests/models/symmetric_shapes.py:Shapes": 30, "tests/models/symmetric_shapes.py:ShapesTwoWay": 30,
          "ssp_sssp": 2, "ssp_cc": 2, "ssp_reach": 2, "ssp_stale_delta": 2, "ssp_staleness_off_by_one": 2, "ssp_apsp": 2}
# How far the slow run compares a costly spec (default LIMIT); the SSP specs take seconds per state.
FURTHER = {"ssp_sssp": 40, "ssp_cc": 40, "ssp_reach": 40, "ssp_stale_delta": 40, "ssp_staleness_off_by_one": 40,
           "ssp_apsp": 40}

# What a full comparison covers, where it is known: (initial states, states, steps, failing steps).
COVERAGE = {
    "two_phase": (1, 288, 1145, 0),
    "peterson": (1, 42, 76, 0),
    "tests/models/term_corners.py:Arith": (24, 416, 2049, 388),
    "tests/models/failing_action.py:Divide": (1, 4, 3, 1),
}


# Typed specs the symbolic interpreter refuses, and why (each a deliberately broken test model).
REFUSED = {"tests/models/broken_predicates.py:BrokenConstraint": "constraint broken cannot be built"}


def agree(ref: str, limit: int) -> None:
    rep = compare(load_model(ref), DEFAULT, limit=limit)
    assert not rep.disagreements, "\n".join(map(str, rep.disagreements))
    assert rep.initial >= 1 and rep.states >= 1
    assert rep.complete or rep.states == limit
    if ref in COVERAGE:
        assert rep.complete and (rep.initial, rep.states, rep.steps, rep.failures) == COVERAGE[ref]


# P-SMR at its default workload (3 replicas, 5 commands): minutes per state for the solver, compared in the slow run.
SOLVER_MINUTES = {"psmr", "psmr_no_acyclic_order", "psmr_first_key_cg", "psmr_read_wrong_group"}


@pytest.mark.parametrize("ref", [pytest.param(r, marks=pytest.mark.slow) if r in SOLVER_MINUTES else r
                                 for r in typed_spec_refs() if isinstance(r, str) and r not in REFUSED]
                         + [r for r in typed_spec_refs() if not isinstance(r, str)])
def test_symbolic_and_explicit_agree(ref):
    agree(ref, COSTLY.get(ref, LIMIT))


@pytest.mark.parametrize("ref", sorted(REFUSED))
def test_a_spec_the_symbolic_interpreter_refuses_is_named_with_the_reason(ref):
    with pytest.raises(SpecError, match=REFUSED[ref]):
        compare(load_model(ref), DEFAULT, limit=1)


@pytest.mark.slow
@pytest.mark.parametrize("ref", sorted(COSTLY))
def test_symbolic_and_explicit_agree_further_on_costly_specs(ref):
    agree(ref, FURTHER.get(ref, LIMIT))


@pytest.mark.parametrize("encoding", [e for e in ENCODINGS if e != DEFAULT], ids=str)
@pytest.mark.parametrize("ref", ["two_phase", "tests/models/term_corners.py:Messages", "tests/models/term_corners.py:Arith"])
def test_other_encodings_agree_too(ref, encoding):
    rep = compare(load_model(ref), encoding, limit=150)
    assert not rep.disagreements, "\n".join(map(str, rep.disagreements))
    assert rep.states == 150 or rep.complete


def test_a_wrong_encoding_is_caught_and_named(monkeypatch):
    """Seeded bug: `<` encoded as `<=`. The disagreement names the spec, the state and the action."""
    real = encode.Symbolic._ev

    def wrong(self, t, st):
        if t.op == "lt":
            (a, _), (b, _) = self.ev(t.args[0], st), self.ev(t.args[1], st)
            return a <= b, False
        return real(self, t, st)

    monkeypatch.setattr(encode.Symbolic, "_ev", wrong)
    rep = compare(load_model("filter_lock", {"n": 2}))
    assert rep.disagreements
    d = rep.disagreements[0]
    assert d.spec == "FilterLock" and d.action.startswith("advance(p=")
    assert "only the symbolic relation steps to" in d.detail
    assert str(d).startswith("FilterLock: state pc={0: ")


def test_a_missing_failure_is_caught(monkeypatch):
    """Seeded bug: assignments never checked against the field's type (every term claims to fit)."""
    monkeypatch.setattr(encode.Symbolic, "range", lambda self, t: (0, 0))
    rep = compare(load_model("tests/models/failing_action.py:Overflow"))
    assert [(d.action, d.detail) for d in rep.disagreements] == [("inc", "only the explicit engine has this step fail")]
    assert rep.disagreements[0].state == {"n": "2"}
