"""Conformance of implementation logs: the schema, the causal merge, the search and its explanations,
on hand-written logs of `tests/models/relay_log.py` (a sender and a receiver over a channel of capacity 1)."""

from __future__ import annotations

import json

import pytest

from lockstep.checker.errors import TraceError
from lockstep.checker.validation.conformance.causal import CausalMerge, Logs
from lockstep.checker.validation.conformance.schema import SCHEMA, LogReader
from lockstep.trace import Log, validate
from tests.conftest import model_path

RELAY, MAPPING = model_path("relay_log.py"), model_path("relay_mapping.py")


def relay_logs(tmp_path, *, receive=(1, 2), after_second_send=False, confirm=True, clocks=True):
    """Node 0 sends 1, 2 (and confirms); node 1 receives `receive`. Node 1's wall clock runs 9 s behind node 0's.
    With `after_second_send`, node 1's first receive is logged as happening after node 0's second send."""
    a_path, b_path = tmp_path / "n0.jsonl", tmp_path / "n1.jsonl"
    with Log(a_path, node=0, clocks=clocks) as a, Log(b_path, node=1, clocks=clocks) as b:
        c1 = a.event("send", {"v": 1}, {"sent": 1}, time=11.0)
        if after_second_send:
            c2 = a.event("send", {"v": 2}, {"sent": 2}, time=12.0)
            b.event("receive", {"v": receive[0]}, {"got": 1}, after=c2, time=2.5)
            b.event("receive", {"v": receive[1]}, {"got": 2}, time=3.5)
        else:
            b.event("receive", {"v": receive[0]}, {"got": 1}, after=c1, time=2.5)
            c2 = a.event("send", {"v": 2}, {"sent": 2}, time=12.0)
            b.event("receive", {"v": receive[1]}, {"got": 2}, after=c2, time=3.5)
        if confirm:
            a.event("confirm", {}, {"confirmed": 2}, time=13.0)
    return [str(a_path), str(b_path)]


def test_the_schema_round_trips(tmp_path):
    path = tmp_path / "n.jsonl"
    with Log(path, node="n1", header={"implementation": "test"}) as log:
        log.event("Send", {"to": "n2", "m": {"tag": "Ping", "n": [1, 2]}}, {"x": 1, "s": [3, 4]}, sent=["n1-1"], time=0.5)
        log.event("Receive", {"from": "n2"}, after={"n2": 4, "n1": 0}, recv=["n2-4"])
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0] == {"schema": SCHEMA, "node": "n1", "implementation": "test"}
    assert lines[-1] == {"node": "n1", "end": True}
    reader = LogReader(str(path))
    events = list(reader)
    assert [e.json() for e in events] == lines[1:-1]
    assert reader.info.ended and reader.info.node == "n1" and reader.info.header["implementation"] == "test"
    assert events[1].clock == {"n1": 2, "n2": 4} and events[1].recv == ["n2-4"] and events[0].sent == ["n1-1"]


def test_the_merge_follows_happens_before_not_wall_clocks(tmp_path):
    paths = relay_logs(tmp_path)  # node 1's times (2.5, 3.5) are earlier than every send's (11, 12)
    order = [(e.node, e.seq) for e in CausalMerge(Logs.open(paths))]
    assert order == [("0", 1), ("1", 1), ("0", 2), ("1", 2), ("0", 3)]
    res = validate(paths, RELAY, mapping=MAPPING, max_internal=1)
    assert res.verdict == "valid" and res.events == 5


def test_only_orders_consistent_with_happens_before_are_searched(tmp_path):
    # node 1 logs its first receive as happening after node 0's second send: then both sends precede it, and the
    # channel of capacity 1 cannot hold them; by wall clock (2.5 s) the receive came first, which would match
    paths = relay_logs(tmp_path, after_second_send=True)
    res = validate(paths, RELAY, mapping=MAPPING, max_internal=1)
    assert res.verdict == "invalid" and res.searched_orders
    text = "\n".join(r for f in res.frontier for c in f.candidates for r in c.reasons)
    assert "send(v=2) is not enabled: the guard conjunct `s.chan.len() < 1`" in text
    # the same events without causes (no clocks): the order by wall clock is allowed, and it is a behaviour
    free = tmp_path / "free"
    free.mkdir()
    res = validate(relay_logs(free, after_second_send=True, clocks=False), RELAY, mapping=MAPPING, max_internal=1)
    assert res.verdict == "valid"


