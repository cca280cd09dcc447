"""The vector engine agrees with the scalar engine: counts, verdicts and counterexamples."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.vector import VectorModel, VectorOptions, VectorUnsupported, check_vector
from lockstep.checker.vector.layout import Layout
from lockstep.checker.vector.search import VectorSearch
from lockstep.checker.vector.visited import FingerprintTable, VisitedSet
from tests.conftest import model_path, typed_spec_refs

AGREEMENT_BOUND = 20_000  # distinct states per spec in the agreement test (any size of spec stays quick)
# Specs whose states cost the scalar engine a millisecond or more each (hundreds of transitions): a smaller bound.
LARGE_BOUND, LARGE_PREFIXES = 5_000, ("psmr", "ssp_")


def bound(ref: str) -> int:
    """The agreement tests' bound on distinct states for a spec."""
    return LARGE_BOUND if isinstance(ref, str) and ref.startswith(LARGE_PREFIXES) else AGREEMENT_BOUND
NATIVE = ["never", "always"]  # numpy passes only; the C loops and fused kernel from the first level


def outcome(res) -> tuple:
    """Everything both engines must agree on, including the whole counterexample."""
    v = res.violation
    trace = None
    if v is not None:
        trace = (v.kind, v.name, v.message, v.location, [(s.label, s.state) for s in v.trace.steps])
    return res.verdict, res.distinct, res.generated, res.depth, res.queued, res.cut, trace


@functools.cache
def scalar_outcome(ref: str, deadlock: bool) -> tuple:
    """The scalar engine's outcome on a typed spec at its default parameters, up to the agreement bound
    (several tests compare against it)."""
    return outcome(check(load_model(ref, {}), Options(deadlock=deadlock, max_states=bound(ref))))


def both(ref: str, params: dict | None = None, vopts: VectorOptions | None = None, **opts):
    model = load_model(ref, params or {})
    return check(model, Options(**opts)), check_vector(model, Options(**opts), vopts=vopts)


@pytest.mark.parametrize("ref", typed_spec_refs())
@pytest.mark.parametrize("deadlock", [True, False])
def test_agrees_with_the_scalar_engine(ref, deadlock):
    model = load_model(ref, {})
    opts = Options(deadlock=deadlock, max_states=bound(ref))
    assert outcome(check_vector(model, opts, vopts=VectorOptions(native="never"))) == scalar_outcome(ref, deadlock)


@pytest.mark.parametrize("ref", typed_spec_refs())
def test_the_c_kernels_agree_with_the_scalar_engine(ref):
    """Every typed spec through the C loops and (where it suits one) its fused successor function."""
    model = load_model(ref, {})
    opts = Options(deadlock=True, max_states=bound(ref))
    assert outcome(check_vector(model, opts, vopts=VectorOptions(native="always"))) == scalar_outcome(ref, True)


def threaded(ref: str, params: dict | None = None, vopts: VectorOptions | None = None, **opts):
    """The two-thread search, threaded from the first level on."""
    from lockstep.checker.progress import NoProgress

    search = VectorSearch(VectorModel(load_model(ref, params or {})), Options(**opts), NoProgress(),
                          vopts or VectorOptions())
    search.use_threads(2, threaded_level=1)
    try:
        return search.run()
    finally:
        search.close()


@pytest.mark.parametrize("ref", typed_spec_refs())
def test_two_threads_agree_with_the_scalar_engine(ref):
    """Two visited tables filled by two threads, batches prepared ahead: the one-thread results exactly."""
    opts = {"deadlock": True, "max_states": bound(ref)}
    two = threaded(ref, vopts=VectorOptions(batch=256, native="always"), **opts)
    assert two.workers == 2
    assert outcome(two) == scalar_outcome(ref, True)


