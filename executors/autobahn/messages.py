"""The messages replicas exchange, their declared fields, and the frames they travel in.

Frames are a 4-byte big-endian length and a body whose first byte says what it holds:

- `S`: a signed protocol message: 64 bytes of ed25519 signature, then the canonical JSON that was signed;
- `B`: a batch of transactions (content-addressed: it is used only when a signed car names its digest);
- `T`: transactions from the client; `A`: the ids of executed transactions, to the client.

A transaction is TX_SIZE bytes: a u64 id, a f64 send time, a u32 key, then the value. Every signed
message is decoded into the fields its type declares (`decode`), with sizes checked: anything else is
a `Malformed` that the receiver counts, logs and drops. Nothing received is ever unpickled or run.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from .crypto import canonical, digest

TX_SIZE = 512
TX_HEAD = struct.Struct(">QdI")
MAX_BATCH = 4096  # transactions in one batch
MAX_VIEW = 1 << 20
MAX_SLOT = 1 << 40


class Malformed(ValueError):
    """A message that is not one of the declared messages; the text says what is wrong."""


def car_id(a: int, h: int, b: str, p: str) -> str:
    """The digest that names a car: its author, height, batch digest and parent car digest."""
    return digest(canonical([a, h, b, p]))


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


def decode_signed(body: bytes) -> tuple[bytes, str, Any]:
    """(signed bytes, signature hex, parsed JSON) of an `S` frame body."""
    if len(body) < 66 or body[:1] != b"S":
        raise Malformed("a signed frame is S, a 64-byte signature, then JSON")
    data = body[65:]
    try:
        obj = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise Malformed(f"not JSON ({e})") from None
    if canonical(obj) != data:
        raise Malformed("the signed JSON is not in canonical form (sorted keys, no spaces)")
    return data, body[1:65].hex(), obj


def signed_body(data: bytes, sig: str) -> bytes:
    return b"S" + bytes.fromhex(sig) + data


def split_txs(payload: bytes) -> list[bytes]:
    if len(payload) % TX_SIZE or len(payload) // TX_SIZE > MAX_BATCH:
        raise Malformed(f"a batch is at most {MAX_BATCH} transactions of {TX_SIZE} bytes")
    return [payload[i:i + TX_SIZE] for i in range(0, len(payload), TX_SIZE)]
