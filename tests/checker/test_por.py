"""Partial-order reduction is sound: the same verdicts, violated properties and replayable counterexamples
as the full search on every actor spec of the project and its seeded bugs, and — on random small actor
systems — the same verdicts and violations, the same reachable values of the observed slots, the very same
deadlock states, and reduced sets that are persistent wherever they are taken."""

from __future__ import annotations

import os
import sys
import zlib
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lockstep.checker import interpret
from lockstep.checker.explicit import Options, check
from lockstep.checker.explicit.reduced import reduced_level
from lockstep.checker.loader import load_model, resolve
from lockstep.checker.progress import NoProgress
from lockstep.checker.reduction.actors import ActorStructure
from lockstep.checker.reduction.ample import PorStats, Reducer, TupleColumns
from lockstep.checker.replay import replay
from lockstep.checker.typed_model import TypedModel
from lockstep.checker.vector import VectorModel, VectorOptions, check_vector
from lockstep.checker.vector.search import VectorSearch
from lockstep.specs.lang import build_program
from lockstep.specs.lang.actors import ActorSpec
from lockstep.specs.registry import SPECS
from tests.conftest import model_path
from tests.models.random_actors import Desc, build

SMALL = 300_000  # a registered spec whose full search stays below this runs in the default suite
LARGE = {"bracha", "bracha_byzantine_relay", "bracha_equivocating_sender", "bracha_low_echo_quorum"}
# (n = 4, f = 1: 0.8 to 12.6 million states; the slow test compares them, the default one checks that they are large)


def _actor_specs() -> list[str]:
    out = []
    for name in sorted(SPECS):
        obj, _ = resolve(name)
        if isinstance(obj, type) and issubclass(obj, ActorSpec):
            out.append(name)
    return out


ACTOR_SPECS = _actor_specs()
MINUTES = {"psmr", "psmr_no_acyclic_order", "psmr_first_key_cg", "psmr_read_wrong_group"}  # up to 0.1 million
# states, a minute or more each
AUTOBAHN = {s for s in ACTOR_SPECS if s.startswith("autobahn")}  # 0.3 to 2 million states and more at defaults
AUTOBAHN_DEEP = {"autobahn_quorum_2f", "autobahn_weak_fast_path"}  # 91 and 84 thousand states in each of three searches
CONSTRAINED = {s for s in ACTOR_SPECS if s.startswith("ssp_")}  # state constraints: POR is refused (tested below)
SMALL_SPECS = [s for s in ACTOR_SPECS if s not in LARGE | MINUTES | AUTOBAHN | CONSTRAINED]
EXTRA = [model_path("actor_gossip.py") + ":" + c for c in
         ("Gossip", "GossipSelfish", "GossipWithForger", "GossipObserved", "GossipObservedWrongClaim")] + \
        [model_path("actor_failing.py") + ":Fragile"]
VARIANTS = [("two_phase_commit", {"rm": 3}), ("two_phase_commit", {"ordered": 1, "capacity": 2}),
            ("two_phase_commit", {"lossy": 1}), ("two_phase_commit", {"crashes": 0}),
            ("two_phase_commit", {"ordered": 1}), ("two_phase_commit_eager", {"rm": 3}),
            ("token_ring", {"n": 4, "laps": 2}), ("two_phase_commit", {"duplicating": 1}),
            ("psmr", {"commands": 2}), ("psmr_no_acyclic_order", {"commands": 2}),
            (model_path("actor_gossip.py") + ":GossipWithForger", {"ordered": 1})]


MODES = [("never", 1), ("always", 1), ("always", 2)]  # the numpy passes; the C kernel, on one thread and two


