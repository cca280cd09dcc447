"""Frames on the wire: a 4-byte big-endian length, then a JSON object (never pickle).

Data frames carry one message: `{"src": 0, "dst": 1, "clock": 7, "msg": {"tag": "Echo", "v": 1}}`, and
the sender's vector clock (`"vc": [3, 0, 1]`, one entry per process);
the receiver decodes `msg` into the spec's declared message type and checks every field, so a
malformed or unknown frame becomes a `FrameError` that names what is wrong. Control frames
between the runner and the processes are JSON objects with an `"op"`.
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Callable
from typing import Any

from lockstep.specs.lang.actors import ActorSystem
from lockstep.specs.lang.jsonvalues import from_json, to_json

LENGTH = struct.Struct(">I")
MAX_FRAME = 1 << 20


class FrameError(ValueError):
    """A frame that cannot be accepted; the message says why."""


def frame(obj: Any) -> bytes:
    """A JSON object as one length-prefixed frame."""
    body = json.dumps(obj, separators=(",", ":")).encode()
    return LENGTH.pack(len(body)) + body


class FrameReader:
    """Splits a byte stream into frame bodies. An oversized length cannot be resynchronised: `broken` is set."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.broken: str | None = None

    def feed(self, data: bytes) -> list[bytes]:
        if self.broken:
            return []
        self.buf += data
        out = []
        buf = self.buf
        pos = 0
        while len(buf) - pos >= 4:
            (n,) = LENGTH.unpack_from(buf, pos)
            if n > MAX_FRAME:
                self.broken = f"a frame announces {n} bytes, more than the limit of {MAX_FRAME}"
                break
            if len(buf) - pos - 4 < n:
                break
            out.append(bytes(buf[pos + 4:pos + 4 + n]))
            pos += 4 + n
        del buf[:pos]
        return out


class FrameProtocol(asyncio.Protocol):
    """A connection that hands each frame body to `on_frame`; a stream that cannot be split into frames
    is reported to `on_broken` and closed. `after` runs once the frames of each read are handled."""

    def __init__(self, on_frame: Callable[[bytes], None], on_broken: Callable[[str], None],
                 after: Callable[[], None] | None = None):
        self.on_frame, self.on_broken, self.after = on_frame, on_broken, after
        self.reader = FrameReader()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        for body in self.reader.feed(data):
            self.on_frame(body)
        if self.reader.broken:
            self.on_broken(self.reader.broken)
            self.transport.close()
        if self.after is not None:
            self.after()


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any]:
    """The next frame of a stream, parsed; IncompleteReadError when the stream ends."""
    head = await reader.readexactly(LENGTH.size)
    return parse(await reader.readexactly(LENGTH.unpack(head)[0]))


def parse(body: bytes) -> dict[str, Any]:
    """A frame body as a JSON object, or FrameError."""
    try:
        obj = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FrameError(f"not JSON ({e})") from None
    if not isinstance(obj, dict):
        raise FrameError(f"expected a JSON object, got {type(obj).__name__}")
    return obj


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
        obj: dict[str, Any] = {"src": src, "dst": dst, "clock": clock, "msg": self.msg_json(msg)}
        if vc is not None:
            obj["vc"] = vc
        return frame(obj)

    def decode(self, body: bytes) -> tuple[int, int, int, Any]:
        """(src, dst, clock, msg) of a data frame, validated against the spec's types."""
        return self.decode_frame(body)[:4]

    def decode_frame(self, body: bytes) -> tuple[int, int, int, Any, list[int] | None]:
        """(src, dst, clock, msg, vector clock or None) of a data frame, validated."""
        obj = parse(body)
        vc = obj.get("vc")
        if vc is not None and not (isinstance(vc, list) and len(vc) == self.nproc and
                                   all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in vc)):
            raise FrameError(f"vc is not a vector clock of {self.nproc} non-negative integers")
        src, dst, clock = obj.get("src"), obj.get("dst"), obj.get("clock")
        for name, v in (("src", src), ("dst", dst)):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < self.nproc:
                raise FrameError(f"{name} {v!r} is not a process id (0..{self.nproc - 1}): unknown sender or receiver")
        if isinstance(clock, bool) or not isinstance(clock, int) or clock < 0:
            raise FrameError(f"clock {clock!r} is not a non-negative integer")
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
            except ValueError as e:
                raise FrameError(str(e)) from None
            if key is not None:
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
