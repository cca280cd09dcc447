"""Autobahn on real processes: runs with each kind of fault validated against the spec's properties and step by
step against the spec (slot by slot, lane by lane), a seeded implementation bug caught at its step, and tampered,
forged, replayed, out-of-view and malformed messages rejected by the running replicas."""

from __future__ import annotations

import asyncio
import json
import os
import re

import pytest

from lockstep.checker.cli import main as cli
from lockstep.checker.trace import TraceError
from lockstep.executors.autobahn import mapping
from lockstep.executors.autobahn.command import validate_collected
from lockstep.executors.autobahn.conformance import MAPPING, validate_steps
from lockstep.executors.autobahn.crypto import Signer, canonical
from lockstep.executors.autobahn.messages import (
    MAX_BATCH,
    TX_SIZE,
    Malformed,
    bytes_frame,
    cut_id,
    decode_signed,
    frame_payload,
    signed_frame,
)
from lockstep.executors.autobahn.run import parse_plan, run, run_async
from lockstep.executors.autobahn.validate import RunInvalid, validate
from lockstep.executors.faults import FaultsError
from lockstep.executors.projection import read_log
from lockstep.executors.wire import CHALLENGE, MAX_FRAME, TAG, Credentials, connect, parse
from lockstep.trace import validate as validate_logs
from tests.executors.wire_helpers import closed_by_node, trace_lines, until

PLANS = {
    "no faults": {},
    "leader blip": {"partitions": [{"start": 0.6, "end": 1.6, "groups": [[2], [0, 1, 3]]}]},
    "partial partition": {"partitions": [{"start": 0.6, "end": 1.6, "groups": [[0, 1, 2], [1, 2, 3]]}]},
    "crashed replica": {"crashes": [{"pid": 1, "at": 1.0}]},
    "byzantine voter": {"byzantine": {"pid": 3, "behaviour": "vote_all"}},
    "equivocating leader": {"byzantine": {"pid": 2, "behaviour": "equivocate"}},
    "silent in timeouts": {"byzantine": {"pid": 3, "behaviour": "silent_timeouts"}},
}


SLOW = {"leader blip", "partial partition", "equivocating leader", "silent in timeouts"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in PLANS])
def test_a_run_with_each_fault_validates(name, tmp_path):
    plan = parse_plan(PLANS[name], 4)
    rep = run(3.0, str(tmp_path), plan, rate=2000)
    val = validate(rep.traces, 4, set(plan.byzantine))
    honest = [p for p in range(4) if p not in plan.byzantine and p not in rep.crashed]
    committed = [rep.replicas[p]["stats"]["committed"] for p in honest]
    assert min(committed) >= 2 and val.slots >= 2, (committed, rep.notes)
    assert rep.client["acked"] > 0
    assert not val.rejections.get("bad_signature") and not val.rejections.get("forged_certificate")
    assert not val.rejections.get("unauthenticated") and not val.rejections.get("wrong_sender")  # the run's channels
    assert rep.client["rejected"] == 0
    steps = validate_steps(rep.traces, 4, plan.byzantine)
    assert not steps.failed, steps.failed[:1]
    # the vote_all replica 3 votes for the cars of lane 2, which it is not a designated voter of (the only lane)
    want = ["lane 2: replica 3 (vote_all) votes for its cars without"] if name == "byzantine voter" else []
    assert len(steps.skipped) == len(want) and all(why.startswith(w) for why, w in zip(steps.skipped, want)), \
        steps.skipped
    assert steps.slots >= len({s for p in range(4) for s in committed_slots(rep.traces[p])}) and steps.windows >= 4
    assert steps.events == projected_events(rep.traces, plan.byzantine)  # every event of every instance matched
    if name == "leader blip":  # replica 2's car sent while it was cut off goes out again: its lane goes on after 1.6 s
        _, events, _ = read_log(rep.traces[2])
        assert any(e["time"] > 1.6 and o["op"] == "poa" for e in events for o in e["args"]["ops"]), rep.notes


def committed_slots(path: str) -> set[int]:
    """The slots a replica's log says it committed."""
    _, events, _ = read_log(path)
    return {o["s"] for e in events for o in e["args"]["ops"] if o["op"] == "commit"}