def vector_reduced(model: TypedModel, opts: Options, native: str, threads: int):
    """The vector engine's search: the numpy passes or the C kernel (`native`), on one thread or on two from the
    first level on, in batches small enough that a level is several (the two-thread pipeline)."""
    if threads == 1:
        return check_vector(model, opts, vopts=VectorOptions(native=native))
    search = VectorSearch(VectorModel(model), opts, NoProgress(), VectorOptions(batch=64, native=native))
    search.use_threads(2, threaded_level=1)
    try:
        return search.run()
    finally:
        search.close()


def _same(spec: str, params: dict, deadlock: bool, limit: int | None = SMALL, modes=MODES) -> None:
    full = check(load_model(spec, params), Options(deadlock=deadlock, max_states=limit))
    assert full.verdict != "inconclusive", f"{spec} has more than {limit:,} states: list it in LARGE"
    scalar = check(load_model(spec, params), Options(deadlock=deadlock, por=True))
    vectors = [vector_reduced(load_model(spec, params), Options(deadlock=deadlock, por=True), native, threads)
               for native, threads in modes]
    for vector in vectors:
        assert scalar.verdict == vector.verdict == full.verdict
        assert (scalar.distinct, scalar.generated, scalar.depth) == (vector.distinct, vector.generated, vector.depth)
    if full.verdict == "holds":  # a violation may be reached later in the reduced graph, after more states
        assert scalar.distinct <= full.distinct
    if full.violation is not None:
        for res in (scalar, *vectors):
            v = res.violation
            assert v.kind == full.violation.kind
            if v.kind == "invariant":
                assert v.name == full.violation.name
            assert replay(v.trace).states  # the counterexample re-executes and shows the violation


@pytest.mark.parametrize("spec", SMALL_SPECS + EXTRA)
@pytest.mark.parametrize("deadlock", [False, True])
def test_reduced_and_full_searches_agree_on_every_actor_spec(spec, deadlock):
    _same(spec, {}, deadlock)


def test_the_large_specs_are_large():
    """What keeps a spec out of the default differential test is its size, nothing else."""
    assert LARGE <= set(ACTOR_SPECS)
    res = check_vector(load_model("bracha", {}), Options(deadlock=False, max_states=SMALL))
    assert res.verdict == "inconclusive"


@pytest.mark.parametrize("spec, params", VARIANTS)
def test_reduced_and_full_searches_agree_on_network_and_fault_variants(spec, params):
    _same(spec, params, deadlock=False)


@pytest.mark.parametrize("spec", sorted(CONSTRAINED))
def test_specs_with_state_constraints_are_searched_without_reduction(spec, cli):
    r = cli("check", spec, "--quiet")
    assert "partial-order reduction off" in r.out and "state constraints" in r.out
    assert cli("check", spec, "--por", "--quiet").code == 2


@pytest.mark.parametrize("spec", [pytest.param(s, marks=pytest.mark.slow) if s in AUTOBAHN_DEEP else s
                                  for s in sorted(AUTOBAHN)])
def test_reduced_and_full_searches_agree_on_one_slot_of_autobahn(spec):
    """Every Autobahn variant on one slot and one view of consensus, without GST (its step is not an actor
    event: the reduction is refused with it): 37 to 25 thousand states (84 and 91 thousand, slow, for the weak
    fast path and the quorum-of-2f bug)."""
    _same(spec, {"lanes": 0, "views": 1, "slots": 1, "gst": 0}, deadlock=False)


def test_reduced_and_full_searches_agree_on_the_seeded_autobahn_lane_bug():
    # committed_cars_available at the bug's small bounds, 64,439 states in the full search
    _same("autobahn_weak_poa", {"lanes": 1, "views": 1}, deadlock=False)


def test_reduced_and_full_searches_agree_on_the_seeded_psmr_bug():
    _same("psmr_first_key_cg", {"replicas": 2}, deadlock=True)  # 1,258 states to the violation (3,956 with 3 replicas)


@pytest.mark.slow
@pytest.mark.parametrize("spec, deadlock", [(s, False) for s in sorted(LARGE)] + [(s, d) for s in sorted(MINUTES)
                                                                                  for d in (False, True)])
