"""One Autobahn replica as an OS process: its lane of cars, consensus on cuts, execution of a key-value store.

The protocol is the spec's (`lockstep.specs.autobahn`) at the paper's sizes: n = 3f+1, PoA = f+1 car
votes, PrepareQC / ConfirmQC / TC = 2f+1, fast commit = n Prepare votes, leader(s, v) = (s + v) mod n,
the winning-proposal rule with the f+1 Prepare override, and k concurrent slots (`k`, default 4, the artifact's):
slot s opens once slot s-k has committed, and a view-1 Prepare of slot s > k carries the Commit of slot s-k as its
ticket; each open slot has its own views, timer and view changes; slots commit in any order and execute in slot
order. Every protocol message is signed with the
sender's ed25519 key and verified on receipt; certificates carry their signers' signatures and are
verified signer by signer. The signatures are the protocol's own authentication; underneath, every
connection is an authenticated channel of the run (`lockstep.executors.wire`): a process without the
run's secret cannot connect, and a frame that fails its channel tag closes the connection. Rejected
input (unauthenticated connection or frame, a frame kind its sender may not send, bad signature,
malformed, replayed, out of view, forged certificate, wrong leader) is counted and written to the
trace, never acted on.

Source: Giridharan et al., "Autobahn: Seamless high speed BFT", SOSP 2024 (arXiv 2401.10369), as in
the spec. Where this runtime deviates from the paper (and from the spec's bounded model):

- slot s starts (its timer runs, its view-1 leader may propose) once it is open and this replica has voted for a
  Prepare of slot s-1 or committed slot s-1 (the spec's: voted for one), and its view-1 leader counts coverage
  against slot s-1's committed cut, else the first Prepare of slot s-1 it voted for (the spec's ticket of s-1);
  messages of a slot that is not open yet wait until it is; a Commit is taken for any slot;
- the 2f+1 designated voters of a car (the author and the replicas that do not follow it within f
  places in ring order: the artifact's `check_cast_vote`, as the spec) vote for it, once per (author,
  height), and only once they hold its parent, received from its author (a car waits for it; the
  artifact suspends it); a car fetched from another replica is kept for execution, never voted for;
  the author stops at the first f+1 votes and broadcasts the PoA at once, and the next car carries it; until
  then it sends the car again, unchanged, each timer period (a car lost in a partition is not lost for good);
- coverage: a view-1 leader proposes once `coverage` lanes (default 2f+1, the paper's and the artifact's) have
  certified tips newer than in that base cut; until then the slot waits, and its timer's view change lets the next
  leader propose what it holds;
- batches are not signed but content-addressed (their channel is authenticated) (a batch is used only when a signed car names its
  digest); a replica keeps a bounded window of them and fetches a missing car and its batch from the
  car's author and PoA signers, asking at once for every lane's missing tips of the committed cuts it has not
  executed;
- a replica joins a view change on f+1 Timeouts, re-sends its Timeout each timer period until a TC or
  a Commit arrives, and answers a Timeout of a slot it has committed with its Commits of that slot and the
  next ones (up to 64, so that a replica left behind by a partition catches up at once); timers grow
  1.5x per view;
- Byzantine replicas (the fault plan's `byzantine`) run this module's versions of the spec's
  Byzantine variants: `equivocate` (two Prepares per view, to two halves), `vote_all` (votes for
  everything, designated or not, hides its votes in Timeouts), `silent_timeouts`, `rush` (sends each
  car at once, with made-up signatures as its parent's PoA, and ignores the votes for its cars); they
  hold only their own keys.
  `forge` (no counterpart in the spec, whose Byzantine replicas send only what honest verifiers
  accept) follows the protocol and also sends what the honest replicas must reject: a vote that
  claims another replica as its author, a PoA with made-up signatures, a transactions frame.

The baseline the paper measures Autobahn's hangover against (`lanes=False`, for `bench/autobahn_run.py`): the same
consensus with no lanes and no cars, a traditional leader-batching BFT. The leader of a slot (view 1, or a later view
whose TC has no winner) proposes a batch of its own pending transactions, at most `max_batch`, which it sends every
replica just ahead of its Prepare; the cut names it (lane = the leader, height = the slot, no PoA: the consensus's
quorums certify it); a replica votes only for a batch it holds, fetches one it lacks to execute it, and a leader whose
batch lost its slot puts the transactions back at the front of its pending ones. With no lanes there is no
coverage; Byzantine behaviours are not run in it.

The replica's log is in Lockstep's event schema (`lockstep.trace`): one event per frame it acts on or
timer that fires, listing what it did (`ops`: the messages it took, the votes it signed, its proposals,
timeouts, commits with their certificates' signers, the digest of its execution log after each slot)
and the ids of the messages each op received and sent (a signed message's id is its digest), which is
the run's causal order. It is written before the frames the event sends leave. The property checks
(`validate.py`) and the step-by-step validation against the spec (`mapping.py`) read it.

A seeded implementation bug (`bug`, `lockstep run autobahn --bug NAME`, run by the first replica that is not
Byzantine): `no_parent_poa`, the replica takes a car without checking its parent's PoA.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from lockstep.checker.safeio import create_new
from lockstep.trace import Log

from ..wire import RUNNER, Credentials, Endpoint, FrameError, connect, credentials, member_name, parse, serve
from .crypto import Signer, canonical
from .messages import (
    ACK_SIZE,
    MAX_BATCH,
    TX_HEAD,
    TX_SIZE,
    Malformed,
    Schema,
    bytes_frame,
    car_id,
    cut_id,
    decode_signed,
    frame_payload,
    message_id,
    signed_frame,
    split_txs,
    statement,
)

BEHAVIOURS = ("", "equivocate", "vote_all", "silent_timeouts", "forge", "rush")
BUGS = {"no_parent_poa": "a replica takes a car without checking its parent's PoA"}
FORGE_EVERY = 25  # a `forge` replica sends its forgeries with every 25th message it broadcasts
MAX_PENDING = 200_000  # transactions a replica buffers before it sheds client load
MAX_DEFERRED = 1_000
FETCH_AGAIN = 0.2  # seconds before a missing car is asked for again
CATCH_UP = 64  # Commits of consecutive slots sent at once to a replica whose Timeout shows it behind
K = 4  # slots that run at once by default (the artifact's k)
MAX_K = 16


@dataclass
class ReplicaConfig:
    """What the runner tells a replica process (plain data)."""

    pid: int
    n: int
    control_port: int
    trace: str | None
    private: str
    public: list[str]
    byzantine: str = ""
    partitions: list[list[Any]] = field(default_factory=list)  # [start, end, [[pids], ...]]
    car_ms: float = 20.0
    timeout_ms: float = 300.0
    fast_ms: float = 4.0
    max_batch: int = MAX_BATCH  # transactions per car (a batch frame stays under the 1 MiB frame limit)
    durable: bool = False  # flush the trace after each event (crashes are planned: a killed replica's votes stay recorded)
    bug: str = ""  # a seeded implementation bug (`BUGS`), or none
    coverage: int | None = None  # lanes with new certified tips a view-1 leader waits for; None: 2f+1 (the paper)
    lanes: bool = True  # False: the baseline without lanes, each leader proposing a batch of its own transactions
    k: int = K  # slots that run at once: slot s opens once slot s-k has committed (the artifact's k = 4)


def main(cfg: dict[str, Any]) -> None:
    """Entry point of a spawned replica."""
    try:
        asyncio.run(Replica(ReplicaConfig(**cfg)).run())
    except (KeyboardInterrupt, ConnectionError):
        pass


class Replica:
    """The state and event loop of one replica."""

    def __init__(self, cfg: ReplicaConfig):
        self.cfg = cfg
        self.me, self.n = cfg.pid, cfg.n
        self.f = (self.n - 1) // 3
        self.q, self.poa_q = 2 * self.f + 1, self.f + 1
        self.coverage = self.q if cfg.coverage is None else cfg.coverage
        self.signer = Signer(self.me, cfg.private, cfg.public)
        self.schema = Schema(self.n)
        self.peers: dict[int, Endpoint] = {}  # the other replicas
        self.client: Endpoint | None = None  # acks go here
        self.t0 = time.monotonic()
        self.stats: dict[str, int] = {"received": 0, "sent": 0, "rejected": 0, "committed": 0, "executed_txs": 0,
                                      "fetches": 0, "shed": 0}
        self.rejections: dict[str, int] = {}
        self.forged = 0  # messages broadcast, for the `forge` behaviour
        self.seen: set[bytes] = set()
        self.seen_order: deque[bytes] = deque()
        # lanes
        self.batches: dict[str, bytes] = {}
        self.batch_order: deque[str] = deque()
        self.cars: dict[str, tuple[int, int, str, str, bytes]] = {}  # car digest -> (a, h, batch, parent, frame)
        self.certified: dict[str, list[list[Any]]] = {}  # car digest -> PoA signatures
        self.tips: list[tuple[int, str] | None] = [None] * self.n
        self.voted_car: dict[tuple[int, int], str] = {}
        self.waiting_batch: dict[str, list[str]] = {}  # batch digest -> cars waiting for it
        self.from_author: dict[str, str] = {}  # cars received from their author -> the id of that message
        self.taken: set[str] = set()  # cars taken (held, and voted for if designated), their parents taken first
        self.waiting_parent: dict[str, list[str]] = {}  # car digest -> cars waiting for it to be taken
        self.pending = bytearray()
        self.my_height = 0
        self.my_parent: tuple[str, list[list[Any]]] = ("", [])
        self.in_flight: str | None = None
        self.in_flight_frames: list[bytes] = []  # its batch frame and signed car, sent again until it is certified
        self.in_flight_at = 0.0  # when they last went out
        self.car_votes: dict[str, dict[int, str]] = {}
        # consensus
        self.k = cfg.k
        self.low = 1  # the lowest slot not committed (every slot below it is)
        self.views: dict[int, int] = {}  # slot -> the view this replica is in there (1 if absent)
        self.timers: dict[int, asyncio.TimerHandle] = {}  # slot -> its timer, from when the slot starts to its commit
        self.first_prep: dict[int, list[Any]] = {}  # slot -> the cut of the first Prepare this replica voted for there
        self.voted_prep: dict[tuple[int, int], set[str]] = {}
        self.voted_conf: dict[tuple[int, int], set[str]] = {}
        self.timed_out: set[tuple[int, int]] = set()
        self.hp: dict[int, tuple[int, list[Any]]] = {}
        self.hq: dict[int, tuple[int, list[Any], list[list[Any]]]] = {}
        self.proposed: dict[tuple[int, int], list[list[Any]]] = {}  # (s, v) -> cuts this replica proposed
        self.prep_votes: dict[tuple[int, int, str], dict[int, str]] = {}
        self.conf_votes: dict[tuple[int, int, str], dict[int, str]] = {}
        self.confirmed: set[tuple[int, int]] = set()
        self.timeouts: dict[tuple[int, int], dict[int, tuple[bytes, str, dict[str, Any]]]] = {}
        self.commits: dict[int, tuple[bytes, dict[str, Any]]] = {}  # slot -> its Commit's frame and message
        # (the message is slot s+k's ticket; the frame answers Timeouts of the slot)
        self.committed_cut: dict[int, list[Any]] = {}
        self.my_batches: dict[int, list[bytes]] = {}  # without lanes: slot -> the batches this replica proposed in it
        self.deferred: list[tuple[bytes, str, dict[str, Any]]] = []
        # execution
        self.exec_slot = 0
        self.exec_tip: list[tuple[int, str] | None] = [None] * self.n
        self.log = hashlib.sha256(b"autobahn").digest()
        self.kv: dict[int, bytes] = {}
        self.fetched: dict[str, float] = {}
        # the log: the ops of the activation under way, the frames it sends once its event is written
        self.trace_file = create_new(cfg.trace, buffering=1 << 16) if cfg.trace else None
        self.trace = None if self.trace_file is None else Log(
            self.trace_file, self.me, clocks=False,
            header={"n": self.n, "f": self.f, "byzantine": cfg.byzantine, "bug": cfg.bug, "coverage": self.coverage,
                    "lanes": cfg.lanes, "k": self.k})
        self.ops: list[dict[str, Any]] | None = None
        self.outq: list[tuple[Endpoint, bytes]] = []
        self.got_id: str | None = None  # the id of the message being handled (None: this replica's own)
        self.sent_ids: set[str] = set()
        self.sent_order: deque[str] = deque()
        self.stopped = False  # once told to stop, nothing is served or sent: what leaves a replica is on its record

    # -- the process -----------------------------------------------------------------------------
    async def run(self) -> None:
        creds = credentials()
        server, port = await serve(creds, self.n + 1, on_frame=self.on_frame, on_rejected=self.unauthenticated,
                                   accept=lambda peer: peer != self.me and 0 <= peer <= self.n)
        self.ctl = await connect(self.cfg.control_port, creds, RUNNER)
        self.ctl.send({"op": "hello", "port": port})
        loop = asyncio.get_running_loop()
        try:
            while True:
                try:
                    cmd = await self.ctl.read()
                except FrameError as e:
                    self.reject("malformed", f"a control frame from the runner: {e}", RUNNER)
                    continue
                op = cmd.get("op")
                if op == "peers":
                    await self.connect_peers(cmd.get("ports"), creds)
                elif op == "go":
                    self.t0 = time.monotonic()
                    outer = self.begin()
                    try:
                        loop.call_later(self.cfg.car_ms / 1000, self.tick)
                        self.advance()
                    finally:
                        self.finish(outer, "start")
                elif op == "stop":
                    self.stopped = True
                    self.close_trace()
                    self.ctl.send({"op": "bye", "stats": {**self.stats, **self.signer.stats,
                                                          "cpu_s": round(time.process_time(), 3)},
                                   "rejections": self.rejections})
                    await self.ctl.drain()
                    break
        except ConnectionError:
            pass
        finally:
            self.close_trace()
            server.close()

    async def connect_peers(self, ports: Any, creds: Credentials) -> None:
        """Open an authenticated connection to every other replica and to the client (member n)."""
        if not isinstance(ports, dict):
            self.reject("malformed", "a peers frame from the runner without ports", RUNNER)
            return
        for key, port in ports.items():
            p = int(key) if isinstance(key, str) and key.isascii() and key.isdigit() else -1
            if p == self.me or not 0 <= p <= self.n or isinstance(port, bool) or not isinstance(port, int):
                continue
            try:
                ep = await connect(port, creds, p, on_frame=self.on_frame, on_rejected=self.unauthenticated)
            except OSError as e:
                self.record({"op": "unreachable", "peer": p, "detail": str(e)[:200]})
                continue
            if p == self.n:
                self.client = ep
            else:
                self.peers[p] = ep

    def close_trace(self) -> None:
        """Write the log's end record (it is complete) and close it."""
        if self.trace is not None:
            self.trace.close()
            self.trace_file.close()  # type: ignore[union-attr]
            self.trace = None

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 6)

    # -- the log -----------------------------------------------------------------------------------
    def begin(self) -> bool:
        """Start an activation (a frame acted on, a timer): its ops and its frames collect until `finish`. False
        inside one (a frame this replica sends itself is handled within the activation that sends it)."""
        if self.ops is not None:
            return False
        self.ops, self.outq = [], []
        return True

    def finish(self, outer: bool, kind: str, peer: int | None = None) -> None:
        """End the activation `begin` started (if `outer`): write its event, if it did anything, then send its
        frames (a replica killed in between has sent nothing its log does not hold)."""
        if not outer:
            return
        ops, out = self.ops or [], self.outq
        self.ops, self.outq = None, []
        if ops:
            self._write(kind, ops, peer)
        for ep, body in out:
            if not ep.is_closing():
                ep.send_body(body)
                self.stats["sent"] += 1

    def _write(self, kind: str, ops: list[dict[str, Any]], peer: int | None) -> None:
        if self.trace is None:
            return
        sent = list(dict.fromkeys(i for o in ops for i in o.get("sent", ())))
        recv = list(dict.fromkeys(i for o in ops for i in o.get("recv", ())))
        args: dict[str, Any] = {"ops": ops} if peer is None else {"from": peer, "ops": ops}
        self.trace.event(kind, args, sent=sent or None, recv=recv or None, time=self.now())
        if self.cfg.durable:
            self.trace_file.flush()  # type: ignore[union-attr]

    def record(self, op: dict[str, Any]) -> None:
        """An op of the activation under way (outside one, an event of its own)."""
        if self.ops is not None:
            self.ops.append(op)
        else:
            self._write("local", [op], None)

    def first_send(self, mid: str) -> list[str]:
        """[mid] the first time this replica sends message `mid` (a resent message was caused by the first send)."""
        if mid in self.sent_ids:
            return []
        self.sent_ids.add(mid)
        self.sent_order.append(mid)
        if len(self.sent_order) > 500_000:
            self.sent_ids.discard(self.sent_order.popleft())
        return [mid]

    def received(self) -> list[str]:
        """[the id of the message being handled], or [] for this replica's own."""
        return [] if self.got_id is None else [self.got_id]

    def reject(self, reason: str, detail: str, src: Any = None) -> None:
        self.stats["rejected"] += 1
        self.rejections[reason] = self.rejections.get(reason, 0) + 1
        self.record({"op": "reject", "reason": reason, "detail": detail[:300], "from": src})

    def unauthenticated(self, why: str) -> None:
        """A connection or frame refused by the authenticated channel (no run secret, a bad tag, an oversized frame)."""
        self.reject("unauthenticated", why + "; connection closed")

    def cut_off(self, other: int) -> bool:
        """True while a partition of the fault plan separates this replica from `other`."""
        t = time.monotonic() - self.t0
        for start, end, groups in self.cfg.partitions:
            if start <= t < end and not any(self.me in g and other in g for g in groups):
                return True
        return False

    # -- sending ---------------------------------------------------------------------------------
    def sign(self, obj: dict[str, Any]) -> bytes:
        """The body of a frame carrying `obj`, signed by this replica."""
        return self.sign_id(obj)[0]

    def sign_id(self, obj: dict[str, Any]) -> tuple[bytes, str]:
        """The body of a frame carrying `obj`, signed by this replica, and the message's id (its digest)."""
        data = canonical(obj)
        return signed_frame(data, self.signer.sign(data)), message_id(data)

    def send_raw(self, dst: int, body: bytes) -> None:
        ep = self.peers.get(dst)
        if self.stopped or ep is None or ep.is_closing() or self.cut_off(dst):
            return
        if self.ops is not None:
            self.outq.append((ep, body))  # sent once the activation's event is written
            return
        ep.send_body(body)
        self.stats["sent"] += 1

    def broadcast(self, body: bytes) -> None:
        for p in self.peers:
            self.send_raw(p, body)

    def to(self, dst: int, body: bytes) -> None:
        """Send to a replica; to itself, handle it at once."""
        if dst == self.me:
            self.on_frame(None, body)
        else:
            self.send_raw(dst, body)

    def to_all(self, body: bytes) -> None:
        self.broadcast(body)
        self.on_frame(None, body)
        if self.cfg.byzantine == "forge":
            self.forge()

    def forge(self) -> None:
        """The `forge` behaviour: now and then, messages that each honest replica rejects (bad_signature,
        forged_certificate, wrong_sender), signed with this replica's own key only."""
        self.forged += 1
        if self.stopped or self.forged % FORGE_EVERY:
            return
        h = 1_000_000 + self.forged  # a height no honest replica has voted for, new each time
        other = (self.me + 1) % self.n
        fake = [[w, "ab" * 64] for w in range(self.n) if w != self.me][: self.poa_q]
        self.broadcast(self.sign({"t": "CarVote", "from": other, "a": self.me, "h": h, "c": "ff" * 32}))
        self.broadcast(self.sign({"t": "PoA", "from": self.me, "a": self.me, "h": h, "c": "ee" * 32, "sigs": fake}))
        for p, ep in self.peers.items():
            if not ep.is_closing() and not self.cut_off(p):
                ep.send({"k": "T", "txs": ""})

    # -- receiving -------------------------------------------------------------------------------
    def on_frame(self, ep: Endpoint | None, body: bytes) -> None:
        """A frame from the authenticated member `ep.peer` (from this replica itself when `ep` is None)."""
        if self.stopped:
            return
        self.stats["received"] += 1
        peer = self.me if ep is None else ep.peer
        outer = self.begin()
        outer_id = self.got_id
        try:
            self.handle(peer, body)
        finally:
            self.got_id = outer_id
            self.finish(outer, "frame", peer)

    def handle(self, peer: int, body: bytes) -> None:
        """Act on one frame from member `peer`."""
        try:
            frame = parse(body)
            kind = frame.get("k")
            if kind not in ("S", "B", "T"):
                raise Malformed(f"unknown frame kind {kind!r}")
            if (kind == "T") != (peer == self.n):
                self.reject("wrong_sender", f"a {kind} frame from {member_name(peer)}: "
                            + ("only the client sends transactions" if kind == "T" else "the client sends only transactions"),
                            peer)
                return
            if kind == "S":
                self.on_signed(peer, *decode_signed(frame))
            elif kind == "B":
                self.on_batch(frame_payload(frame, "txs", TX_SIZE, MAX_BATCH))
            else:
                self.on_txs(frame_payload(frame, "txs", TX_SIZE, MAX_BATCH))
        except (Malformed, FrameError) as e:
            self.reject("malformed", str(e), peer)

    def on_txs(self, payload: bytes) -> None:
        if len(payload) % TX_SIZE:
            raise Malformed(f"client transactions are {TX_SIZE} bytes each")
        if len(self.pending) + len(payload) > MAX_PENDING * TX_SIZE:
            self.stats["shed"] += len(payload) // TX_SIZE
            return
        self.pending += payload

    def on_batch(self, payload: bytes) -> None:
        split_txs(payload)
        d = hashlib.sha256(payload).hexdigest()
        if d in self.batches:
            return
        self.batches[d] = payload
        self.batch_order.append(d)
        while len(self.batch_order) > 20_000:  # batches are content-addressed; keep a bounded window
            self.batches.pop(self.batch_order.popleft(), None)
        for c in self.waiting_batch.pop(d, []):
            self.take(c)
        self.execute()

    def on_signed(self, peer: int, data: bytes, sig: str, obj: dict[str, Any]) -> None:
        m = self.schema.check(obj)
        src = m["from"]
        if not self.signer.valid(src, data, sig):
            self.reject("bad_signature", f"{m['t']} claims to be from {src}", src)
            return
        h = hashlib.sha256(data).digest()
        if h in self.seen:
            self.reject("replayed", f"{m['t']} from {src} already received", src)
            return
        self.seen.add(h)
        self.seen_order.append(h)
        if len(self.seen_order) > 500_000:
            self.seen.discard(self.seen_order.popleft())
        self.got_id = None if peer == self.me else h.hex()[:16]  # `message_id(data)`
        if m["t"] == "Car":
            self.on_Car(data, sig, m, peer)
        else:
            getattr(self, "on_" + m["t"])(data, sig, m)

    def poa_valid(self, a: int, h: int, c: str, sigs: list[list[Any]]) -> bool:
        if self.certified.get(c) is not None:
            return True
        ok = len(sigs) >= self.poa_q and all(
            self.signer.valid(w, statement("CarVote", w, a=a, h=h, c=c), s) for w, s in sigs)
        if ok:
            self.learn_poa(a, h, c, sigs)
        return ok

    def qc_valid(self, kind: str, s: int, v: int, d: str, sigs: list[list[Any]], need: int) -> bool:
        return len(sigs) >= need and all(self.signer.valid(w, statement(kind, w, s=s, v=v, d=d), x) for w, x in sigs)

    def cut_valid(self, cut: list[Any]) -> bool:
        if not self.cfg.lanes:  # batches, which the consensus's own quorums certify
            return all(t is None or not t[2] for t in cut)
        return all(t is None or self.poa_valid(a, t[0], t[1], t[2]) for a, t in enumerate(cut))

    def missing_batch(self, cut: list[Any]) -> tuple[int, str] | None:
        """Without lanes: a (lane, batch digest) of the cut this replica does not hold, or None."""
        if self.cfg.lanes:
            return None
        return next(((a, t[1]) for a, t in enumerate(cut) if t is not None and t[1] not in self.batches), None)

    # -- lanes -----------------------------------------------------------------------------------
    def tick(self) -> None:
        """Every car_ms: if the last car of this lane is certified and transactions wait, send the next car (a
        `rush` replica sends it at once, its parent uncertified); an uncertified one goes out again, unchanged, each
        timer period (receivers that have it drop it as a replay)."""
        asyncio.get_running_loop().call_later(self.cfg.car_ms / 1000, self.tick)
        if not self.cfg.lanes:  # no cars: a leader waiting for transactions proposes once some are here
            if not self.stopped:
                outer = self.begin()
                try:
                    self.advance()
                finally:
                    self.finish(outer, "tick")
            return
        rush = self.cfg.byzantine == "rush"
        if self.in_flight is not None and not rush and not self.stopped \
                and time.monotonic() - self.in_flight_at >= self.cfg.timeout_ms / 1000:
            self.in_flight_at = time.monotonic()
            for body in self.in_flight_frames:
                self.broadcast(body)
        if (self.in_flight is not None and not rush) or not self.pending or self.stopped:
            return
        outer = self.begin()
        try:
            take = min(len(self.pending) // TX_SIZE, self.cfg.max_batch) * TX_SIZE
            payload = bytes(self.pending[:take])
            del self.pending[:take]
            b = hashlib.sha256(payload).hexdigest()
            self.my_height += 1
            parent, pq = self.my_parent
            if rush and self.in_flight is not None:  # its last car, with signatures nobody made as its PoA
                parent, pq = self.in_flight, [[w, "ab" * 64] for w in range(self.n) if w != self.me][: self.poa_q]
            car = {"t": "Car", "from": self.me, "h": self.my_height, "b": b, "p": parent, "pq": pq}
            c = car_id(self.me, self.my_height, b, parent)
            self.in_flight = c
            batch = bytes_frame("B", "txs", payload)
            self.broadcast(batch)
            self.on_batch(payload)
            body, mid = self.sign_id(car)
            self.in_flight_frames, self.in_flight_at = [batch, body], time.monotonic()
            self.record({"op": "car_sent", "a": self.me, "h": self.my_height, "c": c, "sent": self.first_send(mid)})
            self.to_all(body)
        finally:
            self.finish(outer, "tick")

    def on_Car(self, data: bytes, sig: str, m: dict[str, Any], peer: int) -> None:
        a, h, b, p, pq = m["from"], m["h"], m["b"], m["p"], m["pq"]
        c = car_id(a, h, b, p)
        if (h == 1) != (p == "") or (h == 1 and pq):
            self.reject("malformed", f"car {a}:{h} has a parent iff its height is above 1", a)
            return
        if h > 1 and self.cfg.bug != "no_parent_poa" and not self.poa_valid(a, h - 1, p, pq):
            self.reject("forged_certificate", f"car {a}:{h} carries an invalid PoA of its parent", a)
            return
        if c not in self.cars:
            self.cars[c] = (a, h, b, p, signed_frame(data, sig))
        if peer == a and c not in self.from_author:  # from its author (a car fetched from another is not voted for)
            self.from_author[c] = message_id(data)
            self.take(c)
        self.execute()

    def designated(self, author: int) -> bool:
        """Whether this replica is one of the 2f+1 voters of `author`'s cars: the author and the replicas that do
        not follow it within f places in ring order."""
        return self.me == author or (self.me - author) % self.n > self.f

    def take(self, c: str) -> None:
        """Take a car received from its author once its batch is here and its parent is taken: hold it, and vote
        for it if designated, once per (author, height) (a `vote_all` replica votes for every car it takes)."""
        if c in self.taken:
            return
        a, h, b, p, _ = self.cars[c]
        if b not in self.batches:
            self.waiting_batch.setdefault(b, []).append(c)
            return
        if h > 1 and p not in self.taken:
            self.waiting_parent.setdefault(p, []).append(c)
            return
        self.taken.add(c)
        byz = self.cfg.byzantine == "vote_all"
        vote = (self.designated(a) and self.voted_car.get((a, h)) is None) or byz
        if a != self.me:
            self.record({"op": "got", "m": "Car", "a": a, "h": h, "c": c, "from": a, "vote": vote,
                         "recv": [self.from_author[c]]})
        if vote:
            self.voted_car[(a, h)] = c
            body, mid = self.sign_id({"t": "CarVote", "from": self.me, "a": a, "h": h, "c": c})
            self.record({"op": "vote", "kind": "car", "a": a, "h": h, "c": c, "sent": self.first_send(mid)})
            self.to(a, body)
        for child in self.waiting_parent.pop(c, []):
            self.take(child)

    def on_CarVote(self, data: bytes, sig: str, m: dict[str, Any]) -> None:
        a, h, c = m["a"], m["h"], m["c"]
        if a != self.me or c != self.in_flight or self.cfg.byzantine == "rush":
            return  # a late vote for a car already certified (a `rush` replica ignores every vote)
        votes = self.car_votes.setdefault(c, {})
        votes[m["from"]] = sig
        if m["from"] != self.me:
            self.record({"op": "got", "m": "CarVote", "a": a, "h": h, "c": c, "from": m["from"],
                         "recv": self.received()})
        if len(votes) >= self.poa_q:
            sigs = [[w, s] for w, s in sorted(votes.items())][: self.poa_q]
            self.learn_poa(a, h, c, sigs)
            self.my_parent = (c, sigs)
            self.in_flight, self.in_flight_frames = None, []
            del self.car_votes[c]
            body, mid = self.sign_id({"t": "PoA", "from": self.me, "a": a, "h": h, "c": c, "sigs": sigs})
            self.record({"op": "poa", "a": a, "h": h, "c": c, "signers": [w for w, _ in sigs],
                         "sent": self.first_send(mid)})
            self.broadcast(body)

    def on_PoA(self, data: bytes, sig: str, m: dict[str, Any]) -> None:
        if not self.poa_valid(m["a"], m["h"], m["c"], m["sigs"]):
            self.reject("forged_certificate", f"PoA of car {m['a']}:{m['h']} has invalid or too few signatures",
                        m["from"])
        elif m["from"] == m["a"]:  # the author's PoA (the spec's; a PoA another replica relays is no step)
            self.record({"op": "got", "m": "PoA", "a": m["a"], "h": m["h"], "c": m["c"],
                         "signers": [w for w, _ in m["sigs"]], "from": m["from"], "recv": self.received()})

    def learn_poa(self, a: int, h: int, c: str, sigs: list[list[Any]]) -> None:
        self.certified[c] = sigs
        tip = self.tips[a]
        if tip is None or h > tip[0]:
            self.tips[a] = (h, c)
            self.advance()

    def on_Fetch(self, data: bytes, sig: str, m: dict[str, Any]) -> None:
        car = self.cars.get(m["c"])
        if car is not None and car[2] in self.batches:
            self.send_raw(m["from"], bytes_frame("B", "txs", self.batches[car[2]]))
            self.send_raw(m["from"], car[4])
        elif not self.cfg.lanes and m["c"] in self.batches:  # without lanes, a cut names batches
            self.send_raw(m["from"], bytes_frame("B", "txs", self.batches[m["c"]]))

    # -- consensus: proposing --------------------------------------------------------------------
    def leader(self, s: int, v: int) -> int:
        return (s + v) % self.n

    def fresh_cut(self) -> list[Any]:
        return [None if t is None else [t[0], t[1], self.certified[t[1]]] for t in self.tips]

    def opened(self, s: int) -> bool:
        """Whether slot s is open here: not committed, and slot s-k is (the window of k concurrent slots)."""
        return s not in self.commits and (s <= self.k or s - self.k in self.commits)

    def started(self, s: int) -> bool:
        """Whether slot s runs here (its timer, a view-1 leader's proposal): it is open and slot s-1 has a Prepare
        this replica voted for, or is committed."""
        return self.opened(s) and (s == 1 or s - 1 in self.first_prep or s - 1 in self.commits)

    def base(self, s: int) -> list[Any]:
        """The cut a view-1 proposal of slot s counts its coverage against: slot s-1's committed cut, else the first
        Prepare of slot s-1 this replica voted for (the spec's ticket of s-1); no tips for slot 1."""
        if s - 1 in self.committed_cut:
            return self.committed_cut[s - 1]
        return self.first_prep.get(s - 1, [None] * self.n)

    def covers_new(self, cut: list[Any], base: list[Any]) -> bool:
        """Whether `coverage` lanes of `cut` have tips newer than in `base`."""
        return sum(t is not None and (old is None or t[0] > old[0]) for t, old in zip(cut, base)) >= self.coverage

    def ticket(self, s: int) -> Any:
        """A view-1 Prepare's ticket: the Commit of slot s-k (none for the first k slots)."""
        if s <= self.k:
            return None
        return {"commit": self.commits[s - self.k][1]}

    def advance(self) -> None:
        """Start the timer of every slot that now runs here and propose in those whose view-1 leader this replica is."""
        top = max(self.commits, default=0) + self.k
        for s in range(self.low, top + 1):
            if s not in self.timers and self.started(s):
                self.arm(s)
            self.maybe_propose(s)

    def maybe_propose(self, s: int) -> None:
        if self.views.get(s, 1) != 1 or self.leader(s, 1) != self.me or (s, 1) in self.proposed or (s, 1) in self.timed_out \
                or not self.started(s):
            return
        if self.cfg.lanes:
            cut = self.fresh_cut()
            if not self.covers_new(cut, self.base(s)):
                return
        elif self.pending:
            cut = self.own_cut(s)
        else:
            return
        self.propose(s, 1, cut, self.ticket(s))

    def own_cut(self, s: int) -> list[Any]:
        """The cut this replica proposes when it is free to: its certified tips; without lanes, a batch of its pending
        transactions (at most max_batch), sent to every replica ahead of the Prepare that names it (as lane `me`, height
        s, no PoA), or no batch if none wait."""
        if self.cfg.lanes:
            return self.fresh_cut()
        cut: list[Any] = [None] * self.n
        if self.pending:
            take = min(len(self.pending) // TX_SIZE, self.cfg.max_batch) * TX_SIZE
            payload = bytes(self.pending[:take])
            del self.pending[:take]
            self.my_batches.setdefault(s, []).append(payload)
            self.broadcast(bytes_frame("B", "txs", payload))
            self.on_batch(payload)
            cut[self.me] = [s, hashlib.sha256(payload).hexdigest(), []]
        return cut

    def propose(self, s: int, v: int, cut: list[Any], tk: Any, free: bool = True,
                tc: list[list[Any]] | None = None) -> None:
        """Send Prepare(s, v, cut) (`free`: any cut was a valid proposal here; `tc`: the TC's Timeouts as
        [sender, reported Prepare, reported QC], for the log)."""
        info: dict[str, Any] = {"free": free}
        if tc is not None:
            info["tc"] = tc
        if self.cfg.byzantine == "equivocate":
            other = self.equivocal(cut, self.base(s))
            if other is not None:
                self.proposed[(s, v)] = [cut, other]
                half = sorted(self.peers)[: len(self.peers) // 2]
                sent = {}
                for mine, dsts in ((cut, [self.me, *(p for p in sorted(self.peers) if p not in half)]), (other, half)):
                    body, mid = self.sign_id({"t": "Prepare", "from": self.me, "s": s, "v": v, "cut": mine, "tk": tk})
                    self.record({"op": "propose", "s": s, "v": v, "d": cut_id(mine), "dst": dsts, **info,
                                 "equivocal": mine is other, "tips": _tips(mine), "sent": self.first_send(mid)})
                    sent[cut_id(mine)] = (body, dsts)
                for body, dsts in sent.values():
                    for dst in dsts:
                        self.to(dst, body)
                return
        self.proposed[(s, v)] = [cut]
        body, mid = self.sign_id({"t": "Prepare", "from": self.me, "s": s, "v": v, "cut": cut, "tk": tk})
        self.record({"op": "propose", "s": s, "v": v, "d": cut_id(cut), **info, "tips": _tips(cut),
                     "sent": self.first_send(mid)})
        self.to_all(body)

    def equivocal(self, cut: list[Any], base: list[Any]) -> list[Any] | None:
        """A second cut for an equivocating leader: the same tips but one lane left at its tip in `base`."""
        for a, (t, old) in enumerate(zip(cut, base)):
            if t is not None and (old is None or t[0] > old[0]):
                return [*cut[:a], None if old is None else [old[0], old[1], self.certified[old[1]]], *cut[a + 1:]]
        return None

    def winner(self, tc: list[dict[str, Any]]) -> list[Any] | None:
        """The winning proposal of a TC: the highest-view QC, unless f+1 Timeouts report one Prepare
        at higher views; None if the TC carries neither (the leader is free)."""
        best = max((m["hq"] for m in tc if m["hq"] is not None), key=lambda q: q[0], default=None)
        floor = best[0] if best is not None else 0
        count: dict[str, tuple[int, list[Any]]] = {}
        for m in tc:
            if m["hp"] is not None and m["hp"][0] > floor:
                d = cut_id(m["hp"][1])
                k, _ = count.get(d, (0, None))
                count[d] = (k + 1, m["hp"][1])
        for k, cut in count.values():
            if k >= self.f + 1:
                return cut
        return best[1] if best is not None else None

    # -- consensus: voting -----------------------------------------------------------------------
    def check_ticket(self, s: int, v: int, tk: Any) -> tuple[bool, list[Any] | None, str]:
        """(valid, the winning cut a view change imposes or None, why not)."""
        if v == 1:
            if s <= self.k:
                return tk is None, None, f"view 1 of the first k = {self.k} slots has no ticket"
            if tk is None or "commit" not in tk:
                return False, None, f"a view-1 Prepare needs the Commit of slot s - k = {s - self.k}"
            c = tk["commit"]
            if c["s"] != s - self.k or not self.commit_valid(c):
                return False, None, f"its ticket is not a valid Commit of slot {s - self.k}"
            self.adopt_commit(c, "ticket")
            return True, None, ""
        if tk is None or "tc" not in tk:
            return False, None, f"a view-{v} Prepare needs a TC of view {v - 1}"
        msgs, signers = [], set()
        for text, sig in tk["tc"]:
            raw = text.encode()
            try:
                obj = self.schema.check(json.loads(text), "Timeout")
            except (Malformed, json.JSONDecodeError):
                return False, None, "its TC holds a malformed Timeout"
            if canonical(obj) != raw or obj["s"] != s or obj["v"] != v - 1 or not self.signer.valid(obj["from"], raw, sig):
                return False, None, "its TC holds a Timeout that is not signed by its sender for this view"
            if obj["hq"] is not None and not self.qc_valid("PrepareVote", s, obj["hq"][0], cut_id(obj["hq"][1]),
                                                            obj["hq"][2], self.q):
                return False, None, "its TC holds a Timeout with an invalid PrepareQC"
            signers.add(obj["from"])
            msgs.append(obj)
        if len(signers) < self.q:
            return False, None, f"its TC has {len(signers)} signers, fewer than {self.q}"
        return True, self.winner(msgs), ""

    def on_Prepare(self, data: bytes, sig: str, m: dict[str, Any]) -> None:
        s, v, cut, src = m["s"], m["v"], m["cut"], m["from"]
        if src != self.leader(s, v):
            self.reject("not_leader", f"Prepare({s}, {v}) from {src}, not the leader {self.leader(s, v)}", src)
            return
        if s in self.commits:
            self.reject("out_of_view", f"Prepare for slot {s}, already committed", src)
            return
        ok, win, why = self.check_ticket(s, v, m["tk"])
        if not ok:
            self.reject("forged_certificate", f"Prepare({s}, {v}): {why}", src)
            return
        if not self.opened(s):
            self.defer(data, sig, m)
            return
        d = cut_id(cut)
        if win is not None and cut_id(win) != d:
            self.reject("forged_certificate", f"Prepare({s}, {v}) ignores the winning proposal of its TC", src)
            return
        if not self.cut_valid(cut):
            self.reject("forged_certificate", f"Prepare({s}, {v}) has a tip without a valid PoA", src)
            return
        gone = self.missing_batch(cut)
        if gone is not None:  # without lanes, a replica votes only for a batch it holds (and asks for it)
            self.reject("unavailable", f"Prepare({s}, {v}) names batch {gone[1][:12]}, which this replica lacks", src)
            self.fetch(gone[1], gone[0], [])
            return
        byz = self.cfg.byzantine == "vote_all"
        if v < self.views.get(s, 1) and not byz:
            self.reject("out_of_view", f"Prepare({s}, {v}) below the current view {self.views[s]}", src)
            return
        if ((s, v) in self.timed_out or (s, v) in self.voted_prep) and not byz:
            return  # timed out of the view, or an equivocating leader's second Prepare: no second vote
        if src != self.me:
            self.record({"op": "got", "m": "Prepare", "s": s, "v": v, "d": d, "from": src, "recv": self.received()})
        if v > self.views.get(s, 1):
            self.enter_view(s, v)
        self.voted_prep.setdefault((s, v), set()).add(d)
        self.hp[s] = (v, cut)
        body, mid = self.sign_id({"t": "PrepareVote", "from": self.me, "s": s, "v": v, "d": d})
        self.record({"op": "vote", "kind": "prepare", "s": s, "v": v, "d": d, "sent": self.first_send(mid)})
        self.to(src, body)
        if s not in self.first_prep:  # slot s has a Prepare here: slot s+1 may start
            self.first_prep[s] = cut
            self.advance()

    def on_PrepareVote(self, data: bytes, sig: str, m: dict[str, Any]) -> None:
        s, v, d = m["s"], m["v"], m["d"]
        cuts = {cut_id(c): c for c in self.proposed.get((s, v), [])}
        if d not in cuts or s in self.commits or (s, v) in self.confirmed:
            return  # (once it has sent the Confirm, the leader counts Confirm votes, as the spec's)
        votes = self.prep_votes.setdefault((s, v, d), {})
        votes[m["from"]] = sig
        if m["from"] != self.me:
            self.record({"op": "got", "m": "PrepareVote", "s": s, "v": v, "d": d, "from": m["from"],
                         "recv": self.received()})
        if len(votes) >= self.n:
            self.commit_as_leader(s, v, cuts[d], 1, votes)
        elif len(votes) == self.q:
            asyncio.get_running_loop().call_later(self.cfg.fast_ms / 1000, self.slow_path, s, v, cuts[d], d)

    def slow_path(self, s: int, v: int, cut: list[Any], d: str) -> None:
        """No fast quorum in time: send the PrepareQC (Confirm), if this replica still takes part in view v (it
        signs a Confirm vote of its own)."""
        if self.stopped or s in self.commits or (s, v) in self.confirmed or (s, v) in self.timed_out \
                or self.views.get(s, 1) > v:
            return
        outer = self.begin()
        try:
            self.confirmed.add((s, v))
            qc = [[w, x] for w, x in sorted(self.prep_votes[(s, v, d)].items())]
            body, mid = self.sign_id({"t": "Confirm", "from": self.me, "s": s, "v": v, "cut": cut, "qc": qc})
            self.record({"op": "fast", "s": s, "v": v, "d": d, "sent": self.first_send(mid)})
            self.to_all(body)
        finally:
            self.finish(outer, "timer")

    def on_Confirm(self, data: bytes, sig: str, m: dict[str, Any]) -> None:
        s, v, cut, src = m["s"], m["v"], m["cut"], m["from"]
        if src != self.leader(s, v):
            self.reject("not_leader", f"Confirm({s}, {v}) from {src}", src)
            return
        d = cut_id(cut)
        if not self.qc_valid("PrepareVote", s, v, d, m["qc"], self.q):
            self.reject("forged_certificate", f"Confirm({s}, {v}) carries an invalid PrepareQC", src)
            return
        if s in self.commits:
            return
        if not self.opened(s):
            self.defer(data, sig, m)
            return
        byz = self.cfg.byzantine == "vote_all"
        if v < self.views.get(s, 1) and not byz:
            self.reject("out_of_view", f"Confirm({s}, {v}) below the current view {self.views[s]}", src)
            return
        if ((s, v) in self.timed_out or (s, v) in self.voted_conf) and not byz:
            return
        if src != self.me:
            self.record({"op": "got", "m": "Confirm", "s": s, "v": v, "d": d, "from": src, "recv": self.received()})
        if v > self.views.get(s, 1):
            self.enter_view(s, v)
        self.voted_conf.setdefault((s, v), set()).add(d)
        if s not in self.hq or self.hq[s][0] < v:
            self.hq[s] = (v, cut, m["qc"])
        body, mid = self.sign_id({"t": "ConfirmVote", "from": self.me, "s": s, "v": v, "d": d})
        self.record({"op": "vote", "kind": "confirm", "s": s, "v": v, "d": d, "sent": self.first_send(mid)})
        self.to(src, body)

    def on_ConfirmVote(self, data: bytes, sig: str, m: dict[str, Any]) -> None:
        s, v, d = m["s"], m["v"], m["d"]
        cuts = {cut_id(c): c for c in self.proposed.get((s, v), [])}
        if d not in cuts or s in self.commits:
            return
        votes = self.conf_votes.setdefault((s, v, d), {})
        votes[m["from"]] = sig
        if m["from"] != self.me:
            self.record({"op": "got", "m": "ConfirmVote", "s": s, "v": v, "d": d, "from": m["from"],
                         "recv": self.received()})
        if len(votes) == self.q:
            self.commit_as_leader(s, v, cuts[d], 0, votes)

    def commit_as_leader(self, s: int, v: int, cut: list[Any], fast: int, votes: dict[int, str]) -> None:
        qc = [[w, x] for w, x in sorted(votes.items())]
        d = cut_id(cut)
        self.record({"op": "lead_commit", "s": s, "v": v, "d": d, "fast": fast,
                     "sent": self.first_send(commit_id(s, v, d))})
        self.to_all(self.sign({"t": "Commit", "from": self.me, "s": s, "v": v, "cut": cut, "fast": fast, "qc": qc}))

    def commit_valid(self, m: dict[str, Any]) -> bool:
        d = cut_id(m["cut"])
        if m["fast"]:
            return self.qc_valid("PrepareVote", m["s"], m["v"], d, m["qc"], self.n)
        return self.qc_valid("ConfirmVote", m["s"], m["v"], d, m["qc"], self.q)

    def on_Commit(self, data: bytes, sig: str, m: dict[str, Any]) -> None:
        if not self.commit_valid(m):
            self.reject("forged_certificate", f"Commit({m['s']}, {m['v']}) carries an invalid certificate", m["from"])
            return
        self.adopt_commit(m, "own" if self.got_id is None else "msg")

    def adopt_commit(self, m: dict[str, Any], via: str) -> None:
        """Commit slot s (already verified) unless it is committed here; stop its timer, execute what is committed in
        order, start the slots this opens. `via`: how the certificate came (own: this replica is the leader that made
        it; msg: a Commit; ticket: the Prepare of slot s+k)."""
        s = m["s"]
        if s in self.commits:
            return
        mine = {**m, "from": self.me}
        self.commits[s] = (self.sign(mine), mine)
        self.committed_cut[s] = m["cut"]
        signers = [w for w, _ in m["qc"]]
        d = cut_id(m["cut"])
        self.record({"op": "commit", "s": s, "v": m["v"], "d": d, "fast": m["fast"], "signers": signers,
                     "cut": [None if t is None else [t[0], t[1], [w for w, _ in t[2]]] for t in m["cut"]],
                     "via": via, "recv": [] if via == "own" else [commit_id(s, m["v"], d)]})
        self.stats["committed"] += 1
        for a, t in enumerate(m["cut"]):
            if t is not None and self.cfg.lanes:
                self.poa_valid(a, t[0], t[1], t[2])
        mine_tip = m["cut"][self.me]
        for payload in self.my_batches.pop(s, []):  # without lanes: a batch of this replica's that lost the slot
            if mine_tip is None or hashlib.sha256(payload).hexdigest() != mine_tip[1]:
                self.pending[:0] = payload  # goes back to the front of its pending transactions
        timer = self.timers.pop(s, None)
        if timer is not None:
            timer.cancel()
        while self.low in self.commits:  # a slot below `low` needs neither its view nor its first Prepare
            self.views.pop(self.low, None)
            self.first_prep.pop(self.low, None)
            self.low += 1
        for old in [key for key in self.timeouts if key[0] < self.low]:
            del self.timeouts[old]
        self.execute()
        self.advance()
        self.retry()

    def defer(self, data: bytes, sig: str, m: dict[str, Any]) -> None:
        if len(self.deferred) < MAX_DEFERRED:
            self.deferred.append((data, sig, m, self.got_id))

    def retry(self) -> None:
        todo, self.deferred = self.deferred, []
        outer_id = self.got_id
        for data, sig, m, mid in todo:
            if m["s"] not in self.commits:
                self.got_id = mid
                getattr(self, "on_" + m["t"])(data, sig, m)
        self.got_id = outer_id

    # -- view change -----------------------------------------------------------------------------
    def arm(self, s: int) -> None:
        """(Re)start slot s's timer for the view this replica is in there (1.5x longer per view)."""
        old = self.timers.get(s)
        if old is not None:
            old.cancel()
        v = self.views.get(s, 1)
        wait = self.cfg.timeout_ms * (1.5 ** (v - 1)) / 1000
        self.timers[s] = asyncio.get_running_loop().call_later(wait, self.expire, s, v)

    def enter_view(self, s: int, v: int) -> None:
        self.views[s] = v
        self.record({"op": "view", "s": s, "v": v})
        self.arm(s)

    def expire(self, s: int, v: int) -> None:
        if s not in self.commits and v == self.views.get(s, 1) and not self.stopped:
            outer = self.begin()
            try:
                self.time_out(s, v)
                self.arm(s)  # keep reporting until a TC or a Commit arrives
            finally:
                self.finish(outer, "timer")

    def time_out(self, s: int, v: int) -> None:
        """Time out of view v of slot s: send Timeout(s, v, the highest Prepare voted for, the highest QC) to
        every replica (again, unchanged, each timer period until a TC or a Commit arrives)."""
        first = (s, v) not in self.timed_out
        self.timed_out.add((s, v))
        hp = list(self.hp[s]) if s in self.hp else None
        hq = list(self.hq[s]) if s in self.hq else None
        if self.cfg.byzantine == "vote_all":
            hp = hq = None  # a Byzantine voter hides what it voted for
        op: dict[str, Any] = {"op": "timeout", "s": s, "v": v, "hp": _ref(hp), "hq": _ref(hq)}
        if self.cfg.byzantine == "silent_timeouts":
            if first:
                self.record(op)
            return
        body, mid = self.sign_id({"t": "Timeout", "from": self.me, "s": s, "v": v, "hp": hp, "hq": hq})
        if first:
            self.record({**op, "sent": self.first_send(mid)})
        self.to_all(body)

    def on_Timeout(self, data: bytes, sig: str, m: dict[str, Any]) -> None:
        s, v, src = m["s"], m["v"], m["from"]
        if s in self.commits:
            if src != self.me:  # a lagging replica: answer with the Commits it lacks, in order
                for t in range(s, s + CATCH_UP):
                    if t in self.commits:
                        self.send_raw(src, self.commits[t][0])
            return
        if not self.opened(s):
            self.defer(data, sig, m)
            return
        if m["hq"] is not None and not self.qc_valid("PrepareVote", s, m["hq"][0], cut_id(m["hq"][1]), m["hq"][2], self.q):
            self.reject("forged_certificate", f"Timeout({s}, {v}) carries an invalid PrepareQC", src)
            return
        box = self.timeouts.setdefault((s, v), {})
        view = self.views.get(s, 1)
        counted = src not in box and v >= view
        box[src] = (data, sig, m)
        if v < view:
            return
        if counted and src != self.me:
            self.record({"op": "got", "m": "Timeout", "s": s, "v": v, "from": src, "hp": _ref(m["hp"]),
                         "hq": _ref(m["hq"]), "recv": self.received()})
        if len(box) >= self.f + 1 and (s, v) not in self.timed_out:
            self.time_out(s, v)  # f+1 Timeouts: one honest replica gave up on the view; join it
        if len(box) >= self.q and view <= v:
            self.enter_view(s, v + 1)
            if self.leader(s, v + 1) == self.me and (s, v + 1) not in self.proposed:
                tc = [[d.decode(), x] for d, x, _ in box.values()]
                win = self.winner([mm for _, _, mm in box.values()])
                members = [[w, _ref(mm["hp"]), _ref(mm["hq"])] for w, (_, _, mm) in sorted(box.items())]
                self.propose(s, v + 1, win if win is not None else self.own_cut(s), {"tc": tc}, win is None, members)

    # -- execution -------------------------------------------------------------------------------
    def execute(self) -> None:
        """Execute committed slots in order, lanes in lane order, each lane's new cars oldest first."""
        while self.exec_slot + 1 in self.committed_cut:
            s = self.exec_slot + 1
            cut = self.committed_cut[s]
            plan: list[list[str]] = []
            missing = False  # a car or batch is missing (asked for): every lane's are asked for at once
            for a, t in enumerate(cut):
                if not self.cfg.lanes:  # a batch per lane at most
                    if t is not None and t[1] not in self.batches:
                        self.fetch(t[1], a, [])
                        missing = True
                    plan.append([] if t is None else [t[1]])
                    continue
                old = self.exec_tip[a]
                if t is None or (old is not None and t[0] <= old[0]):
                    plan.append([])
                    continue
                chain = self.chain(a, t[1], old, t[2])
                missing = missing or chain is None
                plan.append(chain or [])
            if missing:
                if self.cfg.lanes:
                    self.prefetch(s)
                return  # waiting for fetched cars or batches
            ntx = 0
            for a, chain in enumerate(plan):
                for c in chain:
                    ntx += self.apply(a, c)
                if chain and self.cfg.lanes:
                    self.exec_tip[a] = (self.cars[chain[-1]][1], chain[-1])
            self.exec_slot = s
            self.stats["executed_txs"] += ntx
            self.record({"op": "exec", "s": s, "log": self.log.hex(), "txs": ntx})

    def chain(self, a: int, c: str, old: tuple[int, str] | None, poa: list[list[Any]]) -> list[str] | None:
        """The cars of lane a from just above `old` up to car c, oldest first; None (and fetches) if any is missing."""
        out = []
        floor = old[0] if old is not None else 0
        while True:
            car = self.cars.get(c)
            if car is None or car[2] not in self.batches:
                self.fetch(c, a, poa)
                return None
            out.append(c)
            if car[1] <= floor + 1 or car[3] == "":
                break
            c, poa = car[3], []
        out.reverse()
        return out

    def prefetch(self, s: int) -> None:
        """Ask at once for the tips this replica lacks of the committed cuts from slot s on (up to CATCH_UP slots), so
        that a replica that missed cars fetches them lane by lane and cut by cut together, not one car after another."""
        for later in range(s, s + CATCH_UP):
            cut = self.committed_cut.get(later)
            if cut is None:
                return
            for a, t in enumerate(cut):
                if t is not None and (t[1] not in self.cars or self.cars[t[1]][2] not in self.batches):
                    self.fetch(t[1], a, t[2])

    def fetch(self, c: str, a: int, poa: list[list[Any]]) -> None:
        """Ask the car's author and its PoA's signers (everyone, for an uncertified ancestor) for car c."""
        now = time.monotonic()
        if now - self.fetched.get(c, -1.0) < FETCH_AGAIN:
            return
        self.fetched[c] = now
        self.stats["fetches"] += 1
        req = self.sign({"t": "Fetch", "from": self.me, "c": c, "n": self.stats["fetches"]})
        for w in {a, *[w for w, _ in poa]} - {self.me}:
            self.send_raw(w, req)
        if not poa:
            self.broadcast(req)

    def apply(self, a: int, c: str) -> int:
        """Execute car c of lane a (without lanes, c is a batch's digest) and ack its transactions if a is this replica."""
        payload = self.batches[self.cars[c][2] if self.cfg.lanes else c]
        self.log = hashlib.sha256(self.log + bytes.fromhex(c)).digest()
        acks = bytearray()
        for i in range(0, len(payload), TX_SIZE):
            _, _, key = TX_HEAD.unpack_from(payload, i)
            self.kv[key] = payload[i + TX_HEAD.size:i + TX_SIZE]
            acks += payload[i:i + ACK_SIZE]  # the transaction's id and send time
        if a == self.me and self.client is not None and not self.client.is_closing():
            self.client.send_body(bytes_frame("A", "acks", bytes(acks)))
        return len(payload) // TX_SIZE


def _ref(report: list[Any] | None) -> list[Any] | None:
    """A Timeout's reported Prepare or QC in the log: [view, cut digest], or None."""
    return None if report is None else [report[0], cut_id(report[1])]


def _tips(cut: list[Any]) -> list[Any]:
    """A proposed cut in the log: per lane null or [height, car digest] (its digest is the cut's, `cut_id`)."""
    return [None if t is None else [t[0], t[1]] for t in cut]


def commit_id(s: int, v: int, d: str) -> str:
    """The id, in the logs, of the CommitQC of (s, v, cut d): the leader that makes it sends it, and every
    replica that commits with it, whoever relays it, received it."""
    return f"C.{s}.{v}.{d[:16]}"