def projected_events(traces: dict[int, str], byzantine: dict[int, str]) -> int:
    """The events of the instances a run's logs project onto (`mapping.instances`), those not skipped."""
    logs = {p: read_log(path) for p, path in traces.items()}
    return sum(1 for inst in mapping.instances(logs, 4, byzantine) if inst.skipped is None
               for evs in inst.logs.values() for e in evs if "carry" not in e)


@pytest.mark.slow
def test_a_forging_replica_is_rejected_and_the_run_still_validates(tmp_path):
    """`"behaviour": "forge"`: a Byzantine member sends votes claiming another author, PoAs with made-up
    signatures and transactions frames; every honest replica rejects each kind and the run stays valid."""
    plan = parse_plan({"byzantine": {"pid": 1, "behaviour": "forge"}}, 4)
    rep = run(3.0, str(tmp_path), plan, rate=2000)
    val = validate(rep.traces, 4, {1})
    assert val.slots >= 2
    for p in (0, 2, 3):
        rj = rep.replicas[p]["rejections"]
        assert rj.get("bad_signature", 0) >= 1 and rj.get("forged_certificate", 0) >= 1, rj
        assert rj.get("wrong_sender", 0) >= 1, rj
    assert val.rejections["bad_signature"] >= 3 and val.rejections["wrong_sender"] >= 3


def test_a_broken_property_in_a_trace_is_reported(tmp_path):
    rep = run(2.0, str(tmp_path), rate=1000)
    path = rep.traces[0]
    lines = open(path, encoding="utf-8").read().splitlines()
    for i, line in enumerate(lines):
        ev = json.loads(line)
        commit = next((o for o in ev.get("args", {}).get("ops", ()) if o["op"] == "commit"), None)
        if commit is not None:
            commit["d"] = "0" * 64
            lines[i] = json.dumps(ev)
            break
    open(path, "w", encoding="utf-8").write("\n".join(lines) + "\n")
    with pytest.raises(RunInvalid, match="agreement|certificates_authentic"):
        validate(rep.traces, 4)
    # an op not of its declared shape (a slot that is not a number, a sender beyond the run) is refused at its line
    # by both checks, before anything reads it
    for field, value, why in (("s", "x", r"field 's' is not a slot \(from 1\): 'x'"), ("from", 9, "field 'from'")):
        k, ev = next((k, json.loads(x)) for k, x in enumerate(lines) if '"op":"got","m":"Prepare"' in x)
        next(o for o in ev["args"]["ops"] if o["op"] == "got")[field] = value
        bad = [*lines[:k], json.dumps(ev, separators=(",", ":")), *lines[k + 1:]]
        open(path, "w", encoding="utf-8").write("\n".join(bad) + "\n")
        with pytest.raises(RunInvalid, match=f"{re.escape(path)}:{k + 1}: a got op's {why}"):
            validate(rep.traces, 4)
        with pytest.raises(RunInvalid, match=f"{re.escape(path)}:{k + 1} \\(event {ev['seq']}\\): a got op's {why}"):
            validate_steps(rep.traces, 4, {})


def view1_proposals(path: str, n: int) -> list[tuple[int, int, list[int]]]:
    """A replica's view-1 proposals: (slot, lanes newer than in the last cut it committed, that cut's heights)."""
    _, events, _ = read_log(path)
    last, out = [0] * n, []
    for e in events:
        for o in e["args"]["ops"]:
            if o["op"] == "commit":
                last = [0 if t is None else t[0] for t in o["cut"]]
            elif o["op"] == "propose" and o["v"] == 1:
                out.append((o["s"], sum(t is not None and t[0] > h for t, h in zip(o["tips"], last)), list(last)))
    return out


