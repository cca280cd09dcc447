"""Authenticated, bounded channels: forged, altered, replayed and oversized frames, on sessions and on real processes."""

from __future__ import annotations

import asyncio
import json
import multiprocessing

import pytest

from lockstep.checker.validation.actors import validate
from lockstep.checker.validation.runtrace import load, merge, read_jsonl
from lockstep.executors.actors.process import MAX_DEFERRED
from lockstep.executors.actors.run import ActorCluster, actor_program
from lockstep.executors.cluster import Cluster, Member
from lockstep.executors.relay import Relay
from lockstep.executors.wire import (
    LENGTH,
    MAX_FRAME,
    RELAY,
    RUNNER,
    Credentials,
    FrameError,
    FrameReader,
    Session,
    connect,
    dumps,
    parse,
    read_frame,
    serve,
)
from tests.executors.wire_helpers import forged_opening, insider, raw, stranger

SECRET = Credentials.fresh(0).secret


def session_pair() -> tuple[Session, Session]:
    challenge = b"c" * 16
    return Session(SECRET, challenge, 3, 5, True), Session(SECRET, challenge, 3, 5, False)


def test_a_session_accepts_each_frame_once_in_order():
    client, server = session_pair()
    frames = [client.seal(dumps({"n": i})) for i in range(3)]
    assert parse(server.open(frames[0][4:])) == {"n": 0}
    with pytest.raises(FrameError, match="replayed or out of order"):
        server.open(frames[0][4:])  # the same frame again
    with pytest.raises(FrameError, match="replayed or out of order"):
        server.open(frames[2][4:])  # one skipped
    client2, server2 = session_pair()
    frame = bytearray(client2.seal(b'{"n": 1}'))
    frame[-2] ^= 1  # one bit of the body altered
    with pytest.raises(FrameError, match="authentication tag is wrong"):
        server2.open(bytes(frame[4:]))
    other = Session(Credentials.fresh(0).secret, b"c" * 16, 3, 5, False)  # another run's secret
    with pytest.raises(FrameError, match="authentication tag is wrong"):
        other.open(session_pair()[0].seal(b"{}")[4:])
    reply = server.seal(b"{}")  # the other direction has its own key: a frame cannot be reflected
    with pytest.raises(FrameError):
        Session(SECRET, b"c" * 16, 3, 5, False).open(reply[4:])


def test_an_oversized_frame_is_refused_before_it_is_buffered():
    reader = FrameReader()
    assert reader.feed(LENGTH.pack((4 << 30) - 1) + b"x" * 1000) == []
    assert reader.broken is not None and "4,294,967,295 bytes, more than the limit" in reader.broken
    assert len(reader.buf) < 2000

    async def stream() -> None:
        r = asyncio.StreamReader()
        r.feed_data(LENGTH.pack(MAX_FRAME + 1))
        with pytest.raises(FrameError, match="more than the limit"):
            await read_frame(r)

    asyncio.run(stream())


def test_deeply_nested_json_is_a_malformed_frame():
    with pytest.raises(FrameError, match="nested more than"):
        parse(b"[" * 100_000)
    with pytest.raises(FrameError, match="nested more than"):
        parse(b'{"a": ' * 40 + b"1" + b"}" * 40)


def test_endpoints_authenticate_both_ways():
    async def scenario() -> None:
        got: list[tuple[int, bytes]] = []
        rejected: list[str] = []
        server, port = await serve(Credentials(SECRET, 7), on_frame=lambda ep, body: got.append((ep.peer, body)),
                                   on_rejected=rejected.append, accept=lambda peer: peer != 9)
        ep = await connect(port, Credentials(SECRET, 2), 7, on_frame=lambda _ep, _b: None)
        ep.send({"hello": 1})
        ep.send({"hello": 2})
        await asyncio.sleep(0.1)
        assert got == [(2, b'{"hello":1}'), (2, b'{"hello":2}')]
        strangers = [
            await connect(port, Credentials(Credentials.fresh(0).secret, 2), 7),  # another run's secret
            await connect(port, Credentials(SECRET, 2), 8),  # meant for member 8
            await connect(port, Credentials(SECRET, 9), 7),  # refused by `accept`
        ]
        for s in strangers:
            s.send({"evil": True})
        _, w, _ = await stranger(port)
        w.write(forged_opening(2, 7) + raw(b'{"evil": true}'))
        await asyncio.sleep(0.2)
        assert len(got) == 2
        assert len(rejected) == 4
        assert any("without the run's secret" in r for r in rejected)
        assert any("for process 8 reached process 7" in r for r in rejected)
        assert any("process 9 may not connect here" in r for r in rejected)
        ep.close()
        server.close()

    asyncio.run(scenario())


def test_the_relay_refuses_strangers_and_impostors():
    async def scenario() -> None:
        creds = Credentials.fresh(RUNNER)
        relay = Relay(None, controlled=True)
        await relay.start(creds.as_member(RELAY))
        _, w, _ = await stranger(relay.port)
        w.write(LENGTH.pack(1 << 31))
        ep = await insider(creds, 1, relay.port, RELAY)
        ep.send({"src": 2, "dst": 0, "clock": 1, "msg": {"tag": "Token"}})  # process 1 speaking for process 2
        ep.send({"src": 1, "dst": 0, "clock": 1, "msg": {"tag": "Token"}})
        await asyncio.sleep(0.2)
        assert relay.stats["rejected"] == 2 and len(relay.held) == 1 and relay.held[0][0] == 1
        assert any("claiming src 2" in r for r in relay.rejections)
        relay.close()

    asyncio.run(scenario())


