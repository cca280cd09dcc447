"""The text trace format: golden listings (per-element diffs, the spec's notation, actor processes,
lassos, --full), and colour only on a terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lockstep.checker.render.notation import notation_of
from lockstep.checker.render.text import trace_lines
from lockstep.checker.render.values import Node, change_text, diff, fmt, from_itf
from lockstep.checker.trace import Step, Trace

GOLDEN = Path(__file__).parent / "golden"


def golden(name: str, text: str) -> None:
    """Compare with golden/NAME (LOCKSTEP_UPDATE_GOLDEN=1 rewrites it)."""
    path = GOLDEN / name
    if os.environ.get("LOCKSTEP_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def listing(out: str) -> str:
    """The counterexample listing of `lockstep check` output: from its heading to the trace-written line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Counterexample"))
    end = next(i for i, line in enumerate(lines) if line.startswith("Trace written"))
    return "\n".join(lines[start:end]) + "\n"


def test_actor_counterexample(cli, tmp_path):
    """Processes with only their own fields at step 0 (the TM has no rm_state), then per-element changes."""
    r = cli("check", "two_phase_commit_eager", "--no-deadlock", "--quiet", "--out", str(tmp_path / "cex.json"))
    assert r.code == 1 and "\x1b[" not in r.out
    golden("two_phase_commit_eager.txt", listing(r.out))
    text = listing(r.out)
    assert 'process 0  tm_state = "init", tm_prepared = set()' in text and "process 0  rm_state" not in text
    assert 'rm_state[1] = "prepared"  (was "working")' in text
    assert "network: - Envelope(src=0, dst=1, msg=Prepare())" in text


def test_full_states(cli, eager_cex):
    r = cli("replay", str(eager_cex), "--full")
    assert r.code == 0
    golden("two_phase_commit_eager_full.txt", r.out.split("\n", 1)[1])


def test_typed_spec_sets_and_records(cli, tmp_path):
    r = cli("check", "peterson_buggy", "--quiet", "--out", str(tmp_path / "cex.json"))
    assert r.code == 1
    golden("peterson_buggy.txt", listing(r.out))


def test_lasso_names_its_closing_action(cli, tmp_path):
    path = tmp_path / "lasso.json"
    r = cli("check", "lock_weak", "--property", "no_starvation", "--quiet", "--out", str(path))
    assert r.code == 1
    golden("lock_weak_lasso.txt", listing(r.out))
    assert "->  release(p=1)  (back to state 1; the loop repeats for ever)" in r.out
    assert json.loads(path.read_text())["#meta"]["lockstep"]["loop_action"] == {"action": "release",
                                                                              "args": {"p": {"#bigint": "1"}}}
    r = cli("replay", str(path))
    assert "the loop back to state 1 closes (release(p=1))" in r.out


def n(j) -> Node:
    return from_itf(j)


def lines(path: str, old, new) -> str:
    return "\n".join(change_text(c).plain for c in diff(path, n(old), n(new)))


def big(i: int) -> dict:
    return {"#bigint": str(i)}


def test_value_notation():
    assert fmt(n({"#set": []})).plain == "set()"
    assert fmt(n({"#set": [big(10), big(2)]})).plain == "{2, 10}"
    assert fmt(n({"#map": [[big(0), "init"]]})).plain == '{0: "init"}'
    assert fmt(n({"tag": "Envelope", "value": {"src": big(0), "msg": {"tag": "Prepare", "value": {}}}})).plain \
        == "Envelope(src=0, msg=Prepare())"
    assert fmt(n({"tag": "None", "value": {"#tup": []}})).plain == "None"
    assert fmt(n({"tag": "Some", "value": big(3)})).plain == "3"
    assert fmt(n({"#tup": [big(1)]})).plain == "(1,)"
    assert fmt(n([True, "a"])).plain == '[True, "a"]'


def test_diffs_of_maps_sets_sequences_and_records():
    golden("diffs.txt", "\n".join([
        lines("m", {"#map": [[big(0), big(1)], [big(1), big(2)]]}, {"#map": [[big(0), big(1)], [big(1), big(5)]]}),
        lines("m", {"#map": [["a", big(1)]]}, {"#map": [["b", big(1)]]}),
        lines("s", {"#set": [big(1), big(2)]}, {"#set": [big(2), big(3)]}),
        lines("q", [big(1), big(2), big(3)], [big(2), big(3), big(4)]),
        lines("q", [big(1), big(2)], [big(1), big(7)]),
        lines("r", {"tag": "Vote", "value": {"view": big(1), "ok": False}},
              {"tag": "Vote", "value": {"view": big(2), "ok": False}}),
        lines("r", {"tag": "Vote", "value": {"v": big(1)}}, {"tag": "Ack", "value": {"v": big(1)}}),
        lines("nested", {"#map": [[big(0), {"#set": []}]]}, {"#map": [[big(0), {"#set": [big(4)]}]]}),
    ]) + "\n")


def test_plain_spec_listing():
    trace = Trace("x", "X", {}, ["state"], [Step(None, {"state": {"#tup": [big(0), big(0)]}}),
                                             Step({"action": "fill", "args": {}}, {"state": {"#tup": [big(5), big(0)]}})])
    text = "\n".join(t.plain for t in trace_lines(trace, notation_of(None)))
    assert text.splitlines()[-1].strip() == "state[0] = 5  (was 0)"


def test_colour_on_a_terminal_only(cli, eager_cex, monkeypatch):
    path = eager_cex
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = cli("replay", str(path)).out
    assert "\x1b[" in coloured
    monkeypatch.delenv("FORCE_COLOR")
    piped = subprocess.run([sys.executable, "-m", "lockstep", "replay", str(path)], capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")})
    assert piped.returncode == 0 and "\x1b[" not in piped.stdout
    assert 'rm_state[1] = "committed"  (was "prepared")' in piped.stdout

