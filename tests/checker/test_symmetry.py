"""Symmetry reduction: the canonical form is exact (the scalar one and the vector engine's, on random states),
both engines visit the same representatives, and reduced searches keep every verdict."""

from __future__ import annotations

import functools
import inspect
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model, resolve
from lockstep.checker.replay import replay
from lockstep.checker.vector import VectorOptions, check_vector
from lockstep.checker.vector.kernels import canon
from lockstep.checker.vector.kernels.fused import Unfusable, fuse
from lockstep.checker.vector.layout import Layout
from lockstep.checker.vector.symmetry import BatchSymmetry
from lockstep.specs.lang import SpecError
from tests.checker.test_por import vector_reduced
from tests.conftest import model_path, typed_spec_refs

SHAPES = "tests/models/symmetric_shapes.py:Shapes"  # as typed_spec_refs names them
GOSSIP = "tests/models/actor_gossip.py:Gossip"


def _declares_symmetry(ref: str) -> bool:
    obj, _ = resolve(ref)
    with open(inspect.getsourcefile(obj)) as f:
        return "symmetric=True" in f.read()


ASYMMETRIC = {"tests/models/actor_gossip.py:GossipObservedWrongClaim"}  # its invariant singles out process 0
SYMMETRIC = [r for r in typed_spec_refs() if isinstance(r, str) and _declares_symmetry(r) and r not in ASYMMETRIC]


def test_the_symmetric_specs_are_found():
    assert {"two_phase", "peterson", "tcommit", "two_phase_commit", "bracha", "bracha_byzantine_relay",
            "bracha_equivocating_sender", "bracha_low_echo_quorum", SHAPES, GOSSIP} <= set(SYMMETRIC)
    for ref in ASYMMETRIC:
        with pytest.raises(SpecError, match="declared symmetric, but an invariant distinguishes processes"):
            load_model(ref, {}, symmetry=True)


@functools.cache
def reducer(ref: str, **params: int):
    model = load_model(ref, params, symmetry=True)
    layout = Layout(model.prog)
    return model, layout, BatchSymmetry(model.sym, layout)


@functools.cache
def kernel(ref: str, tables: bool, **params: int):
    """The spec's fused kernel built for symmetry reduction: its C `canon` (None if the spec suits no kernel),
    with the images of values under the group's permutations tabulated (where the group is small enough) or
    computed."""
    model, layout, batch = reducer(ref, **params)
    saved = canon.GROUP_TABLES
    canon.GROUP_TABLES = saved if tables else 0
    try:
        fused = fuse(model.prog, layout, symmetry=batch)
    except Unfusable:
        return None
    finally:
        canon.GROUP_TABLES = saved
    libs = [lib.load() for lib in fused.libraries]
    fused.bind(libs[0], libs[1:])
    return fused


def _slot_value(dom, draw):
    """A value of a slot's domain, often its least one (so that many processes tie)."""
    if dom.kind == "set":
        u = dom.elem.size
        return sum(1 << b for b in draw(st.sets(st.integers(0, u - 1), max_size=min(u, 6))))
    if dom.kind == "bool":
        return draw(st.booleans())
    return draw(st.one_of(st.just(dom.lo), st.integers(dom.lo, dom.hi)))


# every typed spec with a symmetric range, and the test models of every kind of slot at other sizes
CASES = [(r, {}) for r in SYMMETRIC] + [(SHAPES, {"n": 4}), ("two_phase_commit", {"rm": 3}), ("two_phase", {"rm": 5}),
                                         ("two_phase", {"rm": 8})]  # 8! permutations: too many to tabulate


def _vector_is_scalar(ref: str, params: dict, data) -> None:
    model, layout, batch = reducer(ref, **params)
    states = [tuple(_slot_value(d, data.draw) for d in model.prog.slot_doms) for _ in range(6)]
    states += [t for _, t in model.successors(model.initial_states()[0])][:6]  # reachable: ties everywhere
    packed = layout.pack_many(states)
    got = batch(packed)
    in_c = [k.canonical(packed) for k in (kernel(ref, True, **params), kernel(ref, False, **params)) if k is not None]
    for j, s in enumerate(states):
        assert layout.unpack(list(got[:, j])) == model.canonical(s), s
        for c in in_c:
            assert layout.unpack(list(c[:, j])) == model.canonical(s), ("C", s)


def _one_per_orbit(ref: str, params: dict, data) -> None:
    """Images of a state under the generators of its symmetry group have its canonical form, which is canonical."""
    model, _layout, _batch = reducer(ref, **params)
    sym = model.sym
    s = tuple(_slot_value(d, data.draw) for d in model.prog.slot_doms)
    c = sym.canonical(s)
    assert sym.canonical(c) == c
    for g in sym.generators():
        assert sym.canonical(sym.applier(g)(s)) == c


IDS = [f"{r}-{p}" for r, p in CASES]
QUICK = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("ref, params", CASES, ids=IDS)
@QUICK
@given(st.data())
def test_vector_canonical_forms_are_the_scalar_ones(ref, params, data):
    _vector_is_scalar(ref, params, data)


