"""Datalog on SSP worker processes: results equal the sequential fixpoint (and networkx/scipy) for
s in {0, 1, 2, inf}, runs on the spec's graphs are validated against the SSP spec, stragglers, errors."""

from __future__ import annotations

import os
import tempfile

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

from lockstep.checker.cli import main
from lockstep.checker.validation.actors import validate
from lockstep.checker.validation.runtrace import MergedRun, Mismatch
from lockstep.executors.datalog.run import run
from lockstep.executors.faults import Faults, FaultsError, Straggler, parse_faults
from lockstep.specs.datalog.graphs import generate
from lockstep.specs.datalog.ssp import GRAPHS


def fixpoint_of(rep) -> dict[int, int]:
    return {int(rep.plan.keys[k]): v for k, v in rep.plan.fixpoint.items()}


@pytest.mark.parametrize("s", [0, 1, 2, -1])
def test_sssp_workers_equal_the_fixpoint_and_scipy(s):
    rep = run("sssp", "gnm:400:2000", workers=2, staleness=s, weights=(1, 9), seed=3, check=True)
    assert rep.failures == []
    assert rep.mapping() == fixpoint_of(rep)
    g = generate("gnm:400:2000", seed=3)
    w = np.random.default_rng(3).integers(1, 10, size=g.edges)
    m = sp.coo_matrix((w.astype(float), (g.src, g.dst)), shape=(400, 400)).tocsr()  # duplicates summed: none here
    dist = csgraph.dijkstra(m, indices=0)
    assert rep.mapping() == {i: round(d) for i, d in enumerate(dist) if np.isfinite(d)}
    if s == 0:  # BSP: no worker ever more than one finished iteration ahead
        assert abs(rep.clocks[0] - rep.clocks[1]) <= 1


@pytest.mark.parametrize("s", [0, 1, 2, -1])
def test_apsp_workers_equal_the_fixpoint_and_scipy(s):
    """The non-linear program on replicating workers (three of them at s = 1)."""
    workers = 3 if s == 1 else 2
    rep = run("apsp", "gnm:30:120", workers=workers, staleness=s, weights=(1, 9), seed=4, check=True)
    assert rep.failures == [] and rep.stats[0]["frames_rejected"] == 0
    assert rep.mapping() == rep.plan.fixpoint
    g = generate("gnm:30:120", seed=4)
    w = np.random.default_rng(4).integers(1, 10, size=g.edges)
    m = sp.coo_matrix((w.astype(float), (g.src, g.dst)), shape=(30, 30)).tocsr()
    dist = csgraph.shortest_path(m, method="FW")
    x, y = rep.plan.pair(rep.keys)
    got = dict(zip(zip(x.tolist(), y.tolist()), rep.vals.tolist()))
    # path(X, X) exists only through a cycle; scipy's diagonal is 0
    want = {(i, j): round(dist[i, j]) for i in range(30) for j in range(30) if np.isfinite(dist[i, j]) and i != j}
    assert {k: v for k, v in got.items() if k[0] != k[1]} == want
    cyc = {(i, i) for i in range(30) if any(np.isfinite(dist[i, j]) and np.isfinite(dist[j, i]) for j in range(30)
                                            if j != i and m[i, j] > 0)}
    assert cyc <= {k for k in got if k[0] == k[1]}


def test_apsp_workers_report_a_negative_cycle(tmp_path):
    graph = tmp_path / "neg.txt"
    graph.write_text("0 1 2\n1 2 -5\n2 0 1\n2 3 4\n")
    rep = run("apsp", str(graph), workers=2, staleness=1, check=True)
    assert any("divergence" in f for f in rep.failures)


def test_cc_workers_equal_networkx():
    rep = run("cc", "gnm:300:400", workers=3, staleness=1, seed=5, check=True)
    g = generate("gnm:300:400", seed=5).to_networkx(directed=False)
    assert rep.mapping() == {v: min(c) for c in nx.connected_components(g) for v in c}


