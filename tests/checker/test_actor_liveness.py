"""@temporal on actor specs: properties are read (never dropped), checked under the spec's fairness of
deliveries, and refused by the reductions that cannot keep them."""

from __future__ import annotations

import pytest

from lockstep.checker.explicit import Options
from lockstep.checker.liveness import check_properties
from lockstep.checker.loader import load_model
from lockstep.checker.temporal import fairness, select
from lockstep.specs.lang import Enum, Range, Record, SpecError, build_program, eventually, temporal
from lockstep.specs.lang.actors import ActorSpec, Local, on_message, on_start, send


def test_every_rm_decides_unless_the_tm_crashes(cli):
    r = cli("check", "two_phase_commit", "--property", "all_decide", "--no-deadlock", "--param", "crashes=0")
    assert r.code == 0, r.out
    assert "fairness: WF(deliver) for each of its 24 instances" in r.out
    r = cli("check", "two_phase_commit", "--property", "all_decide", "--no-deadlock")
    assert r.code == 1
    assert "temporal property all_decide" in r.out and "crash(p=0)" in r.out


def test_without_fair_delivery_the_rms_may_wait_for_ever(cli):
    r = cli("check", "two_phase_commit", "--property", "all_decide", "--no-deadlock", "--param", "crashes=0",
            "--fairness", "deliver=none")
    assert r.code == 1 and "stutters" in r.out


def test_a_lossy_network_loses_liveness():
    model = load_model("two_phase_commit", {"crashes": 0, "lossy": 1})
    res = check_properties(model, [select(model, "all_decide")], fairness(model), Options(deadlock=False), None)
    assert res.verdict == "violation" and res.violation.name == "all_decide"


def test_bracha_totality_is_read_and_checked():
    model = load_model("bracha", {"f": 0})
    assert [p.name for p in model.prog.properties] == ["totality"]
    res = check_properties(model, [select(model, "totality")], fairness(model), Options(deadlock=False), None)
    assert res.verdict == "holds"


def test_bracha_totality_at_n4_on_the_vector_engine(cli):
    """Bracha's liveness at the paper's smallest Byzantine shape (n = 4, f = 1, an equivocating sender): every
    one of the 12.6 M states' fair cycles is checked (about 17 s and 3 GB on one core)."""
    r = cli("check", "bracha_equivocating_sender", "--property", "totality", "--no-deadlock", "--engine", "vector")
    assert r.code == 0, r.out
    assert "fairness: WF(deliver) for each of its 72 instances" in r.out
    assert "12,642,176 distinct states, 115,982,072 generated, depth 28" in r.out


def test_byzantine_steps_are_never_fair():
    model = load_model("bracha_byzantine_relay", {})
    byz = [t for t in model.prog.transitions if t.meta.get("byzantine")]
    assert byz and all("fairness" not in t.meta for t in byz)
    assert all(t.meta.get("fairness") == "weak" for t in model.prog.transitions
               if t.action == "deliver" and not t.meta.get("byzantine"))


def test_por_with_a_temporal_property_runs_the_scalar_engine_and_says_what_it_pruned(cli):
    r = cli("check", "two_phase_commit", "--property", "all_decide", "--por", "--param", "crashes=0", "--no-deadlock")
    assert r.code == 0, r.out
    assert "scalar breadth-first, state graph reduced by partial order, 1 worker" in r.out
    assert "312 distinct states" in r.out
    assert "partial-order reduction: 194 of 966 enabled events pruned (20%), 86 states explored with a reduced set" in r.out
    r = cli("check", "two_phase_commit", "--property", "all_decide", "--por", "--engine", "vector")
    assert r.code == 2 and "the reduced state graph is built by the scalar engine" in r.err


Ping = Record("Ping")


def _spec(table):
    class Pinger(ActorSpec):
        Process = Range(2)
        Message = Ping
        fairness = table
        got = Local(Enum("no", "yes"), init="no")

        @on_start
        def start(p):
            send(1 - p.id, Ping())

        @on_message
        def receive(p, src, m):
            p.got = "yes"

        @temporal
        def both_get(s):
            return eventually(s.got[0] == "yes")

    return Pinger


def test_a_malformed_fairness_table_is_a_spec_error():
    with pytest.raises(SpecError, match="not an event kind"):
        build_program(_spec({"send": "weak"}), {})
    with pytest.raises(SpecError, match="not a kind of fairness"):
        build_program(_spec({"deliver": "fair"}), {})
    assert [p.name for p in build_program(_spec({"deliver": "strong"}), {}).properties] == ["both_get"]
