"""Partial-order reduction of temporal properties: the same verdicts, violated properties and fair, violating
lassos as the full state graph, on every temporal property of the actor specs (under their fairness and variants of
it) and on random actor systems with random properties and fairness."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import lockstep
from lockstep.checker.errors import UsageError
from lockstep.checker.explicit import Options
from lockstep.checker.liveness import check_properties
from lockstep.checker.loader import load_model
from lockstep.checker.temporal import fairness, select
from lockstep.checker.typed_model import TypedModel
from lockstep.specs.lang import always_eventually, build_program, eventually, eventually_always, leads_to, temporal
from tests.checker.test_liveness_vector import lasso_ok
from tests.checker.test_por import descs
from tests.models.random_actors import build

SPECS = [("two_phase_commit", {}), ("two_phase_commit", {"crashes": 0}), ("two_phase_commit", {"crashes": 0, "lossy": 1}),
         ("two_phase_commit", {"crashes": 0, "duplicating": 1}), ("two_phase_commit", {"ordered": 1}),
         ("two_phase_commit", {"rm": 3, "crashes": 0}), ("two_phase_commit_eager", {}), ("bracha", {"f": 0}),
         ("bracha_low_echo_quorum", {}), ("autobahn", {"views": 1, "lanes": 0})]
EXAMPLES = int(os.environ.get("LOCKSTEP_LIVENESS_POR_EXAMPLES", "80"))  # more for a long hunt
FAIRNESS = [{}, {"deliver": "strong"}, {"timeout": "weak"}, {"deliver": "none", "timeout": "strong"}]


def both(model, props, fair) -> tuple:
    """(the check of the whole graph, the check of the reduced graph)."""
    full = check_properties(model, props, fair, Options(deadlock=False), None, "scalar")
    reduced = check_properties(model, props, fair, Options(deadlock=False, por=True), None, "scalar")
    return full, reduced


def agree(model, props, fair, full, reduced) -> None:
    """The same verdict; a safety violation where the full graph has one, else the same property violated, by a
    fair lasso that violates it; never more states than the whole graph."""
    assert reduced.verdict == full.verdict
    fv, rv = full.violation, reduced.violation
    assert (fv is None) == (rv is None)
    if fv is None or fv.kind == "temporal":  # the whole graph was built (a safety violation stops it)
        assert reduced.distinct <= full.distinct
    if fv is None:
        return
    assert (fv.kind == "temporal") == (rv.kind == "temporal")
    if fv.kind == "temporal":
        assert rv.name == fv.name
        lasso_ok(model, next(p for p in props if p.name == rv.name), fair, reduced)


@pytest.mark.parametrize("overrides", FAIRNESS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "spec")
@pytest.mark.parametrize(("spec", "params"), SPECS, ids=lambda x: x if isinstance(x, str) else None)
def test_reduced_and_full_graphs_agree_on_every_actor_property(spec, params, overrides):
    model = load_model(spec, params)
    fair = fairness(model, {k: v for k, v in overrides.items() if k in model.prog.actions()})  # Bracha has no timers
    for p in model.prog.properties:
        props = [select(model, p.name)]
        agree(model, props, fair, *both(model, props, fair))


def test_the_reduction_prunes_unfair_timers_and_keeps_the_crash_lasso():
    """Two-phase commit with a crash: the TM's crash leaves the RMs undecided for ever, a lasso the reduced graph
    keeps; the RMs' unfair timers are what it prunes (none under fairness of timeouts, and nothing in Bracha, whose
    every event is fair or sends)."""
    model = load_model("two_phase_commit", {})
    props = [select(model, "all_decide")]
    full, reduced = both(model, props, fairness(model))
    assert (full.distinct, reduced.distinct) == (716, 624)
    assert reduced.violation.name == "all_decide"
    assert [s.action["action"] for s in reduced.violation.trace.steps[1:]] == ["deliver", "deliver", "crash"]
    assert "partial-order reduction: 384 of 1,944 enabled events pruned (20%)" in reduced.notes[-1]
    bracha = load_model("bracha", {"f": 0})
    res = check_properties(bracha, [select(bracha, "totality")], fairness(bracha), Options(deadlock=False, por=True),
                           None, "scalar")
    assert res.verdict == "holds" and res.notes == [
        "partial-order reduction: no event can be in a reduced set (each is fair or may write a network slot that a fair "
        "event's guard or a property reads), so the whole graph was built"]
    fair_timers = fairness(model, {"timeout": "weak"})
    _full, reduced = both(model, props, fair_timers)
    assert reduced.distinct == 716 and "0 of 2,207 enabled events pruned" in reduced.notes[-1]


def test_a_safety_violation_on_the_way_is_shortened_as_without_the_reduction():
    full = lockstep.check("bracha_low_echo_quorum", properties=["totality"], deadlock=False)
    reduced = lockstep.check("bracha_low_echo_quorum", properties=["totality"], deadlock=False, por=True)
    assert full.violation.name == reduced.violation.name == "ready_agreement"
    assert len(reduced.violation.trace.steps) == len(full.violation.trace.steps) == 7


def test_the_api_accepts_por_with_properties_and_refuses_what_it_cannot_reduce():
    res = lockstep.check("two_phase_commit", properties=["all_decide"], por=True, deadlock=False, crashes=0)
    assert res.verdict == "holds" and res.distinct == 312
    with pytest.raises(UsageError, match="por=True with properties and workers: the reduced state graph is built by "
                                         "the scalar engine, on one worker"):
        lockstep.check("two_phase_commit", properties=["all_decide"], por=True, workers=2)
    with pytest.raises(UsageError, match=r"por=True with properties: partial-order reduction applies to actor "
                                         r"specs \(ActorSpec\) only"):
        lockstep.check("lock_weak", properties=["no_starvation"], por=True)
    with pytest.raises(UsageError, match="por=True with properties: transition gst writes gst, outside its process"):
        lockstep.check("autobahn_wrong_tc_quorum", properties=["every_slot_commits"], por=True, deadlock=False)


CONDITIONS = st.one_of(st.tuples(st.just("x"), st.integers(0, 3), st.integers(0, 2)),
                       st.tuples(st.just("flag"), st.integers(0, 3), st.just(0)),
                       st.tuples(st.just("heard"), st.integers(0, 3), st.integers(0, 3)))
KINDS = st.sampled_from(["eventually", "always_eventually", "eventually_always", "leads_to"])
TABLES = st.sampled_from([{"deliver": "weak"}, {"deliver": "strong"}, {"deliver": "weak", "timeout": "weak"},
                          {"timeout": "strong"}, {"deliver": "weak", "timeout": "strong"}])


def _condition(kind: tuple, n: int):
    name, a, b = kind

    def cond(s):
        if name == "x":
            return s.x[a % n] == b
        if name == "flag":
            return s.flag[a % n].is_some()
        return s.heard[a % n].contains(b % n)

    return cond


def _with_property(desc, kind: str, p: tuple, q: tuple, table: dict) -> TypedModel:
    """The random system with one temporal property `kind` over conditions p (and q) and the fairness `table`."""
    cls, n = build(desc), desc.n
    cp, cq = _condition(p, n), _condition(q, n)
    forms = {"eventually": lambda s: eventually(cp(s)), "always_eventually": lambda s: always_eventually(cp(s)),
             "eventually_always": lambda s: eventually_always(cp(s)), "leads_to": lambda s: leads_to(cp(s), cq(s))}
    sub = type(cls.__name__ + "Live", (cls,), {"fairness": table, "live": temporal(forms[kind])})
    return TypedModel(build_program(sub, {}), "random")


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(descs(), KINDS, CONDITIONS, CONDITIONS, TABLES)
def test_random_actor_systems_with_fairness_reduced_and_full(desc, kind, p, q, table):
    model = _with_property(desc, kind, p, q, table)
    props, fair = [select(model, "live")], fairness(model)
    full = check_properties(model, props, fair, Options(deadlock=False, max_states=4_000), None, "scalar")
    if full.distinct >= 4_000:  # the bound cut the graph (a lasso inside it is still a violation)
        event("skipped: 4,000 states or more")
        return
    reduced = check_properties(model, props, fair, Options(deadlock=False, por=True), None, "scalar")
    event(f"{full.verdict}: {full.violation.kind if full.violation else 'holds'}")
    event("pruned" if reduced.distinct < full.distinct else "not pruned")
    agree(model, props, fair, full, reduced)


def test_the_lasso_found_with_the_reduction_replays(cli, tmp_path):
    out = str(tmp_path / "lasso.json")
    r = cli("check", "two_phase_commit", "--property", "all_decide", "--por", "--no-deadlock", "--out", out)
    assert r.code == 1 and "temporal property all_decide (◇P) is violated" in r.out
    assert "624 distinct states" in r.out
    replayed = cli("replay", out)
    assert replayed.code == 0, replayed.out
    assert "that violates all_decide" in replayed.out
