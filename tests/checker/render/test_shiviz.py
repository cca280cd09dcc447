"""Vector clocks in actor run traces, and the ShiViz export of runs and counterexamples."""

from __future__ import annotations

import json
import re

from lockstep.checker.loader import load_model
from lockstep.checker.render.chart import chart_of_run
from lockstep.checker.render.shiviz import REGEX
from lockstep.checker.validation.runtrace import load
from lockstep.executors.actors.run import run as run_actors
from lockstep.executors.faults import parse_faults


def leq(a: list[int], b: list[int]) -> bool:
    return all(x <= y for x, y in zip(a, b))


def check_log(text: str) -> list[tuple[str, str, dict]]:
    """The (event, host, clock) entries of a ShiViz log, checked against ShiViz's rules: the regex and an empty
    delimiter line first; a host's own entry counts its events 1, 2, 3, ...; clocks never go back on a host."""
    lines = text.split("\n")
    assert lines[0] == REGEX and lines[1] == "" and lines[-1] == ""
    body = lines[2:-1]
    assert len(body) % 2 == 0
    entries, last = [], {}
    for event, clock_line in zip(body[::2], body[1::2]):
        m = re.fullmatch(r"(\S+) (\{.*\})", clock_line)
        assert m, clock_line
        host, clock = m.group(1), json.loads(m.group(2))
        assert clock[host] == last.get(host, {}).get(host, 0) + 1
        assert all(v >= last.get(host, {}).get(h, 0) for h, v in clock.items())
        last[host] = clock
        entries.append((event, host, clock))
    return entries


def test_run_events_carry_vector_clocks(cli, tmp_path):
    path = tmp_path / "run.jsonl"
    faults = parse_faults({"crashes": [{"pid": 2, "at": 0.15, "restart": 0.3}]}, 3)
    run_actors("two_phase_commit", {}, 0.7, faults, str(path), seed=3)
    run = load(str(path))
    steps = [e for e in run.events if e["kind"] in ("start", "message", "timeout", "restart")]
    assert steps and all(len(e["vc"]) == 3 for e in steps)
    for p in range(3):
        own = [e["vc"][p] for e in sorted((e for e in steps if e["pid"] == p), key=lambda e: e["seq"])]
        assert own == list(range(1, len(own) + 1))  # a restarted process goes on counting
    chart = chart_of_run(run, load_model("two_phase_commit"))
    delivered = [a for a in chart.arrows if a.kind == "delivered"]
    assert delivered
    for a in delivered:  # a delivery happens after its send
        sent, got = chart.rows[a.sent].vc, chart.rows[a.received].vc
        assert leq(sent, got) and sent[a.src] <= got[a.src] and got[a.dst] > sent[a.dst]
    out = tmp_path / "run.shiviz"
    r = cli("export", str(path), "--shiviz", str(out))
    assert r.code == 0, r.err
    entries = check_log(out.read_text())
    assert len(entries) == len(steps)
    assert any(e.startswith("Prepare() from 0; process 1: rm_state") for e, _, _ in entries)


def test_counterexample_export_computes_clocks(cli, tmp_path, eager_cex):
    out = tmp_path / "cex.shiviz"
    assert cli("export", str(eager_cex), "--shiviz", str(out)).code == 0
    entries = check_log(out.read_text())
    assert [(h, c) for _, h, c in entries][-2:] == [("process1", {"process0": 1, "process1": 2}),
                                                  ("process1", {"process0": 1, "process1": 3})]
    assert "violates follows_tm" in entries[-1][0]


def test_a_delivery_of_a_message_never_sent_takes_no_senders_clock(cli, tmp_path, eager_cex):
    """A counterexample edited so that its first delivery's message was never in flight (a trace that does not
    follow its spec) is still drawn and exported: that delivery's clock counts only its own process."""
    trace = json.loads(eager_cex.read_text())
    first = next(s["#meta"] for s in trace["states"] if s["#meta"].get("action") == "deliver")
    args = first["args"]
    msg = {"src": args["src"], "dst": args["dst"], "msg": args["msg"]}
    network = trace["states"][0]["network"]["#set"]
    assert msg in network
    network.remove(msg)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(trace))
    assert cli("draw", str(path), "--out", str(tmp_path / "chart.svg")).code in (0, 1)
    out = tmp_path / "edited.shiviz"
    r = cli("export", str(path), "--shiviz", str(out))
    assert r.code == 0, r.err
    entries = check_log(out.read_text())
    dst = int(args["dst"]["#bigint"])
    got = next(c for e, h, c in entries if h == f"process{dst}" and " from " in e)
    assert got == {f"process{dst}": 2}  # its start, then this delivery; nothing of the sender's


def test_runs_without_clocks_are_refused(cli, tmp_path):
    path = tmp_path / "run.jsonl"
    run_actors("two_phase_commit", {}, 0.3, None, str(path), seed=1)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for e in lines[1:]:
        e.pop("vc", None)
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    r = cli("export", str(path), "--shiviz", str(tmp_path / "x.log"))
    assert r.code == 2 and "no vector clock" in r.err


def test_rounds_runs_carry_vector_clocks(cli, tmp_path):
    """A node's clock after round r has seen each neighbour's events up to its round r - 1 (start is event 1)."""
    path = tmp_path / "run.jsonl"
    assert cli("run", "d2_coloring", "--tree", "path:5", "--trace", str(path)).code == 0
    rounds = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    rounds = [e for e in rounds if e["kind"] == "round"]
    assert rounds
    for e in rounds:
        q, r = e["pid"], e["round"]
        assert e["vc"][q] == r + 1
        for nbr in (q - 1, q + 1):
            if 0 <= nbr < 5:
                assert e["vc"][nbr] >= r
    out = tmp_path / "run.shiviz"
    assert cli("export", str(path), "--shiviz", str(out)).code == 0
    entries = check_log(out.read_text())
    assert entries[0][1] == "node0" and any("broadcasts Color(" in e for e, _, _ in entries)
