"""The P-SMR key-value service on processes: run -> linearizability check -> validation, with a replica crash;
a seeded C-G bug caught on the real processes; bad arguments refused."""

from __future__ import annotations

import json
import multiprocessing
import re

import pytest

from lockstep.checker.linearizability import check, load_model, read_history
from lockstep.checker.validation.psmr import RunInvalid, validate_run
from lockstep.executors.faults import parse_faults
from lockstep.executors.psmr.faults import check_plan
from lockstep.executors.psmr.layout import Layout, ServiceConfig
from lockstep.executors.psmr.run import merge_history, run


def records(path: str) -> list[dict]:
    """A process's log (in the event schema) as records: each event's arguments with `k` its action."""
    out = []
    for line in open(path):
        e = json.loads(line)
        if "action" in e:
            out.append({**e.get("args", {}), "k": e["action"]})
    return out


STEPS_CUT = re.compile(r"Step by step \(psmr for the workload of its window, .*\): Incomplete: \d+ events validated; event "
                       r"\d+ of node \d+ \(.*\) receives message '[\d.]+', which no event of the logs sends before it")


def _valid_or_crossing(r) -> bool:
    """Whether the run's window was validated step by step (exit 0), or stopped where a sequencer merged a forwarded
    command after ordering alone one invoked after its multicast, which the spec's one-step append cannot order
    (`executors/psmr/mapping.py`: exit 3, the spec's rules still checked on the whole run)."""
    assert "follow the spec's rules" in r.out, r.out + r.err
    if r.code == 3 and STEPS_CUT.search(r.out):
        return False
    assert r.code == 0, r.out + r.err
    return True


def test_round_trip_with_a_replica_crash(cli, tmp_path):
    hist, trace = str(tmp_path / "history.jsonl"), tmp_path / "run.jsonl"
    r = cli("run", "psmr", "--duration", "2", "--kill-replica", "1@0.8", "--history", hist, "--trace", str(trace))
    stepped = _valid_or_crossing(r)
    events = [json.loads(x) for x in trace.read_text().splitlines()]  # --trace FILE: every process's events
    assert events[0]["kind"] == "traces" and events[-1] == {"kind": "end", "events": len(events) - 2}
    assert all(isinstance(e["pid"], int) and ("action" in e or "schema" in e or e.get("end")) for e in events[1:-1])
    assert "replica 1 killed (SIGKILL, its 2 workers)" in r.out
    assert "follow the spec's rules" in r.out and "Linearizable: the clients' history" in r.out
    lines = [json.loads(x) for x in open(hist)]
    oks = [e for e in lines if e["type"] == "ok"]
    late = [e for e in oks if e["time"] > min(x["time"] for x in lines) + 1.2]
    assert late, "the surviving replica kept serving after the crash"
    r = cli("linearizable", hist, "--model", "psmr-kv")
    assert r.code == 0, r.out
    assert multiprocessing.active_children() == []
    # the trace of a run of the random workload, a replica killed: `lockstep validate` checks the spec's rules again,
    # and validates the run's window step by step against the spec built for its workload, as the run did
    r = cli("validate", str(trace))
    assert _valid_or_crossing(r) == stepped, r.out + r.err  # as the run's own validation said
    if stepped:
        assert re.search(r"Step by step \(psmr for the workload of its window, \d+ commands from 2 client\(s\) on 8 keys; "
                         r"replicas=2 workers=2 outstanding=2, through executors/psmr/mapping.py\): Valid: the \d+ events "
                         r"of 9 logs are a behaviour of the spec", r.out), r.out


WINDOW = re.compile(r"Step by step \(psmr for the workload of its window, (\d+) commands from 2 client\(s\) on 8 keys; "
                    r"replicas=2 workers=2 outstanding=2, through executors/psmr/mapping.py\): Valid: the (\d+) events of "
                    r"9 logs are a behaviour of the spec \(([\d.]+) s")


