"""Population protocols on real processes: agents and a scheduler over TCP, and validation of their traces."""

from __future__ import annotations

import asyncio
import copy
import json
import multiprocessing
import os
import signal

import pytest

from lockstep.checker.loader import load_protocol
from lockstep.checker.replay import replay
from lockstep.checker.validation.population import configuration_trace, validate_population
from lockstep.checker.validation.runtrace import MergedRun, Mismatch, load
from lockstep.executors.faults import parse_faults
from lockstep.executors.population.run import run_population, run_population_async
from lockstep.executors.wire import LENGTH
from lockstep.specs.lang.population.agents import Rules, StateCodec, pairs
from tests.executors.wire_helpers import closed_by_node, insider, stranger, until

N, K, SEED = 4, 1500, 5


def no_processes_left() -> None:
    assert multiprocessing.active_children() == []


@pytest.fixture(scope="module")
def clock_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("population") / "clock.jsonl"
    rep = run_population("phase_clock", {"n": N}, K, seed=SEED, trace=str(path))
    return rep, load(str(path))


def interactions(merged: MergedRun) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for e in merged.events:
        if e["kind"] == "interact":
            out.setdefault(e["clock"], []).append(e)
    return out


def test_every_interaction_is_recorded_by_both_agents_of_the_scheduled_pair(clock_run):
    rep, merged = clock_run
    no_processes_left()
    assert rep.completed == K and rep.notes == [] and merged.header["complete"] is True
    assert sum(rep.stats[p]["interactions"] for p in range(N)) == 2 * K
    assert all(rep.stats[p]["rejected"] == 0 for p in range(N + 1))
    by_k = interactions(merged)
    assert sorted(by_k) == list(range(1, K + 1))
    for k, (i, r) in zip(range(1, K + 1), pairs(SEED, N)):
        assert sorted((e["pid"], e["role"], e["partner"]) for e in by_k[k]) == sorted(
            [(i, "initiator", r), (r, "responder", i)])


def test_the_run_is_the_sequential_random_pair_process(clock_run):
    """Applying delta to the same pairs one at a time, in one process, ends in the agents' final states."""
    _, merged = clock_run
    protocol = load_protocol("phase_clock", {"n": N})
    agents = {e["pid"]: e["state"] for e in merged.events if e["kind"] == "start"}
    for _, (i, r) in zip(range(K), pairs(SEED, N)):
        agents[i], agents[r] = protocol.delta(agents[i], agents[r])
    last: dict[int, int] = {}
    for e in merged.events:
        if e["kind"] == "interact":
            last[e["pid"]] = e["after"]
    assert last == agents


def test_validation_accepts_the_run_and_its_configurations_are_a_path_of_the_counting_spec(clock_run):
    _, merged = clock_run
    res = validate_population(merged, keep_path=True)
    protocol = res.protocol
    assert res.interactions == K and res.violation is None and res.incomplete is None
    assert res.first_held["synchronized"] is not None and res.first_held["synchronized"] < K
    assert sum(res.final) == N
    for (_, _, c), (_, label, c2) in zip(res.path, res.path[1:]):  # independently of the validator's step table
        assert (label, c2) in set(protocol.next(c))


def test_the_configuration_trace_replays_against_the_plain_spec(clock_run, tmp_path):
    _, merged = clock_run
    res = validate_population(merged, keep_path=True)
    path = tmp_path / "configs.json"
    configuration_trace(res, "phase_clock").save(str(path))
    from lockstep.checker.trace import Trace

    out = replay(Trace.load(str(path)))
    assert len(out.states) == len(res.path) and out.states[-1] == res.final


def tampered(merged: MergedRun, edit) -> MergedRun:
    events = copy.deepcopy(list(merged.events))
    edit(events)
    return MergedRun(dict(merged.header), events, list(merged.notes))


def record(events: list[dict], k: int, role: str) -> dict:
    return next(e for e in events if e["kind"] == "interact" and e["clock"] == k and e["role"] == role)


