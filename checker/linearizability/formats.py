"""Reading histories: Porcupine's Jepsen logs, Jepsen/Knossos EDN histories, and Lockstep's JSON lines.

- `jepsen-log`: lines `INFO  jepsen.util - <process>	:<type>	:<f>	<value>` as in Porcupine's etcd
  test data, read as Porcupine's `parseJepsenLog` does: `:fail :read :timed-out` completes the read
  with an unknown output, `:fail :cas` completes the cas with output false, and calls with no
  completion (`:info`) return, unknown, after everything else. An `:ok` line's value is the operation's.
- `edn`: one EDN map per operation event — `{:process 0, :type :invoke, :f :cas, :value [1 2]}`, with
  an optional `:key` — at top level or inside one vector, as Jepsen's `history.edn` and Porcupine's
  kv data. Knossos' meaning (`knossos.history/complete`): the `:ok` event's `:value` replaces the
  invocation's — it is what the operation did (a transaction's `[[:write :x 1] [:read :x 1]]`, the
  value a read or get returned) — `:fail` certainly did not take effect (the operation is dropped), `:info` is
  indeterminate (it may or may not take effect, at any time after its invocation). Events whose
  `:process` is not an integer (`:nemesis`) are not client operations and are skipped.
- `json`: the same events as JSON objects, one per line (`{"process": 0, "type": "invoke", "f":
  "put", "key": "k", "value": "v", "time": 0.0012}`), as `lockstep run psmr` records them; events
  are ordered by `time` when every event has one, else by line. As in EDN, the `ok` event's `value`
  replaces the invocation's (a read's or get's output is that value); an `ok` event may also carry an
  `output` (what the operation returned, e.g. the value a swap replaced).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from ..safeio import read_bytes
from .edn import EDNError, Keyword, loads
from .history import UNKNOWN, Builder, History, HistoryError

MAX_BYTES = 256 << 20  # a history file larger than this is refused: no more than this and one byte is read
MAX_NESTING = 64  # values (EDN or JSON) nested deeper than this are refused
FRAME_NESTING = MAX_NESTING + 8  # brackets nested deeper than this are refused before an EDN history is parsed
FORMATS = ("auto", "jepsen-log", "edn", "json")

_LOG = re.compile(r"^INFO\s+jepsen\.util\s+-\s+(\d+)\s+:(invoke|ok|fail|info)\s+:(\w+)\s+(.*?)\s*$")
_CAS = re.compile(r"^\[\s*(-?\d+)\s+(-?\d+)\s*\]$")


def read_history(path: str, fmt: str = "auto", deadline: float | None = None) -> History:
    """The history in file `path` (HistoryError says what is wrong and where). Past `deadline` (time.monotonic())
    reading stops: the history holds the events read by then (its `cut` says where), calls not yet completed
    pending."""
    if fmt not in FORMATS:
        raise HistoryError(f"unknown history format {fmt!r}: choose one of {', '.join(FORMATS)}")
    try:
        data = read_bytes(path, MAX_BYTES, "history")
    except OSError as e:
        raise HistoryError(f"cannot read {path}: {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise HistoryError(f"{path}: not UTF-8 text (byte {e.start})") from None
    if not text.strip():
        h = History([], path, fmt if fmt != "auto" else "empty")
        h.notes.append("the history is empty")
        return h
    if fmt == "auto":
        fmt = detect(text, path)
    reader = {"jepsen-log": parse_jepsen_log, "edn": parse_edn, "json": parse_json}[fmt]
    try:
        history = reader(text, path, deadline)
    except RecursionError:
        history = None
    deep = None if history is None else next((op for op in history.operations if not all(
        _shallow(v) for v in (op.client, op.key, op.value, op.output))), None)
    if history is None or deep is not None:
        raise HistoryError(f"{deep.where if deep is not None else path}: values nested too deeply (more than "
                           f"{MAX_NESTING} levels; no history nests more than a few)")
    return history


def _shallow(value: Any) -> bool:
    """Whether a value read from a history nests no more than MAX_NESTING levels (checked without recursion)."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_NESTING:
            return False
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for kv in v.items() for x in kv)
        elif isinstance(v, (list, tuple, set, frozenset)):
            stack.extend((x, depth + 1) for x in v)
    return True


