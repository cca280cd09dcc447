"""Random walks in the spec's compiled kernel: the same walks as the Python walker (steps, states and values seen,
coverage, endings, the first violation and its trace) on typed and actor specs and on seeded bugs; walk k a
function of (seed, k) alone, whatever the batch, the threads or the workers; plain specs and LOCKSTEP_NATIVE=never
keep the walks in Python."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from lockstep.checker.loader import load_model
from lockstep.checker.replay import replay
from lockstep.checker.simulation import kernel as kernel_module
from lockstep.checker.simulation import seen as seen_module
from lockstep.checker.simulation import simulate
from lockstep.checker.simulation.kernel import compiled_walks
from lockstep.checker.vector.kernels.cbuild import compiler
from tests.conftest import model_path

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler")

COMPILED = "walks run in the spec's compiled kernel (C)"


def summary(res, model) -> tuple:
    """Everything a simulation reports but its time and notes."""
    trace = None if res.violation is None else res.violation.trace.to_json()
    return (res.runs, res.steps, res.distinct, res.seen, res.endings, res.coverage.table(model), res.violating_walk,
            trace)


def both(spec: str, runs: int, depth: int, seed: int, deadlock: bool, **params: int) -> tuple:
    """The same walks in the kernel and in Python: (compiled result, Python result, model)."""
    model = load_model(spec, params)
    fast = simulate(model, runs, depth, seed=seed, deadlock=deadlock)
    assert fast.notes[0] == COMPILED
    slow = simulate(model, runs, depth, seed=seed, deadlock=deadlock, compiled=False)
    assert slow.notes[0] == "walks run in Python (as asked)"
    return fast, slow, model


@pytest.mark.parametrize("spec, runs, depth, seed, deadlock, found", [
    ("bracha_low_echo_quorum", 3000, 100, 1, False, "ready_agreement"),  # actor spec, seeded quorum bug
    ("filter_lock_buggy", 400, 100, 11, False, "mutual_exclusion"),  # typed spec, seeded bug
    ("two_phase_commit", 300, 50, 2, True, "deadlock"),  # actor spec: a deadlock
    ("bracha", 200, 60, 3, False, None),  # no violation: per message tag coverage and values over 200 walks
    ("two_phase", 300, 40, 1, False, None),
    (model_path("constrained.py") + ":Counter", 200, 30, 2, False, "below_11"),  # walks 1, 2 end outside the constraint
    (model_path("constrained.py") + ":Chain", 20, 40, 1, True, None),  # a step that leaves the state as it is
    (model_path("failing_action.py") + ":Asserting", 50, 20, 1, True, "assertion"),  # a failing step
    (model_path("broken_predicates.py") + ":BrokenInvariant", 50, 20, 1, True, "error"),  # an invariant that raises
    (model_path("broken_predicates.py") + ":BrokenConstraint", 50, 20, 1, False, None),  # a constraint that raises
])
def test_the_kernel_takes_the_python_walks(spec, runs, depth, seed, deadlock, found):
    fast, slow, model = both(spec, runs, depth, seed, deadlock)
    assert summary(fast, model) == summary(slow, model)
    if found is None:
        assert fast.violation is None and fast.runs == runs
        return
    v = fast.violation
    assert found in (v.name, v.kind), v
    if v.kind in ("invariant", "deadlock"):
        assert replay(v.trace).states
    if spec.endswith(":Counter"):
        assert fast.endings["constraint"] == 2


def test_coverage_and_values_of_the_compiled_walks_are_those_of_the_python_walks():
    fast, _slow, model = both("bracha", 100, 100, 5, False)
    table = fast.coverage.table(model)
    assert {"deliver Initial", "deliver Echo", "deliver Ready"} <= set(table)
    assert sum(v["taken"] for v in table.values()) == fast.steps
    assert fast.seen.values["network"][0] > 100 and all(exact for _c, exact in fast.seen.values.values())


def test_beyond_the_exact_bounds_both_walkers_estimate_the_same_counts(monkeypatch):
    """The kernel fingerprints states (and hashes values) its own way, so the sampled states and sketches differ from
    the Python walker's: the estimates agree within their error, the exact counts exactly."""
    exact = simulate(load_model("two_phase", {"rm": 3}), 600, 30, seed=2, deadlock=False).seen
    monkeypatch.setattr(seen_module, "EXACT", 40)
    monkeypatch.setattr(seen_module, "VALUES", 4)
    fast, slow, model = both("two_phase", 600, 30, 2, False, rm=3)
    assert not fast.seen.exact and fast.seen.sample > 0 and not slow.seen.exact
    for res in (fast, slow):
        assert abs(res.seen.distinct - exact.distinct) <= 0.05 * exact.distinct
        assert (res.seen.incidences, res.seen.walks) == (exact.incidences, exact.walks)
        assert res.seen.values["tm_state"] == exact.values["tm_state"] and not res.seen.values["rm_state"][1]
    assert summary(fast, model)[4:] == summary(slow, model)[4:]