@pytest.mark.parametrize("recovers", [False, True])
@pytest.mark.parametrize("ref, params", [("two_phase", {"rm": 5}), ("filter_lock_buggy", {"n": 4})])
def test_levels_without_a_second_core_run_on_one_thread_with_the_same_result(ref, params, recovers, monkeypatch):
    """A level on two threads that got less CPU time than a second core gives sends the next levels to one
    thread (until one of them gets a whole core, here at once or never): the counts, depth and counterexample
    stay the one-thread search's."""
    import lockstep.checker.vector.cores as vc

    monkeypatch.setattr(vc, "MEASURED", 0.0)
    monkeypatch.setattr(vc, "CROWDED", float("inf"))  # no level on two threads is judged to have had two cores
    monkeypatch.setattr(vc, "idle_seconds", lambda: None)  # judged by CPU time alone (the idle rule: below)
    monkeypatch.setattr(vc, "WHOLE_CORE", 0.0 if recovers else float("inf"))
    from lockstep.checker.progress import NoProgress

    model = load_model(ref, params)
    want = outcome(check(model, Options(deadlock=True)))
    search = VectorSearch(VectorModel(model), Options(deadlock=True), NoProgress(), VectorOptions(batch=256))
    search.use_threads(2, threaded_level=1, judge_cores=True)
    try:
        got = search.run()
    finally:
        search.close()
    assert outcome(got) == want
    assert search.crowded_levels > 0 and (recovers or search.cores.crowded)


@pytest.mark.parametrize("idle, crowded", [(0.1, True), (0.9, False), (None, False)])
def test_levels_on_one_thread_return_to_two_only_when_a_core_is_idle(idle, crowded, monkeypatch):
    """Once sent to one thread, the levels go back to two when the machine had most of a core idle meanwhile,
    not merely because the one thread got a whole core (it does, beside a process that holds the other);
    without the machine's idle time, the one thread's CPU time decides."""
    import lockstep.checker.vector.cores as vc

    clock = {"wall": 0.0, "cpu": 0.0, "idle": 0.0}
    monkeypatch.setattr(vc.time, "monotonic", lambda: clock["wall"])
    monkeypatch.setattr(vc.time, "process_time", lambda: clock["cpu"])
    monkeypatch.setattr(vc, "idle_seconds", lambda: None if idle is None else clock["idle"])
    judge = vc.CoreJudge()
    judge.start()
    clock["wall"], clock["cpu"], clock["idle"] = 1.0, 1.1, 0.0  # two threads, 1.1 CPU seconds per second
    judge.end(split=True)
    assert judge.crowded
    judge.crowded = False
    judge.start()  # the same, but beside an idle core: the threads waited for each other, the machine had room
    clock["wall"], clock["cpu"], clock["idle"] = 1.5, 1.65, 0.0 if idle is None else 0.45
    judge.end(split=True)
    assert judge.crowded is (idle is None)
    judge.start()
    clock["wall"], clock["cpu"] = 2.5, 2.75  # and again with no core idle
    judge.end(split=True)
    assert judge.crowded
    judge.start()
    clock["wall"], clock["cpu"] = 3.5, 3.85  # one thread, a whole core
    clock["idle"] += idle or 0.0
    judge.end(split=False)
    assert judge.crowded is crowded


@pytest.mark.parametrize("native", NATIVE)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("ref, params", [("two_phase", {"rm": 5}), ("filter_lock_buggy", {"n": 4}),
                                         ("diehard", {}), ("tcommit", {})])
def test_tables_that_fill_inside_a_batch_give_the_same_result(ref, params, threads, native, monkeypatch):
    """Levels that outgrow their estimate grow the visited table in the middle of a batch."""
    monkeypatch.setattr(VectorSearch, "expect", lambda self, level: 0)
    want = outcome(check(load_model(ref, params), Options(deadlock=True)))
    vopts = VectorOptions(native=native)
    if threads == 1:
        got = check_vector(load_model(ref, params), Options(deadlock=True), vopts=vopts)
    else:
        got = threaded(ref, params, vopts, deadlock=True)
    assert outcome(got) == want