def test_reduced_and_full_searches_agree_on_large_actor_specs(spec, deadlock):
    _same(spec, {}, deadlock=deadlock, limit=None)


def test_reduction_keeps_the_low_echo_quorum_bug_and_prunes_the_equivocating_sender():
    """The seeded bug is still found (a longer trace: the reduced graph delays it); the correct quorum
    holds for the Byzantine relay on under a quarter of the full search's 772,720 states."""
    res = check_vector(load_model("bracha_low_echo_quorum", {}), Options(deadlock=False, por=True))
    assert res.violation.name == "ready_agreement"
    assert replay(res.violation.trace).states
    relay = check_vector(load_model("bracha_byzantine_relay", {}), Options(deadlock=False, por=True))
    assert relay.verdict == "holds" and relay.distinct * 4 < 772_720


@pytest.mark.slow
def test_reduction_of_the_equivocating_sender():
    res = check_vector(load_model("bracha_equivocating_sender", {}), Options(deadlock=False, por=True))
    assert res.verdict == "holds" and res.distinct * 10 <= 12_642_176


# ----------------------------------------------------------------------------- random actor systems


EXAMPLES = int(os.environ.get("LOCKSTEP_POR_EXAMPLES", "120"))  # more for a long hunt
SAMPLES = 12  # reduced sets per system checked to be persistent (along at most 300 states each)


@st.composite
def descs(draw) -> Desc:
    """Small actor systems over every network the reduction handles: ordered or not, capacities 1 to 3 (start
    messages and unconditional sends, to oneself too, that can overflow them), lossy, duplicating, crashes and
    a Byzantine forger."""
    n = draw(st.integers(2, 3))
    ntags = draw(st.sampled_from([1, 2, 2]))
    ordered = draw(st.booleans())
    capacity = draw(st.integers(1, 2 if ordered else 3))
    pid, tag, val = st.integers(0, n - 1), st.integers(0, ntags - 1), st.integers(0, 1)
    cond = st.sampled_from([("true",), ("true",), ("fresh",), ("x", 0), ("x", 1), ("heard", 1)])
    rare = st.sampled_from([False, False, True])
    chatty = draw(st.booleans())  # many sends (overflows), or few (messages that nothing sends again)

    def op(p: int) -> st.SearchStrategy:
        dst = st.one_of(st.just(p), pid, st.just("src"), *([st.just("x")] if n == 3 else []))
        send = st.tuples(st.just("send"), dst, tag, st.sampled_from(["m", "x", 0, 1]), cond)
        return st.one_of(st.tuples(st.just("guard"), st.integers(0, 2)), st.tuples(st.just("set"), st.integers(0, 2)),
                         st.just(("inc",)), st.just(("first",)), st.just(("hear",)), *([send] * (3 if chatty else 1)),
                         st.tuples(st.just("arm"), cond))

    start = tuple(_fitting(draw(st.lists(st.tuples(pid, tag, val), min_size=1, max_size=3)), ordered, capacity)
                  for _ in range(n))
    ops = tuple((p, t, tuple(draw(st.lists(op(p), min_size=1, max_size=3 if chatty else 2)))) for p in range(n)
                for t in range(ntags))
    timers = tuple(draw(st.one_of(st.none(), st.lists(op(p), max_size=2).map(tuple))) for p in range(n))
    inv = draw(st.tuples(st.sampled_from(["pair", "agree", "heard", "none"]), pid, pid, st.integers(0, 2)))
    return Desc(n, ntags, start, ops, timers, inv, ordered=ordered, capacity=capacity,
                crashes=draw(rare) * draw(st.integers(1, n - 1)), lossy=draw(rare),
                duplicating=not ordered and draw(st.booleans()), forger=draw(rare))


