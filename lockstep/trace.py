"""Logs of real implementations in Lockstep's event schema, and their validation against a spec.

An implementation writes one log per node (JSON Lines, `docs/conformance.md`): each event names its
node, its per-node sequence number, the action as the spec names it (or as a mapping translates it),
its arguments, the values of whichever spec variables the node chooses to log, and its causes (a
vector clock, or the ids of the messages it sent and received). `lockstep validate LOG... --spec SPEC
[--map MAPPING.py]` then searches for a behaviour of the spec the logs are a view of.

    from lockstep.trace import Log

    with Log("n1.jsonl", node="n1") as log:                     # the log's end record is written on exit
        log.event("Send", args={"to": "n2"}, vars={"x": 1})
        msg = {"value": 1, "vc": log.clock}                     # carry the clock on the message
        ...
        log.event("Receive", args={"from": "n2"}, after=reply["vc"])   # happens after the reply's send

A `logging.Handler` (`TraceHandler`) writes the records that carry an `action` (pass `extra={"action":
..., "arguments": ..., "vars": ..., "after": ...}`; `args` is taken by `logging`) as events, for code that
already logs.
"""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import threading
from collections.abc import Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any

from lockstep.checker.safeio import create_fresh
from lockstep.checker.validation.conformance.mapping import ANY, Step, one_of, step
from lockstep.checker.validation.conformance.schema import SCHEMA

if TYPE_CHECKING:
    from lockstep.checker.validation.conformance.search import Conformance

__all__ = ["ANY", "SCHEMA", "Log", "Step", "TraceHandler", "one_of", "step", "validate", "validate_recorded_run"]