def test_a_run_of_the_random_workload_is_validated_step_by_step(cli, tmp_path):
    """A default run (two clients, eight keys, random commands) is validated step by step at the end of the run and
    again by `lockstep validate`, against the spec built for its workload over its window (each client's first
    commands); a reply value changed in the window is refused at its step, named at its line of the trace."""
    trace = tmp_path / "run.jsonl"
    for _ in range(3):  # a run whose window the spec's one-step append can order (`_valid_or_crossing`)
        trace.unlink(missing_ok=True)
        r = cli("run", "psmr", "--duration", "1", "--trace", str(trace))
        if _valid_or_crossing(r):
            break
    assert r.code == 0, r.out + r.err
    hit = WINDOW.search(r.out)
    assert hit is not None, r.out
    commands, events = int(hit.group(1)), int(hit.group(2))
    assert commands == 58  # the most an instance of 4 processes holds (its network's messages)
    # per command: its invocation, its append, a take at each replica (two for a putall), its first reply; the cut
    # leaves out the window's last commands where a log reached a later command before them
    assert 3 * commands <= events <= 9 * commands, events
    window = re.search(r"  window: the first 58 of the ([\d,]+) commands issued \(([\d, ]+) per client\), ([\d,]+) of "
                       r"the run's ([\d,]+) events", r.out)  # the first 58 invoked, by the clients' clocks
    assert window is not None and int(window.group(1).replace(",", "")) > 58, r.out
    per_client = [int(x) for x in window.group(2).split(", ")]
    assert sum(per_client * (2 if len(per_client) == 1 else 1)) == 58, r.out  # "29 per client", or each client's
    r = cli("validate", str(trace))
    assert r.code == 0 and f"Valid: the {events} events of 9 logs" in r.out, r.out + r.err
    lines = trace.read_text().splitlines()
    first = {json.loads(x)["pid"]: i for i, x in reversed(list(enumerate(lines))) if '"action":"exec"' in x}
    k = next(i for i, x in enumerate(lines) if '"action":"exec"' in x and '"replica":1' in x and i >= min(first.values()))
    e = json.loads(lines[k])
    e["args"]["store"] = {key: v + 1 for key, v in e["args"]["store"].items()}
    lines[k] = json.dumps(e)
    trace.write_text("\n".join(lines) + "\n")
    r = cli("validate", str(trace))
    assert r.code == 1, r.out + r.err
    step = r.out[r.out.index("Step by step"):]
    assert "Invalid: no behaviour of the spec matches the logs" in step and "the logged variables differ: store[3][" \
        in step, step
    assert re.search(rf"next: event \d+ of node {e['pid']} \({re.escape(str(trace))}:{k + 1}\): exec ", step), step
    # an invocation whose command is not one of the service's: an input error at its line, before any search
    j = next(i for i, x in enumerate(lines) if '"action":"invoke"' in x)
    e = json.loads(lines[j])
    e["args"]["cmd"] = ["put", "x", 3]
    lines[j] = json.dumps(e)
    trace.write_text("\n".join(lines) + "\n")
    r = cli("validate", str(trace))
    assert r.code == 2 and f"{trace}:{j + 1}: an invoke event gives its command id (c, an integer) and its cmd" in r.err, \
        r.out + r.err


def test_a_worker_without_the_barrier_is_caught_at_its_step_on_the_random_workload(cli, tmp_path):
    """`--bug no_barrier` on a default run: the step-by-step validation of its window names a take by one of replica
    0's workers, at its line of the trace, as no step of the spec: the take of a putall (the spec's worker waits at
    the barrier, or its leader's guard wants the other's signal), or, where the validation orders the workers'
    concurrent takes the other way, another take of a worker whose partner went past a putall without the barrier
    (the store it logs is not the spec's)."""
    trace = tmp_path / "run.jsonl"
    r = cli("run", "psmr", "--duration", "1", "--bug", "no_barrier", "--trace", str(trace))
    assert r.code == 1, r.out + r.err
    step = r.out[r.out.index("Step by step"):]
    assert "Invalid: no behaviour of the spec matches the logs" in step, step
    hit = re.search(rf"next: event \d+ of node (\d+) \({re.escape(str(trace))}:(\d+)\): exec ", step)
    assert hit is not None, step
    e = json.loads(trace.read_text().splitlines()[int(hit.group(2)) - 1])
    assert e["pid"] in (3, 4) and e["args"]["replica"] == 0 and e["action"] == "exec", e  # replica 0's workers
    events = [json.loads(x) for x in trace.read_text().splitlines()[1:]]
    putall = {x["args"]["c"] for x in events if x.get("action") == "invoke" and x["args"]["cmd"][0] == "putall"}
    taken = {x["args"]["c"] for x in events if x.get("pid") in (3, 4) and x.get("action") == "exec"}
    assert putall & taken, e  # replica 0's workers took putalls (without the barrier)
    assert "the logged variables differ: store[2][" in step or "p.signals[c].contains(o))` (specs/psmr/spec.py" in step