def _fitting(msgs: list[tuple], ordered: bool, capacity: int) -> tuple:
    """The start messages that fit the network: at most `capacity` per channel (ordered) or envelope."""
    out: list[tuple] = []
    for m in msgs:
        if sum(k[0] == m[0] if ordered else k == m for k in out) < capacity:
            out.append(m)
    return tuple(out)


def _full_graph(model: TypedModel, limit: int) -> tuple[set, set] | None:
    """Every reachable state (None beyond `limit`) and every violation a search may report there, as (kind,
    name): a false invariant, a failing step (the first that fails at its state, as the engines name it) and a
    deadlock (no step enabled)."""
    seen = set(model.initial_states())
    todo = list(seen)
    found: set[tuple[str, str]] = set()
    while todo:
        st_ = todo.pop()
        i = model.violated(st_)
        if i >= 0:
            found.add(("invariant", model.prog.invariants[i].name))
        try:
            succ = model.successors(st_)
            if not succ:
                found.add(("deadlock", ""))
        except Exception:
            failure = model.diagnose(st_)
            found.add((failure.kind, failure.action))
            succ = model.steps_that_succeed(st_)
        for _, t in succ:
            if t not in seen:
                seen.add(t)
                todo.append(t)
                if len(seen) > limit:
                    return None
    return seen, found


def _searches_agree(model: TypedModel, found: set, deadlock: bool) -> None:
    """The full, scalar-reduced and vector-reduced searches reach the same verdict; a violation each reports is
    one the full graph has (the very one where it has a single one), and both reduced engines report the same."""
    expected = {v for v in found if deadlock or v[0] != "deadlock"}
    full = check(model, Options(deadlock=deadlock))
    scalar = check(model, Options(deadlock=deadlock, por=True))
    # the numpy passes on one thread; every third system also through the C kernel on two threads (a kernel
    # is compiled per system)
    third = zlib.crc32(" ".join(t.label for t in model.prog.transitions).encode()) % 3 == 0
    modes = [("never", 1)] + ([("always", 2)] if third else [])
    verdict = "violation" if expected else "holds"
    for native, threads in modes:
        vector = vector_reduced(model, Options(deadlock=deadlock, por=True), native, threads)
        assert (full.verdict, scalar.verdict, vector.verdict) == (verdict,) * 3, (deadlock, expected)
        assert (scalar.distinct, scalar.generated) == (vector.distinct, vector.generated)
        if expected:
            got = [(r.violation.kind, r.violation.name) for r in (full, scalar, vector)]
            assert set(got) <= expected, (deadlock, got, expected)
            assert got[1] == got[2]


def _reduced_graph(model: TypedModel, red: Reducer) -> set:
    expand = reduced_level(model, red, PorStats(), deadlock=False)
    P: dict = {}
    frontier = []
    for s in model.initial_states():
        f = model.fingerprint(s)
        if f not in P:
            P[f] = None
            frontier.append((f, s))
    states = {s for _, s in frontier}
    while frontier:
        nxt: list = []
        r = expand(frontier, P, nxt, lambda _s: False, None, None, sys.maxsize, lambda _k, _g: None, None, None, 1, 0)
        assert not isinstance(r, tuple), r
        states.update(s for _, s in nxt)
        frontier = nxt
    return states


FAILS = "fails"


def _steps(model: TypedModel, cache: dict, s: tuple) -> dict[int, object]:
    """Each step enabled at `s` (by transition id): its successor, or FAILS."""
    hit = cache.get(s)
    if hit is None:
        hit = {}
        for tid, t in enumerate(model.prog.transitions):
            try:
                nxt = interpret.run_transition(model.prog, t, s)
            except interpret.Failure:
                hit[tid] = FAILS
                continue
            if nxt is not None:
                hit[tid] = nxt
        cache[s] = hit
    return hit


