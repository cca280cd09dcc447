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
    CHALLENGE,
    HELLO,
    IDS,
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
from tests.executors.wire_helpers import forged_opening, insider, raw, stranger, trace_lines, until

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
        await until(lambda: len(got) == 2, "the member's frames")
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
        await until(lambda: len(rejected) == 4, "the strangers' rejections")
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
        await until(lambda: relay.stats["rejected"] == 2 and len(relay.held) == 1, "the relay's verdicts")
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
        for body in (b'{"op": "hello"}', b'{"op": "hello", "port": "x"}', b"[" * 5000 + b"]" * 5000, b'{"op": "report"}'):
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
        cluster = ActorCluster("two_phase_commit", dict(prog.params), 3, str(tmp_path), durable=True)
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

            def handled() -> bool:  # process 1 has refused the four forgeries and dropped the flood's overflow
                kinds = [e["kind"] for e in trace_lines(str(tmp_path / "process-1.jsonl"))]
                return kinds.count("rejected") == 4 and kinds.count("overflow") == flood + 1 - MAX_DEFERRED
            await until(lambda: cluster.rejected == 2 and handled(), "the refusals")
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


async def _challenge_or_eof(reader: asyncio.StreamReader) -> bytes:
    """What a node sends a new connection first: its challenge, or nothing (b"") if it closes it at once."""
    return await asyncio.wait_for(reader.read(CHALLENGE), 60)


def test_connections_beyond_the_pending_cap_are_closed_at_once():
    """40 idle connections to a socket that lets 8 wait (and each for a minute): 8 are challenged, 32 closed
    at once; once those 8 go away, a member of the run authenticates."""
    async def scenario() -> None:
        rejected: list[str] = []
        lost: list[object] = []
        creds = Credentials(SECRET, 7, handshake=60.0, pending=8)
        server, port = await serve(creds, on_frame=lambda ep, body: None, on_rejected=rejected.append,
                                   on_lost=lost.append)
        conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(40)]
        first = [await _challenge_or_eof(r) for r, _ in conns]
        assert sum(len(b) == CHALLENGE for b in first) == 8 and first.count(b"") == 32
        assert len(rejected) == 32 and all("beyond the 8 waiting to authenticate" in r for r in rejected)
        for _, w in conns:
            w.close()
        await until(lambda: len(lost) == 40, "the node sees every connection go")
        ep = await insider(Credentials(SECRET, 2), 2, port, 7)
        ep.close()
        server.close()

    asyncio.run(scenario())


def test_a_connection_that_does_not_authenticate_in_time_is_dropped():
    """Idle connections and half-sent hellos are closed after the handshake timeout; a hello announcing more
    than a hello's bytes is refused at its length, before anything more is buffered."""
    async def scenario() -> None:
        rejected: list[str] = []
        creds = Credentials(SECRET, 7, handshake=0.3)
        server, port = await serve(creds, on_frame=lambda ep, body: None, on_rejected=rejected.append)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        idle = [await stranger(port) for _ in range(2)]
        half = [await stranger(port) for _ in range(3)]
        for _, w, _ in half:
            w.write(LENGTH.pack(HELLO) + IDS.pack(2, 7) + b"\x00" * 8)  # 16 of the 44 bytes of a hello
        big = await stranger(port)
        big[1].write(LENGTH.pack(MAX_FRAME) + b"x" * 4096)
        for r, _, _ in idle + half + [big]:
            assert await asyncio.wait_for(r.read(), 60) == b""  # closed by the node
        assert loop.time() - t0 >= 0.3
        assert sum("did not authenticate within 0.3 s" in r for r in rejected) == 5
        assert sum(f"announces {MAX_FRAME:,} bytes, more than the limit of {HELLO}" in r for r in rejected) == 1
        server.close()

    asyncio.run(scenario())


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_a_flood_of_unauthenticated_connections_leaves_a_node_bounded(tmp_path):
    """200 slow connections to a process of a real run, each announcing a frame of the largest size and sending
    half of it: the process refuses each at its length, its memory stays put, and the run goes on."""
    async def scenario() -> tuple[int, int, Cluster]:
        prog = actor_program("two_phase_commit", {"timeout_ms": 5000})
        cluster = ActorCluster("two_phase_commit", dict(prog.params), 3, str(tmp_path))
        try:
            await cluster.start()
            node = cluster.members[1]
            before = _rss_kib(node.process.pid)
            conns = await asyncio.gather(*(asyncio.open_connection("127.0.0.1", node.port) for _ in range(200)))
            junk = LENGTH.pack(MAX_FRAME) + b"x" * (MAX_FRAME // 2)
            for _, w in conns:
                w.write(junk)
            for r, w in conns:
                try:  # closed by the node (reset, as it leaves what was sent unread)
                    assert len(await asyncio.wait_for(r.read(), 60)) <= CHALLENGE
                except ConnectionError:
                    pass
                w.close()
            after = _rss_kib(node.process.pid)
            ep = await insider(cluster.creds, 2, node.port, 1)  # the run's own members still get in
            ep.close()
            await cluster.stop()
        finally:
            cluster.close()
        return before, after, cluster

    before, after, cluster = asyncio.run(scenario())
    assert after - before < 16 * 1024, f"the node grew by {after - before} KiB"
    assert all(m.bye is not None for m in cluster.members.values())
    # each of the 200 was refused (the count also takes any other connection refused while the flood lasts)
    assert cluster.members[1].bye["stats"]["rejected"] >= 200
