"""The explicit engine: search orders, verdicts, failures inside steps, bounds, symmetry, workers."""

from __future__ import annotations

import io
from itertools import permutations

import pytest

from bench import handwritten
from lockstep.checker.explicit import Options, check
from lockstep.checker.explicit.parallel import check_parallel
from lockstep.checker.loader import load_model
from lockstep.checker.progress import Progress
from lockstep.specs.lang import SpecError
from tests.conftest import model_path


def line_of(path: str, text: str) -> int:
    """The line number of the first line of `path` containing `text`."""
    with open(path) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def run(spec, params=None, symmetry=False, **opts):
    return check(load_model(spec, params or {}, symmetry=symmetry), Options(**opts))


def test_dfs_visits_the_same_states():
    bfs, dfs = run("two_phase"), run("two_phase", dfs=True)
    assert (dfs.verdict, dfs.distinct, dfs.generated) == ("holds", bfs.distinct, bfs.generated)
    assert dfs.depth >= bfs.depth


def test_dfs_finds_a_violation_but_bfs_finds_the_shortest():
    dfs = run("diehard", dfs=True)
    assert dfs.verdict == "violation" and len(dfs.violation.trace.steps) - 1 >= 6


def test_deadlock_can_be_switched_off():
    assert run("tcommit").violation.kind == "deadlock"
    assert run("tcommit", deadlock=False).verdict == "holds"


def test_division_by_zero_is_a_violation_with_the_spec_line():
    res = run(model_path("failing_action.py") + ":Divide")
    v = res.violation
    assert res.verdict == "violation" and v.kind == "error"
    assert "ZeroDivisionError" in v.message and v.name == "step"
    assert v.location == f"{model_path('failing_action.py')}:{line_of(model_path('failing_action.py'), '12 // s.x')}"
    assert v.trace.steps[-1].shown["x"] == "0"


def test_out_of_type_assignment_is_a_violation():
    v = run(model_path("failing_action.py") + ":Overflow").violation
    assert v.kind == "type" and "n := 3 is outside Int(0, 2)" in v.message
    assert v.location.endswith(f"failing_action.py:{line_of(model_path('failing_action.py'), 's.n = s.n + 1')}")
    assert [s.shown["n"] for s in v.trace.steps] == ["0", "1", "2"]


def test_assertion_inside_an_action():
    v = run(model_path("failing_action.py") + ":Asserting").violation
    assert v.kind == "assertion" and "n must skip 2" in v.message
    assert v.trace.steps[-1].shown["n"] == "2"


def test_constraint_states_are_checked_but_not_expanded():
    """x < 10 bounds the search; x = 11 lies outside it but still violates the invariant."""
    res = run(model_path("constrained.py") + ":Counter")
    v = res.violation
    assert v.kind == "invariant" and v.name == "below_11"
    assert v.trace.steps[-1].shown["x"] == "11" and v.trace.steps[-2].shown["x"] == "9"
    assert res.distinct == 10  # 0..9


def test_depth_bound_is_inconclusive_only_if_it_cut_something():
    chain = model_path("constrained.py") + ":Chain"
    full = run(chain)
    assert (full.verdict, full.distinct, full.depth) == ("holds", 32, 32)
    assert run(chain, max_depth=31).verdict == "holds"
    cut = run(chain, max_depth=30)
    assert cut.verdict == "inconclusive" and "depth bound of 30 steps" in cut.cut and cut.exit_code == 3


def test_state_bound_is_inconclusive():
    res = run("two_phase", max_states=100)
    assert res.verdict == "inconclusive" and res.distinct == 100 and res.exit_code == 3


def _orbits_two_phase(n: int) -> int:
    """Orbits of TwoPhase's reachable states under all permutations of the RMs, by brute force."""
    states = set()
    working = 0
    frontier = [((working,) * n, 0, 0, 0)]
    states.add(frontier[0])
    # reuse the hand-written successor relation through its BFS generator
    succ = handwritten_successors(n)
    while frontier:
        nxt = []
        for s in frontier:
            for t in succ(s):
                if t not in states:
                    states.add(t)
                    nxt.append(t)
        frontier = nxt

    def permute(s, p):
        rm, tm, prep, msgs = s
        new_rm = [0] * n
        new_prep = new_msgs = 0
        for r in range(n):
            new_rm[p[r]] = rm[r]
            new_prep |= (prep >> r & 1) << p[r]
            new_msgs |= (msgs >> r & 1) << p[r]
        return (tuple(new_rm), tm, new_prep, new_msgs | (msgs >> n << n))

    perms = list(permutations(range(n)))
    return len({min(permute(s, p) for p in perms) for s in states})


def handwritten_successors(n):
    captured = {}

    def grab(inits, successors):
        captured["succ"] = successors
        return (0, 0, 0)

    original = handwritten.bfs
    handwritten.bfs = grab
    try:
        handwritten.two_phase(n)
    finally:
        handwritten.bfs = original
    return captured["succ"]