def test_a_view1_leader_waits_for_coverage_and_a_proposal_short_of_it_is_reported(tmp_path):
    """Coverage 2f+1 (the paper's), one slot at a time (k = 1): each view-1 leader proposes only once 3 of the 4 lanes
    have certified tips newer than in the last cut it committed (the previous slot's); a log whose proposal has fewer
    (or whose logged tips are not its cut) is reported by the property checks at its line."""
    rep = run(2.0, str(tmp_path), rate=2000, k=1)
    assert rep.coverage == 3 and rep.k == 1
    props = {p: view1_proposals(path, 4) for p, path in rep.traces.items()}
    assert sum(len(v) for v in props.values()) >= 3, props
    assert all(newer >= 3 for v in props.values() for _, newer, _ in v), props
    validate(rep.traces, 4, k=1)
    p, s = next((p, s) for p, v in sorted(props.items()) for s, _, _ in v if s > 1)  # a proposal after a commit
    path = rep.traces[p]
    lines = open(path, encoding="utf-8").read().splitlines()
    k, ev = next((k, json.loads(x)) for k, x in enumerate(lines) if '"op":"propose"' in x and f'"s":{s},"v":1,' in x)
    # the base: slot s-1's committed cut, logged before the proposal or in the same event
    old = next(o["cut"] for x in lines[:k + 1] if '"op":"commit"' in x for o in json.loads(x)["args"]["ops"]
               if o["op"] == "commit" and o["s"] == s - 1)
    prop = next(o for o in ev["args"]["ops"] if o["op"] == "propose")
    first = next(a for a, t in enumerate(prop["tips"]) if t is not None and (old[a] is None or t[0] > old[a][0]))
    genuine = dict(prop)
    # every lane but one back at the committed tips, under the digest of that cut: one new lane, short of 3
    prop["tips"] = [t if a == first else None if old[a] is None else old[a][:2] for a, t in enumerate(prop["tips"])]
    prop["d"] = cut_id(prop["tips"])
    for tampered, why in ((prop, "coverage: replica .* proposed slot .* with 1 lane\\(s\\) newer than its base "
                                 "\\(slot .*'s cut\\), fewer than the coverage 3"),
                          ({**prop, "d": genuine["d"]}, "logs tips whose digest is not the cut")):
        ev["args"]["ops"] = [tampered if o["op"] == "propose" else o for o in ev["args"]["ops"]]
        bad = [*lines[:k], json.dumps(ev, separators=(",", ":")), *lines[k + 1:]]
        open(path, "w", encoding="utf-8").write("\n".join(bad) + "\n")
        with pytest.raises(RunInvalid, match=why):
            validate(rep.traces, 4, k=1)


def test_four_concurrent_slots_with_a_leader_blip_validate(tmp_path):
    """k = 4 (the artifact's, the default), replica 2 (the view-1 leader of every fourth slot) cut off for 0.5 s: leaders
    propose slot s before slot s-1 commits, slots commit out of order and execute in slot order, a slot of the blip
    changes view; the run passes the property checks at k = 4 and step by step, and the check at k = 1 reports the overlap."""
    plan = parse_plan({"partitions": [{"start": 0.4, "end": 0.9, "groups": [[2], [0, 1, 3]]}]}, 4)
    rep = run(1.5, str(tmp_path), plan, rate=2000)
    assert rep.k == 4
    val = validate(rep.traces, 4, k=4)
    assert val.slots >= 4 and rep.client["acked"] > 0
    early = out_of_order = 0
    changed = set()
    for path in rep.traces.values():
        _, events, _ = read_log(path)
        committed: list[int] = []
        for o in (o for e in events for o in e["args"]["ops"]):
            if o["op"] == "commit":
                out_of_order += o["s"] > 1 and o["s"] - 1 not in committed
                committed.append(o["s"])
            elif o["op"] == "propose" and o["v"] == 1:
                early += o["s"] > 1 and o["s"] - 1 not in committed
            elif o["op"] == "view":
                changed.add(o["s"])
        assert len(committed) >= 4, rep.notes
        execs = [o["s"] for e in events for o in e["args"]["ops"] if o["op"] == "exec"]
        assert execs == list(range(1, len(execs) + 1))  # in slot order (a replica back from the blip may lag)
    assert early >= 1 and out_of_order >= 1, (early, out_of_order)
    assert any((s + 1) % 4 == 2 for s in changed), changed  # a slot replica 2 leads went to view 2
    steps = validate_steps(rep.traces, 4, {})
    assert not steps.failed and not steps.skipped, (steps.failed[:1], steps.skipped)
    assert steps.events == projected_events(rep.traces, {}) and steps.slots >= val.slots
    with pytest.raises(RunInvalid, match=r"open_slots_bounded \(k = 1\): replica .* proposed slot \d+ before it "
                                         r"committed slot \d+"):
        validate(rep.traces, 4, k=1)
    for path in rep.traces.values():  # `lockstep validate` takes k from the logs' headers, and refuses one out of range
        lines = open(path, encoding="utf-8").read().splitlines()
        head = json.loads(lines[0])
        assert head["k"] == 4
        open(path, "w", encoding="utf-8").write("\n".join([json.dumps({**head, "k": 17}), *lines[1:]]) + "\n")
    with pytest.raises(TraceError, match=r"replica 0's log does not start with its header \(.*, k 1\.\.16\)"):
        validate_collected(rep.traces, "autobahn")
    # a proposal made before slot s-1 committed counts its coverage against the first Prepare of slot s-1 its leader
    # voted for: with its tips put back at that Prepare's, it is reported short of coverage
    tips = {o["d"]: o["tips"] for path in rep.traces.values() for e in read_log(path)[1] for o in e["args"]["ops"]
            if o["op"] == "propose"}
    path, k, ev, base = next(hit for path in rep.traces.values() if (hit := early_proposal(path)) is not None)
    prop = next(o for o in ev["args"]["ops"] if o["op"] == "propose")
    prop["tips"] = tips[base]
    prop["d"] = cut_id(prop["tips"])
    lines = open(path, encoding="utf-8").read().splitlines()
    open(path, "w", encoding="utf-8").write("\n".join([*lines[:k], json.dumps(ev), *lines[k + 1:]]) + "\n")
    with pytest.raises(RunInvalid, match=rf"coverage: replica .* proposed slot {prop['s']} with 0 lane\(s\) newer than "
                                         rf"its base \(slot {prop['s'] - 1}'s cut\), fewer than the coverage 3"):
        validate(rep.traces, 4, k=4)