@pytest.mark.parametrize("table", [0, 1])
def test_an_error_on_either_thread_of_a_pipelined_level_ends_the_search(table, monkeypatch):
    """The error of the thread that fails is the one raised; the other thread leaves the level at its next
    wait rather than waiting for ever."""
    real, calls = VectorSearch.insert_part, [0, 0]

    def insert_part(self, b, part, progress_of_level, outputs):
        calls[part] += 1
        if part == table and calls[part] == 40:
            raise MemoryError(f"table {part} is out of room")
        return real(self, b, part, progress_of_level, outputs)

    monkeypatch.setattr(VectorSearch, "insert_part", insert_part)
    raised: list[BaseException] = []

    def search() -> None:
        try:
            threaded("two_phase", {"rm": 5}, VectorOptions(batch=256, native="always"))
        except BaseException as e:
            raised.append(e)

    runner = threading.Thread(target=search, daemon=True)
    runner.start()
    runner.join(120)
    assert not runner.is_alive(), "the search hung"
    assert [str(e) for e in raised if isinstance(e, MemoryError)] == [f"table {table} is out of room"]
    assert calls[table] == 40


def test_workers_two_is_one_process_with_two_threads():
    res = check_vector(load_model("two_phase", {"rm": 6}), Options(workers=2))
    assert (res.workers, res.distinct, res.generated, res.depth) == (2, 50816, 402306, 20)


@pytest.mark.parametrize("ref, params", [("two_phase", {"rm": 6}), ("filter_lock", {"n": 4})])
def test_known_counts(ref, params):
    """TwoPhase RM=6 and the filter lock N=4, as the hand-written BFS counts them (test_examples)."""
    _scalar, vector = both(ref, params)
    want = {"two_phase": (50816, 402306, 20), "filter_lock": (14844, 44121, 37)}[ref]
    assert (vector.verdict, vector.distinct, vector.generated, vector.depth) == ("holds", *want)


@pytest.mark.parametrize("native", NATIVE)
def test_seeded_bugs_give_the_shortest_counterexamples(native):
    for ref, steps in (("filter_lock_buggy", 14), ("peterson_buggy", 8), ("diehard", 6)):
        v = check_vector(load_model(ref), Options(), vopts=VectorOptions(native=native)).violation
        assert v.kind == "invariant" and len(v.trace.steps) - 1 == steps


@pytest.mark.parametrize("native", NATIVE)
def test_agent_clock(native):
    """5^n configurations, n(n-1) interactions enabled in each; without the wrap-around a phase leaves 0..4."""
    vopts = VectorOptions(native=native)
    res = check_vector(load_model("agent_clock", {"agents": 5}), Options(), vopts=vopts)
    assert (res.verdict, res.distinct, res.generated) == ("holds", 5**5, 5 * 4 * 5**5 + 1)
    v = check_vector(load_model("agent_clock_buggy"), Options(), vopts=vopts).violation
    assert v.kind == "type" and "is outside Int(0, 4)" in v.message and len(v.trace.steps) - 1 == 7
    assert v.trace.steps[-1].shown["phase"].count("4") >= 1


@pytest.mark.parametrize("native", NATIVE)
def test_step_failures_name_the_spec_line(native):
    vopts = VectorOptions(native=native)
    _scalar, vector = both(model_path("failing_action.py") + ":Divide", vopts=vopts)
    v = vector.violation
    with open(model_path("failing_action.py")) as f:
        line = next(i for i, text in enumerate(f, 1) if "12 // s.x" in text)
    assert v.kind == "error" and "ZeroDivisionError" in v.message and v.location.endswith(f"failing_action.py:{line}")
    v = check_vector(load_model(model_path("vector_edges.py") + ":BadIndex"), Options(), vopts=vopts).violation
    assert v.kind == "type" and v.name == "read" and "index 3 outside 0..2" in v.message
    assert [s.shown["i"] for s in v.trace.steps] == ["0", "1", "2", "3"]


@pytest.mark.parametrize("native", NATIVE)
def test_constants_of_different_types_with_one_bit_pattern_stay_apart(native):
    """A set constant over two columns and an integer constant share the representation 1; the generated
    code must still treat one as a set and the other as an integer (they were once one cached expression)."""
    scalar, vector = both(model_path("vector_edges.py") + ":ChunkedConst", vopts=VectorOptions(native=native),
                          deadlock=False)
    assert outcome(vector) == outcome(scalar)
    assert (vector.verdict, vector.distinct, vector.generated, vector.depth) == ("holds", 130, 259, 66)