def test_a_fault_plan_is_applied_and_the_run_validates(cli, tmp_path):
    """`--faults`: every message to or from a replica is delayed, replica 1 is cut off from the service for the whole
    run and killed at 0.3 s; replica 0 serves; what was injected is counted; the run validates."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"delay_ms": [1, 3], "partitions": [{"start": 0, "end": 3600, "groups": [[0], [1]]}],
                                "crashes": [{"pid": 1, "at": 0.3}]}))
    r = cli("run", "psmr", "--faults", str(plan), "--duration", "1.5")
    assert r.code == 0, r.out + r.err
    hit = re.search(r"faults injected: (\d+) messages dropped, ([\d,]+) lost to partitions, ([\d,]+) delayed", r.out)
    assert hit is not None, r.out
    dropped, partitioned, delayed = (int(x.replace(",", "")) for x in hit.groups())
    assert dropped == 0 and partitioned > 0 and delayed > 0
    assert "replica 1 killed (SIGKILL, its 2 workers)" in r.out
    assert "follow the spec's rules" in r.out and "Linearizable: the clients' history" in r.out


def test_faults_fall_on_the_replicas_links_and_are_on_record(tmp_path):
    """A partition cutting replica 1 off: the sequencers record each delivery it loses; replica 1 delivers nothing,
    replica 0 executes; then every message of a replica dropped: nothing completes, nothing wrong is recorded."""
    service = ServiceConfig(workers=2, clients=2, outstanding=2, keys=4, dependent=0.3)
    lay = Layout(service)
    cut = check_plan(parse_faults({"partitions": [{"start": 0, "end": 3600, "groups": [[0], [1]]}]}, 2), "plan")
    (tmp_path / "cut").mkdir()
    rep = run(service, 1.0, str(tmp_path / "cut"), cut)
    events = {p: records(path) for p, path in rep.traces.items()}
    lost = [e for p in range(service.workers) for e in events[lay.sequencer(p)] if e["k"] == "fault"]
    assert lost and {e["what"] for e in lost} == {"partition"} and {e["t"] for e in lost} == {"dl"}
    assert {e["dst"] for e in lost} <= set(lay.replica_workers(1))
    assert rep.injected == {"dropped": 0, "partitioned": len(lost), "delayed": 0}
    assert not any(e["k"] in ("deliver", "exec") for p in lay.replica_workers(1) for e in events[p])
    assert sum(e["k"] == "exec" for p in lay.replica_workers(0) for e in events[p]) > 0 and rep.completed > 0
    validate_run(rep.traces)
    assert check(read_history(merge_history(rep, str(tmp_path / "h.jsonl"))), load_model("psmr-kv")).verdict == \
        "linearizable"
    silent = check_plan(parse_faults({"drop": 1.0}, 2), "plan")
    (tmp_path / "silent").mkdir()
    rep = run(service, 1.0, str(tmp_path / "silent"), silent)
    assert rep.completed == 0 and rep.injected["dropped"] > 0 and rep.injected["partitioned"] == 0
    validate_run(rep.traces)


def test_validation_catches_a_reordered_trace(tmp_path):
    rep = run(ServiceConfig(workers=2, clients=2, outstanding=2, keys=4, dependent=0.3, commands=40), 1.5,
              str(tmp_path))
    validate_run(rep.traces)  # the genuine trace is valid
    worker = rep.traces[3]  # replica 0, worker 0
    lines = open(worker).read().splitlines()
    execs = [i for i, ln in enumerate(lines) if '"action":"exec"' in ln]
    i, j = execs[0], execs[1]
    lines[i], lines[j] = lines[j], lines[i]
    open(worker, "w").write("\n".join(lines) + "\n")
    try:
        validate_run(rep.traces)
    except RunInvalid as e:
        assert "out of its delivery order" in str(e) or "replied" in str(e)
    else:
        raise AssertionError("a reordered trace was accepted")
    h = read_history(merge_history(rep, str(tmp_path / "h.jsonl")))
    assert check(h, load_model("psmr-kv")).verdict == "linearizable"


def test_first_key_cg_is_caught_on_processes(cli):
    r = cli("run", "psmr_first_key_cg", "--duration", "2", "--dependent", "0.3", "--keys", "4")
    assert r.code == 1, r.out + r.err
    assert "Invalid: the run breaks the spec" in r.out or "Not linearizable" in r.out


def test_bad_fault_plans_are_refused(cli, tmp_path):
    for plan, words in [({"duplicate": 0.1}, "'duplicate' is not supported by `lockstep run psmr`"),
                        ({"crashes": [{"pid": 1, "at": 0.3, "restart": 1.0}]}, "does not restart"),
                        ({"crashes": [{"pid": 2, "at": 0.3}]}, "crashes[0].pid is 2"),
                        ({"stragglers": [{"pid": 0, "delay_ms": 5}]}, "'stragglers' is not supported")]:
        path = tmp_path / "plan.json"
        path.write_text(json.dumps(plan))
        r = cli("run", "psmr", "--faults", str(path))
        assert r.code == 2 and words in r.err, (plan, r.err)


def test_bad_arguments(cli):
    assert cli("run", "psmr", "--kill-replica", "5@1").code == 2
    assert cli("run", "psmr", "--kill-replica", "x").code == 2
    assert cli("run", "psmr", "--dependent", "2").code == 2
    assert cli("run", "psmr", "--workers", "4", "--keys", "2").code == 2


def test_processes_reject_strangers_and_members_out_of_their_role(tmp_path):
    """A stranger's forged opening and an oversized frame; a client posing as a sequencer; a worker of another
    replica posing as a sibling worker: refused by a real worker, counted, traced; the run still validates."""
    import asyncio
    from multiprocessing import shared_memory

    from lockstep.executors.psmr.run import PsmrCluster
    from lockstep.executors.wire import LENGTH, dumps
    from tests.executors.wire_helpers import forged_opening, insider, raw, stranger, trace_lines, until

    service = ServiceConfig(workers=2, clients=1, outstanding=1, keys=4, dependent=0.3, commands=20)

    async def scenario() -> PsmrCluster:
        segs = [shared_memory.SharedMemory(create=True, size=8 * service.keys) for _ in range(service.replicas)]
        for s in segs:
            s.buf[:] = bytes(len(s.buf))
        cluster = PsmrCluster(service, str(tmp_path), [s.name for s in segs], durable=True)
        lay = cluster.layout
        target = lay.worker(0, 0)
        try:
            await cluster.start()
            port = cluster.members[target].port
            _, w, _ = await stranger(port)
            w.write(forged_opening(lay.sequencer(0), target)
                    + raw(dumps({"t": "dl", "g": 0, "seq": 0, "cmds": [[999, "put", 0, 7]]})))
            _, w2, _ = await stranger(port)
            w2.write(LENGTH.pack(1 << 30))
            client = await insider(cluster.creds, lay.client(0), port, target)
            client.send({"t": "dl", "g": 0, "seq": 0, "cmds": [[998, "put", 0, 7]]})  # a client as the sequencer
            other = await insider(cluster.creds, lay.worker(1, 1), port, target)
            other.send({"t": "go", "c": 5, "w": 1, "lc": 1})  # replica 1's worker as replica 0's
            sibling = await insider(cluster.creds, lay.worker(0, 1), port, target)
            sibling.send({"t": "sig", "c": 5, "w": 1, "lc": 10**30})  # a clock that would stall the order
            for writer in (w, w2):
                await writer.drain()
            trace = cluster.trace_path(target)  # durable: written through, event by event
            await until(lambda: sum(e.get("action") == "rejected" for e in trace_lines(trace)) == 5, "the rejections")
            await cluster.stop()
        finally:
            cluster.close()
            for s in segs:
                s.close()
                s.unlink()
        return cluster

    cluster = asyncio.run(scenario())
    assert multiprocessing.active_children() == []
    target = cluster.layout.worker(0, 0)
    assert cluster.members[target].bye["stats"]["rejected"] == 5
    events = records(cluster.trace_path(target))
    reasons = [e["why"] for e in events if e["k"] == "rejected"]
    assert any("without the run's secret" in r for r in reasons) and any("more than the limit" in r for r in reasons)
    assert any("only a sequencer sends it to a worker" in r for r in reasons)
    assert any("claiming to come from worker 1 of replica 0" in r for r in reasons), reasons
    assert any("malformed sig: c, w and lc must be integers, lc below 2**62" in r for r in reasons), reasons
    assert not any(e.get("c") in (998, 999) for e in events if e["k"] == "deliver"), "a forged delivery acted"
    validate_run({p: cluster.trace_path(p) for p in range(cluster.layout.size)})


def test_a_run_of_the_spec_workload_is_validated_step_by_step(cli, tmp_path):
    """`--spec-workload 4`: every event the mapping takes is a step of the spec, at the spec's bounds; the trace file
    validates again with `lockstep validate`, and a tampered store value is refused at its step."""
    trace = tmp_path / "run.jsonl"
    r = cli("run", "psmr", "--spec-workload", "4", "--duration", "30", "--trace", str(trace))
    assert r.code == 0, r.out + r.err
    assert "the spec's first 4 commands" in r.out and "the client had the replies of the spec's 4 commands" in r.out
    hit = re.search(r"Step by step \(psmr replicas=2 workers=2 commands=4 outstanding=2, through "
                    r"executors/psmr/mapping.py\): Valid: the (\d+) events of 8 logs are a behaviour of the spec", r.out)
    assert hit is not None, r.out
    # 4 invocations, 4 appends by the hub, 6 forwarded positions (two putall in both groups, two single-group
    # commands), 6 takes by each replica that got that far (at least one: the run ends at the last reply), 4 first
    # replies
    events = int(hit.group(1))
    assert 4 + 4 + 6 + 6 + 4 <= events <= 4 + 4 + 6 + 12 + 4
    r = cli("validate", str(trace))
    assert r.code == 0 and "Step by step" in r.out and f"Valid: the {events} events" in r.out, r.out + r.err
    lines = trace.read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if '"action":"exec"' in line and '"putall",null,2' not in line
             and '"c":0,' in line)
    lines[k] = re.sub(r'"store":\{"0":1', '"store":{"0":3', lines[k])
    trace.write_text("\n".join(lines) + "\n")
    r = cli("validate", str(trace))
    assert r.code == 1, r.out + r.err
    assert "the logged variables differ: store[" in r.out and "] = 1 in the spec, 3 in the log" in r.out, r.out
    # the step is named by its place in the user's file, not in the per-process files the validation made
    assert re.search(rf"next: event \d+ of node \d+ \({re.escape(str(trace))}:{k + 1}\): exec ", r.out), r.out
    assert "lockstep-" not in r.out and "process-" not in r.out, r.out


def test_errors_in_a_combined_trace_name_the_users_file_and_line(cli, tmp_path):
    """`lockstep validate FILE` splits FILE into one file per process: a broken rule of the spec, an event that is not
    one of the schema, an argument that is not of its type, a value the mapping cannot read and a malformed header are
    each named at their line of FILE, never at a temporary file's."""
    trace = tmp_path / "run.jsonl"
    assert cli("run", "psmr", "--spec-workload", "4", "--duration", "30", "--trace", str(trace)).code == 0
    genuine = trace.read_text().splitlines()

    def tampered(change: str) -> tuple[int, str]:
        """FILE with one line changed (`reply`: an execution's reply; `event`: its action removed; `clock`: its Lamport
        clock removed; `store`: its store a list; `header`: a header's service shape): the line's number and
        `lockstep validate`'s output."""
        lines = list(genuine)
        k = next(i for i, x in enumerate(lines) if (change == "header" and '"service"' in x)
                 or (change != "header" and '"action":"exec"' in x and '"replica":1' in x))
        e = json.loads(lines[k])
        if change == "reply":
            e["args"]["v"] += 7
        elif change == "event":
            del e["action"]
        elif change == "clock":
            del e["args"]["lc"]
        elif change == "store":
            e["args"]["store"] = [1]
        else:
            e["service"]["workers"] = "two"
        lines[k] = json.dumps(e)
        trace.write_text("\n".join(lines) + "\n")
        r = cli("validate", str(trace))
        out = r.out + r.err
        assert r.code in (1, 2) and "lockstep-" not in out and "process-" not in out, out
        return k + 1, out

    line, out = tampered("reply")
    assert re.search(rf"Invalid: the run breaks the spec: replica 1: command \d+ \(.*\) replied \d+; executed in the "
                     rf"replica's order on the spec's store it gives \d+ \({re.escape(str(trace))}:{line}\)", out), out
    line, out = tampered("event")
    assert f"Invalid: the run breaks the spec: {trace}:{line}: not an event of the schema (node, seq, action, args)" \
        in out, out
    line, out = tampered("clock")
    assert f"Invalid: the run breaks the spec: {trace}:{line}: an exec event needs integer args c, lc, v; lc is not" \
        in out, out
    line, out = tampered("store")
    assert f"{trace}:{line}: the mapping's variables() failed: AttributeError" in out, out
    line, out = tampered("header")
    assert f"{trace}:{line}: the header's service.workers must be an int, got 'two'" in out, out