def early_proposal(path: str) -> tuple[str, int, dict, str] | None:
    """A view-1 proposal of slot s a replica's log makes before it committed slot s-1: (the log, the event's line index,
    the event, the digest of the first Prepare of slot s-1 it voted for), or None."""
    committed, first = set(), {}
    for k, line in enumerate(open(path, encoding="utf-8").read().splitlines()):
        ev = json.loads(line)
        for o in (ev.get("args") or {}).get("ops", ()):
            if o["op"] == "commit":
                committed.add(o["s"])
            elif o["op"] == "vote" and o["kind"] == "prepare":
                first.setdefault(o["s"], o["d"])
            elif o["op"] == "propose" and o["v"] == 1 and o["s"] > 1 and o["s"] - 1 not in committed:
                return path, k, ev, first[o["s"] - 1]
    return None


@pytest.mark.parametrize("bad", ["k=0", "k=17"])
def test_a_bad_k_is_refused(bad, capsys, tmp_path):
    assert cli(["run", "autobahn", "--param", bad]) == 2
    err = capsys.readouterr().err
    assert f"--param {bad}: between 1 and 16 slots running at once (default 4, the artifact's" in err, err
    assert "Traceback" not in err
    with pytest.raises(ValueError, match=r"k \d+: between 1 and 16 concurrent slots"):
        run(1.0, str(tmp_path), k=int(bad[2:]))


def test_seven_replicas_run_and_validate(capsys):
    """n = 7 (f = 2): the replicas wait for coverage 5, and the run is valid against the properties and step by step."""
    assert cli(["run", "autobahn", "--param", "f=2", "--duration", "1.5", "--rate", "2000"]) == 0
    out = capsys.readouterr().out
    assert "Running Autobahn: 7 replicas (f=2, coverage 5, k = 4)" in out and "k = 4 and coverage 5" in out, out
    assert re.search(r"Step by step .*: the [\d,]+ events of [1-9]\d* slot\(s\) and [1-9]\d* lane window", out), out
    assert "instance: autobahn f=2 lanes=0" in out, out
    for bad in ("coverage=0", "coverage=8"):
        assert cli(["run", "autobahn", "--param", "f=2", "--param", bad]) == 2
        assert f"--param {bad}: between 1 and n = 7 lanes (default 2f+1 = 5)" in capsys.readouterr().err


