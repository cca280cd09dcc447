"""Rounds specs on real processes: one per node, a round barrier, validated traces, a killed node."""

from __future__ import annotations

import json
import multiprocessing

import networkx as nx
import pytest

from lockstep.checker.cli import main
from lockstep.checker.validation.rounds import validate_rounds
from lockstep.checker.validation.runtrace import Mismatch, load
from lockstep.executors.rounds.run import run
from lockstep.specs.d2_coloring import D2Coloring
from lockstep.specs.lang.rounds.trees import distance2_violations, parse_tree, tree_params


@pytest.fixture(scope="module")
def run30(tmp_path_factory):
    path = tmp_path_factory.mktemp("rounds") / "d2.jsonl"
    tree = parse_tree("random:30", seed=7)
    rep = run("d2_coloring", tree_params(tree), trace=str(path), seed=7, initiator=4)
    return tree, rep, path


def test_thirty_nodes_colour_their_tree_and_the_run_validates(run30):
    tree, rep, path = run30
    assert multiprocessing.active_children() == []
    assert rep.finished and len(rep.final) == 30
    colour = {p: s["color"] for p, s in rep.final.items()}
    assert distance2_violations(tree, colour) == [] and None not in colour.values()
    delta = max(d for _, d in tree.degree)
    assert len(set(colour.values())) == delta + 1 and colour[4] == 0
    assert sum(s["collisions"] + s["conflicts"] for s in rep.stats.values()) == 0
    assert sum(s["broadcasts"] for s in rep.stats.values()) == sum(1 for v in tree.nodes if tree.degree(v) > 1 or v == 4)
    from lockstep.specs.d2_coloring import round_bound

    assert rep.rounds <= round_bound(tree, 4, delta)
    res = validate_rounds(load(str(path)))
    assert res.rounds == rep.rounds and res.events == 30 * (rep.rounds + 1) and res.incomplete is None
    assert res.violation is None


def test_a_tampered_trace_is_rejected_at_the_first_wrong_event(run30, tmp_path):
    _, _, path = run30
    lines = path.read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if '"kind":"round"' in line and '"color":null' not in line
             and json.loads(line)["round"] == 2)
    ev = json.loads(lines[i])
    ev["state"]["color"] = (ev["state"]["color"] + 1) % 3
    lines[i] = json.dumps(ev)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(Mismatch, match=f"node {ev['pid']}'s state after round 2 is not the spec's"):
        validate_rounds(load(str(bad)))
    j = next(j for j, line in enumerate(lines) if '"broadcast":{' in line)
    ev = json.loads(lines[j])
    ev["broadcast"]["col"] = (ev["broadcast"]["col"] + 1) % 3
    lines[j] = json.dumps(ev)
    bad.write_text("\n".join(lines) + "\n")
    assert main(["validate", str(bad)]) == 1


def test_a_killed_node_is_reported_and_the_recorded_rounds_validate(tmp_path, capsys):
    path = tmp_path / "k.jsonl"
    rc = main(["run", "d2_coloring", "--tree", "path:8", "--initiator", "0", "--kill", "5@3", "--trace", str(path)])
    out = capsys.readouterr().out
    assert rc == 3
    assert "note: process 5 was killed (SIGKILL) at the start of round 3" in out
    line = next((x for x in out.splitlines() if x.startswith("Validated what was recorded: ")), None)
    assert line is not None, out
    assert "round 3 was recorded only by node" in line and "rounds 1..2 validated" in line
    assert ": node 5 was killed at the start of round 3;" in line  # the killed node, not some other absent one
    recorded = line.split("only by node")[1].split("(")[0].strip(" s").split(", ")
    assert "5" not in recorded
    header = json.loads(path.read_text().splitlines()[0])
    assert header["lost"] == [{"pid": 5, "round": 3, "killed": True}]
    assert multiprocessing.active_children() == []


def test_rounds_validation_names_the_lost_node_or_only_who_recorded():
    from lockstep.checker.validation.rounds import _unrecorded

    evs = {1: {}, 3: {}}
    assert _unrecorded(3, evs, 8, [{"pid": 5, "round": 3, "killed": True}]) == \
        "round 3 was recorded only by nodes 1, 3 (2 of 8): node 5 was killed at the start of round 3; rounds 1..2 validated"
    assert _unrecorded(3, evs, 8, None) == "round 3 was recorded only by nodes 1, 3 (2 of 8); rounds 1..2 validated"
    assert _unrecorded(2, {}, 4, [{"pid": 0, "round": 2, "killed": False}, "junk", {"pid": "x", "round": 2}]) == \
        "round 2 was recorded by no node (0 of 4): node 0 died during round 2; rounds 1..1 validated"


