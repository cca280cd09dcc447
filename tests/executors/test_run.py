"""Real runs: one OS process per actor on 127.0.0.1, faults, crashes and restarts, bad frames, clean exits."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from collections import Counter

import pytest

from lockstep.checker.validation.actors import validate
from lockstep.checker.validation.runtrace import Mismatch, load, read_jsonl
from lockstep.executors.actors.run import ActorCluster, actor_program, run
from lockstep.executors.faults import parse_faults
from lockstep.executors.wire import LENGTH, dumps
from tests.conftest import model_path
from tests.executors.wire_helpers import insider, stranger, trace_lines, until


def no_processes_left() -> None:
    assert multiprocessing.active_children() == []


@pytest.fixture(scope="module")
def tpc_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "tpc.jsonl"
    rep = run("two_phase_commit", {"rm": 2}, 1.0, trace=str(path), seed=1)
    return rep, load(str(path))


def test_two_phase_commit_run_is_a_behaviour_of_the_spec(tpc_run):
    rep, merged = tpc_run
    no_processes_left()
    kinds = Counter(e["kind"] for e in merged.events)
    assert kinds["start"] == 3 and kinds["message"] >= 4 and kinds["rejected"] == 0
    assert sorted(rep.stats) == [0, 1, 2] and all(s["events"] > 0 for s in rep.stats.values())
    res = validate(merged)
    assert res.violation is None and res.events == sum(kinds[k] for k in ("start", "message", "timeout"))


def test_trace_events_carry_lamport_clocks(tpc_run):
    """Each delivery comes after (in the merged order, with a larger clock) the event that sent it."""
    _, merged = tpc_run
    sent: list[tuple[int, int, str, int]] = []  # (src, dst, message, clock)
    for e in merged.events:
        if e["kind"] == "message":
            match = [s for s in sent if s[:3] == (e["src"], e["pid"], json.dumps(e["msg"]))]
            assert match and all(s[3] < e["clock"] for s in match)
        for dst, m in e.get("sends", []):
            sent.append((e["pid"], dst, json.dumps(m), e["clock"]))
    per_pid = [[e["clock"] for e in merged.events if e["pid"] == p] for p in range(3)]
    assert all(c == sorted(c) and len(set(c)) == len(c) for c in per_pid)


def test_bracha_with_a_byzantine_relay_under_delay_and_reordering(tmp_path):
    faults = parse_faults({"delay_ms": [0, 10], "reorder": 0.5, "reorder_ms": 20}, 4)
    path = tmp_path / "bracha.jsonl"
    rep = run("bracha_byzantine_relay", {}, 1.5, faults, str(path), seed=3)
    assert rep.relay["reordered"] > 0 and rep.relay["delayed"] > 0
    merged = load(str(path))
    assert validate(merged).violation is None
    last = {e["pid"]: e["state"] for e in merged.events if "state" in e}
    value = last[0]["input"]
    assert [last[p]["delivered"] for p in (0, 1, 2)] == [value] * 3  # validity, in the real run
    no_processes_left()


def test_bracha_with_an_equivocating_sender(tmp_path):
    path = tmp_path / "eq.jsonl"
    run("bracha_equivocating_sender", {}, 1.0, trace=str(path), seed=5)
    merged = load(str(path))
    assert validate(merged).violation is None
    byz = [e for e in merged.events if e["pid"] == 0]
    assert byz[0]["kind"] == "start" and "ones" in byz[0]["choice"] and len(byz[0]["sends"]) == 9


def test_crash_and_restart(tmp_path):
    # tokens spend most of their time delayed in the relay, so most survive the crash and wait for the restart
    faults = parse_faults({"delay_ms": [20, 40], "crashes": [{"pid": 1, "at": 0.3, "restart": 0.6}]}, 3)
    path = tmp_path / "ring.jsonl"
    rep = run("token_ring", {"n": 3, "tokens": 6}, 2.5, faults, str(path))  # time for the restart to come up
    assert rep.relay["waited"] > 0
    assert "process 1 killed (SIGKILL) at 0.30 s" in rep.notes and "process 1 restarted at 0.60 s" in rep.notes
    merged = load(str(path))
    restarts = [e for e in merged.events if e["kind"] == "restart"]
    assert len(restarts) == 1 and restarts[0]["pid"] == 1
    after = [e for e in merged.events if e["pid"] == 1 and e.get("seq", 0) > restarts[0]["seq"]]
    assert after, "the restarted process handles messages again"
    assert validate(merged).violation is None
    no_processes_left()


def test_a_killed_process_does_not_lose_the_others_traces(tmp_path):
    faults = parse_faults({"crashes": [{"pid": 2, "at": 0.3}]}, 3)
    path = tmp_path / "ring.jsonl"
    rep = run("token_ring", {"n": 3, "tokens": 3}, 1.0, faults, str(path))
    assert rep.stats[2] == {} and rep.stats[0]["events"] > 0
    merged = load(str(path))
    assert {e["pid"] for e in merged.events} == {0, 1, 2}
    assert validate(merged).violation is None
    no_processes_left()


def test_malformed_frames_are_logged_and_dropped(tmp_path):
    """Bad frames to a live process, from a member of the run (authenticated) and from a stranger: each is
    recorded with its reason; the process keeps running."""

    async def scenario() -> None:
        prog = actor_program("two_phase_commit", {})
        cluster = ActorCluster("two_phase_commit", dict(prog.params), 3, str(tmp_path), durable=True)
        try:
            await cluster.start()
            port = cluster.members[1].port
            bodies = [b"{nope", dumps([1, 2]), dumps({"src": 9, "dst": 1, "clock": 1, "msg": {"tag": "Prepare"}}),
                      dumps({"src": 0, "dst": 1, "clock": 1, "msg": {"tag": "Bogus"}}),
                      dumps({"src": 0, "dst": 1, "clock": 1, "msg": {"tag": "Prepare", "extra": 1}}),
                      dumps({"src": 0, "dst": 2, "clock": 1, "msg": {"tag": "Prepare"}}),
                      dumps({"src": 0, "dst": 1, "clock": -3, "msg": {"tag": "Prepare"}}),
                      dumps({"src": 0, "dst": 1, "clock": 10**30, "msg": {"tag": "Prepare"}}),
                      dumps({"src": 2, "dst": 1, "clock": 1, "msg": {"tag": "Prepare"}}),  # process 0 speaking for 2
                      b'{"src": 0, "dst": 1, "clock": 1, "msg": ' + b"[" * 5000 + b"]" * 5000 + b"}"]
            ep = await insider(cluster.creds, 0, port, 1)
            for body in bodies:
                ep.send_body(body)
            _, w, _ = await stranger(port)
            w.write(LENGTH.pack(1 << 30) + b"xxxx")
            await w.drain()
            trace = str(tmp_path / "process-1.jsonl")
            await until(lambda: sum(e["kind"] == "rejected" for e in trace_lines(trace)) == 11, "the rejections")
            await cluster.stop()
            assert cluster.members[1].bye is not None and cluster.members[1].bye["stats"]["rejected"] == 11
        finally:
            cluster.close()

    asyncio.run(scenario())
    events, _ = read_jsonl(str(tmp_path / "process-1.jsonl"))
    reasons = [e["reason"] for e in events if e["kind"] == "rejected"]
    expected = ["not valid JSON", "expected a JSON object", "src 9 is not a process id", "unknown message type 'Bogus'",
                "Prepare has no field 'extra'", "a frame for process 2 arrived at process 1",
                "clock -3 is not a non-negative integer", "clock 1000000000000000000000000000000 is not",
                "process 0 sent a frame claiming to come from process 2", "nested more than 32 levels deep",
                "more than the limit"]
    assert len(reasons) == len(expected), reasons
    for want in expected:
        assert any(want in r for r in reasons), want
    assert all(isinstance(e.get("clock"), int) for e in events if e["kind"] == "rejected")
    assert any(e["kind"] == "message" for e in events), "the real Prepare was still handled"
    assert events[-1]["kind"] == "end" and events[-1]["stats"]["rejected"] == 11
    no_processes_left()


def test_duplicates_need_a_duplicating_network(tmp_path):
    """The relay duplicates every message: a behaviour of the spec with duplicating=1, and not without."""
    faults = parse_faults({"duplicate": 1.0}, 3)
    path = tmp_path / "dup.jsonl"
    rep = run("two_phase_commit", {"duplicating": 1}, 0.8, faults, str(path))
    assert rep.relay["duplicated"] > 0
    assert validate(load(str(path))).violation is None
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["params"]["duplicating"] = 0
    path.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    with pytest.raises(Mismatch, match="not in flight"):
        validate(load(str(path)))


def test_a_partition_loses_messages_between_groups(tmp_path):
    faults = parse_faults({"partitions": [{"start": 0.2, "end": 0.5, "groups": [[0, 1], [2]]}]}, 3)
    path = tmp_path / "part.jsonl"
    rep = run("token_ring", {"n": 3, "tokens": 3, "lossy": 1}, 0.8, faults, str(path))
    assert rep.relay["partitioned"] > 0
    assert validate(load(str(path))).violation is None  # a lost message is one that is never delivered


@pytest.mark.parametrize("plan, params, fix", [
    ({"duplicate": 0.5}, {}, "--param duplicating=1"),
    ({"drop": 0.1}, {}, "--param lossy=1"),
    ({"partitions": [{"start": 0.1, "end": 0.2, "groups": [[0], [1, 2]]}]}, {}, "--param lossy=1"),
    ({"reorder": 0.5}, {"ordered": 1}, "--param ordered=0"),
    ({"delay_ms": [0, 20]}, {"ordered": 1}, "--param ordered=0"),
])
def test_a_plan_the_network_model_cannot_express_is_refused_before_anything_runs(cli, tmp_path, plan, params, fix):
    """A correct protocol is never blamed for faults its spec's network does not model: such a plan is refused."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    args = [f"{k}={v}" for k, v in params.items()]
    r = cli("run", "two_phase_commit", "--faults", str(path), *sum((["-p", a] for a in args), []))
    assert r.code == 2 and fix in r.err and "does not fit the spec's network model" in r.err and r.out == ""
    no_processes_left()