def detect(text: str, path: str) -> str:
    """The format of a history's text, from its first non-blank line."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if not first:
        raise HistoryError(f"{path}: the history is empty")
    if first.startswith("INFO") and "jepsen.util" in first:
        return "jepsen-log"
    if first.startswith("{\""):
        return "json"
    if first[0] in "{[(;#":
        return "edn"
    raise HistoryError(f"{path}:1: cannot tell the history's format from {first[:60]!r}; give --format "
                       "jepsen-log, edn or json")


def _log_value(text: str, where: str) -> Any:
    if text == "nil":
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    m = _CAS.match(text)
    if m:
        return (int(m.group(1)), int(m.group(2)))
    if text.startswith(":"):
        return Keyword(text[1:])
    raise HistoryError(f"{where}: cannot read the value {text!r}")


def parse_jepsen_log(text: str, path: str, deadline: float | None = None) -> History:
    """Porcupine's reading of Jepsen 0.0.x log lines (see the module docstring)."""
    b = Builder(path)
    cut = ""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        if _late(n, deadline):
            cut = where
            break
        m = _LOG.match(line)
        if not m:
            raise HistoryError(f"{where}: not a Jepsen log line (INFO jepsen.util - PROCESS :TYPE :F VALUE): "
                               f"{line[:80]!r}")
        client, kind, f, raw = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        value = _log_value(raw, where)
        if kind == "invoke":
            b.invoke(client, f, None if f == "read" else value, where=where)
        elif kind == "ok":
            if f == "read":
                b.complete(client, value, where, f=f)
            else:
                b.complete(client, True, where, f=f, value=value)
        elif kind == "fail":
            if f == "read" and value == Keyword("timed-out"):
                b.complete(client, UNKNOWN, where, f=f)
            elif f == "cas":
                b.complete(client, False, where, f=f)
            else:
                raise HistoryError(f"{where}: a failed {f} with value {raw!r} has no meaning in this format")
        # `:info` lines leave the call open: it returns, unknown, at the end (as Porcupine reads them)
    return _cut(b.history("jepsen-log"), cut)


_FIELDS = ("process", "type", "f", "value", "key")


def _events_from_edn(forms: list[Any], path: str) -> list[tuple[str, dict[str, Any]]]:
    if len(forms) == 1 and isinstance(forms[0], tuple):
        forms = list(forms[0])
    out = []
    for i, form in enumerate(forms, 1):
        if not isinstance(form, dict):
            raise HistoryError(f"{path}: form {i} is not a map of an operation event ({form!r})")
        ev = {}
        for k, v in form.items():
            if isinstance(k, Keyword) and k.name in _FIELDS:
                ev[k.name] = v
        out.append((f"{path}: event {i}", ev))
    return out


def parse_edn(text: str, path: str, deadline: float | None = None) -> History:
    """Jepsen/Knossos (and Porcupine kv) events in EDN."""
    lines = text.splitlines()
    cut = ""
    try:
        if all(ln.strip().startswith("{") and ln.strip().endswith("}") for ln in lines if ln.strip()):
            events = []  # one map per line: parse line by line, so errors name the line
            for n, ln in enumerate(lines, 1):
                if _late(n, deadline):
                    cut = f"{path}:{n}"
                    break
                if ln.strip():
                    forms = loads(ln, f"{path}:{n}", FRAME_NESTING)
                    events.extend((f"{path}:{n}", ev) for _, ev in _events_from_edn(forms, path))
        else:
            events = _events_from_edn(loads(text, path, FRAME_NESTING), path)
    except EDNError as e:
        raise HistoryError(str(e)) from None
    h = _build(events, path, "edn", keywords=True, deadline=deadline)
    return h if h.cut else _cut(h, cut)


CHUNK = 65536  # JSON lines decoded by one call of the decoder