@pytest.mark.parametrize("rm", [3, 4])
def test_symmetry_reduction_is_exact(rm):
    reduced = run("two_phase", {"rm": rm}, symmetry=True)
    assert reduced.verdict == "holds"
    assert reduced.distinct == _orbits_two_phase(rm)
    assert run("two_phase", {"rm": rm}).distinct == handwritten.two_phase(rm)[0]


def test_symmetry_with_process_valued_fields():
    """Peterson's `turn` holds a process id: ties are broken by enumerating permutations."""
    full, reduced = run("peterson"), run("peterson", symmetry=True)
    assert (full.distinct, reduced.distinct) == (42, 21)
    bug = run("peterson_buggy", symmetry=True).violation
    assert bug.kind == "invariant" and len(bug.trace.steps) - 1 == 8


def test_symmetry_counterexamples_are_real_paths(cli, tmp_path):
    out = tmp_path / "cex.json"
    assert cli("check", "peterson_buggy", "--symmetry", "--out", str(out)).code == 1
    assert cli("replay", str(out)).code == 0


def test_declared_symmetry_that_does_not_hold_is_refused(tmp_path):
    spec = tmp_path / "asym.py"
    spec.write_text(
        "from lockstep.specs.lang import *\n"
        "P = Range('n', default=3, symmetric=True)\n"
        "class Leader(Spec):\n"
        "    up = Map(P, Bool, init=False)\n"
        "    @action\n"
        "    def wake(s, p: P):\n"
        "        require(Not(s.up[p]), If(p == 0, True, s.up[0]))\n"
        "        s.up[p] = True\n")
    with pytest.raises(SpecError, match="declared symmetric"):
        load_model(str(spec), symmetry=True)


def test_symmetry_needs_a_symmetric_range():
    with pytest.raises(SpecError, match="no symmetric Range"):
        load_model("filter_lock", symmetry=True)


# --------------------------------------------------------------------------------- workers


def par(spec, params=None, symmetry=False, **opts):
    """Two workers, handing off at once so that the worker code runs even on small models."""
    return check_parallel(load_model(spec, params or {}, symmetry=symmetry), Options(workers=2, **opts), handoff=1)


@pytest.mark.parametrize("spec, params, symmetry", [
    ("two_phase", {"rm": 4}, False), ("filter_lock", {"n": 3}, False), ("two_phase", {"rm": 4}, True),
    ("tcommit", {}, False),
])
def test_two_workers_count_exactly_as_one(spec, params, symmetry):
    one = run(spec, params, symmetry=symmetry, deadlock=spec != "tcommit")
    two = par(spec, params, symmetry=symmetry, deadlock=spec != "tcommit")
    assert two.workers == 2
    assert (two.verdict, two.distinct, two.generated, two.depth) == (one.verdict, one.distinct, one.generated, one.depth)


@pytest.mark.parametrize("spec, steps, kind", [("diehard", 6, "invariant"), ("peterson_buggy", 8, "invariant"),
                                               ("tcommit", 3, "deadlock")])
def test_two_workers_find_shortest_counterexamples(spec, steps, kind):
    v = par(spec).violation
    assert v.kind == kind and len(v.trace.steps) - 1 == steps


def test_two_workers_report_step_failures_and_bounds():
    v = par(model_path("failing_action.py") + ":Divide").violation
    assert v.kind == "error" and "ZeroDivisionError" in v.message
    chain = model_path("constrained.py") + ":Chain"
    assert par(chain, max_depth=31).verdict == "holds"
    assert par(chain, max_depth=30).verdict == "inconclusive"


def test_small_searches_stay_on_one_process():
    res = check(load_model("two_phase"), Options(workers=2))
    assert res.distinct == 288 and res.workers == 1 and "one process" in res.notes[0]


# ------------------------------------------------------------------------------- plain specs


def test_plain_spec_counterexample():
    res = run(model_path("plain_counter.py"))
    v = res.violation
    assert v.kind == "invariant" and v.name == "sum_below_7"
    assert len(v.trace.steps) - 1 == 7
    assert v.trace.steps[-1].shown["state"] in ("(4, 3)", "(3, 4)")


def test_plain_spec_class_with_parameters_and_two_workers():
    spec = model_path("plain_counter.py") + ":Counters"
    a = check(load_model(spec, {"bound": 4}), Options())
    b = check_parallel(load_model(spec, {"bound": 4}), Options(workers=2), handoff=1)
    assert (a.verdict, a.distinct, a.generated) == ("holds", 25, 42)
    assert (b.verdict, b.distinct, b.generated, b.workers) == (a.verdict, a.distinct, a.generated, 2)
    assert check(load_model(spec, {"bound": 5}), Options()).violation.name == "sum_below_limit"


def test_unhashable_plain_states_are_refused():
    with pytest.raises(SpecError, match="not hashable"):
        check(load_model(model_path("plain_unhashable.py")), Options())


def test_progress_lines_when_not_a_terminal():
    stream = io.StringIO()
    progress = Progress(interval=0.0, stream=stream)
    check(load_model("two_phase", {"rm": 5}), Options(), progress)
    assert "progress:" in stream.getvalue() and "distinct" in stream.getvalue()
