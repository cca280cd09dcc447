"""`lockstep check --dump-graph`: the whole small state graph in DOT, the counterexample in red, big graphs refused."""

from __future__ import annotations

import re


def test_graph_of_a_spec_that_holds(cli, tmp_path):
    out = tmp_path / "g.dot"
    r = cli("check", "two_phase", "-p", "rm=2", "--quiet", "--dump-graph", str(out))
    assert r.code == 0, r.err
    distinct = int(re.search(r"([\d,]+) distinct states", r.out).group(1).replace(",", ""))
    dot = out.read_text()
    assert dot.startswith('digraph "TwoPhase" {') and dot.rstrip().endswith("}")
    assert len(re.findall(r"^  s\d+ \[", dot, re.M)) == distinct
    assert "color=red" not in dot
    assert 'label="tm_rcv_prepared(r=0)"' in dot or "tm_rcv_prepared(r=0)" in dot


def test_counterexample_is_marked(cli, tmp_path):
    out = tmp_path / "g.dot"
    r = cli("check", "diehard", "--quiet", "--dump-graph", str(out), "--out", str(tmp_path / "cex.json"))
    assert r.code == 1
    steps = int(re.search(r"Counterexample \((\d+) steps\)", r.out).group(1))
    dot = out.read_text()
    red_edges = re.findall(r"^  s\d+ -> s\d+ \[.*penwidth=2\.5", dot, re.M)
    red_nodes = re.findall(r"^  s\d+ \[.*color=red", dot, re.M)
    assert len(red_edges) == steps and len(red_nodes) == steps + 1
    assert 'xlabel="invariant not_solved is violated"' in dot
    assert 'big = 4' in dot


def test_lasso_loop_edge_is_marked(cli, tmp_path):
    out = tmp_path / "g.dot"
    r = cli("check", "lock_weak", "--property", "no_starvation", "--quiet", "--dump-graph", str(out))
    assert r.code == 1
    assert len(re.findall(r"^  s\d+ -> s\d+ \[.*penwidth=2\.5", out.read_text(), re.M)) == 4  # 3 steps and the way back


def test_large_graphs_are_refused_before_the_search(cli, tmp_path):
    out = tmp_path / "g.dot"
    r = cli("check", "two_phase", "-p", "rm=4", "--quiet", "--dump-graph", str(out), "--graph-limit", "100")
    assert r.code == 2 and "more than 100 states" in r.err and not out.exists()
    assert "distinct states" not in r.out


def test_graph_is_refused_with_the_smt_engine(cli, tmp_path):
    r = cli("check", "diehard", "--engine", "smt", "--dump-graph", str(tmp_path / "g.dot"))
    assert r.code == 2 and "--dump-graph" in r.err


def test_the_graph_counts_are_said_against_the_search(cli, tmp_path):
    """The graph holds every reachable state; where the search stored fewer, the line says how many and why."""
    out = tmp_path / "g.dot"
    r = cli("check", "diehard", "--quiet", "--dump-graph", str(out))
    assert r.code == 1 and "14 distinct states" in r.out
    assert (f"State graph written to {out}: 16 states (every reachable one) and 74 edges (pairs of states a step joins); "
            "the search stored 14 (it stops at the first violation)") in r.out
    assert len(re.findall(r"^  s\d+ \[", out.read_text(), re.M)) == 16
    r = cli("check", "two_phase", "-p", "rm=2", "--quiet", "--max-depth", "2", "--dump-graph", str(out))
    assert r.code == 3 and "the search stored 16 (it stopped early: depth bound of 2 steps reached" in r.out, r.out


def test_the_graph_leaves_out_states_outside_the_constraints_as_the_search_does(cli, tmp_path):
    from tests.conftest import model_path

    out = tmp_path / "g.dot"
    r = cli("check", model_path("constrained.py") + ":Counter", "--quiet", "--dump-graph", str(out))
    assert r.code == 1 and "10 distinct states" in r.out
    assert "10 states (every reachable one)" in r.out and "the search stored" not in r.out
    assert len(re.findall(r"^  s\d+ \[", out.read_text(), re.M)) == 10
