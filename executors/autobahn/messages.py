"""The messages replicas exchange, their declared fields, and the frames they travel in.

Frames travel on the run's authenticated channels (`lockstep.executors.wire`: only the run's
processes can connect, and each frame's sender is known); a frame body is a JSON object whose `k`
says what it holds:

- `S`: a signed protocol message `{"k": "S", "m": {...}, "sig": hex}`: `sig` is the sender's ed25519
  signature of `canonical(m)`. The channel says which member sent the frame; the signature says who
  wrote the message (a fetched car or a forwarded Commit is relayed by another replica);
- `B`: a batch of transactions, base64 (content-addressed: it is used only when a signed car names its digest);
- `T`: transactions from the client; `A`: the ids and send times of executed transactions, to the client.

A transaction is TX_SIZE bytes: a u64 id, a f64 send time, a u32 key, then the value. Every signed
message is decoded into the fields its type declares (`Schema.check`), with sizes checked: anything
else is a `Malformed` that the receiver counts, logs and drops. Nothing received is ever unpickled or run.
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

from ..wire import MAX_FRAME, TAG
from .crypto import canonical, digest

TX_SIZE = 512
TX_HEAD = struct.Struct(">QdI")
ACK_SIZE = 16  # an executed transaction's id and send time, echoed to the client
MAX_BATCH = (MAX_FRAME - TAG - 64) * 3 // 4 // TX_SIZE  # transactions in one batch: its base64 fits in one frame
MAX_VIEW = 1 << 20
MAX_SLOT = 1 << 40


class Malformed(ValueError):
    """A message that is not one of the declared messages; the text says what is wrong."""


def car_id(a: int, h: int, b: str, p: str) -> str:
    """The digest that names a car: its author, height, batch digest and parent car digest."""
    return digest(canonical([a, h, b, p]))


def message_id(data: bytes) -> str:
    """The id of a signed message in the replicas' logs: the start of the digest of its signed bytes."""
    return digest(data)[:16]


def cut_id(cut: list[Any]) -> str:
    """The digest of a cut: per lane, the (height, car digest) of its tip, or None."""
    return digest(canonical([None if t is None else [t[0], t[1]] for t in cut]))


def statement(kind: str, voter: int, **fields: Any) -> bytes:
    """The bytes a vote is signed as (a certificate rebuilds them for each of its signers)."""
    return canonical({"t": kind, "from": voter, **fields})


# -- declared fields -------------------------------------------------------------------------------

