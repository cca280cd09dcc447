"""Liveness on the vector engine: the same graph, verdicts and valid lassos as the scalar engine, on every temporal
property of the project's specs (with and without their fairness) and on a generated family of small specs with
weak and strong fairness; one and two workers; the compiled kernels and the numpy passes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lockstep
from lockstep.checker.explicit import Options
from lockstep.checker.liveness import check_properties, choose_engine, lasso_violates
from lockstep.checker.liveness.explore import explore
from lockstep.checker.loader import load_model
from lockstep.checker.progress import NoProgress
from lockstep.checker.temporal import fairness, properties
from lockstep.checker.vector import graph
from lockstep.specs.lang import (
    Int,
    Seq,
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

SPECS = [("ewd840", {}), ("ewd840_unstained", {}), ("lock", {"n": 3}), ("lock_weak", {}), ("alternating_bit", {}),
         ("two_phase_commit", {}), ("two_phase_commit", {"crashes": 0}), ("two_phase_commit", {"crashes": 0, "lossy": 1}),
         ("two_phase_commit_eager", {}), ("two_phase", {}), ("bracha", {"f": 0}), ("alternating_bit_reordering", {})]
# the larger specs with temporal properties, under their own fairness: a verdict, a lasso or a safety violation
LARGER = [("autobahn", {"views": 1, "lanes": 0}), ("autobahn_wrong_tc_quorum", {}), ("bracha_low_echo_quorum", {})]


@pytest.fixture(autouse=True)
def second_thread_from_the_first_level(monkeypatch):
    """Two workers here use the second thread from the first level on, as on large graphs (a level of fewer than
    `THREADED_LEVEL` states runs on one thread otherwise, and these graphs are small)."""
    monkeypatch.setattr(graph, "THREADED_LEVEL", 1)


def lasso_ok(model, prop, fair, res) -> None:
    """A temporal violation's trace is a fair lasso that violates the property (what `lockstep replay` checks)."""
    v = res.violation
    if v is None or v.kind != "temporal":
        return
    states = [model.decode_state(s.state) for s in v.trace.steps]
    labels = [None]  # each step by the action it records: two actions may lead to one state, one fair, one not
    for a, step, b in zip(states, v.trace.steps[1:], states[1:]):
        labels.append(next(lid for lid, t in model.successors(a) if t == b and model.label_json(lid) == step.action))
    assert lasso_violates(model, prop, fair, states, labels, v.trace.loop) is None


def outcome(res) -> tuple:
    v = res.violation
    return res.verdict, res.distinct, v and v.kind, v and len(v.trace.steps), v and v.trace.loop


@pytest.mark.parametrize(("spec", "params"), [("two_phase_commit", {}), ("ewd840", {}), ("lock_weak", {})])
def test_the_graph_without_the_liveness_library_is_the_same(spec, params, monkeypatch):
    """With the spec's kernel but not the graph's own C (its build failed), the steps' rows, labels and counts per
    state come from numpy passes, and the graph and every verdict are the same."""
    from lockstep.checker.liveness import native

    monkeypatch.setenv("LOCKSTEP_NATIVE", "always")
    model = load_model(spec, params)
    props = list(properties(model).values())
    with_c = [check_properties(model, props, fairness(model), Options(workers=w), engine="vector") for w in (1, 2)]
    monkeypatch.setattr(native, "library", lambda: None)
    without = [check_properties(model, props, fairness(model), Options(workers=w), engine="vector") for w in (1, 2)]
    assert [outcome(r) for r in without] == [outcome(r) for r in with_c]
    assert [(r.distinct, r.generated) for r in without] == [(r.distinct, r.generated) for r in with_c]


@pytest.mark.parametrize("native", ["never", "always"])
@pytest.mark.parametrize(("spec", "params"), SPECS)
def test_vector_and_scalar_agree_on_every_temporal_property(spec, params, native, monkeypatch):
    monkeypatch.setenv("LOCKSTEP_NATIVE", native)
    model = load_model(spec, params)
    fair_actions = {t.action for t in model.prog.transitions if t.meta.get("fairness")}
    for prop in properties(model).values():
        for overrides in ({}, dict.fromkeys(fair_actions, "none")):
            for deadlock in (False, True):
                fair = fairness(model, overrides)
                scalar = check_properties(model, [prop], fair, Options(deadlock=deadlock))
                lasso_ok(model, prop, fair, scalar)
                for workers in (1, 2):
                    fair = fairness(model, overrides)
                    _engine, vm, _why = choose_engine("vector", model, workers)
                    vector = check_properties(model, [prop], fair, Options(deadlock=deadlock, workers=workers),
                                              engine="vector", vm=vm)
                    assert outcome(vector) == outcome(scalar), (prop.name, overrides, deadlock, workers)
                    lasso_ok(model, prop, fair, vector)


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "params"), LARGER)
def test_vector_and_scalar_agree_on_the_larger_specs(spec, params):
    model = load_model(spec, params)
    for prop in properties(model).values():
        fair = fairness(model)
        scalar = check_properties(model, [prop], fair, Options(deadlock=False))
        lasso_ok(model, prop, fair, scalar)
        for workers in (1, 2):
            _engine, vm, _why = choose_engine("vector", model, workers)
            vector = check_properties(model, [prop], fair, Options(deadlock=False, workers=workers), engine="vector", vm=vm)
            assert outcome(vector) == outcome(scalar), (prop.name, workers)
            lasso_ok(model, prop, fair, vector)