def test_a_malformed_hello_is_a_note_not_a_traceback():
    class Fake:
        peer = 1

    async def scenario() -> None:
        cluster = Cluster("two_phase_commit", {}, 2, None)
        loop = asyncio.get_running_loop()
        cluster.members[1] = Member(1, None, hello=loop.create_future())
        for body in (b'{"op": "hello"}', b'{"op": "hello", "port": "x"}', b"[" * 5000, b'{"op": "report"}'):
            cluster._on_control(Fake(), body)  # type: ignore[arg-type]
        assert cluster.rejected == 4 and not cluster.members[1].hello.done()
        notes = " ".join(cluster.rejection_notes())
        assert "hello with port None" in notes and "expected hello" in notes and "nested more than" in notes

    asyncio.run(scenario())


def test_real_processes_reject_what_is_not_from_the_run(tmp_path):
    """A stranger on the machine forges a hello and data frames and floods ports with oversized lengths; a member
    replays a frame and floods a process with messages it cannot handle yet. Nothing forged acts; every refusal
    is counted and traced; the deferral queue stays bounded; the run still validates."""
    flood = MAX_DEFERRED + 500

    async def scenario() -> Cluster:
        prog = actor_program("two_phase_commit", {"timeout_ms": 5000})
        cluster = ActorCluster("two_phase_commit", dict(prog.params), 3, str(tmp_path))
        try:
            await cluster.start()
            port1 = cluster.members[1].port
            # a stranger: a forged hello as process 1 on the runner's control port, an oversized frame
            _, w, _ = await stranger(cluster.control_port)
            w.write(forged_opening(1, RUNNER) + raw(b'{"op": "hello", "port": 1}'))
            _, w2, _ = await stranger(cluster.control_port)
            w2.write(LENGTH.pack(4 << 30 - 1))
            # a stranger: a forged Abort to process 1 (the TM commits in this run), an oversized frame on its data port
            _, w3, _ = await stranger(port1)
            w3.write(forged_opening(0, 1) + raw(dumps({"src": 0, "dst": 1, "clock": 10**20, "msg": {"tag": "Abort"}})))
            _, w4, _ = await stranger(port1)
            w4.write(LENGTH.pack(1 << 31))
            # a member: a frame replayed on its own session, then the whole session replayed on a new connection
            ep = await insider(cluster.creds, 2, port1, 1)
            frame = ep.session.seal(dumps({"src": 2, "dst": 1, "clock": 1, "msg": {"tag": "Prepared"}}))
            ep.transport.write(frame + frame)
            _, w5, _ = await stranger(port1)
            w5.write(forged_opening(2, 1) + frame)
            # a member floods process 1 with messages its handler does not take (an RM requires nothing but
            # Prepare, Commit and Abort): deferred, up to the bound, then dropped and traced
            flooder = await insider(cluster.creds, 0, port1, 1)
            flooder.send_many([dumps({"src": 0, "dst": 1, "clock": 1, "msg": {"tag": "Prepared"}})] * flood)
            for writer in (w, w2, w3, w4, w5):
                await writer.drain()
            await asyncio.sleep(1.0)
            await cluster.stop()
        finally:
            cluster.close()
        return cluster

    cluster = asyncio.run(scenario())
    assert multiprocessing.active_children() == []
    assert cluster.rejected == 2 and all(m.bye is not None for m in cluster.members.values())
    notes = " ".join(cluster.rejection_notes())
    assert "without the run's secret" in notes and "more than the limit" in notes
    bye = cluster.members[1].bye
    assert bye["stats"]["overflow"] == flood + 1 - MAX_DEFERRED and bye["deferred"] == MAX_DEFERRED
    events, _ = read_jsonl(str(tmp_path / "process-1.jsonl"))
    reasons = [e["reason"] for e in events if e["kind"] == "rejected"]
    assert sum("without the run's secret" in r for r in reasons) == 2  # the forged Abort, the replayed session
    assert sum("more than the limit" in r for r in reasons) == 1
    assert sum("replayed or out of order" in r for r in reasons) == 1
    overflow = [e for e in events if e["kind"] == "overflow"]
    assert len(overflow) == flood + 1 - MAX_DEFERRED and overflow[0]["msg"] == {"tag": "Prepared"}
    assert not any(e["kind"] == "message" and e["msg"]["tag"] == "Abort" for e in events), "the forged Abort acted"
    assert max(e.get("clock", 0) for e in events) < 100, "a forged clock leaked into the run"
    assert events[-1]["kind"] == "end"
    out = tmp_path / "run.jsonl"
    merge({p: cluster.trace_path(p) for p in range(3)}, str(out), "two_phase_commit", "TwoPhaseCommit",
          dict(cluster.params))
    res = validate(load(str(out)))
    assert res.violation is None and res.incomplete is None and res.overflow == flood + 1 - MAX_DEFERRED
    assert json.loads(out.read_text().splitlines()[-1])["kind"] == "end"