@pytest.mark.parametrize("native", NATIVE)
def test_errors_in_branches_not_taken_are_not_errors(native):
    res = check_vector(load_model(model_path("vector_edges.py") + ":Lazy"), Options(),
                       vopts=VectorOptions(native=native))
    assert (res.verdict, res.distinct) == ("holds", 40)


def test_bounds_agree():
    chain = model_path("constrained.py") + ":Chain"
    for depth in (30, 31):
        scalar, vector = both(chain, max_depth=depth)
        assert outcome(vector) == outcome(scalar)
    scalar, vector = both("two_phase", {"rm": 4}, max_states=100)
    assert outcome(vector) == outcome(scalar) and vector.verdict == "inconclusive" and vector.distinct == 100


def test_spilled_search_gives_the_same_result(tmp_path):
    """With no memory budget every frontier and parent link goes to disk, and nothing changes."""
    spill = VectorOptions(memory=0, spill_dir=str(tmp_path), batch=500)
    scalar, vector = both("two_phase", {"rm": 5}, vopts=spill)
    assert outcome(vector) == outcome(scalar)
    assert any("spilled to disk" in n for n in vector.notes)
    scalar, vector = both("filter_lock_buggy", vopts=spill)
    assert outcome(vector) == outcome(scalar) and vector.verdict == "violation"
    assert list(tmp_path.iterdir()) == []  # spill files are removed


def test_small_batches_give_the_same_result():
    scalar, vector = both("peterson_buggy", vopts=VectorOptions(batch=3))
    assert outcome(vector) == outcome(scalar)


def test_a_batch_too_large_to_number_its_candidates_is_refused():
    with pytest.raises(ValueError, match="32 bits: use a smaller batch"):
        check_vector(load_model("two_phase"), Options(), vopts=VectorOptions(batch=1 << 30))


def test_fingerprints_are_exact_when_a_state_fits_a_word():
    one = check_vector(load_model("two_phase"), Options())
    assert one.exact_fingerprints and one.collision_probability == 0.0
    wide = check_vector(load_model(model_path("vector_edges.py") + ":WideSet"), Options(max_states=2000))
    assert not wide.exact_fingerprints and wide.collision_probability > 0.0


def test_visited_table_stays_within_16_bytes_per_state():
    res = check_vector(load_model("two_phase", {"rm": 6}), Options())
    assert res.visited_bytes / res.distinct <= 16 + 1e-9


def test_what_the_vector_engine_refuses():
    with pytest.raises(VectorUnsupported, match="plain spec"):
        VectorModel(load_model(model_path("plain_counter.py")))
    with pytest.raises(VectorUnsupported, match="depth-first"):
        check_vector(load_model("two_phase"), Options(dfs=True))


# ------------------------------------------------------------------------------------ parts


@functools.cache
def wide_layout() -> Layout:
    return Layout(load_model(model_path("vector_edges.py") + ":WideSet").prog)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_packing_round_trips_and_fingerprints_match(data):
    layout = wide_layout()
    prog = layout.prog
    states = []
    for _ in range(5):
        s = []
        for dom in prog.slot_doms:
            if dom.kind == "set":
                s.append(data.draw(st.integers(0, (1 << dom.elem.size) - 1)))
            elif dom.kind == "bool":
                s.append(data.draw(st.booleans()))
            else:
                s.append(data.draw(st.integers(dom.lo, dom.hi)))
        states.append(tuple(s))
    words = layout.pack_many(states)
    assert [layout.unpack(list(words[:, j])) for j in range(len(states))] == states
    fps = layout.fingerprints(words)
    assert [layout.fingerprint_state(s) for s in states] == [int(f) for f in fps]
    assert all(f != 0 for f in fps)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 2**64 - 1), max_size=300), st.lists(st.integers(1, 2**64 - 1), max_size=300))