def test_an_unlogged_variable_and_internal_steps_validate(tmp_path):
    paths = relay_logs(tmp_path)  # `last` and `ticks` are never logged; confirm needs an unlogged wait step
    res = validate(paths, RELAY, mapping=MAPPING, max_internal=1)
    assert res.verdict == "valid" and res.exit_code == 0 and res.frontier_max > 1
    res = validate(paths, RELAY, max_internal=0)
    assert res.verdict == "invalid" and res.exit_code == 1
    (entry,) = res.frontier
    assert entry.taken == {"0": 2, "1": 2}
    (cand,) = entry.candidates
    assert cand.event.action == "confirm"
    (reason,) = cand.reasons
    assert reason.startswith("confirm is not enabled: the guard conjunct `s.ticks >= 1` (")
    assert reason.endswith("relay_log.py:43) is false, where ticks = 0")


def test_a_tampered_log_fails_naming_the_guard_conjunct(tmp_path, cli):
    paths = relay_logs(tmp_path, receive=(1, 3))  # node 1 claims it received 3 where 2 was sent
    r = cli("validate", *paths, "--spec", RELAY, "--map", MAPPING, "--max-internal", "1")
    assert r.code == 1, r.out
    assert "Invalid: no behaviour of the spec matches the logs" in r.out
    assert "the last event matched" in r.out and "n1.jsonl:3): receive {\"v\": 3}" in r.out
    assert "receive(v=3) is not enabled: the guard conjunct `s.chan.head() == v`" in r.out
    assert "where chan = (2,)" in r.out
    assert "state: sent = 2, chan = (2,), got = 1, last = 1" in r.out


def test_a_logged_variable_that_differs_is_shown_as_a_diff(tmp_path):
    a = tmp_path / "n0.jsonl"
    with Log(a, node=0) as log:
        log.event("send", {"v": 1}, {"sent": 2})  # the spec's send(v=1) makes sent 1
    res = validate([str(a)], RELAY)
    assert res.verdict == "invalid"
    (reason,) = res.frontier[0].candidates[0].reasons
    assert reason == "after send(v=1) the logged variables differ: sent = 1 in the spec, 2 in the log"


def test_json_output_and_usage_errors(tmp_path, cli):
    paths = relay_logs(tmp_path)
    r = cli("validate", *paths, "--spec", RELAY, "--map", MAPPING, "--max-internal", "1", "--format", "json")
    assert r.code == 0 and json.loads(r.out)["verdict"] == "valid"
    r = cli("validate", *paths)
    assert r.code == 2 and "--spec SPEC" in r.err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"node": 0, "seq": 2, "action": "send"}\n')
    r = cli("validate", str(bad), "--spec", RELAY)
    assert r.code == 2 and "bad.jsonl:1: event seq 2 of node 0, expected 1" in r.err
    bad.write_text('{"node": 0, "seq": 1, "action": "send", "vars": [1]}\n')
    r = cli("validate", str(bad), "--spec", RELAY)
    assert r.code == 2 and "\"vars\" must be an object" in r.err
    other = tmp_path / "other.jsonl"
    other.write_text('{"node": 0, "seq": 1, "action": "nosuch"}\n')
    r = cli("validate", str(other), "--spec", RELAY)
    assert r.code == 2 and "'nosuch', which is not an action of Relay" in r.err


def test_a_log_cut_short_is_incomplete(tmp_path):
    paths = relay_logs(tmp_path)
    lines = open(paths[0]).read().splitlines()
    with open(paths[0], "w") as f:  # node 0's log loses its second send and everything after
        f.write("\n".join(lines[:2]) + "\n")
    res = validate(paths, RELAY, mapping=MAPPING, max_internal=1)
    assert res.verdict == "incomplete" and res.exit_code == 3
    assert "which node 0's log does not have" in res.reason and "cut short" in res.reason


def test_vector_clock_errors_are_input_errors(tmp_path):
    path = tmp_path / "n.jsonl"
    path.write_text('{"node": 0, "seq": 1, "action": "send", "vc": {"0": 2}}\n')
    with pytest.raises(TraceError, match="entry for the event's own node must be its seq"):
        list(LogReader(str(path)))