@pytest.mark.parametrize("s", [0, 1, -1])
def test_traced_apsp_runs_are_behaviours_of_the_hybrid_spec(s, tmp_path):
    """The replicating workers of the non-linear program, on the hybrid spec's default graph (the diamond):
    every handler run is a step of `ssp_apsp`, broadcast deltas included."""
    rep = run("apsp", "ssp:1", workers=2, staleness=s, check=True, trace=str(tmp_path / "run.jsonl"))
    assert rep.spec == "ssp_apsp" and rep.failures == [] and rep.mapping() == rep.plan.fixpoint
    res = validate(rep.merged)
    assert res.violation is None and res.failure is None
    deltas = [e for e in rep.merged.events if e["kind"] == "message" and e["msg"]["tag"] == "Delta"]
    row_owner = rep.plan.owner(2)  # per node: the worker of its row of pairs (4 nodes)
    assert deltas and all(row_owner[e["msg"]["k"] // 4] != e["pid"] for e in deltas)  # each updates a replica


def test_a_traced_apsp_run_on_a_negative_cycle_fails_as_the_spec_does(capsys, tmp_path):
    neg = next(i for i, (name, _) in enumerate(GRAPHS) if name == "negative cycle")
    assert main(["run", "apsp", "--graph", f"ssp:{neg}", "--no-check", "--trace", str(tmp_path / "run.jsonl")]) == 1
    assert "divergence" in capsys.readouterr().out


@pytest.mark.parametrize("s", [0, 1, -1])
def test_traced_runs_are_behaviours_of_the_spec(s, tmp_path):
    rep = run("sssp", "ssp:0", workers=2, staleness=s, check=True, trace=str(tmp_path / "run.jsonl"))
    assert rep.spec == "ssp_sssp" and rep.mapping() == fixpoint_of(rep)
    res = validate(rep.merged)
    assert res.violation is None and res.failure is None and res.events > 10


def test_a_tampered_trace_is_rejected(tmp_path):
    rep = run("sssp", "ssp:0", workers=2, staleness=1, trace=str(tmp_path / "run.jsonl"))
    merged = rep.merged
    events = list(merged.events)
    e = next(e for e in events if e["kind"] == "message" and e["msg"]["tag"] == "Delta")
    k = str(e["msg"]["k"])
    e["state"]["val"][k] += 1  # the worker claims a value the delta does not give
    with pytest.raises(Mismatch, match="local state after the handler differs"):
        validate(MergedRun(merged.header, events, merged.notes))


def test_straggler_lets_asynchronous_workers_run_ahead():
    slow = Faults(stragglers=[Straggler(1, 15.0)])
    bsp = run("cc", "grid:40:40", workers=2, staleness=0, faults=slow)
    asy = run("cc", "grid:40:40", workers=2, staleness=-1, faults=slow)
    assert abs(bsp.stats[0]["iterations"] - bsp.stats[1]["iterations"]) <= 1
    assert asy.stats[0]["iterations"] > asy.stats[1]["iterations"] + 2
    assert bsp.mapping() == asy.mapping()


def test_straggler_fault_plans_parse():
    f = parse_faults({"stragglers": [{"pid": 1, "delay_ms": 20}]}, 2)
    assert f.stragglers == [Straggler(1, 20.0)]
    f = parse_faults({"stragglers": [{"pid": 0, "delay_ms": 50, "probability": 0.3}]}, 2)
    assert f.stragglers == [Straggler(0, 50.0, 0.3)]
    with pytest.raises(Exception, match="not a probability"):
        parse_faults({"stragglers": [{"pid": 0, "delay_ms": 50, "probability": 1.5}]}, 2)
    with pytest.raises(Exception, match="not a process id"):
        parse_faults({"stragglers": [{"pid": 5, "delay_ms": 20}]}, 2)
    with pytest.raises(FaultsError, match="stragglers is int, not a list"):
        parse_faults({"stragglers": -1}, 2)


def test_command(capsys, tmp_path):
    assert main(["run", "sssp", "--graph", "ssp:1", "--staleness", "inf"]) == 0
    out = capsys.readouterr().out
    assert "equals the sequential fixpoint" in out and "Valid:" in out
    # no --trace: a new file of a random name in the temporary directory (not lockstep-datalog-sssp-PID.jsonl,
    # a name another user could take first), printed
    written = out.split("Trace written to ")[1].split()[0]
    name = os.path.basename(written)
    assert name.startswith("lockstep-datalog-sssp-") and name != f"lockstep-datalog-sssp-{os.getpid()}.jsonl"
    assert os.path.dirname(written) == tempfile.gettempdir() and os.stat(written).st_uid == os.getuid()
    os.remove(written)
    neg = next(i for i, (name, _) in enumerate(GRAPHS) if name == "negative cycle")
    assert main(["run", "sssp", "--graph", f"ssp:{neg}", "--no-check", "--trace", str(tmp_path / "neg.jsonl")]) == 1
    assert "divergence" in capsys.readouterr().out
    with pytest.raises(SystemExit) as bad:  # argparse: a chance above 1
        main(["run", "sssp", "--graph", "path:4", "--straggler", "1:5:2"])
    assert bad.value.code == 2 and "PROBABILITY" in capsys.readouterr().err
    assert main(["run", "quiet", "--graph", "path:4"]) == 2
    assert main(["run", "sssp"]) == 2
    assert main(["run", "two_phase_commit", "--graph", "path:3"]) == 2  # a Datalog option on an actor spec
    capsys.readouterr()
    assert main(["run", "sssp", "--graph", "path:4", "--workers", "0"]) == 2  # --workers is shared with P-SMR
    assert "give 1 to 64 workers" in capsys.readouterr().err


def test_command_runs_apsp_with_a_transient_straggler(capsys):
    assert main(["run", "apsp", "--graph", "path:4", "--straggler", "1:5:0.5"]) == 0
    out = capsys.readouterr().out
    assert "with chance 0.5" in out and "16 facts of path" in out and "equals the sequential fixpoint" in out


@pytest.mark.slow
@pytest.mark.parametrize("program", ["sssp", "cc", "reach"])
@pytest.mark.parametrize("s", [0, 1, 2, -1])
@pytest.mark.parametrize("graph", ["ssp:0", "ssp:1", "ssp:3", "ssp:100", "ssp:101"])
def test_validated_runs_everywhere(program, s, graph, tmp_path):
    rep = run(program, graph, workers=2, staleness=s, check=True, trace=str(tmp_path / "r.jsonl"))
    assert rep.failures == [] and rep.mapping() == fixpoint_of(rep)
    res = validate(rep.merged)
    assert res.violation is None and res.failure is None


@pytest.mark.slow
@pytest.mark.parametrize("s", [0, 1, 2, -1])
@pytest.mark.parametrize("graph", ["ssp:0", "ssp:2", "ssp:3", "ssp:5", "ssp:100", "ssp:101"])
def test_validated_apsp_runs_everywhere(s, graph, tmp_path):
    rep = run("apsp", graph, workers=2, staleness=s, check=True, trace=str(tmp_path / "r.jsonl"))
    assert rep.failures == [] and rep.mapping() == rep.plan.fixpoint
    res = validate(rep.merged)
    assert res.violation is None and res.failure is None


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2, 3, 4])
@pytest.mark.parametrize("s", [0, 1, 2, -1])
def test_reach_on_more_workers(workers, s):
    rep = run("reach", "gnm:2000:6000", workers=workers, staleness=s, seed=2, check=True)
    g = generate("gnm:2000:6000", seed=2).to_networkx()
    assert set(rep.mapping()) == {0} | nx.descendants(g, 0)


def test_a_worker_stopped_by_ctrl_c_before_it_has_a_result_is_a_note_not_a_failure(monkeypatch):
    """SIGINT as the workers start: those that had no result to write leave the run partial, said so, not failed."""
    import lockstep.executors.datalog.run as datalog_run

    async def interrupted_at_once(configs, timeout, progress):
        return {}, {}, [], 0.0, 0.0, 0.0  # no worker wrote a result; SIGINT 0.0 s into the run

    monkeypatch.setattr(datalog_run, "_drive", interrupted_at_once)
    res = datalog_run.run("sssp", "ssp:0", workers=2, tracing=False)
    assert res.failures == [] and res.interrupted == 0.0
    assert [n for n in res.notes if "stopped before it wrote a result" in n] == [
        "worker 0 was stopped before it wrote a result", "worker 1 was stopped before it wrote a result"]
