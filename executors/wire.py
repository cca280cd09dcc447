"""Frames on the wire: authenticated, length-prefixed JSON objects (never pickle), at most MAX_FRAME bytes.

Every connection of a run — the runner's control connections, data connections between processes,
the relay's — is an authenticated session:

1. The accepting side sends a fresh 16-byte challenge.
2. The connecting side answers with its opening frame: its member id, the id of the member it means
   to reach, and HMAC-SHA256(run secret, "open" | challenge | ids). Only a process given the run's
   secret at spawn can produce it; a wrong one is rejected and the connection closed.
   The accepting side buffers nothing beyond that hello until it is authenticated (a longer one is
   refused at its length), closes a connection that has not presented it within the run's handshake
   timeout, and keeps at most a bounded number of connections waiting to authenticate: one more
   is closed at once, so a flood of idle or slow connections costs a node a few bytes each, for a
   few seconds.
3. Every later frame, in both directions, is `length | tag | body` with tag = HMAC-SHA256 over the
   body and the frame's position in its direction of the session, under a key derived from the
   secret, the challenge and both ids. A forged, altered, replayed, reordered or dropped frame fails
   its tag: it is rejected and the connection closed. A frame longer than MAX_FRAME is refused
   before it is buffered.

The secret is made by the runner (`Cluster`) per run and handed to each process at spawn
(`member_main`, through multiprocessing's pipe: never on a command line, in the environment or in
a file). A process finds its credentials with `credentials()`. Bodies are JSON objects; data
frames carry one message `{"src": 0, "dst": 1, "clock": 7, "msg": {...}}` and the sender's vector
clock (`"vc": [3, 0, 1]`, one entry per process), which the receiver decodes into the spec's declared
message type (`MessageCodec`), so a malformed frame is a `FrameError` that names what is wrong.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import signal
import struct
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from lockstep.checker.safejson import JSONInputError
from lockstep.checker.safejson import loads as json_loads
from lockstep.specs.lang.actors import ActorSystem
from lockstep.specs.lang.jsonvalues import from_json, to_json

LENGTH = struct.Struct(">I")
IDS = struct.Struct(">II")
COUNTER = struct.Struct(">Q")
MAX_FRAME = 1 << 20  # bytes of one frame's tag and body
HANDSHAKE_TIMEOUT = 5.0  # seconds an accepted connection has to present its hello
MAX_PENDING = 64  # connections waiting to authenticate on one listening socket, beyond the members expected there
MAX_DEPTH = 32  # nesting of a frame's JSON
TAG = 32  # HMAC-SHA256
HELLO = IDS.size + TAG  # bytes of the opening frame's body: the two member ids and their tag
CHALLENGE = 16
RUNNER = 0xFFFFFFFF  # member ids beyond the processes': the runner and the relay
RELAY = 0xFFFFFFFE


class FrameError(ValueError):
    """A frame that cannot be accepted; the message says why."""


def member_name(mid: int | None) -> str:
    return {RUNNER: "the runner", RELAY: "the relay", None: "an unidentified peer"}.get(mid, f"process {mid}")


# -- credentials -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Credentials:
    """A member's credentials for one run: the run's secret and its own id; and how its listening sockets
    admit peers that have not authenticated yet (`handshake` seconds each, `pending` of them at once beyond
    the members expected there)."""

    secret: bytes = field(repr=False)
    me: int
    handshake: float = HANDSHAKE_TIMEOUT
    pending: int = MAX_PENDING

    def __post_init__(self) -> None:
        if not isinstance(self.secret, bytes) or len(self.secret) < 16:
            raise ValueError("a run secret is at least 16 random bytes")
        if not (self.handshake > 0 and self.pending >= 1):
            raise ValueError("a handshake takes a positive time, and at least one connection may wait for it")

    @staticmethod
    def fresh(me: int) -> Credentials:
        """A new run secret (the runner's)."""
        return Credentials(os.urandom(32), me)

    def as_member(self, me: int) -> Credentials:
        return replace(self, me=me)


_mine: list[Credentials] = []


def install(creds: Credentials) -> None:
    """Make `creds` this process's credentials (done at spawn by `member_main`)."""
    _mine[:] = [creds]


def credentials() -> Credentials:
    """This process's credentials; a RuntimeError in a process that was not spawned as a member of a run."""
    if not _mine:
        raise RuntimeError("this process was not started as a member of a run (no run secret): start it with "
                           "Cluster, which hands each process its credentials")
    return _mine[0]


def member_main(target: Callable[[dict[str, Any]], None], cfg: dict[str, Any], creds: Credentials) -> None:
    """The entry point of every spawned process: install its credentials, then run `target(cfg)`. A member ignores
    SIGINT: a Ctrl-C reaches the whole process group, and the runner stops the members itself, so that each
    closes its trace."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    install(creds)
    target(cfg)


# -- frames ------------------------------------------------------------------------------------------


class FrameReader:
    """Splits a byte stream into frame payloads. An oversized length cannot be resynchronised: `broken` is set."""

    def __init__(self, limit: int = MAX_FRAME) -> None:
        self.buf = bytearray()
        self.broken: str | None = None
        self.limit = limit

    def feed(self, data: bytes) -> list[bytes]:
        if self.broken:
            return []
        self.buf += data
        out = []
        buf = self.buf
        pos = 0
        while len(buf) - pos >= 4:
            (n,) = LENGTH.unpack_from(buf, pos)
            if n > self.limit:
                self.broken = f"a frame announces {n:,} bytes, more than the limit of {self.limit:,}"
                break
            if len(buf) - pos - 4 < n:
                break
            out.append(bytes(buf[pos + 4:pos + 4 + n]))
            pos += 4 + n
        del buf[:pos]
        return out


def parse(body: bytes) -> dict[str, Any]:
    """A frame body as a JSON object, or FrameError (not JSON, nested too deeply, not an object)."""
    try:
        obj = json_loads(body, "frame", MAX_DEPTH)
    except JSONInputError as e:
        raise FrameError(str(e).removeprefix("frame: ").removeprefix("frame")) from None
    if not isinstance(obj, dict):
        raise FrameError(f"expected a JSON object, got {type(obj).__name__}")
    return obj


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class Session:
    """The keys and frame counters of one authenticated connection, seen from one side."""

    def __init__(self, secret: bytes, challenge: bytes, client: int, server: int, i_am_client: bool):
        base = hmac.digest(secret, b"lockstep session" + challenge + IDS.pack(client, server), "sha256")
        c2s = hmac.digest(base, b"client to server", "sha256")
        s2c = hmac.digest(base, b"server to client", "sha256")
        self.send_key, self.recv_key = (c2s, s2c) if i_am_client else (s2c, c2s)
        self.sent = self.received = 0

    def seal(self, body: bytes) -> bytes:
        """The frame carrying `body`: its length, its tag, the body."""
        tag = hmac.digest(self.send_key, COUNTER.pack(self.sent) + body, "sha256")
        self.sent += 1
        return LENGTH.pack(TAG + len(body)) + tag + body

    def open(self, payload: bytes) -> bytes:
        """The body of the next frame received, or FrameError if its tag is not the one expected there."""
        if len(payload) < TAG:
            raise FrameError("a frame too short to carry an authentication tag")
        want = hmac.digest(self.recv_key, COUNTER.pack(self.received) + payload[TAG:], "sha256")
        if not hmac.compare_digest(want, payload[:TAG]):
            raise FrameError("a frame whose authentication tag is wrong (forged, altered, replayed or out of order)")
        self.received += 1
        return payload[TAG:]


def opening_tag(secret: bytes, challenge: bytes, client: int, server: int) -> bytes:
    return hmac.digest(secret, b"lockstep open" + challenge + IDS.pack(client, server), "sha256")


# -- authenticated connections ---------------------------------------------------------------------------


class Gate:
    """The connections of one listening socket that have not authenticated yet: at most `limit` at once,
    each for at most `timeout` seconds."""

    def __init__(self, limit: int, timeout: float) -> None:
        self.limit, self.timeout = limit, timeout
        self.waiting: set[Endpoint] = set()


class Endpoint(asyncio.Protocol):
    """One side of an authenticated connection (see the module docstring).

    `on_frame(endpoint, body)` gets each authenticated body (`endpoint.peer` is the sender's member id); without it, bodies
    wait in a queue for `read()`. `on_rejected(reason)` hears of a connection that failed to authenticate
    or broke the framing (it is then closed). `accept(peer)` may refuse an authenticated peer. `after()`
    runs once the frames of each read are handled. An accepting endpoint waits for its peer's hello at its
    listening socket's `gate` (see `serve`)."""

    def __init__(self, creds: Credentials, server_id: int | None = None,
                 on_frame: Callable[[Endpoint, bytes], None] | None = None,
                 on_rejected: Callable[[str], None] | None = None,
                 accept: Callable[[int], bool] | None = None, after: Callable[[], None] | None = None,
                 on_lost: Callable[[Endpoint], None] | None = None, gate: Gate | None = None):
        self.creds = creds
        self.client = server_id is not None  # the connecting side names whom it means to reach
        self.peer: int | None = server_id
        self.on_frame, self.on_rejected, self.accept, self.after, self.on_lost = \
            on_frame, on_rejected, accept, after, on_lost
        self.reader = FrameReader()
        self.session: Session | None = None
        self.challenge = b""
        self.hello = bytearray()  # the accepting side's: the opening frame as it arrives (never more)
        self.gate = gate
        self.timer: asyncio.TimerHandle | None = None
        self.pending: list[bytes] = []  # bodies sent before the session is open
        self.queue: asyncio.Queue | None = None if on_frame is not None else asyncio.Queue()
        self.ready = asyncio.get_running_loop().create_future()  # resolved when the session opens (or fails)
        self.transport: asyncio.Transport | None = None
        self.closed = False

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.client:
            return
        gate = self.gate
        if gate is not None:
            if len(gate.waiting) >= gate.limit:
                self._reject(f"a connection beyond the {gate.limit} waiting to authenticate (closed at once)")
                return
            gate.waiting.add(self)
            self.timer = asyncio.get_running_loop().call_later(gate.timeout, self._expire)
        self.challenge = os.urandom(CHALLENGE)
        self.transport.write(self.challenge)  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        if self.session is None:
            try:
                data = self._take_challenge(data) if self.client else self._take_hello(data)
            except FrameError as e:
                self._reject(f"{e} from {member_name(self.peer)}")
                return
            if self.session is None:
                return
        for payload in self.reader.feed(data):
            if self.closed:
                return
            try:
                body = self.session.open(payload)  # type: ignore[union-attr]
            except FrameError as e:
                self._reject(f"{e} from {member_name(self.peer)}")
                return
            if self.on_frame is not None:
                self.on_frame(self, body)
            else:
                self.queue.put_nowait(body)  # type: ignore[union-attr]
        if self.reader.broken:
            self._reject(f"{self.reader.broken} (from {member_name(self.peer)})")
            return
        if self.after is not None:
            self.after()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._admitted()
        if self.queue is not None:
            self.queue.put_nowait(None)
        if not self.ready.done():
            self.ready.set_result(None)  # never authenticated
        if self.on_lost is not None:
            self.on_lost(self)

    # -- the handshake
    def _take_challenge(self, data: bytes) -> bytes:
        """Keep the server's challenge; once it is whole, open the session. What follows it is returned."""
        need = CHALLENGE - len(self.challenge)
        self.challenge += data[:need]
        if len(self.challenge) == CHALLENGE:
            self._open_as_client()
        return data[need:]

    def _take_hello(self, data: bytes) -> bytes:
        """Keep the client's opening frame, and nothing beyond it, until it is whole; then authenticate it
        (FrameError if it is not a hello of this run). What follows it is returned."""
        need = LENGTH.size + HELLO - len(self.hello)
        self.hello += data[:need]
        if len(self.hello) >= LENGTH.size:
            (n,) = LENGTH.unpack_from(self.hello)
            if n != HELLO:
                more = f", more than the limit of {HELLO} before authentication" if n > HELLO else ""
                raise FrameError(f"a connection that does not open with an authenticated hello (no run secret?): "
                                 f"its first frame announces {n:,} bytes{more}")
        if len(self.hello) < LENGTH.size + HELLO:
            return b""
        hello, self.hello = bytes(self.hello[LENGTH.size:]), bytearray()
        self._open_as_server(hello)
        return data[need:]

    def _expire(self) -> None:
        if self.session is None and not self.closed:
            self._reject(f"{member_name(None)} did not authenticate within {self.gate.timeout:g} s "  # type: ignore[union-attr]
                         "(connection closed)")

    def _admitted(self) -> None:
        """This connection no longer waits at its gate (authenticated, refused or closed)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.gate is not None:
            self.gate.waiting.discard(self)

    def _open_as_client(self) -> None:
        me, server = self.creds.me, self.peer
        assert server is not None
        tag = opening_tag(self.creds.secret, self.challenge, me, server)
        self.transport.write(LENGTH.pack(IDS.size + TAG) + IDS.pack(me, server) + tag)  # type: ignore[union-attr]
        self.session = Session(self.creds.secret, self.challenge, me, server, True)
        pending, self.pending = self.pending, []
        for body in pending:
            self.send_body(body)
        if not self.ready.done():
            self.ready.set_result(self)

    def _open_as_server(self, payload: bytes) -> None:
        client, server = IDS.unpack_from(payload)
        if server != self.creds.me:
            raise FrameError(f"an opening frame for {member_name(server)} reached {member_name(self.creds.me)}")
        want = opening_tag(self.creds.secret, self.challenge, client, server)
        if not hmac.compare_digest(want, payload[IDS.size:]):
            raise FrameError(f"an opening frame claiming to be {member_name(client)} without the run's secret")
        if self.accept is not None and not self.accept(client):
            raise FrameError(f"{member_name(client)} may not connect here")
        self.peer = client
        self.session = Session(self.creds.secret, self.challenge, client, server, False)
        self._admitted()
        if not self.ready.done():
            self.ready.set_result(self)

    def _reject(self, reason: str) -> None:
        self.closed = True
        self._admitted()
        if self.on_rejected is not None:
            self.on_rejected(reason)
        if self.transport is not None:
            self.transport.close()

    # -- sending and receiving
    def send_body(self, body: bytes) -> None:
        """Send one frame (queued until the session is open); dropped once the connection is closed."""
        if self.session is None:
            self.pending.append(body)
            return
        t = self.transport
        if t is not None and not t.is_closing():
            t.write(self.session.seal(body))

    def send(self, obj: Any) -> None:
        self.send_body(dumps(obj))

    def send_many(self, bodies: list[bytes]) -> None:
        """Several frames in one write."""
        if self.session is None:
            self.pending.extend(bodies)
            return
        t = self.transport
        if t is not None and not t.is_closing():
            seal = self.session.seal
            t.write(b"".join(seal(b) for b in bodies))

    async def read(self) -> dict[str, Any]:
        """The next frame's JSON object (endpoints without `on_frame`); ConnectionError when the connection ends."""
        assert self.queue is not None, "this endpoint hands its frames to on_frame"
        body = await self.queue.get()
        if body is None:
            self.queue.put_nowait(None)
            raise ConnectionError("the connection closed")
        return parse(body)

    def is_closing(self) -> bool:
        return self.closed or self.transport is None or self.transport.is_closing()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def drain(self) -> None:
        """Wait until what was written has been handed to the kernel (best effort)."""
        for _ in range(200):
            t = self.transport
            if t is None or t.is_closing() or t.get_write_buffer_size() == 0:
                return
            await asyncio.sleep(0.005)


async def connect(port: int, creds: Credentials, server_id: int, **handlers: Any) -> Endpoint:
    """An authenticated connection to member `server_id` listening on 127.0.0.1:`port` (see `Endpoint`)."""
    loop = asyncio.get_running_loop()
    _, ep = await loop.create_connection(lambda: Endpoint(creds, server_id, **handlers), "127.0.0.1", port)
    return ep


async def serve(creds: Credentials, peers: int = 0, **handlers: Any) -> tuple[asyncio.AbstractServer, int]:
    """A listening socket on 127.0.0.1 whose connections are authenticated `Endpoint`s; (server, port).

    The handlers are those of `Endpoint`; `on_frame` is required (frames of every peer arrive there).
    `peers` members of the run may connect here at once: besides them, `creds.pending` connections may
    wait to authenticate (each at most `creds.handshake` seconds); more are closed as they arrive."""
    loop = asyncio.get_running_loop()
    gate = Gate(creds.pending + peers, creds.handshake)
    server = await loop.create_server(lambda: Endpoint(creds, None, gate=gate, **handlers), "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def read_frame(reader: asyncio.StreamReader, limit: int = MAX_FRAME) -> bytes:
    """The next frame payload of a plain stream (its length checked against `limit` before it is read);
    IncompleteReadError when the stream ends, FrameError for an oversized length."""
    (n,) = LENGTH.unpack(await reader.readexactly(LENGTH.size))
    if n > limit:
        raise FrameError(f"a frame announces {n:,} bytes, more than the limit of {limit:,}")
    return await reader.readexactly(n)


# -- data frames of actor systems ---------------------------------------------------------------------------


MAX_CLOCK = 1 << 62  # a Lamport clock beyond this is refused (no run reaches it; a forged one would stall the order)


def vector_clock(vc: Any, n: int) -> list[int] | None:
    """A frame's vector clock (None when it has none), checked: n integers in [0, MAX_CLOCK)."""
    if vc is not None and not (isinstance(vc, list) and len(vc) == n and
                               all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < MAX_CLOCK for x in vc)):
        raise FrameError(f"vc is not a vector clock of {n} non-negative integers below 2**62")
    return vc


class MessageCodec:
    """Data frames of one actor system: messages encoded from and decoded into its declared types."""

    def __init__(self, system: ActorSystem):
        self.system = system
        self.nproc = system.proc.size
        self._json: dict[Any, Any] = {}
        self._decoded: dict[frozenset, Any] = {}  # already validated messages, by their JSON fields

    def msg_json(self, msg: Any) -> Any:
        j = self._json.get(msg)
        if j is None:
            j = self._json[msg] = to_json(self.system.message, msg)
        return j

    def encode(self, src: int, dst: int, clock: int, msg: Any, vc: list[int] | None = None) -> bytes:
        """The body of a data frame (with the sender's vector clock, when it keeps one)."""
        obj: dict[str, Any] = {"src": src, "dst": dst, "clock": clock, "msg": self.msg_json(msg)}
        if vc is not None:
            obj["vc"] = vc
        return dumps(obj)

    def decode(self, body: bytes) -> tuple[int, int, int, Any]:
        """(src, dst, clock, msg) of a data frame, validated against the spec's types."""
        return self.decode_frame(body)[:4]

    def decode_frame(self, body: bytes) -> tuple[int, int, int, Any, list[int] | None]:
        """(src, dst, clock, msg, vector clock or None) of a data frame, validated."""
        obj = parse(body)
        vc = vector_clock(obj.get("vc"), self.nproc)
        src, dst, clock = obj.get("src"), obj.get("dst"), obj.get("clock")
        for name, v in (("src", src), ("dst", dst)):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < self.nproc:
                raise FrameError(f"{name} {v!r} is not a process id (0..{self.nproc - 1}): unknown sender or receiver")
        if isinstance(clock, bool) or not isinstance(clock, int) or not 0 <= clock < MAX_CLOCK:
            raise FrameError(f"clock {clock!r} is not a non-negative integer below 2**62")
        if "msg" not in obj:
            raise FrameError("no \"msg\"")
        return src, dst, clock, self.decode_msg(obj["msg"]), vc

    def decode_msg(self, j: Any) -> Any:
        """A message from its JSON form, validated against the declared type (FrameError if it is not one)."""
        key = _flat_key(j)
        msg = self._decoded.get(key) if key is not None else None
        if msg is None:
            try:
                msg = from_json(self.system.message, j, "msg")
            except (ValueError, TypeError, RecursionError) as e:
                raise FrameError(str(e) or type(e).__name__) from None
            if key is not None and len(self._decoded) < 100_000:
                self._decoded[key] = msg
        return msg


def _flat_key(j: Any) -> frozenset | None:
    """A hashable key for a message object whose fields are all scalars (None otherwise)."""
    if not isinstance(j, dict):
        return None
    for v in j.values():
        if isinstance(v, (dict, list)):
            return None
    return frozenset((k, (type(v), v)) for k, v in j.items())