def test_a_visited_set_in_two_tables_is_a_set(inserted, probed):
    vs = VisitedSet(2)
    added = vs.add(np.array(inserted, dtype=np.uint64))
    assert added == len(set(inserted)) == vs.size
    assert vs.add(np.array(inserted, dtype=np.uint64)) == 0
    keys = np.array(probed + inserted, dtype=np.uint64)
    assert vs.contains(keys).tolist() == [k in set(inserted) for k in probed + inserted]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 2**64 - 1), max_size=300), st.lists(st.integers(1, 2**64 - 1), max_size=300))
def test_fingerprint_table_is_a_set(inserted, probed):
    table = FingerprintTable(capacity=8)
    seen: set[int] = set()
    for chunk in (inserted[: len(inserted) // 2], inserted[len(inserted) // 2:]):
        new = sorted(set(chunk) - seen)
        table.add(np.array(new, dtype=np.uint64))
        seen.update(new)
    keys = np.array(probed + inserted, dtype=np.uint64)
    assert table.contains(keys).tolist() == [k in seen for k in probed + inserted]
    assert table.size == len(seen) and table.nbytes <= max(16 * len(seen), 8 * 256)


# ------------------------------------------------------------------------------------- CLI


def test_engine_option(cli, tmp_path):
    r = cli("check", "two_phase", "--quiet")
    assert r.code == 0 and "vector breadth-first" in r.out and "288 distinct states, 1,146 generated" in r.out
    r = cli("check", "two_phase", "--engine", "explicit", "--quiet")
    assert r.code == 0 and "scalar breadth-first" in r.out and "288 distinct states, 1,146 generated" in r.out
    r = cli("check", model_path("plain_counter.py"), "--quiet")
    assert "scalar breadth-first" in r.out and "scalar engine chosen: it is a plain spec" in r.out
    r = cli("check", model_path("plain_counter.py"), "--engine", "vector")
    assert r.code == 2 and "--engine vector cannot check" in r.err and "Traceback" not in r.err
    r = cli("check", "two_phase", "--symmetry", "--quiet")
    assert r.code == 0 and "vector breadth-first, 1 worker, symmetry reduction" in r.out and "80 distinct" in r.out
    with pytest.raises(SystemExit) as e:
        cli("check", "two_phase", "--engine", "fast")
    assert e.value.code == 2


def test_vector_counterexample_replays(cli, tmp_path):
    out = tmp_path / "cex.json"
    r = cli("check", "filter_lock_buggy", "--engine", "vector", "--out", str(out), "--quiet")
    assert r.code == 1 and "Counterexample (14 steps)" in r.out
    r = cli("replay", str(out))
    assert r.code == 0 and "mutual_exclusion is violated in the last state" in r.out


# --------------------------------------------------------------------------------- workers


def par(ref: str, params: dict | None = None, **opts):
    """Two vector workers, handing off at once so that the worker code runs even on small models."""
    from lockstep.checker.progress import NoProgress
    from lockstep.checker.vector.workers import check_workers

    model = VectorModel(load_model(ref, params or {}))
    return check_workers(model, Options(workers=2, **opts), NoProgress(), VectorOptions(), handoff=1)


@pytest.mark.parametrize("ref, params, deadlock", [("two_phase", {"rm": 4}, True), ("filter_lock", {"n": 3}, True),
                                                   ("tcommit", {}, False), ("agent_clock", {"agents": 4}, True)])
def test_two_workers_count_exactly_as_one(ref, params, deadlock):
    one = check(load_model(ref, params), Options(deadlock=deadlock))
    two = par(ref, params, deadlock=deadlock)
    assert two.workers == 2
    assert (two.verdict, two.distinct, two.generated, two.depth) == (one.verdict, one.distinct, one.generated, one.depth)


@pytest.mark.parametrize("ref, steps, kind", [("diehard", 6, "invariant"), ("filter_lock_buggy", 14, "invariant"),
                                              ("tcommit", 3, "deadlock"), ("agent_clock_buggy", 7, "type")])
def test_two_workers_find_shortest_counterexamples(ref, steps, kind):
    v = par(ref).violation
    assert v.kind == kind and len(v.trace.steps) - 1 == steps


def test_two_workers_report_step_failures_and_bounds():
    v = par(model_path("failing_action.py") + ":Divide").violation
    assert v.kind == "error" and "ZeroDivisionError" in v.message
    v = par(model_path("constrained.py") + ":Counter").violation
    assert v.kind == "invariant" and [s.shown["x"] for s in v.trace.steps][-2:] == ["9", "11"]
    chain = model_path("constrained.py") + ":Chain"
    assert par(chain, max_depth=31).verdict == "holds"
    assert par(chain, max_depth=30).verdict == "inconclusive"


def test_workers_from_the_command_line(cli):
    r = cli("check", "two_phase", "--param", "rm=6", "--workers", "2", "--quiet")
    assert r.code == 0 and "vector breadth-first, 2 workers" in r.out and "50,816 distinct states, 402,306 generated" in r.out


# ------------------------------------------------------------------------------ slow cases


@pytest.mark.slow
@pytest.mark.parametrize("ref, params, want", [
    ("filter_lock", {"n": 5}, (344805, 1205326, 55)),
    ("two_phase", {"rm": 7}, (296448, 2744706, 23)),
    ("agent_clock", {"agents": 8}, (390625, 21875001, 33)),
])
def test_large_instances_agree(ref, params, want):
    """The published and scalar counts (test_examples) and SPIN's, on the benchmark instances."""
    vector = check_vector(load_model(ref, params), Options())
    assert (vector.verdict, vector.distinct, vector.generated, vector.depth) == ("holds", *want)
    from lockstep.checker.progress import NoProgress
    from lockstep.checker.vector.workers import check_workers

    two = check_workers(VectorModel(load_model(ref, params)), Options(workers=2), NoProgress(), VectorOptions(),
                        handoff=2000)
    assert (two.workers, two.distinct, two.generated, two.depth) == (2, *want)


@pytest.mark.slow
def test_large_instance_agrees_with_the_scalar_engine_when_spilled(tmp_path):
    spill = VectorOptions(memory=1 << 20, spill_dir=str(tmp_path))
    scalar, vector = both("filter_lock_buggy", {"n": 4}, vopts=spill)
    assert outcome(vector) == outcome(scalar) and vector.verdict == "violation"
    scalar, vector = both("agent_clock", {"agents": 7}, vopts=spill)
    assert outcome(vector) == outcome(scalar) and vector.distinct == 5**7


def test_growing_in_slices_keeps_every_key(monkeypatch):
    import lockstep.checker.vector.visited as visited

    monkeypatch.setattr(visited, "GROW_SLICE", 1000)  # many slices: keys left behind a slice get probed in
    keys = np.arange(1, 200_001, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    table = FingerprintTable()
    for start in range(0, len(keys), 7_000):
        chunk = keys[start:start + 7_000]
        assert not table.contains(chunk).any()
        table.add(chunk)
    assert table.contains(keys).all() and table.size == len(keys)
    assert table.nbytes <= 8 * len(keys) / visited.TARGET_LOAD  # the last rebuild left it at its target load


@pytest.mark.parametrize("native", NATIVE)
@pytest.mark.parametrize("spec, params", [("token_ring", {"n": 4, "laps": 2}), ("two_phase_commit", {"rm": 3})])
def test_reduced_search_in_small_batches_agrees_with_the_scalar_engine(spec, params, native):
    """The cycle proviso reads the visited table between batches: many batches per level, one result."""
    scalar = check(load_model(spec, params), Options(por=True))
    for threads in (1, 2):
        vopts = VectorOptions(batch=37, native=native)
        vector = threaded(spec, params, vopts, por=True) if threads == 2 else \
            check_vector(load_model(spec, params), Options(por=True), vopts=vopts)
        assert outcome(vector) == outcome(scalar)
        assert any(n.startswith("partial-order reduction:") for n in vector.notes)


def _actor_cases() -> list[tuple[str, dict]]:
    from tests.checker.test_por import EXTRA, LARGE, SMALL_SPECS, VARIANTS

    default_psmr = pytest.param("psmr", {}, marks=pytest.mark.slow)  # its default size: 7 s of the bound's states
    return [(s, {}) for s in SMALL_SPECS + EXTRA + sorted(LARGE)] + VARIANTS + [default_psmr]


@pytest.mark.parametrize("deadlock", [True, False])
@pytest.mark.parametrize("spec, params", _actor_cases())
def test_reduced_search_in_c_agrees_with_the_scalar_engine(spec, params, deadlock):
    """The fused kernel marks each row's enabled and unsafe steps; the reduced sets, the proviso and every
    count and counterexample are the scalar reduced search's (the larger specs up to a bound)."""
    model = load_model(spec, params)
    opts = Options(por=True, deadlock=deadlock, max_states=bound(spec))
    vector = check_vector(model, opts, vopts=VectorOptions(native="always"))
    assert outcome(vector) == outcome(check(model, opts))
    assert not [n for n in vector.notes if "numpy passes" in n]


@pytest.mark.parametrize("native", ["never", "always"])
def test_checkpoint_links_do_not_depend_on_the_batch_size(tmp_path, native):
    """A level searched in many batches writes the same (fingerprint, parent fingerprint) links as one
    searched in one batch: each batch's fingerprints are kept, not the scratch they were computed in."""
    from lockstep.checker.vector.checkpoint import Checkpoint

    vm = VectorModel(load_model("filter_lock", {}))

    def links(d: str, batch: int) -> list[np.ndarray]:
        ck = Checkpoint(d, 0, resume=False, deadlock=True)
        ck.bind(vm)
        check_vector(vm, Options(max_depth=9), vopts=VectorOptions(checkpoint=ck, native=native, batch=batch))
        return [np.load(f"{d}/links-{lv}.npy") for lv in range(10)]

    small, whole = links(str(tmp_path / "small"), 4), links(str(tmp_path / "whole"), 1 << 16)
    assert [a.shape[1] for a in whole] == [1, 3, 6, 10, 15, 21, 31, 39, 44, 45]
    assert all(np.array_equal(a, b) for a, b in zip(small, whole))


def test_a_search_resumed_twice_writes_the_links_of_an_uninterrupted_one(tmp_path):
    """Checkpoints hold (fingerprint, parent fingerprint) links: one written after resuming holds the same
    links as one never interrupted, and its counterexample runs through the levels of both checkpoints."""
    from lockstep.checker.vector.checkpoint import Checkpoint

    vm = VectorModel(load_model("filter_lock_buggy", {}))
    plain = check_vector(vm, Options())

    def run(d: str, resume: bool, depth: int | None):
        ck = Checkpoint(d, 0, resume=resume, deadlock=True)
        ck.bind(vm)
        return check_vector(vm, Options(max_depth=depth), vopts=VectorOptions(checkpoint=ck))

    whole, parts = str(tmp_path / "whole"), str(tmp_path / "parts")
    assert run(whole, False, 7).verdict == "inconclusive"
    assert run(parts, False, 3).verdict == "inconclusive"
    assert run(parts, True, 7).verdict == "inconclusive"
    for lv in range(8):
        a, b = (np.load(f"{d}/links-{lv}.npy") for d in (whole, parts))
        assert a.shape[0] == 2 and np.array_equal(a, b)
    assert outcome(run(parts, True, None)) == outcome(plain)


@pytest.mark.parametrize("native", NATIVE)
@pytest.mark.parametrize("name, tests", [("Split", 8), ("Exclusive", 4), ("Either", 8), ("Shared", 30)])
def test_invariants_over_pairs_are_tested_once_per_element(name, tests, native):
    """An invariant over every pair of a product (or of distinct elements) compiles to one test per element
    (16 pairs: 4 + 4 tests; 12 pairs of distinct elements: 4), one that merely resembles it to two per pair (15
    pairs: 30); the engines agree on each, counterexample included."""
    import re

    from lockstep.checker.vector.kernels import fused

    ref = model_path("vector_edges.py") + ":" + name
    scalar, vector = both(ref, vopts=VectorOptions(native=native))
    assert outcome(vector) == outcome(scalar) and vector.verdict == "violation"
    model = load_model(ref)
    text = fused._Source(model.prog, Layout(model.prog)).text
    start = text.index("static int inv")
    assert len(re.findall(r"\(s\d+ == \d\)", text[start:text.index("\n}", start)])) == tests