def parse_json(text: str, path: str, deadline: float | None = None) -> History:
    """Lockstep's JSON-lines client events. A file whose events all have a time is ordered by time: if its reading
    is cut short, what was read need not be a prefix in time (a later line may hold an earlier event)."""
    numbered = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    events: list[tuple[str | int, dict[str, Any]]] = []
    cut = ""
    # decoding costs about a third of building: it may take 30 % of the time left, building the rest
    decoded_by = None if deadline is None else time.monotonic() + 0.3 * (deadline - time.monotonic())
    for start in range(0, len(numbered), CHUNK):
        chunk = numbered[start:start + CHUNK]
        if start and decoded_by is not None and time.monotonic() > decoded_by:
            cut = f"{path}:{chunk[0][0]}"
            break
        try:  # one call of the decoder per chunk of lines; line by line only to say where an error is
            objs = json.loads("[" + ",".join(ln for _, ln in chunk) + "]")
        except (json.JSONDecodeError, RecursionError):
            objs = None
        if objs is None or len(objs) != len(chunk):
            objs = []
            for n, ln in chunk:
                try:
                    objs.append(json.loads(ln))
                except json.JSONDecodeError as e:
                    raise HistoryError(f"{path}:{n}:{e.colno}: not JSON ({e.msg})") from None
        for (n, _), ev in zip(chunk, objs):
            if not isinstance(ev, dict):
                raise HistoryError(f"{path}:{n}: expected a JSON object per line")
            events.append((n, ev))  # the line number: `Builder` names the place only where it needs to
    timed = bool(events) and all(isinstance(ev.get("time"), int | float) for _, ev in events)
    if timed:
        events.sort(key=lambda e: (e[1]["time"], e[1].get("type") != "invoke"))
    h = _build(events, path, "json", keywords=False, deadline=deadline)
    h = h if h.cut else _cut(h, cut)
    h.cut_in_order = not (h.cut and timed)
    return h


def _name(v: Any, what: str, where: str, keywords: bool) -> str:
    if keywords and isinstance(v, Keyword):
        return v.name
    if not keywords and isinstance(v, str):
        return v
    raise HistoryError(f"{where}: {what} must be {'a keyword' if keywords else 'a string'}, got {v!r}")


def _hashable(v: Any) -> Any:
    """`v` with its sequences as tuples and its maps as frozensets of pairs, at any depth (model states are hashed)."""
    if isinstance(v, list | tuple):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return frozenset((k, _hashable(x)) for k, x in v.items())
    return v


def _late(n: int, deadline: float | None) -> bool:
    """Whether reading must stop before item `n` (the clock is read every 8192 items)."""
    return deadline is not None and n % 8192 == 0 and time.monotonic() > deadline


def _cut(h: History, where: str) -> History:
    """`h`, read up to `where` only (if given)."""
    if where:
        h.cut = where
        h.notes.append(f"the time for reading ran out at {where}: the history is what was read up to there, calls "
                       "not yet completed pending")
    return h


def _build(events: list[tuple[str | int, dict[str, Any]]], path: str, fmt: str, keywords: bool,
           deadline: float | None = None) -> History:
    """The history of `events`, each with its place: a description or a line number of `path`."""
    b = Builder(path)
    skipped = 0
    cut = ""
    for k, (where, ev) in enumerate(events, 1):
        if _late(k, deadline):
            cut = b.at(where)
            break
        try:
            client, kind, f = ev["process"], ev["type"], ev["f"]
        except KeyError as e:
            raise HistoryError(f"{b.at(where)}: the event has no {e.args[0]}") from None
        if isinstance(client, bool) or not isinstance(client, int):
            skipped += 1  # :nemesis and other non-client events
            continue
        if type(kind) is not str or keywords:
            kind = _name(kind, "type", b.at(where), keywords)
        if type(f) is not str or keywords:
            f = _name(f, "f", b.at(where), keywords)
        value, key = ev.get("value"), ev.get("key")
        if isinstance(value, list | tuple | dict):
            value = _hashable(value)
        if isinstance(key, list | tuple | dict):
            key = _hashable(key)
        if kind == "invoke":
            b.invoke(client, f, None if f in ("read", "get") else value, key, where)
        elif kind == "ok":
            reads = f in ("read", "get")
            out = value if reads else True
            if "output" in ev:  # what the operation returned, where that is not its value (a swap)
                out = _hashable(ev["output"])
            if reads:
                b.complete(client, out, where, f=f)  # the value read is the output; the call's argument stands
            else:
                b.complete(client, out, where, f=f, value=value)
        elif kind == "fail":
            b.complete(client, None, where, f=f, drop=True)
        elif kind == "info":
            b.abandon(client, where)
        else:
            raise HistoryError(f"{b.at(where)}: type {kind!r} is not invoke, ok, fail or info")
    h = _cut(b.history(fmt), cut)
    if skipped:
        h.notes.append(f"{skipped} event(s) of non-client processes skipped")
    return h