def test_walk_k_depends_on_the_seed_and_k_only():
    """A walk run alone, in a batch of another size, on either of two threads at once, gives the same steps, ending
    and states as in one batch of every walk."""
    model = load_model("bracha", {})
    kernel, _ = compiled_walks(model)
    assert kernel is not None
    depth, n = 60, 64

    def run(first: int, count: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """(steps, endings, each walk's distinct states) of walks first .. first+count-1."""
        counts = np.zeros(kernel.transitions, dtype=np.int64)
        out = kernel.run(first, count, depth, 9, False, counts, counts.copy(), kernel.scratch(depth))
        assert out.done == count
        return out.steps.copy(), out.end.copy(), np.split(out.fps.copy(), np.cumsum(out.sizes)[:-1])

    steps, ends, states = run(0, n)
    assert len({tuple(s) for s in states}) == n  # 64 different walks
    for k in (0, 17, 63):
        alone = run(k, 1)
        assert alone[0][0] == steps[k] and (alone[2][0] == states[k]).all()
    halves: dict[int, tuple] = {}
    threads = [threading.Thread(target=lambda a: halves.__setitem__(a, run(a, n // 2)), args=(a,)) for a in (0, n // 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (np.concatenate([halves[0][0], halves[n // 2][0]]) == steps).all()
    assert (np.concatenate([halves[0][1], halves[n // 2][1]]) == ends).all()
    assert all((x == y).all() for x, y in zip(halves[0][2] + halves[n // 2][2], states))


def test_small_batches_and_two_workers_count_what_one_batch_counts(monkeypatch):
    model = load_model("bracha_low_echo_quorum", {})
    one = simulate(model, 3000, 100, seed=1, deadlock=False)
    monkeypatch.setattr(kernel_module, "CELLS", 1000)  # a few walks per kernel call
    small = simulate(model, 3000, 100, seed=1, deadlock=False)
    two = simulate(model, 3000, 100, seed=1, deadlock=False, workers=2)
    assert one.violation is not None and summary(one, model) == summary(small, model) == summary(two, model)
    assert simulate(model, 3000, 100, seed=2, deadlock=False).violation.trace.to_json() != one.violation.trace.to_json()


def test_plain_specs_and_native_never_walk_in_python(monkeypatch):
    plain = simulate(load_model(model_path("plain_counter.py"), {}), 50, 20)
    assert plain.notes[0] == "walks run in Python (a plain spec has no compiled kernel)" and plain.violation is not None
    monkeypatch.setenv("LOCKSTEP_NATIVE", "never")
    res = simulate(load_model("two_phase", {}), 20, 20, deadlock=False)
    assert res.notes[0] == "walks run in Python (LOCKSTEP_NATIVE=never)" and res.runs == 20


def test_simulate_says_where_the_walks_ran(cli):
    r = cli("simulate", "two_phase_commit", "--runs", "200", "--no-deadlock", "--quiet")
    assert r.code == 0 and COMPILED in r.out and "200 walks" in r.out


def test_a_kernel_that_does_not_build_leaves_the_walks_in_python(monkeypatch):
    monkeypatch.setenv("CC", "false")  # a "compiler" that fails
    res = simulate(load_model("two_phase", {}), 20, 20, deadlock=False)
    assert res.notes[0].startswith("walks run in Python: the compiled kernel did not build or load") and res.runs == 20
