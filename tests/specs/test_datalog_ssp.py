"""The SSP actor specs: their properties hold on small graphs for every schedule, the staleness bound is real,
the seeded bugs are caught by the commands their docstrings give (and replay on processes), a negative
cycle is reported as divergence, and every run terminates; the same for the hybrid spec of the
non-linear APSP (a replicated table, broadcast deltas)."""

from __future__ import annotations

import re
import shlex
import sys

import pytest

from lockstep.checker.cli import main
from lockstep.checker.datalog.plan import linear_plan
from lockstep.checker.datalog.termination import check_termination
from lockstep.checker.explicit import Options
from lockstep.checker.explicit import check as explicit_check
from lockstep.checker.loader import load_model
from lockstep.specs.datalog.catalog import load
from lockstep.specs.datalog.hybrid import SSPAllPairs, pair_plan_for
from lockstep.specs.datalog.ssp import GRAPHS, RANDOM_BASE, SSPStaleDelta, SSPStalenessOffByOne, graph_edges, plan_for


def check(capsys, *args: str) -> tuple[int, str]:
    rc = main(["check", *args])
    return rc, capsys.readouterr().out


def docstring_check(cls: type) -> list[str]:
    """The one `lockstep check ...` command a seeded bug's docstring gives, as the arguments after "check"."""
    (cmd,) = re.findall(r"`lockstep check ([^`]+)`", cls.__doc__ or "")
    return shlex.split(cmd)


@pytest.mark.parametrize("s, states", [(0, 127), (1, 1058)])
def test_default_check_holds_with_known_counts(capsys, s, states):
    rc, out = check(capsys, "ssp_sssp", "-p", f"s={s}")
    assert rc == 0, out
    assert f"{states:,} distinct states" in out and "deadlock: checked" in out


def test_seeded_stale_delta_is_caught_and_replays_on_processes(capsys, tmp_path):
    cex = tmp_path / "cex.json"
    rc, out = check(capsys, *docstring_check(SSPStaleDelta), "--out", str(cex))
    assert rc == 1
    assert "values only improve: key 3 got worse" in out and "Delta(k=3, v=6)" in out
    assert main(["replay", str(cex), "--on-processes"]) == 0  # reproduced
    assert "the real handler failed, as in the counterexample" in capsys.readouterr().out


def test_seeded_staleness_off_by_one_is_caught_on_the_default_graph_and_replays_on_processes(capsys, tmp_path):
    """Worker 0 runs the chain 0 -> 2 -> 4 -> 6 of its own keys: three iterations while worker 1 has done none."""
    args = docstring_check(SSPStalenessOffByOne)
    assert args == ["ssp_staleness_off_by_one"]  # the default parameters: s = 1, graph 0
    cex = tmp_path / "cex.json"
    rc, out = check(capsys, *args, "--out", str(cex))
    assert rc == 1 and "invariant staleness is violated" in out and "Counterexample (3 steps)" in out
    assert len(re.findall(r"timeout\(p=0, timer=.iterate.\)", out)) == 3
    assert main(["replay", str(cex), "--on-processes"]) == 0
    assert "violates invariant staleness, as in the counterexample" in capsys.readouterr().out
    rc, out = check(capsys, "ssp_sssp")  # the correct bound holds on the same graph
    assert rc == 0


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
    assert plan_for("sssp", 0, 0).keys.tolist() == [0, 1, 2, 3, 4, 6]
    edges = graph_edges(RANDOM_BASE + 3)
    assert edges.shape == (5, 3) and (edges[:, 2] >= 0).all()
    p = linear_plan(load("cc"), {"edge": edges[:, :2]})
    assert p.fixpoint is not None


# ------------------------------------------------------------------------------------- hybrid (APSP)


@pytest.mark.parametrize("s, states", [(0, 160), (1, 1427), (-1, 7377)])
def test_hybrid_apsp_holds_with_known_counts(capsys, s, states):
    """Every schedule ends with every worker holding the sequential least model on every pair (`fixpoint`,
    its replica too), within the staleness bound, with values that are values of derivations."""
    rc, out = check(capsys, "ssp_apsp", "-p", f"s={s}")
    assert rc == 0, out
    assert f"{states:,} distinct states" in out
    assert "staleness, knowledge_sound, derivable, fixpoint" in out and "deadlock: checked" in out


@pytest.mark.parametrize("s", [0, -1])
def test_hybrid_apsp_terminates(s):
    res = check_termination("ssp_apsp", {"s": s})
    assert res.verdict == "terminates" and res.finished > 0, res.message


def test_hybrid_apsp_reports_a_negative_cycle_as_divergence(capsys):
    neg = next(i for i, (name, _) in enumerate(GRAPHS) if name == "negative cycle")
    rc, out = check(capsys, "ssp_apsp", "-p", f"graph={neg}")
    assert rc == 1 and "divergence" in out and "negative cycle" in out
    assert pair_plan_for("apsp", neg).fixpoint is None


class IgnoresDeltas(SSPAllPairs):
    """A replica that drops the broadcast deltas: its joins read stale rows for ever."""

    def delta(p, src, m):
        return


def test_hybrid_fixpoint_catches_a_replica_that_ignores_deltas():
    sys.modules[__name__].IgnoresDeltas = IgnoresDeltas
    res = explicit_check(load_model(f"{__name__}:IgnoresDeltas", {}), Options())
    assert res.violation is not None and res.violation.name == "fixpoint"


def test_pair_plan_bounds_and_derivable_values():
    """The diamond 0->1 (1), 0->2 (4), 1->2 (2), 1->3 (6), 2->3 (1): walks cost 1..7, and pair (0, 3) is
    derived as 0-1-3 (7), 0-2-3 (5) and 0-1-2-3 (4)."""
    pl = pair_plan_for("apsp", 1)
    assert pl.bounds() == (1, 7)
    d = pl.derivable(1, 7)
    assert d[0 * 4 + 3] == {4, 5, 7} and d[0 * 4 + 2] == {3, 4} and 3 * 4 + 0 not in d
    assert pl.fixpoint == {1: 1, 2: 3, 3: 4, 6: 2, 7: 3, 11: 1}


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


@pytest.mark.slow
@pytest.mark.parametrize("s", [0, 1, 2, -1])
@pytest.mark.parametrize("graph", [1, 2, 3, 5, RANDOM_BASE, RANDOM_BASE + 1])
def test_hybrid_every_property_and_termination(capsys, s, graph):
    params = ["-p", f"s={s}", "-p", f"graph={graph}", "-p", "capacity=16"]
    rc, out = check(capsys, "ssp_apsp", *params)
    assert rc == 0, out
    res = check_termination("ssp_apsp", {"s": s, "graph": graph, "capacity": 16})
    if s < 0 and graph in (3, RANDOM_BASE):
        # asynchronous workers on these graphs outrun the bounds: some runs reach clock 6 (and with clocks=10 a
        # channel overflows 16 messages), so termination is not shown there, though the check above holds
        assert res.verdict == "inconclusive" and "reached the clock bound" in res.message, res.message
    else:
        assert res.verdict == "terminates", res.message


@pytest.mark.slow
def test_hybrid_three_workers(capsys):
    rc, out = check(capsys, "ssp_apsp", "-p", "workers=3", "-p", "graph=2", "-p", "s=0")
    assert rc == 0, out