def test_ten_replicas_run_and_are_checked_by_the_properties_where_the_spec_cannot_be_built(capsys):
    """n = 10 (f = 3): the run is valid against the properties; its spec instances exceed the language's limit on a
    set's elements (the network's envelopes), so step by step says it validated none, and why, and exits 0."""
    assert cli(["run", "autobahn", "--param", "f=3", "--duration", "1", "--rate", "300"]) == 0
    out = capsys.readouterr().out
    assert "Running Autobahn: 10 replicas (f=3, coverage 7, k = 4)" in out and "k = 4 and coverage 7" in out, out
    assert re.search(r"Step by step .*: none of the [1-9][\d,]* instances could be validated", out), out
    assert "not validated step by step: the instances of shape autobahn f=3 lanes=0" in out, out
    assert "is more than the limit of 1,048,576" in out and "fix:" not in out, out


def test_the_baseline_without_lanes_commits_leader_batches_and_validates(tmp_path, capsys):
    """The baseline the bench measures Autobahn's hangover against: no cars; each committed cut names one batch, the
    proposing leader's, with no PoA; the run is valid (properties and steps, no lane windows), and the checks of a run
    with lanes refuse its proposals (one lane each, short of coverage 2f+1) and its cuts (no PoAs)."""
    rep = run(2.0, str(tmp_path), rate=2000, lanes=False)
    assert not rep.lanes and rep.client["acked"] > 0
    commits, leaders = 0, set()
    for path in rep.traces.values():
        _, events, _ = read_log(path)
        ops = [o for e in events for o in e["args"]["ops"]]
        assert not [o for o in ops if o["op"] in ("car_sent", "poa")]
        for o in ops:
            if o["op"] == "commit":
                named = [(a, t) for a, t in enumerate(o["cut"]) if t is not None]
                assert len(named) <= 1 and all(t[0] == o["s"] and t[2] == [] for _, t in named), o
                assert all(a == (o["s"] + o["v"]) % 4 for a, _ in named), o  # the leader's own batch
                leaders.update(a for a, _ in named)
                commits += 1
    assert commits >= 8 and leaders == {0, 1, 2, 3}
    val = validate(rep.traces, 4, lanes=False)
    # nothing forged or unavailable; on a loaded machine a view change leaves resent Timeouts (replayed) and late
    # Prepares (out_of_view)
    assert val.slots >= 2 and set(val.rejections) <= {"replayed", "out_of_view"}, val.rejections
    steps = validate_steps(rep.traces, 4, {})
    assert not steps.failed and not steps.skipped and steps.windows == 0 and steps.slots >= val.slots
    with pytest.raises(RunInvalid, match=r"coverage: replica .* with [01] lane\(s\) newer .* fewer than the coverage 3"):
        validate(rep.traces, 4)
    with pytest.raises(RunInvalid, match="committed_cars_certified: lane . height . in slot . has a PoA of 0 votes"):
        validate(rep.traces, 4, coverage=0)
    assert validate_collected(rep.traces, "autobahn") == 0  # `lockstep validate`: the logs' headers name the mode
    assert "k = 4 (the baseline without lanes: batches, no coverage)" in capsys.readouterr().out
    with pytest.raises(ValueError, match="honest replicas only"):
        run(1.0, str(tmp_path / "byz"), parse_plan({"byzantine": {"pid": 3, "behaviour": "vote_all"}}, 4), lanes=False)