def test_a_worker_without_the_barrier_is_caught_at_its_step(cli, tmp_path):
    """`--bug no_barrier`: replica 0's workers execute putall each on its own; the step-by-step validation names those
    steps (a worker's take of the command) at their lines of the run's --trace FILE: the store the second worker
    leaves, and the first worker's barrier guard, which no signal satisfies; replica 1, correct, is not blamed."""
    trace = tmp_path / "run.jsonl"
    r = cli("run", "psmr", "--spec-workload", "4", "--duration", "30", "--bug", "no_barrier", "--trace", str(trace))
    assert r.code == 1, r.out + r.err
    lines = trace.read_text().splitlines()
    takes = {json.loads(x)["pid"]: i + 1 for i, x in enumerate(lines)
             if '"action":"exec"' in x and '"replica":0' in x and '"c":0,' in x}
    assert sorted(takes) == [3, 4], takes
    for node, line in takes.items():
        assert re.search(rf"next: event \d+ of node {node} \({re.escape(str(trace))}:{line}\): exec ", r.out), r.out
    assert "seeded bug no_barrier" in r.out
    assert "Invalid: no behaviour of the spec matches the logs" in r.out
    assert re.search(r"next: event \d+ of node \d+ \(.*\): exec \{\"c\": 0, \"g\": 1, \"i\": 0", r.out), r.out
    # which of the two workers' takes comes first decides the key and values the diff names
    assert re.search(r"after deliver\(src=1, dst=2, msg=\{'tag': 'Deliver', 'c': 0, 'g': \d, 'i': 0\}\) the logged "
                     r"variables differ: store\[2\]\[\d\] = \d+ in the spec, \d+ in the log", r.out), r.out
    assert "p.signals[c].contains(o))` (specs/psmr/spec.py" in r.out  # the leader's take: the barrier's guard
    blamed = {int(n) for n in re.findall(r"next: event \d+ of node (\d+) ", r.out)}
    assert blamed and blamed <= {3, 4}, blamed  # replica 0's workers (processes 3 and 4); replica 1's follow the barrier