def test_clocks_derived_from_message_ids(tmp_path):
    a, b = tmp_path / "n0.jsonl", tmp_path / "n1.jsonl"
    with Log(a, node=0, clocks=False) as x, Log(b, node=1, clocks=False) as y:
        # node 1 logs first, in wall-clock time too, yet its receive happens after node 0's send of m1
        y.event("receive", {"v": 1}, {"got": 1}, recv=["m1"], time=1.0)
        x.event("send", {"v": 1}, {"sent": 1}, sent=["m1"], time=5.0)
    order = [(e.node, e.seq, e.vc) for e in CausalMerge(Logs.open([str(a), str(b)]))]
    assert order == [("0", 1, (1, 0)), ("1", 1, (1, 1))]
    assert validate([str(a), str(b)], RELAY).verdict == "valid"
    (tmp_path / "n1.jsonl").write_text('{"node": 1, "seq": 1, "action": "receive", "args": {"v": 1}, "recv": ["m9"]}\n'
                                       '{"node": 1, "end": true}\n')
    res = validate([str(a), str(b)], RELAY)
    assert res.verdict == "invalid" and "receives message 'm9', which no event of the logs sends" in res.reason


def test_the_logging_handler_writes_records_with_an_action(tmp_path):
    import logging

    from lockstep.trace import TraceHandler

    path = tmp_path / "n0.jsonl"
    logger = logging.getLogger("relay-test")
    logger.setLevel(logging.INFO)
    with Log(path, node=0) as log:
        handler = TraceHandler(log)
        logger.addHandler(handler)
        try:
            logger.info("sending %d", 1, extra={"action": "send", "arguments": {"v": 1}, "vars": {"sent": 1}})
            logger.info("a record that is no event")
        finally:
            logger.removeHandler(handler)
    events = list(LogReader(str(path)))
    assert [(e.action, e.args, e.vars) for e in events] == [("send", {"v": 1}, {"sent": 1})]
    assert validate([str(path)], RELAY).verdict == "valid"


def test_a_frontier_beyond_the_bound_is_inconclusive(tmp_path):
    paths = relay_logs(tmp_path)
    res = validate(paths, RELAY, mapping=MAPPING, max_internal=1, max_frontier=1)
    assert res.verdict == "inconclusive" and res.exit_code == 3 and "--max-frontier 1" in res.reason


def test_logs_that_match_only_states_violating_an_invariant_are_a_violation(tmp_path, cli):
    a, b = tmp_path / "n0.jsonl", tmp_path / "n1.jsonl"
    with Log(a, node=0) as x, Log(b, node=1) as y:
        for v in (1, 2, 3):
            c = x.event("send", {"v": v}, {"sent": v})
            y.event("receive", {"v": v}, {"got": v}, after=c)
        x.event("confirm", {}, {"confirmed": 3})
    res = validate([str(a), str(b)], RELAY, mapping=MAPPING, max_internal=1)
    assert res.verdict == "violation" and res.violation == "at_most_two_confirmed" and res.exit_code == 1
    assert res.last_event.action == "confirm"
    r = cli("validate", str(a), str(b), "--spec", RELAY, "--map", MAPPING, "--max-internal", "1")
    assert r.code == 1 and "Violation: invariant at_most_two_confirmed is violated" in r.out


def test_a_run_trace_given_with_a_mapping_is_refused_with_the_fix(tmp_path, cli):
    run = tmp_path / "run.jsonl"
    run.write_text('{"kind": "run", "spec": "token_ring", "params": {}, "processes": 3}\n{"kind": "end", "events": 0}\n')
    r = cli("validate", str(run), "--spec", "token_ring", "--map", MAPPING)
    assert r.code == 2 and "a trace of `lockstep run`, not a log in the event schema: validate it alone" in r.err
    r = cli("validate", str(run), "--max-internal", "1")
    assert r.code == 2 and "--max-internal applies to implementation logs" in r.err


def test_bad_logs_and_mappings_are_one_clear_error(tmp_path, cli):
    paths = relay_logs(tmp_path)
    (tmp_path / "bin.jsonl").write_bytes(bytes(range(200, 256)) * 4)
    r = cli("validate", str(tmp_path / "bin.jsonl"), paths[1], "--spec", RELAY)
    assert r.code == 2 and "not a text file" in r.err
    (tmp_path / "boom.py").write_text("raise RuntimeError('boom')\n")
    r = cli("validate", *paths, "--spec", RELAY, "--map", str(tmp_path / "boom.py"))
    assert r.code == 2 and "the mapping fails to load: RuntimeError: boom" in r.err
    (tmp_path / "odd.py").write_text("def send(e):\n    return 42\n")
    r = cli("validate", *paths, "--spec", RELAY, "--map", str(tmp_path / "odd.py"))
    assert r.code == 2 and "function for 'send' returned 42" in r.err
    r = cli("validate", str(tmp_path), "--spec", RELAY, "--map", MAPPING)
    assert r.code == 2 and "not a regular file" in r.err