def test_lossy_validation_takes_blocking_copies_as_lost(tmp_path):
    """Pings dropped by the relay stay in flight in the spec until a retransmission needs their place: then the
    lossy network has lost them, and the run validates; without that, the resend would be blamed."""
    faults = parse_faults({"drop": 0.6}, 2)
    path = tmp_path / "lossy.jsonl"
    spec = model_path("actor_retry.py")
    rep = run(spec, {"lossy": 1, "capacity": 2}, 1.0, faults, str(path), seed=3)
    assert rep.relay["dropped"] > 2
    res = validate(load(str(path)))
    assert res.violation is None and res.failure is None and res.dropped > 0


def test_observed_operations_are_recorded_and_validated(tmp_path):
    spec = model_path("actor_gossip.py") + ":GossipObserved"
    path = tmp_path / "gossip.jsonl"
    run(spec, {}, 0.6, trace=str(path))
    merged = load(str(path))
    observed = [op for e in merged.events for op in e.get("observed", [])]
    assert sorted((o["by"], o["src"]) for o in observed) == [(p, q) for p in range(3) for q in range(3) if p != q]
    assert validate(merged).violation is None
    lines = path.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if '"observed"' in line)
    e = json.loads(lines[i])
    e["observed"] = []
    lines[i] = json.dumps(e)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(Mismatch, match="the operations observed differ"):
        validate(load(str(path)))