def test_spec_workload_and_bug_options_are_checked(cli):
    r = cli("run", "psmr", "--bug", "no_such_bug")
    assert r.code == 2 and "--bug no_such_bug: not a seeded bug of the P-SMR service (its bugs: no_barrier" in r.err
    assert cli("run", "psmr", "--spec-workload", "9").code == 2
    r = cli("run", "psmr", "--spec-workload", "4", "--clients", "3")
    assert r.code == 2 and "--clients does not apply with --spec-workload" in r.err
    r = cli("run", "psmr", "--spec-workload", "2", "--outstanding", "3")
    assert r.code == 2 and "--outstanding 3: at most the 2 commands" in r.err
    r = cli("run", "two_phase", "--bug", "no_barrier")
    assert r.code == 2 and "--bug applies to autobahn specs (and psmr)" in r.err, r.err


@pytest.mark.slow
def test_the_spec_workload_with_faults_a_crash_and_three_outstanding(cli):
    """Six commands, three at once, three replicas; delayed and dropped messages, replica 1 cut off from the start,
    replica 2 killed: what every process recorded is a behaviour of the spec."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        plan = f"{d}/plan.json"
        with open(plan, "w") as f:
            json.dump({"delay_ms": [1, 30], "drop": 0.1, "partitions": [{"start": 0, "end": 3600,
                                                                          "groups": [[0, 2], [1]]}]}, f)
        r = cli("run", "psmr", "--spec-workload", "6", "--outstanding", "3", "--replicas", "3", "--service-ms", "30",
                "--faults", plan, "--kill-replica", "2@0.1", "--duration", "1.5")
    assert r.code == 0, r.out + r.err
    assert "replica 2 killed" in r.out
    assert "psmr replicas=3 workers=2 commands=6 outstanding=3" in r.out and "are a behaviour of the spec" in r.out