def _int(v: Any, lo: int, hi: int, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise Malformed(f"{what} is {v!r}, not a whole number in {lo}..{hi}")
    return v


def _hex(v: Any, size: int, what: str, empty: bool = False) -> str:
    if empty and v == "":
        return v
    if not isinstance(v, str) or len(v) != size or any(c not in "0123456789abcdef" for c in v):
        raise Malformed(f"{what} is not {size} lowercase hex digits")
    return v


class Schema:
    """Checks messages of a system of n replicas against their declared fields."""

    def __init__(self, n: int):
        self.n = n

    def sigs(self, v: Any, what: str) -> list[list[Any]]:
        if not isinstance(v, list) or len(v) > self.n:
            raise Malformed(f"{what} is not a list of at most {self.n} (signer, signature) pairs")
        seen = set()
        for e in v:
            if not isinstance(e, list) or len(e) != 2:
                raise Malformed(f"{what}: an entry is not a (signer, signature) pair")
            who = _int(e[0], 0, self.n - 1, f"{what} signer")
            _hex(e[1], 128, f"{what} signature")
            if who in seen:
                raise Malformed(f"{what}: signer {who} appears twice")
            seen.add(who)
        return v

    def cut(self, v: Any) -> list[Any]:
        if not isinstance(v, list) or len(v) != self.n:
            raise Malformed(f"cut is not a list of {self.n} tips")
        for a, t in enumerate(v):
            if t is None:
                continue
            if not isinstance(t, list) or len(t) != 3:
                raise Malformed(f"cut lane {a}: a tip is [height, car digest, PoA]")
            _int(t[0], 1, MAX_SLOT, f"cut lane {a} height")
            _hex(t[1], 64, f"cut lane {a} car digest")
            self.sigs(t[2], f"cut lane {a} PoA")
        return v

    def ticket(self, v: Any) -> Any:
        if v is None:
            return v
        if not isinstance(v, dict) or len(v) != 1:
            raise Malformed("ticket is null, {\"commit\": Commit} or {\"tc\": [signed Timeouts]}")
        if "commit" in v:
            return {"commit": self.check(v["commit"], "Commit")}
        tc = v.get("tc")
        if not isinstance(tc, list) or not 0 < len(tc) <= self.n:
            raise Malformed(f"ticket tc is not a list of 1..{self.n} signed Timeouts")
        for e in tc:
            if not isinstance(e, list) or len(e) != 2 or not isinstance(e[0], str) or len(e[0]) > 1 << 18:
                raise Malformed("ticket tc: an entry is [Timeout JSON, signature]")
            _hex(e[1], 128, "ticket tc signature")
        return v

    def check(self, m: Any, want: str | None = None) -> dict[str, Any]:
        """`m` if it is a well-formed message (of type `want`, if given); Malformed otherwise."""
        if not isinstance(m, dict):
            raise Malformed("a message is a JSON object")
        t = m.get("t")
        fields = FIELDS.get(t) if isinstance(t, str) else None
        if fields is None or (want is not None and t != want):
            raise Malformed(f"unknown message type {t!r}" + (f" (expected {want})" if want else ""))
        if set(m) != {"t", "from", *fields}:
            extra = sorted(set(m) ^ {"t", "from", *fields})
            raise Malformed(f"{t}: fields {extra} missing or not declared")
        _int(m["from"], 0, self.n - 1, f"{t}.from")
        for name, kind in fields.items():
            v, what = m[name], f"{t}.{name}"
            if kind == "slot":
                _int(v, 1, MAX_SLOT, what)
            elif kind == "height":
                _int(v, 1, MAX_SLOT, what)
            elif kind == "view":
                _int(v, 1, MAX_VIEW, what)
            elif kind == "lane":
                _int(v, 0, self.n - 1, what)
            elif kind == "bit":
                _int(v, 0, 1, what)
            elif kind == "digest":
                _hex(v, 64, what)
            elif kind == "parent":
                _hex(v, 64, what, empty=True)
            elif kind == "sigs":
                self.sigs(v, what)
            elif kind == "cut":
                self.cut(v)
            elif kind == "ticket":
                self.ticket(v)
            elif kind == "high_prepare":
                if v is not None:
                    if not isinstance(v, list) or len(v) != 2:
                        raise Malformed(f"{what} is null or [view, cut]")
                    _int(v[0], 1, MAX_VIEW, what + " view")
                    self.cut(v[1])
            elif kind == "high_qc":
                if v is not None:
                    if not isinstance(v, list) or len(v) != 3:
                        raise Malformed(f"{what} is null or [view, cut, signatures]")
                    _int(v[0], 1, MAX_VIEW, what + " view")
                    self.cut(v[1])
                    self.sigs(v[2], what)
        return m


FIELDS: dict[str, dict[str, str]] = {
    "Car": {"h": "height", "b": "digest", "p": "parent", "pq": "sigs"},
    "CarVote": {"a": "lane", "h": "height", "c": "digest"},
    "PoA": {"a": "lane", "h": "height", "c": "digest", "sigs": "sigs"},
    "Prepare": {"s": "slot", "v": "view", "cut": "cut", "tk": "ticket"},
    "PrepareVote": {"s": "slot", "v": "view", "d": "digest"},
    "Confirm": {"s": "slot", "v": "view", "cut": "cut", "qc": "sigs"},
    "ConfirmVote": {"s": "slot", "v": "view", "d": "digest"},
    "Commit": {"s": "slot", "v": "view", "cut": "cut", "fast": "bit", "qc": "sigs"},
    "Timeout": {"s": "slot", "v": "view", "hp": "high_prepare", "hq": "high_qc"},
    "Fetch": {"c": "digest", "n": "height"},  # n: a request number, so that a repeated request is not a replay
}


def signed_frame(data: bytes, sig: str) -> bytes:
    """The body of an `S` frame carrying the canonical message `data` and its signature (hex)."""
    return b'{"k":"S","m":' + data + b',"sig":"' + sig.encode() + b'"}'


def decode_signed(frame: dict[str, Any]) -> tuple[bytes, str, Any]:
    """(signed bytes, signature hex, message) of a parsed `S` frame; Malformed if it is not one."""
    if set(frame) != {"k", "m", "sig"}:
        raise Malformed("a signed frame is {\"k\": \"S\", \"m\": message, \"sig\": signature}")
    sig = _hex(frame["sig"], 128, "the signature")
    m = frame["m"]
    if not isinstance(m, dict):
        raise Malformed("a signed message is a JSON object")
    return canonical(m), sig, m


def bytes_frame(kind: str, field: str, payload: bytes) -> bytes:
    """The body of a `B`, `T` or `A` frame: `payload` in base64 under `field`."""
    return b'{"k":"' + kind.encode() + b'","' + field.encode() + b'":"' + base64.b64encode(payload) + b'"}'


def frame_payload(frame: dict[str, Any], field: str, unit: int, most: int) -> bytes:
    """The bytes of a `B`, `T` or `A` frame: whole units of `unit` bytes, at most `most` of them; Malformed otherwise."""
    if set(frame) != {"k", field}:
        raise Malformed(f"a {frame['k']} frame is {{\"k\": \"{frame['k']}\", \"{field}\": base64}}")
    v = frame[field]
    if not isinstance(v, str) or len(v) > (most * unit + 2) // 3 * 4:
        raise Malformed(f"{field} is not base64 of at most {most} units of {unit} bytes")
    try:
        data = base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise Malformed(f"{field} is not base64") from None
    if len(data) % unit:
        raise Malformed(f"{field} is not a whole number of {unit}-byte units")
    return data


def split_txs(payload: bytes) -> list[bytes]:
    if len(payload) % TX_SIZE or len(payload) // TX_SIZE > MAX_BATCH:
        raise Malformed(f"a batch is at most {MAX_BATCH} transactions of {TX_SIZE} bytes")
    return [payload[i:i + TX_SIZE] for i in range(0, len(payload), TX_SIZE)]