@pytest.mark.parametrize("ref, params", CASES, ids=IDS)
@QUICK
@given(st.data())
def test_the_canonical_form_is_one_per_orbit(ref, params, data):
    _one_per_orbit(ref, params, data)


@pytest.mark.slow
@pytest.mark.parametrize("ref, params", CASES, ids=IDS)
@LONG
@given(st.data())
def test_vector_canonical_forms_are_the_scalar_ones_at_length(ref, params, data):
    _vector_is_scalar(ref, params, data)
    _one_per_orbit(ref, params, data)


def test_fixed_ids_stay_and_only_movable_ids_are_permuted():
    model, _layout, _batch = reducer("bracha_byzantine_relay")
    sym = model.sym
    assert [g[next(iter(g))] for g in sym.generators()] == [(0, 2, 1, 3)]  # the relay 3 and the sender 0 stay


# ------------------------------------------------------------------------------ the two engines


def outcome(res) -> tuple:
    v = res.violation
    trace = None if v is None else (v.kind, v.name, v.message, [(s.label, s.state) for s in v.trace.steps])
    return res.verdict, res.distinct, res.generated, res.depth, res.queued, res.cut, trace


BOUND = {"max_states": 2_000}  # every symmetric spec, cut where it is large
SMALL_BOUND = {"max_states": 600}  # P-SMR's states cost the scalar engine milliseconds each
AGREE = [(r, {}, SMALL_BOUND if r.startswith("psmr") else BOUND) for r in SYMMETRIC] + [
    ("two_phase", {"rm": 5}, {}),
    ("tcommit", {}, {"deadlock": False}),
    (SHAPES, {}, {"max_depth": 4}),
    (SHAPES, {"n": 4}, {"max_states": 700}),  # cut inside a level
    ("two_phase_commit", {"rm": 3}, {"por": True, "deadlock": False}),
    ("two_phase_commit_eager", {}, {"por": True}),
    (GOSSIP, {"n": 4}, {"por": True, "deadlock": False}),
    ("bracha_low_echo_quorum", {}, {"deadlock": False}),
    ("bracha_low_echo_quorum", {}, {"deadlock": False, "por": True}),
    ("bracha_equivocating_sender", {}, {"max_depth": 5, "deadlock": False}),
    ("bracha_byzantine_relay", {}, {"max_states": 3000, "por": True}),
]


# numpy passes; the C kernels, candidates canonicalized by the fused kernel; on one thread and on two (pipelined)
@pytest.mark.parametrize("native, threads", [("never", 1), ("always", 1), ("always", 2), ("never", 2)])
@pytest.mark.parametrize("ref, params, opts", AGREE, ids=[f"{r}-{p}-{o}" for r, p, o in AGREE])
def test_the_vector_engine_reduces_as_the_scalar_engine(ref, params, opts, native, threads):
    model = load_model(ref, params, symmetry=True)
    vector = vector_reduced(model, Options(**opts), native, threads)
    assert outcome(vector) == outcome(check(model, Options(**opts)))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("params, expanded", [({"lossy": 1}, 86), ({"lossy": 1, "rm": 3}, 640)])
def test_steps_the_cycle_proviso_brings_back_are_canonicalized(params, expanded, threads):
    """Under symmetry the fused kernel canonicalizes a step left out of its row's reduced set only once the cycle
    proviso expands the row: where it does, the states, the counts and the reduction's statistics are the scalar
    engine's, on one thread and on two (those steps then routed again between the two tables)."""
    model = load_model("two_phase_commit", params, symmetry=True)
    opts = Options(por=True, deadlock=False)
    vector, scalar = vector_reduced(model, opts, "always", threads), check(model, opts)
    assert outcome(vector) == outcome(scalar)
    notes = [[n for n in r.notes if n.startswith("partial-order reduction:")] for r in (vector, scalar)]
    assert notes[0] == notes[1] and f", {expanded} expanded fully by the cycle proviso" in notes[0][0]


@pytest.mark.parametrize("ref, params", [("two_phase", {"rm": 5}), ("two_phase_commit_eager", {"rm": 3}),
                                         ("two_phase_commit", {"rm": 3}), (SHAPES + "TwoWay", {})])
def test_vector_workers_reduce_as_one_process(ref, params):
    from lockstep.checker.progress import NoProgress
    from lockstep.checker.vector.search import VectorModel
    from lockstep.checker.vector.workers import check_workers

    model = load_model(ref, params, symmetry=True)
    one = check(model, Options())
    two = check_workers(VectorModel(model), Options(workers=2), NoProgress(), VectorOptions(), handoff=1)
    assert two.workers == 2 and two.verdict == one.verdict
    if one.violation is None:  # counts match where the search completes; a violation stops the workers at a level
        assert (two.distinct, two.generated, two.depth) == (one.distinct, one.generated, one.depth)
    else:
        v, w = one.violation, two.violation
        assert (w.kind, w.name, len(w.trace.steps)) == (v.kind, v.name, len(v.trace.steps))