@pytest.mark.parametrize("native", ["never", "always"])
@pytest.mark.parametrize(("spec", "params"), [("alternating_bit", {}), ("lock_weak", {"n": 5}), ("two_phase", {}),
                                            ("two_phase_commit", {"crashes": 0})])
def test_the_same_graph_in_batches_of_sixteen_states(spec, params, native, monkeypatch):
    """Levels cut into many batches and chunks, batches that take states from several chunks (and, in the
    alternating bit, states outside the constraints that are not expanded) give the scalar engine's graph, array
    for array, and its conditions, from the numpy passes and from the compiled kernel."""
    monkeypatch.setenv("LOCKSTEP_NATIVE", native)
    monkeypatch.setattr(graph, "TARGET_WORDS", 1)
    model = load_model(spec, params)
    fair, props = fairness(model), list(properties(model).values())
    scalar = explore(model, fair, Options(deadlock=False), NoProgress())
    for workers in (1, 2):
        _engine, vm, _why = choose_engine("vector", model, workers)
        vector = graph.build_graph(vm, fair, Options(deadlock=False, workers=workers), NoProgress(), props)
        for name in ("offsets", "targets", "labels", "parent", "parent_label", "depth", "expanded", "initial"):
            assert np.array_equal(getattr(scalar, name), getattr(vector, name)), (name, workers)
        assert vector.outside == scalar.outside
        for p in props:
            assert all(np.array_equal(a, b) for a, b in zip(scalar.evaluate(p), vector.evaluate(p)))


def test_seeded_liveness_bugs_on_the_command_line(cli, tmp_path):
    """lock_weak starves on both engines and two workers; the lasso file replays unchanged."""
    out = tmp_path / "starve.json"
    r = cli("check", "lock_weak", "--property", "no_starvation", "--engine", "vector", "--workers", "2",
            "--out", str(out))
    assert r.code == 1 and "vector breadth-first, whole state graph, 2 workers" in r.out and "repeat for ever" in r.out
    replayed = cli("replay", str(out))
    assert replayed.code == 0 and "fair behaviour" in replayed.out
    assert cli("check", "lock", "--property", "no_starvation", "--workers", "2").code == 0
    r = cli("check", "ewd840", "--property", "Liveness", "--no-deadlock", "--fairness", "system=none", "--engine", "vector")
    assert r.code == 1 and "stutters for ever" in r.out


def test_every_rm_decides_needs_the_rms_to_hear_the_decision(cli, tmp_path):
    """Two-phase commit under weak fairness of every action: every RM decides (288 states at rm=3). Without fair
    receipt of the decision the RMs may stay prepared after an abort: the shortest lasso, which replays."""
    r = cli("check", "two_phase", "--property", "every_rm_decides", "--no-deadlock", "--workers", "2")
    assert r.code == 0 and "288 distinct states" in r.out, r.out
    out = tmp_path / "undecided.json"
    r = cli("check", "two_phase", "--property", "every_rm_decides", "--no-deadlock", "--fairness", "rm_rcv_commit_msg=none",
            "--fairness", "rm_rcv_abort_msg=none", "--out", str(out))
    assert r.code == 1 and "stutters for ever in state 4" in r.out, r.out
    steps = re.findall(r"^    \d+  (\S+)", r.out, re.MULTILINE)
    assert steps == ["init", "tm_abort", "rm_prepare(r=0)", "rm_prepare(r=1)", "rm_prepare(r=2)"]
    replayed = cli("replay", str(out))
    assert replayed.code == 0 and "fair behaviour" in replayed.out


class OutOfRange(Spec):
    """Its property reads a sequence past its end once x reaches 2."""

    x = Var(Int(0, 3), init=0)
    m = Var(Seq(Int(0, 3), 2), init=[1, 2])

    @action(fairness="weak")
    def go(s):
        require(s.x < 3)
        s.x = s.x + 1

    @temporal
    def p(s):
        return eventually(s.m[s.x] == 5)


def test_a_condition_that_fails_is_reported_at_its_first_state_on_both_engines():
    messages = set()
    for engine, workers in (("scalar", 1), ("vector", 1), ("vector", 2)):
        with pytest.raises(SpecError) as e:
            lockstep.check(OutOfRange, properties=["p"], deadlock=False, engine=engine, workers=workers)
        messages.add(str(e.value))
    assert len(messages) == 1 and "condition P fails on state (2, 14): IndexError" in messages.pop()


# ------------------------------------------------------------------------------ a generated family


def _step(var: str, guard: int, target: str, value: int):
    def step(s):
        require(getattr(s, var) == guard)
        setattr(s, target, value)

    return step