def test_run_command_on_a_small_tree(tmp_path, capsys):
    assert main(["run", "d2_coloring", "--tree", "star:6", "--initiator", "2", "--trace", str(tmp_path / "s.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "2 rounds, every node terminated" in out and "0 collisions, 0 conflicts" in out
    assert "a proper distance-2 colouring with 6 colours (Δ+1 = 6)" in out


@pytest.mark.parametrize("argv, message", [
    (["run", "d2_coloring", "--tree", "edges:0-1,1-2,2-3,3-1"], "not a tree"),
    (["run", "d2_coloring", "--tree", "edges:0-1,2-3,3-4"], "disconnected"),
    (["run", "d2_coloring", "--tree", "grid:3"], "unknown tree generator"),
    (["run", "d2_coloring", "--tree", "path:4", "--initiator", "9"], "initiator 9 is not a node"),
    (["run", "d2_coloring", "--kill", "x@2"], "is not NODE@ROUND"),
    (["run", "d2_coloring", "--faults", "plan.json"], "a rounds run takes --kill"),
    (["run", "two_phase_commit", "--tree", "path:3"], "--tree applies to rounds specs"),
    (["run", "phase_clock", "--initiator", "1"], "--initiator applies to rounds specs"),
    (["run", "d2_coloring", "--interactions", "5"], "--interactions applies to population specs"),
    (["run", "d2_coloring", "--duration", "1"], "--duration applies to actor specs"),
])
def test_bad_input_to_run_is_one_message_and_exit_2(argv, message, capsys):
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse refuses the argument itself
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_the_outcome_check_is_independent_of_the_spec():
    g = nx.path_graph(3)
    assert D2Coloring.check_outcome(g, {0: {"color": 0}, 1: {"color": 1}, 2: {"color": 0}}) == [
        "nodes 0 and 2 are at distance <= 2 and share colour 0"]


def test_malformed_frames_are_rejected_and_change_nothing():
    from lockstep.executors.rounds.process import RoundsNode, RoundsNodeConfig
    from lockstep.executors.wire import dumps
    from tests.executors.wire_helpers import Peer

    node = RoundsNode(RoundsNodeConfig("d2_coloring", tree_params(nx.path_graph(3)), 1, 0, None))
    for body in (b"not json", dumps({"src": 0, "round": 1}), dumps({"src": 2, "round": 0, "msg": None}),
                 dumps({"src": 5, "round": 1, "msg": None}), dumps({"src": 0, "round": 9, "msg": None}),
                 dumps({"src": 0, "round": 1, "msg": {"tag": "Color", "sid": 0}}), b"[" * 100 + b"]" * 100):
        node.on_frame(Peer(0), body)
    node.on_frame(Peer(2), dumps({"src": 0, "round": 1, "msg": None}))  # node 2 speaking for node 0
    assert node.stats["rejected"] == 8 and node.inbox == {}
    node.on_frame(Peer(0), dumps({"src": 0, "round": 1, "msg": None}))
    node.on_frame(Peer(0), dumps({"src": 0, "round": 1, "msg": None}))
    assert node.stats["rejected"] == 9 and node.inbox == {1: {0: 0}}


def test_a_malformed_rounds_trace_is_reported_not_a_traceback(run30, tmp_path, capsys):
    _, _, path = run30
    lines = path.read_text().splitlines()
    assert json.loads(lines[-1]) == {"kind": "end", "events": len(lines) - 2}
    ev = json.loads(lines[-2])
    ev["pid"] = 99
    bad = tmp_path / "pid.jsonl"
    bad.write_text("\n".join(lines[:-2] + [json.dumps(ev), lines[-1]]) + "\n")
    assert main(["validate", str(bad)]) == 1
    assert "pid 99 is not a node of the network (0..29)" in capsys.readouterr().out
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:40]) + "\n" + lines[40][:25] + "\n")
    assert main(["validate", str(cut)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_nodes_reject_strangers_and_impostors(tmp_path):
    """A stranger's forged opening and an oversized frame, and a neighbour speaking for another node: refused by a
    real node, counted, and the run goes on."""
    import asyncio

    from lockstep.executors.rounds.run import RoundsCluster
    from lockstep.executors.wire import LENGTH, dumps
    from tests.executors.wire_helpers import forged_opening, insider, raw, stranger, trace_lines, until

    params = tree_params(nx.path_graph(3))

    async def scenario() -> RoundsCluster:
        cluster = RoundsCluster("d2_coloring", params, 3, str(tmp_path), start_method="spawn")
        try:
            await cluster.start({p: {"initiator": p == 0} for p in range(3)})
            port = cluster.members[1].port
            _, w, _ = await stranger(port)
            w.write(forged_opening(0, 1) + raw(dumps({"src": 0, "round": 1, "msg": None})))
            _, w2, _ = await stranger(port)
            w2.write(LENGTH.pack(1 << 30))
            ep = await insider(cluster.creds, 2, port, 1)
            ep.send({"src": 0, "round": 1, "msg": None})  # node 2 claiming to be node 0
            await w.drain()
            await w2.drain()
            trace = cluster.trace_path(1)  # nodes write their traces line by line
            await until(lambda: sum(e["kind"] == "rejected" for e in trace_lines(trace)) == 3, "the rejections")
            await cluster.stop()
        finally:
            cluster.close()
        return cluster

    cluster = asyncio.run(scenario())
    bye = cluster.members[1].bye
    assert bye is not None and bye["stats"]["rejected"] == 3
    events = [json.loads(x) for x in (tmp_path / "process-1.jsonl").read_text().splitlines()]
    reasons = [e["reason"] for e in events if e["kind"] == "rejected"]
    assert any("without the run's secret" in r for r in reasons) and any("more than the limit" in r for r in reasons)
    assert any("process 2 sent a frame claiming to come from node 0" in r for r in reasons)
    assert events[-1]["kind"] == "end"
