"""The SSP actor spec: its properties hold on small graphs for every schedule, the staleness bound is real,
the seeded stale-delta bug is caught (and replays on processes), a negative cycle is reported as
divergence, and every run terminates."""

from __future__ import annotations

import pytest

from lockstep.checker.cli import main
from lockstep.checker.datalog.termination import check_termination
from lockstep.checker.loader import load_model
from lockstep.specs.datalog.catalog import load
from lockstep.specs.datalog.plan import linear_plan
from lockstep.specs.datalog.ssp import GRAPHS, RANDOM_BASE, graph_edges, plan_for


def check(capsys, *args: str) -> tuple[int, str]:
    rc = main(["check", *args])
    return rc, capsys.readouterr().out


def test_default_check_holds_with_known_counts(capsys):
    rc, out = check(capsys, "ssp_sssp")
    assert rc == 0, out
    assert "614 distinct states" in out and "deadlock: checked" in out


def test_seeded_stale_delta_is_caught_and_replays_on_processes(capsys, tmp_path):
    cex = tmp_path / "cex.json"
    rc, out = check(capsys, "ssp_stale_delta", "--out", str(cex))
    assert rc == 1
    assert "values only improve: key 3 got worse" in out and "Delta(k=3, v=6)" in out
    assert main(["replay", str(cex), "--on-processes"]) == 0  # reproduced
    assert "the real handler failed, as in the counterexample" in capsys.readouterr().out


def test_negative_cycle_is_reported_as_divergence(capsys):
    neg = next(i for i, (name, _) in enumerate(GRAPHS) if name == "negative cycle")
    rc, out = check(capsys, "ssp_sssp", "-p", f"graph={neg}")
    assert rc == 1 and "divergence" in out and "negative cycle" in out
    assert plan_for("sssp", neg, 0).fixpoint is None  # the sequential evaluation diverges too


def test_staleness_bound_matters():
    """With s = 1 no worker gets more than 2 finished iterations ahead; asynchronous workers do."""
    chain = next(i for i, (name, _) in enumerate(GRAPHS) if name == "local chain")
    def widest(s: int) -> int:
        m = load_model("ssp_sssp", {"s": s, "graph": chain})
        clock = m.prog.field("clock")
        seen, todo, best = set(), list(m.initial_states()), 0
        while todo:
            st = todo.pop()
            if st in seen:
                continue
            seen.add(st)
            c = clock.decode(st)
            best = max(best, max(c.values()) - min(c.values()))
            todo.extend(n for _, n in m.successors(st))
        return best

    assert widest(0) == 1
    assert widest(1) == 2
    assert widest(-1) == 3


@pytest.mark.parametrize("s", [0, -1])
def test_terminates(s):
    res = check_termination("ssp_sssp", {"s": s})
    assert res.verdict == "terminates" and res.finished > 0, res.message


def test_plans_match_the_catalogue():
    assert len(plan_for("sssp", 0, 0).keys) == 5
    edges = graph_edges(RANDOM_BASE + 3)
    assert edges.shape == (5, 3) and (edges[:, 2] >= 0).all()
    p = linear_plan(load("cc"), {"edge": edges[:, :2]})
    assert p.fixpoint is not None


# ------------------------------------------------------------------------------------------ slow


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["ssp_sssp", "ssp_cc", "ssp_reach"])
@pytest.mark.parametrize("s", [0, 1, 2, -1])
@pytest.mark.parametrize("graph", [0, 1, 2, 3, RANDOM_BASE, RANDOM_BASE + 1])
def test_every_property_and_termination(capsys, spec, s, graph):
    params = ["-p", f"s={s}", "-p", f"graph={graph}"] + (["-p", "capacity=24"] if spec == "ssp_cc" else [])
    rc, out = check(capsys, spec, *params)
    assert rc == 0, out
    res = check_termination(spec, {"s": s, "graph": graph, **({"capacity": 24} if spec == "ssp_cc" else {})})
    assert res.verdict == "terminates", res.message


@pytest.mark.slow
def test_three_workers(capsys):
    rc, out = check(capsys, "ssp_sssp", "-p", "workers=3", "-p", "graph=2", "-p", "s=0")
    assert rc == 0, out