def test_an_edited_state_is_rejected(clock_run):
    _, merged = clock_run
    M = load_protocol("phase_clock", {"n": N}).M

    def edit(events):
        e = record(events, 40, "responder")
        e["after"] = (e["after"] + M // 2) % M

    with pytest.raises(Mismatch) as err:
        validate_population(tampered(merged, edit))
    assert "interaction 40" in err.value.render() or err.value.event["clock"] == 40
    assert "not a transition of PhaseClock" in err.value.reason


def test_an_interaction_edited_into_another_transition_breaks_the_agents_chain(clock_run):
    """Interaction 40 rewritten as a transition of the spec from another initiator state: the chain breaks."""
    _, merged = clock_run
    protocol = load_protocol("phase_clock", {"n": N})

    def edit(events):
        ini, res = record(events, 40, "initiator"), record(events, 40, "responder")
        x = (ini["before"] + 1) % protocol.M
        ini["before"] = res["partner_before"] = x
        ini["after"], res["after"] = protocol.delta(x, res["before"])

    with pytest.raises(Mismatch) as err:
        validate_population(tampered(merged, edit))
    assert "previous interaction left it in" in err.value.reason and err.value.event["clock"] == 40


def test_an_invented_interaction_is_rejected(clock_run):
    _, merged = clock_run
    i, r = next(p for k, p in zip(range(1, 101), pairs(SEED, N)) if k == 100)
    third = next(p for p in range(N) if p not in (i, r))

    def invent_in_the_middle(events):
        original = record(events, 100, "initiator")
        e = copy.deepcopy(original)
        e["pid"], e["partner"] = third, i
        events.insert(events.index(original) + 1, e)

    def invent_at_the_end(events):
        a, b = copy.deepcopy(record(events, K, "initiator")), copy.deepcopy(record(events, K, "responder"))
        a["clock"] = b["clock"] = K + 1
        events.extend([a, b])

    with pytest.raises(Mismatch, match=f"agent {third} records interaction 100, but the scheduler paired"):
        validate_population(tampered(merged, invent_in_the_middle))
    with pytest.raises(Mismatch, match=f"interaction {K + 1} was never scheduled"):
        validate_population(tampered(merged, invent_at_the_end))


def test_deleted_records_are_rejected(clock_run):
    _, merged = clock_run
    with pytest.raises(Mismatch, match="has no record of it"):
        validate_population(tampered(merged, lambda ev: ev.remove(record(ev, 77, "responder"))))

    def drop_the_last(events):
        events[:] = [e for e in events if e.get("clock") != K]

    with pytest.raises(Mismatch, match=f"the records stop at interaction {K - 1}: records are missing"):
        validate_population(tampered(merged, drop_the_last))


def test_agents_running_the_seeded_bug_are_caught(tmp_path):
    """Agents that apply the clock without resynchronisation: valid for the buggy spec, rejected by the real one."""
    path = tmp_path / "buggy.jsonl"
    run_population("phase_clock_buggy", {"n": N}, 400, seed=2, start="spread_out", trace=str(path))
    no_processes_left()
    merged = load(str(path))
    res = validate_population(merged)
    assert res.interactions == 400
    merged.header["spec"] = "phase_clock"
    with pytest.raises(Mismatch, match="not a transition of PhaseClock") as err:
        validate_population(merged)
    assert "its outcomes: " in err.value.reason  # the far pair, which PhaseClock resynchronises


def test_randomized_rules_draw_from_the_responders_generator(tmp_path):
    """Adaptive majority's inputs flip at random: draws are recorded, checked, and an edited draw is caught."""
    path = tmp_path / "majority.jsonl"
    rep = run_population("adaptive_majority", {"n": 3, "m": 2, "churn": 1}, 600, seed=4, trace=str(path))
    no_processes_left()
    assert rep.completed == 600
    merged = load(str(path))
    res = validate_population(merged)
    assert res.interactions == 600
    drawn = [e for e in merged.events if e["kind"] == "interact" and e["draw"] is not None]
    assert len(drawn) > 20
    protocol = res.protocol
    rules, codec = Rules(protocol), StateCodec(protocol)
    e = drawn[len(drawn) // 2]
    k = e["clock"]
    ini = next(x for x in merged.events if x["kind"] == "interact" and x["clock"] == k and x["role"] == "initiator")
    res_e = next(x for x in merged.events if x["kind"] == "interact" and x["clock"] == k and x["role"] == "responder")
    a, b = codec.decode(ini["before"]), codec.decode(res_e["before"])
    assert rules.randomized(a, b)

    def edit(events):
        for x in events:
            if x["kind"] == "interact" and x["clock"] == k:
                x["draw"] = (x["draw"] + 12345) % (1 << 53)

    with pytest.raises(Mismatch) as err:
        validate_population(tampered(merged, edit))
    assert f"interaction {k}" in err.value.reason


def test_malformed_frames_are_dropped_and_logged(tmp_path):
    path = tmp_path / "junk.jsonl"

    async def junk(cluster):
        ports = {p: m.port for p, m in cluster.members.items()}
        ep = await insider(cluster.creds, 0, ports[1], 1)  # agent 0's credentials, sending nonsense to agent 1
        for body in (b"not json", json.dumps([1, 2]).encode(), json.dumps({"k": 3, "i": 0, "r": 1}).encode(),
                     json.dumps({"k": 2, "src": 0, "state": 999}).encode(),
                     json.dumps({"k": 2, "src": 9, "state": 0}).encode(),
                     json.dumps({"k": 2, "src": 3, "state": 0}).encode(),
                     json.dumps({"k": 1, "src": 0, "state": 0, "draw": -1}).encode()):
            ep.send_body(body)
        r, w, _ = await stranger(ports[1])
        w.write(LENGTH.pack(1 << 30))  # announces an oversized frame: the connection is closed
        await w.drain()
        assert await closed_by_node(r) == b""
        w.close()

    rep = asyncio.run(run_population_async("phase_clock", {"n": N}, 800, seed=1, trace=str(path), on_started=junk))
    no_processes_left()
    assert rep.completed == 800 and rep.stats[1]["rejected"] == 8
    merged = load(str(path))
    reasons = [e["reason"] for e in merged.events if e["kind"] == "rejected"]
    assert len(reasons) == 8
    assert any("not valid JSON" in x for x in reasons) and any("other than the scheduler" in x for x in reasons)
    assert any("expected an integer in 0..15, got 999" in x for x in reasons)
    assert any("process 0 sent a state claiming to come from agent 3" in x for x in reasons)
    assert any("more than the limit" in x for x in reasons)
    assert validate_population(merged).interactions == 800


def test_a_dying_agent_is_reported_and_what_was_recorded_is_validated(tmp_path):
    path = tmp_path / "crash.jsonl"
    faults = parse_faults({"crashes": [{"pid": 2, "at": 0.5}]}, N)
    rep = run_population("phase_clock", {"n": N}, 1_000_000, seed=3, trace=str(path), faults=faults)
    no_processes_left()
    assert rep.completed < 1_000_000
    assert any("agent 2 killed" in n for n in rep.notes)
    merged = load(str(path))
    assert merged.header["complete"] is False and "2" in merged.header["cut"]
    res = validate_population(merged)
    assert res.incomplete is not None and "agent 2" in res.incomplete
    assert 0 < res.interactions <= res.recorded and res.violation is None


def test_an_agent_that_dies_unplanned_is_reported(tmp_path):
    """An agent killed from outside the runner: the run stops, says which agent died, and its prefix validates."""
    path = tmp_path / "died.jsonl"

    async def kill_agent_1_soon(cluster):
        trace = cluster.trace_path(1)  # written in blocks: once the first is out, the run is well under way

        async def later():
            await until(lambda: os.path.getsize(trace) > 0, "agent 1 has written part of its trace")
            victim = next(p for p in multiprocessing.active_children() if p.name == "lockstep-agent-1")
            os.kill(victim.pid, signal.SIGKILL)

        asyncio.get_running_loop().create_task(later())

    rep = asyncio.run(run_population_async("phase_clock", {"n": N}, 1_000_000, seed=8, trace=str(path),
                                           on_started=kill_agent_1_soon))
    no_processes_left()
    assert rep.completed < 1_000_000 and any("agent 1 died (exit code -9)" in n for n in rep.notes)
    res = validate_population(load(str(path)))
    assert res.incomplete is not None and "agent 1" in res.incomplete and res.violation is None


def test_cli_run_and_validate(cli, tmp_path):
    path = tmp_path / "run.jsonl"
    r = cli("run", "phase_clock", "-p", "n=3", "--interactions", "300", "--seed", "7", "--trace", str(path))
    assert r.code == 0, r.out + r.err
    assert "3 agent processes and a scheduler, 300 interactions" in r.out
    assert "Valid: all 300 interactions are transitions of PhaseClock" in r.out
    r = cli("validate", str(path))
    assert r.code == 0 and "Valid: all 300 interactions" in r.out and "synchronized:" in r.out
    lines = path.read_text().splitlines()
    events = [json.loads(x) for x in lines]
    e = next(x for x in events if x.get("kind") == "interact" and x["clock"] == 150)
    e["after"] = (e["after"] + 1) % 8
    path.write_text("\n".join(json.dumps(x) for x in events) + "\n")
    r = cli("validate", str(path))
    assert r.code == 1 and "Invalid: the run is not a behaviour of the protocol" in r.out


@pytest.mark.parametrize("args, message", [
    (["run", "phase_clock", "--duration", "2"], "--duration applies to actor specs"),
    (["run", "two_phase_commit", "--interactions", "5"], "--interactions applies to population specs"),
    (["run", "phase_clock", "--start", "nowhere"], "has no start 'nowhere'"),
    (["run", "phase_clock", "-p", "n=1"], "value 1 is below its minimum 2"),
])
def test_cli_bad_input_exit_2(cli, args, message):
    r = cli(*args)
    assert r.code == 2 and message in r.err and "Traceback" not in r.err
    no_processes_left()


def test_cli_bad_faults_and_interactions(cli, tmp_path):
    plan = tmp_path / "faults.json"
    plan.write_text(json.dumps({"drop": 0.1}))
    r = cli("run", "phase_clock", "--faults", str(plan))
    assert r.code == 2 and "a population run injects only crashes" in r.err
    with pytest.raises(SystemExit) as e:
        cli("run", "phase_clock", "--interactions", "0")
    assert e.value.code == 2


@pytest.mark.slow
def test_sixteen_agents_synchronize_and_the_run_validates(tmp_path):
    """The demonstration: 16 agent processes from the adversarial spread-out start, 20,000 interactions."""
    path = tmp_path / "clock16.jsonl"
    rep = run_population("phase_clock", {"n": 16}, 20_000, seed=11, start="spread_out", trace=str(path))
    no_processes_left()
    assert rep.completed == 20_000 and rep.notes == []
    res = validate_population(load(str(path)))
    assert res.interactions == 20_000 and res.incomplete is None
    assert res.first_held["synchronized"] is not None and res.protocol.holds("synchronized", res.final)