class Log:
    """One node's log in the schema, with its vector clock; a context manager (the end record is written
    when it closes). Thread-safe: events of one node are numbered in the order `event` is called."""

    def __init__(self, path: str | os.PathLike[str] | IO[str], node: str | int, *, header: Mapping[str, Any] | None = None,
                 clocks: bool = True, resume: bool = False):
        if isinstance(node, bool) or not isinstance(node, (str, int)) or node == "":
            raise TypeError("node must be a non-empty string or an integer")
        self.node = node
        self._key = str(node)
        self._clocks = clocks
        self._vc: dict[str, int] = {self._key: 0}
        self._lock = threading.Lock()
        self._own = not hasattr(path, "write")
        self._closed = False
        if resume:  # a node restarted after a crash continues its log
            if not self._own:
                raise TypeError("resume=True continues a log file: give its path")
            self._f, self._vc = _resume(os.fspath(path), self._key)  # type: ignore[arg-type]
            return
        self._f = create_fresh(os.fspath(path)) if self._own else path  # type: ignore[arg-type, assignment]
        self._write({"schema": SCHEMA, "node": node, **dict(header or {})})

    @property
    def seq(self) -> int:
        """The sequence number of the node's last event (0 before its first)."""
        return self._vc[self._key]

    @property
    def clock(self) -> dict[str, int]:
        """The vector clock of the node's last event: carry it on the messages that event sends."""
        with self._lock:
            return dict(self._vc)

    def event(self, action: str, args: Mapping[str, Any] | None = None, vars: Mapping[str, Any] | None = None, *,
              after: Mapping[str, int] | Iterable[Mapping[str, int]] | None = None, sent: Iterable[str | int] | None = None,
              recv: Iterable[str | int] | None = None, time: float | None = None) -> dict[str, int]:
        """Log an event; `after` is the clock (or clocks) of events elsewhere that happen before it (a received
        message's); `sent`/`recv` are message ids, for logs that record causes by message ids. Returns the event's
        vector clock."""
        if not isinstance(action, str) or not action:
            raise TypeError("action must be a non-empty string")
        with self._lock:
            if self._closed:
                raise ValueError(f"the log of node {self.node} is closed")
            vc = self._vc
            for c in ([after] if isinstance(after, Mapping) else list(after or [])):
                for k, v in c.items():
                    k = str(k)
                    if k != self._key and v > vc.get(k, 0):
                        vc[k] = v
            vc[self._key] += 1
            e: dict[str, Any] = {"node": self.node, "seq": vc[self._key], "action": action}
            if args:
                e["args"] = dict(args)
            if vars:
                e["vars"] = dict(vars)
            if self._clocks:
                e["vc"] = dict(vc)
            if sent is not None:
                e["sent"] = [str(m) for m in sent]
            if recv is not None:
                e["recv"] = [str(m) for m in recv]
            if time is not None:
                e["time"] = time
            self._write(e)
            return dict(vc)

    def _write(self, obj: dict[str, Any]) -> None:
        self._f.write(json.dumps(obj, separators=(",", ":"), default=_json_default) + "\n")

    def flush(self) -> None:
        with self._lock:
            self._f.flush()

    def close(self) -> None:
        """Write the end record (the log is complete) and close the file (if the log opened it)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._write({"node": self.node, "end": True})
            self._f.flush()
            if self._own:
                self._f.close()

    def __enter__(self) -> Log:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _resume(path: str, key: str) -> tuple[IO[str], dict[str, int]]:
    """A node's own log that a crash cut short, open for appending (a torn last line removed), and the vector clock
    of its last event. The file is opened without following a symbolic link, and must be a regular file."""
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    f = os.fdopen(fd, "rb+")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path}: not a regular file")
        data = f.read()
        keep = data if data.endswith(b"\n") else data[:data.rfind(b"\n") + 1]
        if len(keep) != len(data):
            f.seek(len(keep))
            f.truncate()
        vc = {key: 0}
        for raw in reversed(keep.splitlines()):
            obj = json.loads(raw)
            if obj.get("end") is True:
                raise ValueError(f"{path}: the log of node {key} is complete (it has its end record): not resumed")
            if "action" in obj:
                vc = {str(k): v for k, v in (obj.get("vc") or {}).items()}
                vc[key] = obj["seq"]
                break
        f.seek(0, os.SEEK_END)
    except BaseException:
        f.close()
        raise
    return io.TextIOWrapper(f, encoding="utf-8"), vc  # type: ignore[arg-type]


def _json_default(v: Any) -> Any:
    if isinstance(v, (set, frozenset)):
        return sorted(v, key=repr)
    if isinstance(v, tuple):
        return list(v)
    raise TypeError(f"a value of type {type(v).__name__} has no JSON form: log JSON values (numbers, strings, lists, "
                    "objects)")


class TraceHandler(logging.Handler):
    """A logging handler that writes records carrying an `action` (in `extra`) as events of `log`; records
    without one are not events and are left to the other handlers."""

    def __init__(self, log: Log, level: int = logging.NOTSET):
        super().__init__(level)
        self.log = log

    def filter(self, record: logging.LogRecord) -> bool:
        return isinstance(getattr(record, "action", None), str) and super().filter(record)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.log.event(record.action, _mapping(record, "arguments"), _mapping(record, "vars"),  # type: ignore[attr-defined]
                           after=getattr(record, "after", None),
                           sent=getattr(record, "sent", None), recv=getattr(record, "recv", None))
        except Exception:
            self.handleError(record)


def _mapping(record: logging.LogRecord, name: str) -> Mapping[str, Any] | None:
    v = getattr(record, name, None)
    return v if isinstance(v, Mapping) else None


def validate(logs: Iterable[str | os.PathLike[str]], spec: Any, *, mapping: str | None = None, max_internal: int = 0,
             max_frontier: int | None = None, **params: int) -> Conformance:
    """Validate per-node logs against `spec` (a spec class or name) as `lockstep validate LOG... --spec SPEC` does:
    `mapping` is the path of a mapping module (`docs/conformance.md`), `max_internal` the unlogged internal steps
    allowed before each event. The result's `verdict` is "valid", "invalid" (with the `frontier` where no behaviour
    matched and why), "violation", "incomplete" or "inconclusive"; `exit_code` is the command's."""
    from lockstep.checker.loader import reference
    from lockstep.checker.validation.conformance.run import validate_logs

    ref = spec if isinstance(spec, str) else reference(spec)
    return validate_logs([str(p) for p in logs], ref, params, mapping, max_internal, max_frontier)


def validate_recorded_run(path: str | os.PathLike[str], spec: str | None = None) -> int:
    """Validate the `--trace FILE` of `lockstep run autobahn|psmr` (every process's log in the event schema, each line
    with its pid) as the run command validates its run: against `spec`, or the registered spec the file names (a
    file never chooses the code that checks it). Prints the outcome; returns the exit code (0 valid, 1 not, 3 cut
    short or inconclusive)."""
    import shutil
    import tempfile

    from lockstep.checker.trace import TraceError, trusted_spec
    from lockstep.checker.validation.runtrace import split_traces
    from lockstep.executors.autobahn import command as autobahn
    from lockstep.executors.psmr import command as psmr

    path = os.fspath(path)
    tmp = tempfile.mkdtemp(prefix="lockstep-validate-")
    try:
        got = split_traces(path, tmp)
        name = trusted_spec(got.header.get("spec"), spec, path)
        if not (psmr.is_psmr(name) or autobahn.is_autobahn(name)):
            raise TraceError(f"{path} holds the logs of a run of {name!r}; such a file is written by `lockstep run "
                             "autobahn` and `lockstep run psmr`, whose validation it gets")
        executor = psmr if psmr.is_psmr(name) else autobahn
        with got.origins.naming():  # a message about a process's file names its place in `path` instead
            code = executor.validate_collected(got.paths, name, got.origins)
        if not got.ended:
            print(f"  note: {path} has no end record: it was cut short, and only what it holds was validated")
            code = code or 3
        return code
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