@st.composite
def small_specs(draw):
    """Two counters in 0..2, three to five guarded assignments each weakly, strongly or not fair, one property."""
    steps = draw(st.lists(st.tuples(st.sampled_from("xy"), st.integers(0, 2), st.sampled_from("xy"), st.integers(0, 2),
                                    st.sampled_from(["weak", "strong", None])), min_size=3, max_size=5))
    kind = draw(st.sampled_from(["eventually", "always_eventually", "eventually_always", "leads_to"]))
    p = (draw(st.sampled_from("xy")), draw(st.integers(0, 2)))
    q = (draw(st.sampled_from("xy")), draw(st.integers(0, 2)))
    ns: dict = {"x": Var(Int(0, 2), init=0), "y": Var(Int(0, 2), init=0)}
    for i, (var, guard, target, value, fair) in enumerate(steps):
        fn = _step(var, guard, target, value)
        fn.__name__ = f"a{i}"
        ns[f"a{i}"] = action(fairness=fair)(fn) if fair else action(fn)

    def prop(s):
        first, second = getattr(s, p[0]) == p[1], getattr(s, q[0]) == q[1]
        return {"eventually": lambda: eventually(first), "always_eventually": lambda: always_eventually(first),
                "eventually_always": lambda: eventually_always(first), "leads_to": lambda: leads_to(first, second)}[kind]()

    prop.__name__ = "p"
    ns["p"] = temporal(prop)
    return type("Generated", (Spec,), ns), steps, kind


@settings(max_examples=25, deadline=None)
@given(small_specs())
def test_generated_specs_with_fairness(case):
    spec, _steps, _kind = case
    results = [lockstep.check(spec, properties=["p"], deadlock=False, engine=engine, workers=workers)
               for engine, workers in (("scalar", 1), ("vector", 1), ("vector", 2))]
    assert len({outcome(r) for r in results}) == 1
    model = results[0].model
    prop = properties(model)["p"]
    for r in results:
        lasso_ok(model, prop, fairness(model), r)


def test_the_index_built_ahead_numbers_as_the_index_built_in_turn(monkeypatch):
    """On two workers the next fingerprint table is built on another thread while numbering goes on: through many
    growths it numbers every batch exactly as the table grown in place, and keeps no state twice."""
    from lockstep.checker.liveness import native

    monkeypatch.setenv("LOCKSTEP_NATIVE", "auto")
    monkeypatch.delitem(native._STATE, "lib", raising=False)  # loaded afresh: an earlier test may have said never
    rng = np.random.default_rng(1)
    plain, ahead = graph.FingerprintIndex(), graph.FingerprintIndex(ahead=True)
    if plain.lib is None:
        pytest.skip("the tables are C's: no C compiler here")
    for _ in range(120):
        fps = rng.integers(1, 1 << 21, size=int(rng.integers(1, 30_000)), dtype=np.uint64)
        want, got = plain.index(fps, 1 << 40), ahead.index(fps, 1 << 40)
        assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
    assert ahead.n == plain.n == len(np.unique(ahead.fps[:ahead.n])) > 1_000_000


def test_repeats_found_ahead_take_their_first_occurrences_number(monkeypatch):
    """On two workers each batch's repeated fingerprints are found on the generating thread, a block at a time, as
    far as it gets before the numbering takes the batch: whether all, none or some blocks were done, and up to the
    state bound, the numbering is the one made without them."""
    from lockstep.checker.liveness import native

    monkeypatch.setenv("LOCKSTEP_NATIVE", "auto")
    monkeypatch.delitem(native._STATE, "lib", raising=False)
    if native.library() is None:
        pytest.skip("the tables are C's: no C compiler here")
    rng = np.random.default_rng(2)
    go, stop = np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64)
    for limit in (1 << 40, 150_000):
        plain, ahead = graph.FingerprintIndex(), graph.FingerprintIndex()
        seen = []
        for _ in range(6):  # repeats within a block and across blocks, and of fingerprints numbered before
            fps = rng.integers(1, 1 << 18, size=int(rng.integers(1, 3 * native.FIRST_BLOCK)), dtype=np.uint64)
            seen.append(fps)
            first, done = ahead.firsts(fps, go)
            assert done == len(fps)
            for b in range(0, len(fps), native.FIRST_BLOCK):  # each one's first occurrence in its block
                block = fps[b:b + native.FIRST_BLOCK]
                _u, at, inverse = np.unique(block, return_index=True, return_inverse=True)
                assert np.array_equal(first[b:b + native.FIRST_BLOCK], b + at[inverse])
            assert ahead.firsts(fps, stop)[1] == 0
            some = native.FIRST_BLOCK * int(rng.integers(0, 3))  # as if stopped after some blocks
            first[some:] = -7  # not read past the blocks done
            want, got = plain.index(fps, limit), ahead.index(fps, limit, (first, min(some, len(fps))))
            assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
        assert ahead.n == plain.n == min(limit, len(np.unique(np.concatenate(seen))))