def test_symmetry_runs_on_the_vector_engine_and_its_counterexample_replays(cli, tmp_path):
    r = cli("check", "two_phase", "--param", "rm=7", "--symmetry", "--quiet")
    assert r.code == 0 and "vector breadth-first, 1 worker, symmetry reduction" in r.out and "scalar engine" not in r.out
    out = tmp_path / "cex.json"
    r = cli("check", "two_phase_commit_eager", "--param", "rm=3", "--symmetry", "--out", str(out), "--quiet")
    assert r.code == 1 and "vector breadth-first" in r.out and "partial-order reduction" in r.out
    assert cli("replay", str(out)).code == 0
    r = cli("check", "two_phase", "--symmetry", "--cluster", "local")
    assert r.code == 2 and "--cluster does not combine with --symmetry" in r.err


def test_a_reduced_checkpoint_resumes_only_with_symmetry(cli, tmp_path):
    d = str(tmp_path / "ck")
    base = ["check", "two_phase_commit_eager", "-p", "rm=3", "--symmetry", "--no-por", "--quiet"]
    plain = cli(*base)
    assert cli(*base, "--max-depth", "1", "--checkpoint", d, "--checkpoint-every", "0").code == 3
    r = cli("check", "two_phase_commit_eager", "-p", "rm=3", "--no-por", "--resume", d, "--quiet")
    assert r.code == 2 and "differs from this run in: symmetry" in r.err
    resumed = cli(*base, "--resume", d)
    counts = re.compile(r"[\d,]+ distinct states, [\d,]+ generated, depth \d+")
    assert resumed.code == plain.code == 1
    assert counts.search(resumed.out).group(0) == counts.search(plain.out).group(0)
    assert resumed.out.split("Counterexample")[1].split("distinct states")[0] == \
        plain.out.split("Counterexample")[1].split("distinct states")[0]


# ------------------------------------------------------------------------------ reduced vs full


def _orbits(ref: str, params: dict) -> tuple[int, int]:
    """(reachable states, their distinct canonical forms), by a full search of the unreduced spec."""
    full, reduced = load_model(ref, params), load_model(ref, params, symmetry=True)
    seen = set(full.initial_states())
    todo = list(seen)
    while todo:
        for _, t in full.successors(todo.pop()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return len(seen), len({reduced.canonical(s) for s in seen})


@pytest.mark.parametrize("ref, params, counts", [
    ("two_phase_commit", {}, (716, 386)),
    ("two_phase_commit", {"rm": 3}, (11252, 2252)),
    ("two_phase_commit", {"rm": 3, "crashes": 0}, None),
    (GOSSIP, {"n": 4}, None),
])
def test_one_state_per_orbit(ref, params, counts):
    """The reduced search finds as many states as the full search has orbits (canonical forms)."""
    reachable, orbits = _orbits(ref, params)
    if counts is not None:
        assert (reachable, orbits) == counts
    assert orbits < reachable
    for por in (False, True):
        res = check_vector(load_model(ref, params, symmetry=True), Options(deadlock=False, por=por))
        assert res.verdict == "holds"
        if not por:
            assert res.distinct == orbits


@pytest.mark.parametrize("ref, params, prop", [
    ("two_phase_commit_eager", {}, "follows_tm"), ("two_phase_commit_eager", {"rm": 3}, "follows_tm"),
    ("bracha_low_echo_quorum", {}, "ready_agreement"), (model_path("actor_gossip.py") + ":GossipSelfish", {}, "not_self"),
])
def test_reduced_searches_find_the_same_violation(ref, params, prop):
    for sym, por in ((False, False), (True, False), (True, True)):
        res = check_vector(load_model(ref, params, symmetry=sym), Options(deadlock=False, por=por))
        assert (res.verdict, res.violation.name) == ("violation", prop), (sym, por)
        assert replay(res.violation.trace).states  # a real path of the spec, whose last state violates prop


@pytest.mark.slow
@pytest.mark.parametrize("ref, orbits", [("bracha_byzantine_relay", 388_978)])
def test_one_state_per_orbit_on_bracha(ref, orbits):
    assert _orbits(ref, {}) == (772_720, orbits)
    res = check_vector(load_model(ref, {}, symmetry=True), Options(deadlock=False))
    assert (res.verdict, res.distinct) == ("holds", orbits)


@pytest.mark.slow
def test_bracha_equivocating_sender_reduced_tenfold_and_more():
    """12,642,176 states without reduction; POR and symmetry together: the same verdict in under a tenth."""
    res = check_vector(load_model("bracha_equivocating_sender", {}, symmetry=True), Options(deadlock=False, por=True))
    assert res.verdict == "holds" and res.distinct * 10 <= 12_642_176


@pytest.mark.slow
@pytest.mark.parametrize("ref, opts", [("bracha_byzantine_relay", {"deadlock": False}),
                                       ("bracha_byzantine_relay", {"deadlock": False, "por": True}),
                                       ("bracha_low_echo_quorum", {"deadlock": False}),
                                       ("two_phase_commit", {"rm": 4})])
def test_the_engines_agree_on_whole_reduced_searches(ref, opts):
    params = {"rm": opts.pop("rm")} if "rm" in opts else {}
    model = load_model(ref, params, symmetry=True)
    assert outcome(check_vector(model, Options(**opts))) == outcome(check(model, Options(**opts)))
