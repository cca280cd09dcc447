"""The event schema of implementation logs (`lockstep-trace/1`): JSON Lines, one file per node.

A log may start with a header `{"schema": "lockstep-trace/1", "node": N}` (other header fields are kept
but never choose code). Each further line is one event of that node:

    {"node": "n1", "seq": 4, "action": "receive", "args": {...}, "vars": {...},
     "vc": {"n1": 4, "n2": 2}, "sent": ["n1-7"], "recv": ["n2-3"], "time": 1.25}

- `node` (string or integer) and `seq` (1, 2, 3, ... in the order the node logged them) are required;
- `action` (the action's name as the mapping knows it) is required, `args` (an object) and `vars` (an
  object: the values of whichever variables the node chose to log, after the event) are optional;
- causality is given by a vector clock `vc` (node -> number of that node's events that happen before or
  are this one; `vc[node]` is `seq`) or by message ids: `sent` lists the ids of messages the event sent,
  `recv` those it received; a vector clock is derived from them. With neither, the event depends only on
  its node's earlier events;
- `time` (seconds, any origin) is informational only: logs are never ordered by wall clock;
- a last line `{"node": N, "end": true}` says the log is complete; without it the log may have been cut short.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ...errors import TraceError
from ...safeio import open_input, replacing

SCHEMA = "lockstep-trace/1"
MAX_LINE = 1 << 20  # bytes in one line of a log
CHUNK = 1 << 18  # bytes of lines read (and parsed as one JSON array) at a time
MAX_LOG_BYTES = 1 << 34  # bytes of one log file
EVENT_KEYS = frozenset({"node", "seq", "action", "args", "vars", "vc", "sent", "recv", "time"})


@dataclass(slots=True)
class Event:
    """One logged event; `vc` is filled in by the causal merge (a tuple in the order of the merge's nodes)."""

    node: str
    seq: int
    action: str
    args: dict[str, Any]
    vars: dict[str, Any]
    path: str
    line: int
    raw_node: Any = None  # the node id as the log wrote it (a string or an integer)
    clock: dict[str, int] | None = None  # the logged vector clock
    sent: list[str] | None = None
    recv: list[str] | None = None
    time: float | None = None
    vc: tuple[int, ...] = ()
    extra: dict[str, Any] | None = None

    @property
    def where(self) -> str:
        """file:line of the event."""
        return f"{self.path}:{self.line}"

    def json(self) -> dict[str, Any]:
        """The event's JSON form (as an emitter writes it)."""
        out: dict[str, Any] = {"node": self.raw_node, "seq": self.seq, "action": self.action}
        if self.args:
            out["args"] = self.args
        if self.vars:
            out["vars"] = self.vars
        if self.clock is not None:
            out["vc"] = self.clock
        if self.sent:
            out["sent"] = self.sent
        if self.recv:
            out["recv"] = self.recv
        if self.time is not None:
            out["time"] = self.time
        return out


def _show(v: Any) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def node_key(v: Any, where: str) -> str:
    """A node id (a string or an integer) as the text the merge keys nodes by."""
    if isinstance(v, str) and v:
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    raise TraceError(f"{where}: \"node\" must be a non-empty string or an integer, got {_show(v)}")


def _ids(v: Any, name: str, where: str) -> list[str] | None:
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in v):
        raise TraceError(f"{where}: \"{name}\" must list message ids (strings or integers), got {_show(v)}")
    return [str(x) for x in v]


def parse_event(obj: Any, path: str, line: int) -> Event:
    """An event from its JSON form; a TraceError naming the file, line and field for anything malformed."""
    if type(obj) is not dict:
        raise TraceError(f"{path}:{line}: expected a JSON object per line, got {_show(obj)}")
    get = obj.get
    raw, seq, action = get("node"), get("seq"), get("action")
    node = raw if type(raw) is str and raw else str(raw) if type(raw) is int else node_key(raw, f"{path}:{line}")
    if type(seq) is not int or seq < 1:
        raise TraceError(f"{path}:{line}: \"seq\" must be a positive integer (1 for a node's first event), got "
                         f"{_show(seq)}")
    if type(action) is not str or not action:
        raise TraceError(f"{path}:{line}: \"action\" must be the event's action name (a string), got {_show(action)}")
    args, vars_, clock = get("args"), get("vars"), get("vc")
    if args is None:
        args = {}
    if vars_ is None:
        vars_ = {}
    if type(args) is not dict:
        raise TraceError(f"{path}:{line}: \"args\" must be an object, got {_show(args)}")
    if type(vars_) is not dict:
        raise TraceError(f"{path}:{line}: \"vars\" must be an object (variable name -> value), got {_show(vars_)}")
    if clock is not None:
        if type(clock) is not dict:
            raise TraceError(f"{path}:{line}: \"vc\" must be an object of node -> non-negative integer, got "
                             f"{_show(clock)}")
        for c in clock.values():
            if type(c) is not int or c < 0:
                raise TraceError(f"{path}:{line}: \"vc\" must be an object of node -> non-negative integer, got "
                                 f"{_show(clock)}")
        if clock.get(node) != seq:
            raise TraceError(f"{path}:{line}: the vector clock's entry for the event's own node must be its seq ({seq}), "
                             f"got {_show(clock)}")
    sent, recv, t = get("sent"), get("recv"), get("time")
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))):
        raise TraceError(f"{path}:{line}: \"time\" must be a number of seconds, got {_show(t)}")
    e = Event(node, seq, action, args, vars_, path, line, raw, clock)
    if sent is not None:
        e.sent = _ids(sent, "sent", f"{path}:{line}")
    if recv is not None:
        e.recv = _ids(recv, "recv", f"{path}:{line}")
    if t is not None:
        e.time = t
    if len(obj) > 4 and not EVENT_KEYS.issuperset(obj):
        e.extra = {k: v for k, v in obj.items() if k not in EVENT_KEYS}
    return e