def _persistent(model: TypedModel, red: Reducer, states: set, samples: int, budget: int) -> None:
    """Wherever `red` reduces a state s to the steps P, P is persistent (Godefroid 1996, Def. 4.1), failing steps
    included: along every path from s of steps outside P, each step of P stays enabled without failing and
    commutes with the path's next step, and a failing step outside P still fails after it. Every closure the
    reducer may choose must be: steps marked unsafe at random make it choose others than the smallest. Checked
    for `samples` reduced sets, along `budget` states each."""
    cache: dict = {}
    live = [x for x in sorted(states, key=repr) if _steps(model, cache, x) and FAILS not in _steps(model, cache, x).values()]
    if not live:
        return
    enabled = np.zeros((red.ntrans, len(live)), dtype=bool)
    loops = np.zeros_like(enabled)
    for j, x in enumerate(live):
        for tid, nxt in _steps(model, cache, x).items():
            enabled[tid, j] = True
            loops[tid, j] = nxt == x
    rng = np.random.default_rng(len(live))
    sets: dict[tuple, None] = {}
    for share in (0.0, 0.3, 0.6):
        ample, reduced = red.choose(TupleColumns(live), enabled, loops | (rng.random(enabled.shape) < share))
        for j in np.nonzero(reduced)[0].tolist():
            sets[(j, tuple(np.nonzero(ample[:, j])[0].tolist()))] = None
    picked = list(sets)
    for j, chosen in [picked[k] for k in np.linspace(0, len(picked) - 1, min(samples, len(picked))).astype(int)]:
        seen, todo = {live[j]}, [live[j]]
        while todo and len(seen) < budget:
            x = todo.pop()
            at = _steps(model, cache, x)
            for t in chosen:
                after = at.get(t)
                assert after is not None and after != FAILS, (live[j], chosen, x, t)
                then = _steps(model, cache, after)
                for u, nxt in at.items():
                    if u in chosen or then.get(u) == FAILS:  # u fails after t: a failure the reduced search reaches
                        continue
                    swapped = _steps(model, cache, nxt).get(t) if nxt != FAILS else None
                    assert then.get(u) is not None and then.get(u) == swapped, (live[j], chosen, x, t, u)
            for u, nxt in at.items():
                if u not in chosen and nxt != FAILS and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)


def _model(desc: Desc) -> TypedModel:
    """The model of a random system."""
    return TypedModel(build_program(build(desc), {}), "random")


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(descs(), st.data())
def test_random_actor_systems_reduced_and_full(desc, data):
    model = _model(desc)
    graph = _full_graph(model, 5_000)
    if graph is None:
        event("skipped: more than 5,000 states")
        return
    states, found = graph
    event("violations: " + (", ".join(sorted({k for k, _ in found})) or "none"))
    for deadlock in (False, True):
        _searches_agree(model, found, deadlock)
    if ("invariant", "prop") in found and len(found) > 1:  # the invariant may be what hides a pruned failure
        alone = _model(replace(desc, invariant=("none", 0, 0, 0)))
        for deadlock in (False, True):
            _searches_agree(alone, found - {("invariant", "prop")}, deadlock)
    prog = model.prog
    structure = ActorStructure(prog)
    _persistent(model, Reducer(structure, set()), states, SAMPLES, 300)
    if any(kind not in ("invariant", "deadlock") for kind, _ in found):  # the reduced graph below stops at a failure
        return
    dead = {s for s in states if not model.successors(s)}
    drawn = data.draw(st.lists(st.integers(0, prog.nslots - 1), max_size=4), label="visible slots")
    for visible in (set(), set(drawn)):  # nothing observed: the most reduction, the deadlocks alone to keep
        kept = _reduced_graph(model, Reducer(structure, visible))
        assert kept <= states
        observed = sorted(visible)
        assert {tuple(s[i] for i in observed) for s in kept} == {tuple(s[i] for i in observed) for s in states}
        assert {s for s in kept if not model.successors(s)} == dead