def test_tampered_forged_replayed_stale_and_malformed_messages_are_rejected(tmp_path):
    """A member of the run (it has the run's secret, not replica 2's or 3's signing keys) sends bad protocol
    messages on an authenticated channel: the signatures and certificates catch them. A stranger without
    the secret, a plain unauthenticated connection and a replayed channel frame are refused by the channel."""
    def commits_slot_1(x: object) -> bool:
        """Whether a record of the replica's log holds its commit of slot 1 (as an event, or as an op of one)."""
        if isinstance(x, dict):
            return (x.get("s") == 1 and "commit" in (x.get("ev"), x.get("op"))) or any(map(commits_slot_1, x.values()))
        return isinstance(x, list) and any(map(commits_slot_1, x))

    async def attack(cluster) -> None:
        path = cluster.trace_path(0)
        await until(lambda: any(commits_slot_1(e) for e in trace_lines(path)), "slot 1 committed")
        port = cluster.members[0].port
        as2 = Signer(2, cluster.private[2], cluster.public)
        as3 = Signer(3, cluster.private[3], cluster.public)
        ep = await connect(port, cluster.creds.as_member(3), 0)
        assert await asyncio.wait_for(ep.ready, 30) is ep  # the session is open (frames below are sealed in it)

        def send(signer: Signer, obj: dict, tamper: bool = False) -> bytes:
            data = canonical(obj)
            sig = signer.sign(data)
            if tamper:
                data = data.replace(b'"v":1', b'"v":2')
            body = signed_frame(data, sig)
            ep.send_body(body)
            return body

        empty = [None] * 4
        send(as2, {"t": "Prepare", "from": 2, "s": 1, "v": 1, "cut": empty, "tk": None}, tamper=True)
        send(as2, {"t": "Prepare", "from": 2, "s": 1, "v": 1, "cut": empty, "tk": None})  # slot 1 is committed
        fake = [[p, "ab" * 64] for p in range(3)]
        send(as3, {"t": "Commit", "from": 3, "s": 40, "v": 1, "cut": empty, "fast": 1, "qc": [*fake, [3, "cd" * 64]]})
        send(as3, {"t": "PoA", "from": 3, "a": 0, "h": 1, "c": "ee" * 32, "sigs": fake[:2]})
        vote = send(as3, {"t": "CarVote", "from": 3, "a": 0, "h": 90, "c": "ff" * 32})
        ep.send_body(vote)  # the same signed vote again, in a fresh channel frame
        ep.send_body(b'{"k":"S","m":{"t": nope')
        ep.send({"k": "Z"})
        ep.send({"k": "B", "txs": "not base64!"})
        ep.send({"k": "T", "txs": ""})  # only the client sends transactions
        sealed = ep.session.seal(vote)
        ep.transport.write(sealed + sealed)  # the second copy replays a channel frame: its tag is wrong there
        await until(ep.is_closing, "the replica closes the connection")

        stranger = await connect(port, Credentials.fresh(3), 0)  # claims to be replica 3, without the secret
        stranger.send_body(vote)
        reader, plain = await asyncio.open_connection("127.0.0.1", port)  # the old, unauthenticated framing
        plain.write(len(vote).to_bytes(4, "big") + vote)
        await plain.drain()
        await until(stranger.is_closing, "the replica closes the stranger's connection")
        assert len(await closed_by_node(reader)) <= CHALLENGE  # and the plain one, sent nothing but a challenge
        plain.close()

    rep = asyncio.run(run_async(3.0, str(tmp_path), rate=1000, during=attack, durable=True))
    rj = rep.replicas[0]["rejections"]
    assert rj.get("bad_signature", 0) >= 1 and rj.get("out_of_view", 0) >= 1 and rj.get("replayed", 0) >= 1
    assert rj.get("forged_certificate", 0) >= 2 and rj.get("malformed", 0) >= 3 and rj.get("wrong_sender", 0) >= 1
    assert rj.get("unauthenticated", 0) >= 3, rj  # the replayed channel frame, the stranger, the plain connection
    val = validate(rep.traces, 4)
    assert val.slots >= 2 and val.rejections["forged_certificate"] >= 2
    _, events, _ = read_log(rep.traces[0])
    ops = [o for ev in events for o in ev["args"]["ops"]]
    reasons = [o.get("reason") for o in ops]
    assert "bad_signature" in reasons and "wrong_sender" in reasons  # every rejection is in the trace
    why = " ".join(o["detail"] for o in ops if o.get("reason") == "unauthenticated")
    assert "without the run's secret" in why and "authentication tag is wrong" in why and "authenticated hello" in why
    assert not any(rep.replicas[p]["rejections"].get("unauthenticated") for p in (1, 2, 3))  # the run's own channels