def _open(path: str) -> BinaryIO:
    """A log opened for reading (a regular file: `safeio.open_input`), or a TraceError saying why not."""
    try:
        return open_input(path)
    except OSError as e:
        raise TraceError(f"cannot read log {path}: {e.strerror}") from None


@dataclass
class LogInfo:
    """What a log says about itself: its header (if any), its node, whether it ends with an end record."""

    path: str
    node: str | None = None
    header: dict[str, Any] = field(default_factory=dict)
    ended: bool = False
    events: int = 0


class LogReader:
    """The events of one node's log, read as they are iterated (memory does not grow with the log)."""

    def __init__(self, path: str):
        self.path = path
        self.info = LogInfo(path)

    def __iter__(self) -> Iterator[Event]:
        path, info = self.path, self.info
        seen_bytes = 0
        expect = 1
        line = 0
        node: str | None = None
        with _open(path) as f:
            while True:
                chunk = f.readlines(CHUNK)
                if not chunk:
                    break
                seen_bytes += sum(map(len, chunk))
                if seen_bytes > MAX_LOG_BYTES:
                    raise TraceError(f"{path}: more than {MAX_LOG_BYTES:,} bytes: split the log")
                for i, obj in enumerate(self._parse(chunk, line), start=line + 1):
                    if obj is None:
                        continue
                    if info.ended:
                        raise TraceError(f"{path}:{i}: a line after the log's end record")
                    if type(obj) is dict and "action" in obj:
                        e = parse_event(obj, path, i)
                        if e.node != node:
                            self._node(e.node, f"{path}:{i}")
                            node = e.node
                        if e.seq != expect:
                            raise TraceError(f"{path}:{i}: event seq {e.seq} of node {e.node}, expected {expect}: a node's "
                                             "events are numbered 1, 2, 3, ... in the order it logged them (is a line "
                                             "missing?)")
                        expect += 1
                        info.events += 1
                        yield e
                    elif type(obj) is dict and i == 1 and obj.get("kind") in ("run", "traces", "header"):
                        raise TraceError(f"{path}:1: a trace of `lockstep run`, not a log in the event schema: "
                                         f"validate it alone, without --map or other logs (lockstep validate {path})")
                    elif type(obj) is dict and "schema" in obj and i == 1:
                        self._header(obj, f"{path}:1")
                        node = info.node
                    elif type(obj) is dict and obj.get("end") is True:
                        self._node(node_key(obj.get("node"), f"{path}:{i}"), f"{path}:{i}")
                        info.ended = True
                    else:
                        parse_event(obj, path, i)  # raises: says what is missing
                line += len(chunk)

    def _parse(self, chunk: list[bytes], line: int) -> list[Any]:
        """The object of each line of a chunk (None for a blank line): parsed as one JSON array when every
        line is whole, line by line otherwise (so that an error names its line)."""
        if all(len(r) <= MAX_LINE for r in chunk) and chunk[-1].endswith(b"\n") and not any(r.isspace() for r in chunk):
            try:
                objs = json.loads(b"[" + b",".join(chunk) + b"]")
            except (ValueError, RecursionError):
                objs = None
            if objs is not None and len(objs) == len(chunk):
                return objs
        out: list[Any] = []
        for i, raw in enumerate(chunk, start=line + 1):
            if len(raw) > MAX_LINE:
                raise TraceError(f"{self.path}:{i}: a line of {len(raw):,} bytes, more than the limit of {MAX_LINE:,}")
            if not raw.strip():
                out.append(None)
                continue
            try:
                out.append(json.loads(raw))
            except (ValueError, RecursionError) as e:
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as u:
                    raise TraceError(f"{self.path}:{i}: not a text file (byte {u.start} of the line is not UTF-8): "
                                     "expected JSON lines") from None
                if not raw.endswith(b"\n"):
                    raise TraceError(f"{self.path}:{i}: the last line is cut short (the writer was stopped while "
                                     "writing it)") from None
                raise TraceError(f"{self.path}:{i}: not a JSON object: {str(e) or 'nested too deeply'}") from None
        return out

    def _header(self, obj: dict[str, Any], where: str) -> None:
        if obj["schema"] != SCHEMA:
            raise TraceError(f"{where}: schema {_show(obj['schema'])}; this Lockstep reads {SCHEMA!r}")
        self.info.header = obj
        if "node" in obj:
            self._node(node_key(obj["node"], where), where)

    def _node(self, node: str, where: str) -> None:
        if self.info.node is None:
            self.info.node = node
        elif node != self.info.node:
            raise TraceError(f"{where}: an event of node {node} in the log of node {self.info.node}: write one log "
                             "per node")


def first_node(path: str) -> str:
    """The node a log belongs to (from its header or its first event), read from its first lines."""
    reader = LogReader(path)
    for _ in reader:
        break
    if reader.info.node is None:
        raise TraceError(f"{path}: an empty log (no header naming its node, no event)")
    return reader.info.node


def write_log(path: str, events: list[dict[str, Any]], node: Any, ended: bool = True) -> None:
    """Write one node's events (JSON forms) as a log in the schema (tests and converters)."""
    with replacing(path) as f:
        f.write(json.dumps({"schema": SCHEMA, "node": node}) + "\n")
        for e in events:
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
        if ended:
            f.write(json.dumps({"node": node, "end": True}) + "\n")