def test_a_drop_and_a_send_of_one_envelope_are_dependent_on_a_duplicating_network():
    """Process 1's start message makes process 0 answer, again at each delivery (a duplicating network keeps the
    message). Once the answer is in flight, sending it again adds nothing while a drop removes it: the two do not
    commute, and a reduced set holding the one must hold the other."""
    desc = Desc(n=2, ntags=1, start=((), ((0, 0, 1),)),
                ops=((0, 0, (("send", 1, 0, "m", ("true",)), ("inc",))), (1, 0, ())), timer_ops=(None, None),
                invariant=("none", 0, 0, 0), lossy=True, duplicating=True)
    model = _model(desc)
    states, _found = _full_graph(model, 1000)
    _persistent(model, Reducer(ActorStructure(model.prog), set()), states, 100, 100)


def test_a_spec_too_large_for_the_static_analysis_is_searched_without_reduction(monkeypatch):
    """The analysis has a budget of value combinations: beyond it the reduction is refused before the search
    (a note by default, a usage error when --por was asked for), never a silent wait of minutes."""
    from lockstep.api import UsageError, por_choice
    from lockstep.checker.reduction import actors

    monkeypatch.setattr(actors, "MAX_WORK", 1000)
    m = load_model("psmr", {})
    use, note = por_choice(m, None, [])
    assert not use and "too large for the reduction's static analysis (more than 1,000" in note
    with pytest.raises(UsageError, match="--por: .*too large"):
        por_choice(load_model("psmr", {}), True, [])
    assert por_choice(load_model("two_phase_commit", {}), None, []) == (True, None)


def test_an_overflowing_send_is_found_with_reduction_and_deadlocks_unchecked():
    """Process 1 answers each of three start messages with a message to itself, into a bag of capacity 2: the
    third answer overflows unless process 1 consumes one of its own messages in between. That consumption and
    the answers are steps of one process that commute, but the consumption disables the overflow; it must not
    be explored alone while an answer may still come."""
    desc = Desc(n=3, ntags=2, start=(((1, 0, 0),), ((1, 0, 0),), ((1, 0, 0),)),
                ops=((0, 0, ()), (0, 1, ()), (1, 0, (("send", 1, 1, "m", ("true",)),)), (1, 1, ()), (2, 0, ()),
                     (2, 1, ())),
                timer_ops=(None, None, None), invariant=("pair", 0, 0, 0), ordered=False, capacity=2, crashes=0,
                lossy=False, duplicating=False, symmetric=False)
    model = TypedModel(build_program(build(desc), {}), "random")
    assert check(model, Options(deadlock=False)).verdict == "violation"
    assert check(model, Options(deadlock=False, por=True)).verdict == "violation"


def test_a_message_behind_another_in_its_ordered_channel_still_enables_its_handler():
    """Process 0's start messages wait in one ordered channel to process 1; only the second makes process 1 send
    to process 2, whose two handlers set its counter to different values. Until process 1 has consumed the first,
    that send is still to come: process 2's handlers must not be ordered as if it never would, or one of the two
    final states is lost."""
    desc = Desc(n=3, ntags=2, start=(((1, 0, 0), (1, 1, 0)), ((1, 0, 0),), ((2, 1, 0),)),
                ops=((0, 0, ()), (0, 1, ()), (1, 0, (("set", 0),)), (1, 1, (("send", 2, 0, 1, ("true",)),)),
                     (2, 0, (("set", 2),)), (2, 1, (("set", 1),))),
                timer_ops=(None, None, None), invariant=("none", 0, 0, 0), ordered=True, capacity=2)
    model = _model(desc)
    states, _found = _full_graph(model, 1000)
    kept = _reduced_graph(model, Reducer(ActorStructure(model.prog), set()))
    dead = lambda ss: {s for s in ss if not model.successors(s)}  # noqa: E731
    assert len(dead(states)) == 2
    assert dead(kept) == dead(states)