def test_a_full_batch_fits_one_channel_frame_and_bad_payloads_are_malformed():
    full = bytes(range(256)) * (MAX_BATCH * TX_SIZE // 256)
    body = bytes_frame("B", "txs", full)
    assert len(body) + TAG <= MAX_FRAME
    assert frame_payload(parse(body), "txs", TX_SIZE, MAX_BATCH) == full
    assert len(bytes_frame("B", "txs", full + bytes(TX_SIZE))) + TAG > MAX_FRAME  # MAX_BATCH is the largest that fits
    for bad, why in [({"k": "B", "txs": "!!!!"}, "not base64"), ({"k": "B", "txs": "AAAA"}, "whole number"),
                     ({"k": "B"}, "a B frame is"), ({"k": "B", "txs": 5}, "not base64 of at most"),
                     ({"k": "B", "txs": "A" * (MAX_FRAME * 2)}, "not base64 of at most")]:
        with pytest.raises(Malformed, match=why):
            frame_payload(bad, "txs", TX_SIZE, MAX_BATCH)
    data = canonical({"t": "Fetch", "from": 1, "c": "ab" * 32, "n": 1})
    assert decode_signed(parse(signed_frame(data, "cd" * 64))) == (data, "cd" * 64, json.loads(data))
    with pytest.raises(Malformed, match="signature"):
        decode_signed({"k": "S", "m": {}, "sig": "xyz"})


def test_bad_fault_plans_are_refused_with_a_fix():
    with pytest.raises(FaultsError, match="byzantine is"):
        parse_plan({"byzantine": {"pid": 9, "behaviour": "vote_all"}}, 4)
    with pytest.raises(FaultsError, match="not supported"):
        parse_plan({"drop": 0.1}, 4)
    with pytest.raises(FaultsError, match="does not restart"):
        parse_plan({"crashes": [{"pid": 1, "at": 1.0, "restart": 2.0}]}, 4)


def test_a_bad_fault_file_is_a_usage_error(tmp_path, capsys):
    bad = tmp_path / "f.json"
    bad.write_text('{"byzantine": {"pid": 3, "behaviour": "lie"}}')
    assert cli(["run", "autobahn", "--faults", str(bad)]) == 2
    assert "fix:" in capsys.readouterr().err


def test_the_command_runs_and_validates(capsys, tmp_path):
    trace = tmp_path / "run.jsonl"
    assert cli(["run", "autobahn", "--duration", "2", "--rate", "2000", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "ed25519-signed" in out and "Valid:" in out
    # --trace FILE, as in every run: one file, every replica's events in its order, each with its pid
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert lines[0] == {"kind": "traces", "spec": "autobahn", "processes": 4, "notes": []}
    assert lines[-1] == {"kind": "end", "events": len(lines) - 2}
    assert {e["pid"] for e in lines[1:-1]} == {0, 1, 2, 3}
    assert all("action" in e or "schema" in e or e.get("end") for e in lines[1:-1])  # each replica's log in the schema
    assert [e["pid"] for e in lines[1:-1]] == sorted(e["pid"] for e in lines[1:-1])
    assert cli(["validate", str(trace)]) == 0  # validated again, as the run was
    out = capsys.readouterr().out
    assert "Valid:" in out and re.search(r"Step by step .*: the [\d,]+ events of \d+ slot\(s\) and \d+ lane window", out)
    assert cli(["run", "autobahn", "--param", "views=2"]) == 2
    capsys.readouterr()
    # tampered, the file's errors are named at its lines, not at the per-replica files the validation made of it
    genuine = trace.read_text().splitlines()
    for change in ("shape", "view"):
        lines = list(genuine)
        k = next(i for i, x in enumerate(lines) if '"pid":3,' in x and '"op":"got","m":"Prepare"' in x)
        e = json.loads(lines[k])
        got = next(o for o in e["args"]["ops"] if o["op"] == "got" and o["m"] == "Prepare")
        got["v"] = "x" if change == "shape" else got["v"] + 1  # a Prepare of a view no leader opened
        lines[k] = json.dumps(e)
        trace.write_text("\n".join(lines) + "\n")
        assert cli(["validate", str(trace)]) == 1
        out = capsys.readouterr().out
        assert "lockstep-" not in out and "replica-" not in out and "process-" not in out, out
        where = re.escape(f"{trace}:{k + 1}")
        if change == "shape":
            assert re.search(rf"Invalid: the run breaks the spec: {where}: a got op's field 'v' is not", out), out
        else:
            assert re.search(rf"next: event \d+ of node \d+ \({where}\): ops \{{\"at\": \"replica 3, event "
                             rf"{e['seq']}\"", out), out
            assert "the spec has no step deliver(src=" in out, out


RUSH = {"byzantine": {"pid": 1, "behaviour": "rush"}}  # sends each car at once, its parent's PoA made up


def test_a_replica_taking_a_car_without_its_parents_poa_is_caught_at_its_step(tmp_path):
    """The seeded bug `no_parent_poa` in replica 0, with a Byzantine author (replica 1) that sends its cars without
    waiting for their PoAs: replicas 2 and 3 refuse its second car (its parent's PoA is made up); replica 0 takes
    it, which no behaviour of the spec does, and the validation names that step (replica 0's receipt of the car)."""
    plan = parse_plan(RUSH, 4)
    rep = run(1.0, str(tmp_path), plan, rate=2000, bug="no_parent_poa")
    assert all(rep.replicas[p]["rejections"].get("forged_certificate", 0) >= 1 for p in (2, 3)), rep.replicas
    assert not rep.replicas[0]["rejections"].get("forged_certificate"), rep.replicas[0]
    validate(rep.traces, 4, {1})  # the property checks do not see it: no commit needs the uncertified car
    steps = validate_steps(rep.traces, 4, plan.byzantine)
    assert steps.exit_code == 1 and steps.failed and not steps.skipped
    assert all(inst.name.startswith("lane 1, cars ") for inst, _ in steps.failed)  # only the Byzantine author's lane
    inst, res = steps.failed[0]
    assert inst.name == "lane 1, cars 1-2" and inst.spec == "autobahn_byzantine" and res.verdict == "invalid"
    # replica 1 is the spec's replica 3, the author of its last lane, and replica 0 its replica 2; the second car is
    # the spec's tip 3; no other replica's next event is a step the spec cannot take
    why = [(c.event, r) for f in res.frontier for c in f.candidates for r in c.reasons]
    assert why and all(e.node == "2" and e.args["at"].startswith("replica 0, ") for e, _ in why), why
    assert all(e.args["ops"] == [{"op": "got", "m": "Car", "from": 3, "lane": 3, "tip": 3}] for e, _ in why)
    assert all(r.startswith("deliver(src=3, dst=2, msg=Car(lane=3, tip=3)) is not enabled: its message is not in "
                            "flight") for _, r in why), why


def test_the_seeded_bug_through_the_command(capsys):
    r = cli(["run", "autobahn", "--bug", "no_such_bug"])
    assert r == 2 and "--bug no_such_bug: not a seeded bug of the Autobahn replicas (its bugs: no_parent_poa" in \
        capsys.readouterr().err


@pytest.mark.slow
def test_the_seeded_bug_caught_by_lockstep_run_and_validate(capsys, tmp_path):
    faults, trace = tmp_path / "rush.json", tmp_path / "run.jsonl"
    faults.write_text(json.dumps(RUSH))
    assert cli(["run", "autobahn", "--faults", str(faults), "--bug", "no_parent_poa", "--duration", "1", "--rate",
                "2000", "--trace", str(trace)]) == 1
    out = capsys.readouterr().out
    assert "seeded bug no_parent_poa" in out and "are not behaviours of the spec; the first, lane 1, cars 1-2" in out
    assert cli(["validate", str(trace)]) == 1
    assert "msg=Car(lane=3, tip=3)) is not enabled: its message is not in flight" in capsys.readouterr().out


VIEW3 = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "autobahn_view3")


def test_a_replica_votes_in_the_view_its_own_timeout_opened():
    """Slot 1 of a recorded run that went through three views, projected as `mapping.py` does: replica 2 (the spec's
    ids) completes the TC of view 1 with its own Timeout, then votes for view 2's Prepare. The spec's slot timer once
    timed a replica out of the view its own Timeout opened in the same step, so this run was not a behaviour of it."""
    logs = [os.path.join(VIEW3, f"replica-{n}.jsonl") for n in range(4)]
    _, events, _ = read_log(logs[2])
    assert [o["op"] for o in events[1]["args"]["ops"]] == ["got", "timer"]  # the third Timeout of view 1: its own
    assert events[2]["args"]["ops"][0]["check"] == {"pvote[2][1][2]": 0}  # then its vote in view 2
    res = validate_logs(logs, "autobahn", mapping=MAPPING, f=1, lanes=0, slots=1, views=3, proposals=1)
    assert res.verdict == "valid" and res.events == 31, res.verdict
