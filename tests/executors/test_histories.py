"""Histories of real systems under faults: a 3-node etcd killed, paused and restarted while clients record; its
linearizable reads pass, its serializable reads are caught stale; fault schedules."""

from __future__ import annotations

import json
import os

import pytest

from lockstep.checker.linearizability import check, load_model, read_history
from lockstep.executors.histories.etcd import etcd_binary
from lockstep.executors.histories.experiment import run_etcd
from lockstep.executors.histories.schedule import PRESETS, Fault, ScheduleError, parse_schedule

needs_etcd = pytest.mark.skipif(etcd_binary() is None, reason="etcd is not installed here (Debian's etcd-server: "
                                                               "apt-get install etcd-server, as .ci/run does)")


def test_schedules():
    assert parse_schedule("mixed", 10, 3) == [Fault(1.5, "kill", "follower"), Fault(3.5, "restart", "follower"),
                                              Fault(5.0, "pause", "leader"), Fault(7.0, "resume", "leader")]
    assert parse_schedule("none", 10, 3) == []
    assert parse_schedule("pause:2@1,kill:0@0.5,restart:0@2,resume:2@1.5", 3, 3)[0] == Fault(0.5, "kill", "0")
    for text, message in [("kill:3@1", "nodes 0..2"), ("restart:leader@1", "no kill of leader before it"),
                          ("pause:1@1,pause:1@2", "already paused"), ("kill:leader@20", "after the end"),
                          ("crash:1@1", "not ACTION:TARGET@SECONDS")]:
        with pytest.raises(ScheduleError, match=message):
            parse_schedule(text, 10, 3)


def test_bad_schedule_is_a_usage_error(cli):
    r = cli("harness", "etcd", "--faults", "resume:leader@1")
    assert r.code == 2 and "--faults: resume leader at 1.00 s: no pause of leader before it" in r.err and r.out == ""


@needs_etcd
def test_etcd_with_a_kill_and_a_pause_is_linearizable(cli, tmp_path):
    """Three members; a follower SIGKILLed and restarted, then the leader SIGSTOPped and resumed, under five clients
    reading, writing and compare-and-setting three keys through the v3 JSON gateway."""
    r = cli("harness", "etcd", "--duration", "3", "--history-dir", str(tmp_path),
            "--faults", "kill:follower@0.5,restart:follower@1,pause:leader@1.5,resume:leader@2.3")
    assert r.code == 0, r.out + r.err
    timeline = [ln.split() for ln in r.out.split("fault timeline:\n")[1].split("calls completed")[0].splitlines()[:4]]
    assert [t[2] for t in timeline] == ["kill", "restart", "pause", "resume"]
    assert timeline[0][3] == timeline[1][3] and timeline[2][3] == timeline[3][3]  # each undone on its own node
    assert timeline[0][4] == "(follower;" and timeline[2][4] == "(leader;"
    assert "Linearizable" in r.out and "operations/s" in r.out
    path = os.path.join(tmp_path, "etcd.jsonl")
    events = [json.loads(line) for line in open(path)]
    done = [e for e in events if e["type"] == "ok"]
    assert {e["f"] for e in done} == {"read", "write", "cas"} and len({e["key"] for e in done}) == 3
    assert any(e["type"] == "ok" and e["time"] > 2.4 for e in events)  # the cluster serves after the faults
    v = check(read_history(path), load_model("cas-register"))
    assert v.verdict == "linearizable" and v.partitions == 3


@pytest.mark.slow
@needs_etcd
@pytest.mark.parametrize("schedule", sorted(PRESETS))
def test_etcd_linearizable_reads_pass_every_schedule(tmp_path, schedule):
    o = run_etcd(str(tmp_path), 4.0, parse_schedule(schedule, 4.0, 3))
    assert o.verdict.verdict == "linearizable" and o.completed > 0
    assert [s.action for s in o.timeline if "healing" not in s.note] == [a for a, _, _ in PRESETS[schedule]]


@pytest.mark.slow
@needs_etcd
def test_etcd_serializable_reads_are_caught_stale(tmp_path):
    """etcd documents that a serializable read is served from the member's own state, which may be behind: followers
    paused and resumed serve such reads at once, and the checker finds one that misses a completed write."""
    for attempt in range(5):  # each run pauses followers four times; one stale read is enough
        d = tmp_path / f"run{attempt}"
        d.mkdir(mode=0o700)
        o = run_etcd(str(d), 5.0, parse_schedule("stale", 5.0, 3), serializable=True, seed=attempt)
        if o.verdict.verdict == "not linearizable":
            break
    v = o.verdict
    assert v.verdict == "not linearizable", "no stale read in five runs"
    assert v.last.f == "read" and v.last in v.window and v.minimal and len(v.window) >= 2


@pytest.mark.slow
def test_psmr_under_the_same_schedule(tmp_path):
    """The P-SMR service driven with an etcd schedule: a replica killed (it does not restart: reported as not done),
    another paused and resumed; its own clients' history is linearizable."""
    from lockstep.executors.histories.psmr import run_psmr

    o = run_psmr(str(tmp_path), 3.0, parse_schedule("kill:1@0.5,restart:1@1,pause:0@1.5,resume:0@2.2", 3.0, 3))
    assert [(s.action, s.node, s.done) for s in o.timeline] == [
        ("kill", "replica 1", True), ("restart", "replica 1", False), ("pause", "replica 0", True),
        ("resume", "replica 0", True)]
    assert o.completed > 0 and o.verdict.verdict == "linearizable" and o.model == "psmr-kv"


@needs_etcd
def test_a_port_taken_meanwhile_is_replaced(tmp_path):
    """Ports are chosen free, but another process may bind one before etcd does: the members start again on new
    ones."""
    import socket

    from lockstep.executors.histories.etcd import EtcdCluster

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        cluster = EtcdCluster(str(tmp_path))
        cluster.nodes[1].client_port = taken.getsockname()[1]
        try:
            cluster.start()
            assert cluster.nodes[1].client_port != taken.getsockname()[1]
            assert cluster.leader() is not None
        finally:
            cluster.stop()
    assert "address already in use" in open(cluster.nodes[1].log).read()
