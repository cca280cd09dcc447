"""The declared shape of the ops in an Autobahn replica's log (`replica.py`), checked as a log is read: a log is data,
and an op of an unknown kind, without a field its kind has, or with a field of the wrong type or out of range is
refused with its place, before any check reads it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MESSAGES = frozenset({"Car", "CarVote", "PoA", "Prepare", "PrepareVote", "Confirm", "ConfirmVote", "Timeout"})
LANE_MESSAGES = frozenset({"Car", "CarVote", "PoA"})
MAX_TEXT = 512  # digests, ids, reasons and details are short


class LogShapeError(ValueError):
    """An op of a replica's log that is not of its declared shape."""


def _int(x: Any, lo: int = 0, hi: int = 1 << 62) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and lo <= x < hi


def _text(x: Any) -> bool:
    return isinstance(x, str) and 0 < len(x) <= MAX_TEXT


def check_op(o: Any, n: int) -> None:
    """Refuse (LogShapeError, saying what is wrong) an op not of its kind's shape in a run of n replicas."""
    if not isinstance(o, dict) or not isinstance(o.get("op"), str):
        raise LogShapeError("an op is an object with \"op\", its kind")
    kind = o["op"]
    if kind not in REQUIRED:
        raise LogShapeError(f"an op of unknown kind {kind!r:.40} (the kinds: {', '.join(sorted(REQUIRED))})")
    need = list(REQUIRED[kind])
    if kind == "got":
        m = o.get("m")
        if m not in MESSAGES:
            raise LogShapeError(f"a got op's message m must be one of {', '.join(sorted(MESSAGES))}, got {m!r:.40}")
        need += ["a", "h", "c"] if m in LANE_MESSAGES else ["s", "v"]
        need += ["signers"] if m == "PoA" else ["hp", "hq"] if m == "Timeout" else [] if m in LANE_MESSAGES else ["d"]
    elif kind == "vote":
        need += ["a", "h", "c"] if o.get("kind") == "car" else ["s", "v", "d"]
    for name in need:
        if name not in o:
            raise LogShapeError(f"a {kind} op without its field {name!r}")
    for name, value in o.items():
        check = FIELDS.get(name)
        if check is None or (name == "from" and kind in ("reject", "unreachable")):  # a rejected frame's sender: any
            continue
        if not check(value, n):
            raise LogShapeError(f"a {kind} op's field {name!r} is not {DESCRIBED.get(name, 'of its type')}: "
                                f"{str(value)[:60]!r}")


def _replicas(x: Any, n: int) -> bool:
    return isinstance(x, list) and len(x) <= 4 * n and all(_int(w, 0, n) for w in x)


def _ref(x: Any, n: int) -> bool:
    return x is None or (isinstance(x, list) and len(x) == 2 and _int(x[0], 1) and _text(x[1]))


def _ids(x: Any, n: int) -> bool:
    return isinstance(x, list) and len(x) <= 64 * n and all(_text(i) for i in x)


def _tc(x: Any, n: int) -> bool:
    return isinstance(x, list) and len(x) <= n and all(
        isinstance(t, list) and len(t) == 3 and _int(t[0], 0, n) and _ref(t[1], n) and _ref(t[2], n) for t in x)


def _cut(x: Any, n: int) -> bool:
    return isinstance(x, list) and len(x) == n and all(
        t is None or (isinstance(t, list) and len(t) == 3 and _int(t[0], 1) and _text(t[1]) and _replicas(t[2], n))
        for t in x)


def _tips(x: Any, n: int) -> bool:
    return isinstance(x, list) and len(x) == n and all(
        t is None or (isinstance(t, list) and len(t) == 2 and _int(t[0], 1) and _text(t[1])) for t in x)


FIELDS: dict[str, Callable[[Any, int], bool]] = {  # each field's check, in a run of n replicas
    "s": lambda x, n: _int(x, 1), "v": lambda x, n: _int(x, 1), "h": lambda x, n: _int(x, 1),
    "a": lambda x, n: _int(x, 0, n), "from": lambda x, n: _int(x, 0, n), "signers": _replicas,
    "dst": lambda x, n: _replicas(x, n + 1),  # an equivocating leader's recipients
    "d": lambda x, n: _text(x), "c": lambda x, n: _text(x), "log": lambda x, n: _text(x),
    "kind": lambda x, n: x in ("car", "prepare", "confirm"), "m": lambda x, n: x in MESSAGES,
    "hp": _ref, "hq": _ref, "tc": _tc, "cut": _cut, "tips": _tips, "sent": _ids, "recv": _ids,
    "fast": lambda x, n: x in (0, 1) and not isinstance(x, bool), "txs": lambda x, n: _int(x),
    "free": lambda x, n: isinstance(x, bool), "equivocal": lambda x, n: isinstance(x, bool),
    "vote": lambda x, n: isinstance(x, bool), "via": lambda x, n: x in ("own", "msg", "ticket"),
    "reason": lambda x, n: _text(x), "detail": lambda x, n: isinstance(x, str) and len(x) <= MAX_TEXT,
}
DESCRIBED = {"s": "a slot (from 1)", "v": "a view (from 1)", "h": "a height (from 1)", "a": "a replica",
             "from": "a replica", "signers": "a list of replicas", "dst": "a list of replicas", "hp": "[view, digest]",
             "hq": "[view, digest]", "tc": "a list of [replica, report, report]",
             "cut": "a cut: per lane null or [height, digest, voters]",
             "tips": "a proposed cut: per lane null or [height, digest]", "sent": "a list of message ids",
             "recv": "a list of message ids", "fast": "0 or 1", "via": "own, msg or ticket"}

REQUIRED: dict[str, tuple[str, ...]] = {
    "got": ("m", "from"), "vote": ("kind",), "commit": ("s", "v", "d", "fast", "signers", "cut"),
    "lead_commit": ("s", "v", "d"), "propose": ("s", "v", "d", "free", "tips"), "timeout": ("s", "v", "hp", "hq"),
    "fast": ("s", "v", "d"), "view": ("s", "v"), "exec": ("s", "log"), "car_sent": ("a", "h", "c"),
    "poa": ("a", "h", "c", "signers"), "reject": ("reason", "detail"), "unreachable": (),
}