def test_a_failing_handler_stops_its_process_and_the_run_reports_it(cli, tmp_path):
    path = tmp_path / "fragile.jsonl"
    r = cli("run", model_path("actor_failing.py"), "--duration", "0.5", "--trace", str(path))
    assert r.code == 1
    assert "note: process 1 exited unexpectedly (exit code 3)" in r.out
    assert "Violation: a handler failed in process 1" in r.out and "process 1 got the token twice" in r.out
    merged = load(str(path))
    assert [e["kind"] for e in merged.events if e["pid"] == 0][:1] == ["start"]  # the other trace is kept
    no_processes_left()


def test_a_forging_byzantine_process(tmp_path):
    """Process 0 forges hellos; the run is a behaviour of the spec, whose false claim the real run breaks."""
    path = tmp_path / "forge.jsonl"
    run(model_path("actor_gossip.py") + ":GossipWithForger", {}, 0.5, trace=str(path), seed=1)
    merged = load(str(path))
    forged = [e for e in merged.events if e["kind"] == "forge"]
    assert forged and all(e["pid"] == 0 for e in forged)
    res = validate(merged)
    assert res.violation == "zero_is_silent"
    lines = path.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if '"kind":"forge"' in line)
    e = json.loads(lines[i])
    e["pid"] = 1  # an honest process cannot forge
    lines[i] = json.dumps(e)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(Mismatch, match="process 1 may not forge this message here"):
        validate(load(str(path)))


def test_an_unplanned_kill_leaves_the_run_validated_up_to_it(cli, tmp_path):
    """A process SIGKILLed from outside (its buffered trace tail lost): the others delivered messages that its
    lost events sent, so validation stops there, saying why, instead of blaming the protocol."""
    import os
    import signal

    from lockstep.checker.validation.runtrace import merge

    params = dict(actor_program("token_ring", {"n": 3, "tokens": 6}).params)

    async def scenario() -> ActorCluster:
        cluster = ActorCluster("token_ring", params, 3, str(tmp_path))
        try:
            await cluster.start()
            trace = cluster.trace_path(1)  # written in blocks: wait for the first (so a tail is left to lose)
            await until(lambda: os.path.getsize(trace) > 0, "process 1 has written part of its trace")
            os.kill(cluster.members[1].process.pid, signal.SIGKILL)  # not through the runner: unplanned
            await until(lambda: not cluster.members[1].process.is_alive(), "process 1 is gone")
            await cluster.stop()
        finally:
            cluster.close()
        return cluster

    cluster = asyncio.run(scenario())
    assert "exited unexpectedly (exit code -9)" in cluster.members[1].exit_note
    path = tmp_path / "killed.jsonl"
    merge({p: cluster.trace_path(p) for p in range(3)}, str(path), "token_ring", "TokenRing", params, [],
          {"model": "actors"})
    merged = load(str(path))
    assert "1" in merged.header["cut"] and merged.ended
    res = validate(merged)
    assert res.violation is None and res.failure is None
    assert res.incomplete is not None and "process 1 stopped without recording its last events" in res.incomplete
    r = cli("validate", str(path))
    assert r.code == 0 and "Valid up to where the records stop" in r.out and "not validated after that" in r.out
    no_processes_left()
