"""Temporal properties under symmetry reduction: the same verdicts as without it, on fewer states, where every
permutation keeps the fairness and the properties; lassos lifted to concrete states that replay; a refusal
where the fairness is per instance, and an error where a property tells processes apart."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lockstep
from lockstep.checker.errors import UsageError
from lockstep.checker.explicit import Options
from lockstep.checker.liveness import choose_engine, lasso_violates
from lockstep.checker.liveness.explore import explore
from lockstep.checker.liveness.symmetric import Quotient
from lockstep.checker.progress import NoProgress
from lockstep.checker.temporal import fairness, properties
from lockstep.checker.vector import graph
from lockstep.specs.lang import (
    Count,
    Exists,
    ForAll,
    Int,
    Map,
    Range,
    Spec,
    SpecError,
    Var,
    action,
    always_eventually,
    eventually,
    eventually_always,
    leads_to,
    require,
    temporal,
)
from tests.conftest import model_path

LOCK = model_path("symmetric_lock.py") + ":SymmetricLock"
TOKEN = model_path("symmetric_lock.py") + ":TokenPassing"


ENGINES = [("scalar", 1), ("vector", 1), ("vector", 2)]


@pytest.fixture(autouse=True)
def second_thread_from_the_first_level(monkeypatch):
    """Two workers here use the second thread from the first level on, as on large graphs (a level of fewer than
    `THREADED_LEVEL` states runs on one thread otherwise, and these graphs are small)."""
    monkeypatch.setattr(graph, "THREADED_LEVEL", 1)


def _both(spec: str, prop: str, fair: dict[str, str] | None = None, engine: str = "auto", workers: int = 1,
          **params: int):
    """(the check without symmetry, the check with it) of `prop` on `engine`, deadlocks not checked."""
    return [lockstep.check(spec, properties=[prop], fairness=fair, deadlock=False, symmetry=sym, witnesses=False,
                           engine=engine, workers=workers, **params) for sym in (False, True)]


def outcome(res) -> tuple:
    v = res.violation
    return res.verdict, res.distinct, v and v.message, v and tuple(s.label for s in v.trace.steps), v and v.trace.loop


def lasso_replays(res, spec, prop: str, fair: dict[str, str] | None = None, **params: int) -> None:
    """A temporal violation's trace is a fair lasso of the unreduced spec that violates `prop`, each step taken
    by the action it records (what `lockstep replay` checks)."""
    v = res.violation
    if v is None:
        return
    assert v.kind == "temporal"
    model = lockstep.model(spec, **params)
    states = [model.decode_state(s.state) for s in v.trace.steps]
    lids = [None]
    for a, step, b in zip(states, v.trace.steps[1:], states[1:]):
        lid, t = next((lid, t) for lid, t in model.successors(a) if model.label_json(lid) == step.action)
        assert t == b
        lids.append(lid)
    assert lasso_violates(model, properties(model)[prop], fairness(model, fair), states, lids, v.trace.loop) is None


# (spec, property, fairness overrides, parameters, verdict, distinct states without and with symmetry)
CASES = [
    (LOCK, "lock_used", None, {}, "holds", 20, 7),
    (LOCK, "lock_used", None, {"n": 4}, "holds", 48, 9),
    (LOCK, "lock_used", {"acquisitions": "none"}, {}, "violation", 20, 7),
    (LOCK, "lock_used", {"acquisitions": "strong"}, {}, "holds", 20, 7),
    (LOCK, "someone_waiting_gets_the_lock", None, {}, "holds", 20, 7),
    (LOCK, "someone_waiting_gets_the_lock", {"acquisitions": "none"}, {"n": 4}, "violation", 48, 9),
    (LOCK, "all_idle_again", None, {}, "violation", 20, 7),
    (LOCK, "all_idle_again", None, {"n": 4}, "violation", 48, 9),
    (TOKEN, "finishes", None, {}, "holds", 6, 2),
    (TOKEN, "finishes", {"finishing": "none"}, {}, "violation", 6, 2),
    (TOKEN, "finishes", {"finishing": "none"}, {"n": 4}, "violation", 8, 2),
]


@pytest.mark.parametrize("spec, prop, fair, params, verdict, full, reduced", CASES)
def test_the_same_verdicts_on_one_state_per_orbit(spec, prop, fair, params, verdict, full, reduced):
    """Every engine: the verdict without symmetry, on one state per orbit; the same lasso on each engine."""
    found = set()
    for engine, workers in ENGINES:
        plain, sym = _both(spec, prop, fair, engine, workers, **params)
        assert (plain.verdict, sym.verdict) == (verdict, verdict)
        assert (plain.distinct, sym.distinct) == (full, reduced)
        found.add(outcome(sym))
        if verdict == "violation":
            assert sym.violation.kind == "temporal" and sym.violation.name == prop
            lasso_replays(sym, spec, prop, fair, **params)
    assert len(found) == 1


def test_a_loop_through_permuted_states_is_lifted_until_its_start_recurs(cli, tmp_path):
    """The quotient's loop (one waiting, two waiting, one in the critical section and one waiting) ends in a
    permutation of its start: lifted, it runs twice, the waiting process changing, then closes; it replays."""
    out = tmp_path / "idle.json"
    r = cli("check", LOCK, "--property", "all_idle_again", "--symmetry", "--no-deadlock", "--out", str(out))
    assert r.code == 1 and "vector breadth-first, whole state graph, 1 worker, symmetry reduction" in r.out
    assert "states 1..6 repeat for ever" in r.out and "7 distinct states" in r.out
    steps = re.findall(r"^ +\d+  (\S+)", r.out, re.MULTILINE)
    assert steps == ["init", "request(p=0)", "request(p=1)", "acquire(p=0)", "release(p=0)", "acquire(p=1)",
                     "request(p=0)"]
    assert "->  release(p=1)  (back to state 1" in r.out
    replayed = cli("replay", str(out), "--spec", LOCK)
    assert replayed.code == 0 and "the loop back to state 1 closes" in replayed.out
    assert "a fair behaviour (WF(family requests), WF(family acquisitions), WF(family releases)) that violates " \
           "all_idle_again" in replayed.out


def test_a_step_onto_its_own_representative_is_a_loop_not_stuttering(cli, tmp_path):
    """Passing the token keeps the one representative: the quotient's cycle is a step onto itself, which takes
    WF(passes) (stuttering there would not be fair); lifted, the token goes to process 1 and back."""
    out = tmp_path / "token.json"
    r = cli("check", TOKEN, "--property", "finishes", "--symmetry", "--no-deadlock", "--fairness", "finishing=none",
            "--out", str(out))
    assert r.code == 1 and "states 0..1 repeat for ever" in r.out and "2 distinct states" in r.out
    assert "pass_token(p=0, q=1)" in r.out and "->  pass_token(p=1, q=0)  (back to state 0" in r.out
    replayed = cli("replay", str(out), "--spec", TOKEN)
    assert replayed.code == 0 and "a fair behaviour (WF(family passes)) that violates finishes" in replayed.out


def test_stuttering_lifted(cli, tmp_path):
    out = tmp_path / "stutter.json"
    r = cli("check", LOCK, "--property", "lock_used", "--symmetry", "--no-deadlock", "--fairness",
            "acquisitions=none", "--out", str(out))
    assert r.code == 1 and "stutters for ever in state 3" in r.out
    replayed = cli("replay", str(out), "--spec", LOCK)
    assert replayed.code == 0 and "stutters in state 3 for ever" in replayed.out and "violates lock_used" in replayed.out


def test_a_safety_violation_on_the_way_is_lifted(cli, tmp_path):
    """The representatives put the waiting processes last (request(p=0) leads to one whose process 2 waits); the
    counterexample is the concrete path, which replays."""
    spec = model_path("symmetric_lock.py") + ":SymmetricLockOneWaiter"
    model = lockstep.model(spec, symmetry=True)
    init = model.initial_states()[0]
    assert model.canonical(next(t for lid, t in model.successors(init) if model.label(lid) == "request(p=0)")) != \
        next(t for lid, t in model.successors(init) if model.label(lid) == "request(p=0)")
    out = tmp_path / "waiters.json"
    r = cli("check", spec, "--property", "lock_used", "--symmetry", "--no-deadlock", "--out", str(out))
    assert r.code == 1 and "invariant one_waiter is violated" in r.out and "3 distinct states" in r.out
    assert re.findall(r"^ +\d+  (\S+)", r.out, re.MULTILINE) == ["init", "request(p=0)", "request(p=1)"]
    replayed = cli("replay", str(out), "--spec", spec)
    assert replayed.code == 0 and "invariant one_waiter is violated in the last state, as recorded" in replayed.out


@pytest.mark.parametrize("engine, workers", ENGINES)
def test_a_failing_step_is_said_of_the_concrete_state(engine, workers):
    """On the representative of "processes 0 and 1 wait" the third request is request(p=0); on the path's last
    state it is request(p=2), as without symmetry: with temporal properties and in the safety search alike."""
    spec = model_path("symmetric_lock.py") + ":SymmetricLockAsserting"
    safety = lockstep.check(spec, deadlock=False, symmetry=True, engine=engine, workers=workers)
    for res in (*_both(spec, "lock_used", None, engine, workers), safety):
        assert res.violation.message.startswith("action request(p=2) failed at ")
        assert res.violation.message.endswith("at most two processes wait")
        assert [s.label for s in res.violation.trace.steps] == ["init", "request(p=0)", "request(p=1)"]
        assert lockstep.replay(res.violation.trace, spec=spec).conclusion.startswith(
            "replayed 2 steps; then action request(p=2) failed")


def test_fairness_per_instance_is_refused_with_the_instance_a_permutation_moves(cli):
    r = cli("check", "two_phase_commit", "--property", "all_decide", "--symmetry")
    assert r.code == 2 and r.out == "" and "Traceback" not in r.err  # refused before the check starts
    assert ("WF(deliver) of each instance: the swap of ids 1 and 2 of Range((rm + 1)) (0..2) maps "
            "deliver(src=1, dst=0, msg=Prepared()) to deliver(src=2, dst=0, msg=Prepared()), whose fairness "
            "constraint is WF(deliver(src=2, dst=0, msg=Prepared())); fairness per instance is not kept by symmetry "
            "reduction; declare a fairness family") in r.err
    r = cli("check", LOCK, "--property", "lock_used", "--symmetry", "--fairness", "acquire=strong")
    assert r.code == 2 and "SF(acquire) of each instance: the swap of ids 0 and 1 of Range(n) (0..2) maps " \
                           "acquire(p=0) to acquire(p=1)" in r.err
    assert "(--fairness acquire=strong makes each instance fair; override the family acquisitions instead)" in r.err
    with pytest.raises(UsageError, match="WF\\(deliver\\) of each instance"):
        lockstep.check("two_phase_commit", properties=["all_decide"], symmetry=True)


def test_a_property_that_tells_processes_apart_is_an_error(cli):
    said = set()
    for flags in (["--engine", "scalar"], ["--engine", "vector"], ["--workers", "2"]):
        r = cli("check", LOCK, "--property", "first_served", "--symmetry", "--no-deadlock", *flags)
        assert r.code == 2 and "temporal property first_served is not symmetric: its condition P is True on state " \
                               "[pc = {0: 'waiting', 1: 'idle', 2: 'idle'}, locked = False] and False on its " \
                               "representative" in r.err
        said.add(r.err.splitlines()[-2])
    assert len(said) == 1
    starved = lockstep.check(LOCK, properties=["first_served"], deadlock=False)  # the families let process 0 starve
    assert starved.verdict == "violation" and starved.violation.name == "first_served"
    with pytest.raises(SpecError, match="first_served is not symmetric"):
        lockstep.check(LOCK, properties=["first_served"], deadlock=False, symmetry=True)


@pytest.mark.parametrize("native", ["never", "always"])
@pytest.mark.parametrize(("spec", "params"), [(LOCK, {}), (LOCK, {"n": 5}), (TOKEN, {"n": 4})])
def test_the_vector_engine_builds_the_scalar_engines_reduced_graph(spec, params, native, monkeypatch):
    monkeypatch.setenv("LOCKSTEP_NATIVE", native)
    model = lockstep.model(spec, symmetry=True, **params)
    fair = fairness(model)
    props = [p for name, p in properties(model).items() if name != "first_served"]
    quotient = Quotient(model, props, fair)
    scalar = explore(model, fair, Options(deadlock=False), NoProgress(), quotient)
    for workers in (1, 2):
        _engine, vm, _why = choose_engine("vector", model, workers)
        vector = graph.build_graph(vm, fair, Options(deadlock=False, workers=workers), NoProgress(), props, quotient)
        for name in ("offsets", "targets", "labels", "parent", "parent_label", "depth", "expanded", "initial"):
            assert np.array_equal(getattr(scalar, name), getattr(vector, name)), (name, workers)
        for p in props:
            assert all(np.array_equal(a, b) for a, b in zip(scalar.evaluate(p), vector.evaluate(p)))


# ------------------------------------------------------------------------------ a generated family

RANGES = [Range(3, symmetric=True), Range(4, symmetric=True, fixed=(0,))]  # all ids interchangeable; id 0 fixed


def _typed(fn, proc: Range, *names: str):
    """`fn` with its parameters `names` typed by `proc`."""
    fn.__annotations__ = dict.fromkeys(names, proc)
    return fn


def _own(proc: Range, guard: int, value: int):
    def step(s, p):
        require(s.x[p] == guard)
        s.x[p] = value

    return _typed(step, proc, "p")


def _other(proc: Range, guard: int, other: int, value: int):
    def step(s, p, q):
        require(p != q, s.x[p] == guard, s.x[q] == other)
        s.x[q] = value

    return _typed(step, proc, "p", "q")


def _global(proc: Range, guard: int, value: int):
    def step(s, p):
        require(s.x[p] == guard, s.g != value)
        s.g = value

    return _typed(step, proc, "p")


CONDITIONS = {
    "all": lambda proc, s, k: ForAll(proc, lambda p: s.x[p] == k),
    "some": lambda proc, s, k: Exists(proc, lambda p: s.x[p] == k),
    "two": lambda proc, s, k: Count(proc, lambda p: s.x[p] == k) >= 2,
    "g": lambda _proc, s, k: s.g == k,
}


@st.composite
def symmetric_specs(draw):
    """Three interchangeable processes (or four, process 0 fixed) with a counter in 0..2 each and a shared one;
    three to five actions of a process (on its own counter, on another's, on the shared one), each a weakly or
    strongly fair family or not fair, the first from the initial state; one property over conditions alike for
    every process."""
    proc = draw(st.sampled_from(RANGES))
    ns: dict = {"x": Map(proc, Int(0, 2), init=0), "g": Var(Int(0, 2), init=0)}
    shapes = draw(st.lists(st.tuples(st.sampled_from(["own", "other", "global"]), st.integers(0, 2), st.integers(0, 2),
                                     st.integers(0, 2), st.sampled_from(["weak", "weak", "strong", None])),
                           min_size=3, max_size=5))
    shapes[0] = ("own", 0, draw(st.integers(1, 2)), 0, shapes[0][4])  # one step from the initial state at least
    for i, (shape, a, b, c, fair) in enumerate(shapes):
        fn = {"own": lambda: _own(proc, a, b), "other": lambda: _other(proc, a, b, c),
              "global": lambda: _global(proc, a, b)}[shape]()
        fn.__name__ = f"a{i}"
        ns[f"a{i}"] = action(fairness=fair, family=f"f{i}")(fn) if fair else action(fn)
    kind = draw(st.sampled_from(["eventually", "always_eventually", "eventually_always", "leads_to"]))
    first = (draw(st.sampled_from(sorted(CONDITIONS))), draw(st.integers(0, 2)))
    second = (draw(st.sampled_from(sorted(CONDITIONS))), draw(st.integers(0, 2)))

    def prop(s):
        p, q = CONDITIONS[first[0]](proc, s, first[1]), CONDITIONS[second[0]](proc, s, second[1])
        return {"eventually": lambda: eventually(p), "always_eventually": lambda: always_eventually(p),
                "eventually_always": lambda: eventually_always(p), "leads_to": lambda: leads_to(p, q)}[kind]()

    prop.__name__ = "p"
    ns["p"] = temporal(prop)
    return type("GeneratedSymmetric", (Spec,), ns)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(symmetric_specs())
def test_generated_symmetric_specs_keep_their_verdicts(spec):
    """The same verdict with and without symmetry, on as many states as the safety search visits with it (one per
    orbit), the same lasso on every engine, and one that replays."""
    plain, sym = [lockstep.check(spec, properties=["p"], deadlock=False, engine="scalar", symmetry=s, witnesses=False)
                  for s in (False, True)]
    for engine, workers in ENGINES[1:]:
        assert outcome(lockstep.check(spec, properties=["p"], deadlock=False, engine=engine, workers=workers,
                                      symmetry=True, witnesses=False)) == outcome(sym)
    assert plain.verdict == sym.verdict
    assert sym.distinct <= plain.distinct
    assert sym.distinct == lockstep.check(spec, deadlock=False, symmetry=True, engine="scalar", witnesses=False).distinct
    lasso_replays(sym, spec, "p")


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(symmetric_specs())
def test_more_generated_symmetric_specs_keep_their_verdicts(spec):
    test_generated_symmetric_specs_keep_their_verdicts.hypothesis.inner_test(spec)
