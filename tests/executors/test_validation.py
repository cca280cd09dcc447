"""Trace validation of real runs: accepted as recorded; every kind of tampering rejected at its event."""

from __future__ import annotations

import json

import pytest

from lockstep.executors.actors.run import run


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A real two-phase commit run (3 processes), as lines of its merged trace."""
    path = tmp_path_factory.mktemp("validate") / "run.jsonl"
    run("two_phase_commit", {"rm": 2}, 1.0, trace=str(path), seed=2)
    return path.read_text().splitlines()


def write(tmp_path, lines, name="t.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def events(lines):
    return [json.loads(x) for x in lines[1:]]


def first(lines, pred):
    return next(i for i, e in enumerate(events(lines), start=1) if pred(e))


def test_a_recorded_run_validates(cli, recorded, tmp_path):
    r = cli("validate", write(tmp_path, recorded))
    steps = sum(1 for e in events(recorded) if e["kind"] in ("start", "message", "timeout"))
    assert r.code == 0 and f"Valid: all {steps} steps are steps of the spec" in r.out


def test_an_edited_local_state_is_rejected(cli, recorded, tmp_path):
    lines = list(recorded)
    i = first(lines, lambda e: e["kind"] == "message" and e["msg"]["tag"] == "Prepare")
    e = json.loads(lines[i])
    e["state"]["rm_state"] = "committed"
    lines[i] = json.dumps(e)
    r = cli("validate", write(tmp_path, lines))
    assert r.code == 1 and "Traceback" not in r.err and "Invalid: the run is not a behaviour of the spec" in r.out
    assert f"line {i + 1}: event" in r.out and "the local state after the handler differs from the spec's" in r.out
    assert 'expected: {"tm_state":"init","tm_prepared":[],"rm_state":"prepared"' in r.out
    assert 'observed: {"tm_state":"init","tm_prepared":[],"rm_state":"committed"' in r.out


def test_an_invented_message_is_rejected(cli, recorded, tmp_path):
    lines = list(recorded)
    i = first(lines, lambda e: e["kind"] == "message")
    forged = {"kind": "message", "pid": 1, "clock": 2, "seq": 99, "time": 0.0, "src": 0, "msg": {"tag": "Commit"},
              "sends": [], "timers": [], "state": {"tm_state": "init", "tm_prepared": [], "rm_state": "committed",
                                                   "timers": {"timeout": True}}}
    lines.insert(i, json.dumps(forged))
    r = cli("validate", write(tmp_path, lines))
    assert r.code == 1 and "the message is not in flight: it was never sent, or was already delivered" in r.out


def test_a_duplicated_delivery_is_rejected(cli, recorded, tmp_path):
    lines = list(recorded)
    i = first(lines, lambda e: e["kind"] == "message")
    e = json.loads(lines[i])
    e["seq"] += 1000
    lines.insert(i + 1, json.dumps(e))
    r = cli("validate", write(tmp_path, lines))
    assert r.code == 1 and "not in flight" in r.out


def test_a_delivery_before_its_send_is_rejected(cli, recorded, tmp_path):
    """Lamport order: moved before the event that sent it, a delivery has nothing in flight to deliver."""
    lines = list(recorded)
    i = first(lines, lambda e: e["kind"] == "message" and e["pid"] == 0)
    moved = lines.pop(i)
    lines.insert(1, moved)
    r = cli("validate", write(tmp_path, lines))
    assert r.code == 1 and "an event of process 0 before it started" in r.out and "nothing is in flight" in r.out
    lines = list(recorded)
    i = first(lines, lambda e: e["kind"] == "message" and e["pid"] == 0 and e["msg"]["tag"] == "Prepared")
    moved = lines.pop(i)
    j = first(lines, lambda e: e["kind"] == "message" and e["pid"] == 1)  # before the RM has prepared
    lines.insert(j, moved)
    r = cli("validate", write(tmp_path, lines))
    assert r.code == 1 and "not in flight" in r.out


def test_edited_sends_and_timers_are_rejected(cli, recorded, tmp_path):
    lines = list(recorded)
    i = first(lines, lambda e: e["kind"] == "start" and e["pid"] == 0)
    e = json.loads(lines[i])
    e["sends"] = e["sends"][:1]
    lines[i] = json.dumps(e)
    r = cli("validate", write(tmp_path, lines))
    assert r.code == 1 and "the messages sent differ from the spec's" in r.out
    lines = list(recorded)
    e = json.loads(lines[i])
    e["timers"] = []
    lines[i] = json.dumps(e)
    r = cli("validate", write(tmp_path, lines))
    assert r.code == 1 and "the timers started differ from the spec's" in r.out


def test_sends_and_timers_of_the_wrong_json_type_are_rejected(cli, recorded, tmp_path):
    """Timers of mixed types cannot be sorted, a dict is not a list: each is a mismatch at its event, never exit 4."""
    i = first(recorded, lambda e: e["kind"] == "start" and e["pid"] == 0)
    for field, value, says in (("timers", [1, "timeout"], '"timers" must list timer names'),
                               ("timers", {"timeout": 1}, "'timers' is {\"timeout\": 1}, not a list"),
                               ("sends", "Prepare", "'sends' is \"Prepare\", not a list"),
                               ("observed", 7, "'observed' is 7, not a list")):
        lines = list(recorded)
        e = json.loads(lines[i])
        e[field] = value
        lines[i] = json.dumps(e)
        r = cli("validate", write(tmp_path, lines))
        assert r.code == 1 and f"line {i + 1}: event" in r.out and says in r.out, (field, value, r.out, r.err)
        assert "Traceback" not in r.err and "internal error" not in r.err


def test_a_message_of_the_wrong_type_is_rejected(cli, recorded, tmp_path):
    lines = list(recorded)
    i = first(lines, lambda e: e["kind"] == "message")
    e = json.loads(lines[i])
    e["msg"] = {"tag": "Prepare", "rm": 1}
    lines[i] = json.dumps(e)
    r = cli("validate", write(tmp_path, lines))
    assert r.code == 1 and "not a message of the spec: msg: Prepare has no field 'rm'" in r.out


def test_truncated_and_non_json_traces(cli, recorded, tmp_path):
    text = "\n".join(recorded)
    r = cli("validate", write(tmp_path, [text[: len(text) - 40]]))
    assert r.code == 2 and "not valid JSON" in r.err and "truncated" in r.err
    r = cli("validate", write(tmp_path, ["hello"], "x.jsonl"))
    assert r.code == 2 and "x.jsonl:1: not valid JSON" in r.err
    r = cli("validate", write(tmp_path, recorded[1:], "y.jsonl"))
    assert r.code == 2 and "not a Lockstep run trace" in r.err
    r = cli("validate", str(tmp_path / "missing.jsonl"))
    assert r.code == 2 and "cannot read trace" in r.err
    assert all("Traceback" not in x for x in (r.out, r.err))


def test_a_run_of_another_spec_or_parameters_is_rejected(cli, recorded, tmp_path):
    lines = list(recorded)
    header = json.loads(lines[0])
    header["params"]["rm"] = 3
    lines[0] = json.dumps(header)
    r = cli("validate", write(tmp_path, lines))
    assert r.code == 2 and "the run has 3 processes, but spec TwoPhaseCommit" in r.err and "has 4" in r.err
    header["spec"] = "two_phase"
    header["params"] = {}
    lines[0] = json.dumps(header)
    r = cli("validate", write(tmp_path, lines))
    assert r.code == 2 and "not an actor spec" in r.err


def test_a_trace_cut_short_is_detected(cli, recorded, tmp_path):
    """Without its end record the trace may have lost its last events: what is there is checked, and the verdict
    says the run is incomplete (exit 3), not valid."""
    assert json.loads(recorded[-1])["kind"] == "end"
    r = cli("validate", write(tmp_path, recorded[:-1]))
    assert r.code == 3 and "Incomplete:" in r.out and "no end record" in r.out
    r = cli("validate", write(tmp_path, recorded[: len(recorded) // 2]))
    assert r.code == 3 and "Incomplete:" in r.out


def test_a_run_of_an_unregistered_spec_is_validated_against_the_spec_named(cli, recorded, tmp_path):
    lines = list(recorded)
    header = json.loads(lines[0])
    header["spec"] = str(tmp_path / "elsewhere" / "tpc.py")  # as if run from a file on another machine
    lines[0] = json.dumps(header)
    path = write(tmp_path, lines)
    r = cli("validate", path)
    assert r.code == 2 and "not a registered spec name" in r.err and "--spec" in r.err
    r = cli("validate", path, "--spec", "two_phase_commit")
    assert r.code == 0 and "validating it against 'two_phase_commit', as asked" in r.out and "Valid: all" in r.out


def test_pictures_of_a_run_with_malformed_events_exit_2(cli, recorded, tmp_path):
    """draw and export read a run's processes, senders, destinations and vector clocks as they are: each of the
    wrong JSON type or out of range is one error line at its event, not an internal error."""
    i = first(recorded, lambda e: e["kind"] == "message")
    for field, value, says in (("sends", [[7, {"tag": "Commit"}]], '"sends" must list [destination process'),
                               ("sends", [1], '"sends" must list [destination process'),
                               ("src", None, "src null is not a process of the run (0..2)"),
                               ("pid", 9, "pid 9 is not a process of the run (0..2)"),
                               ("vc", [1, "x", 0], '"vc" must be a vector clock of 3 non-negative integers'),
                               ("time", "soon", '"time" must be a number of seconds')):
        lines = list(recorded)
        e = json.loads(lines[i])
        e[field] = value
        lines[i] = json.dumps(e)
        path = write(tmp_path, lines)
        for argv in (("draw", path, "--out", str(tmp_path / "c.svg")), ("export", path, "--shiviz", str(tmp_path / "s.log"))):
            r = cli(*argv)
            assert r.code == 2 and f"line {i + 1}: " in r.err and says in r.err, (field, value, argv[0], r.err)
