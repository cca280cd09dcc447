"""Client histories: operations with an invocation and, maybe, a completion, in real-time order.

An `Operation` is one call by one client: what it did (`f`, `key`, and `value` as its completion
reports it), what it got back (`output`, or `UNKNOWN` when the client never learned: a timeout, a
crash, Jepsen's `:info`), and when it was invoked and returned, as positions in one real-time order
of events (`call`, `ret`). An operation whose outcome is unknown may take effect at any time after
its invocation, or not at all; one the client gave up on returns after every other event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class _Unknown:
    """The output of an operation whose completion nobody saw."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "unknown"

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()
KEEP = object()  # Builder.complete: the invocation's value stands


class HistoryError(ValueError):
    """A history that cannot be read; the message says where and why."""


@dataclass(frozen=True)
class Operation:
    """One client operation; `call` < `ret` are positions in the history's event order."""

    id: int
    client: Any
    f: str
    value: Any
    output: Any
    call: int
    ret: int
    key: Any = None
    where: str = ""  # where it was read from (file:line), for reports

    @property
    def unknown(self) -> bool:
        return self.output is UNKNOWN

    def describe(self) -> str:
        key = f" {self.key!r}" if self.key is not None else ""
        arg = "" if self.value is None else f" {_show(self.value)}"
        out = "?" if self.unknown else {True: "ok", False: "fail"}.get(self.output, _show(self.output)) \
            if isinstance(self.output, bool) else _show(self.output)
        return f"client {self.client}: {self.f}{key}{arg} -> {out}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "client": _jsonable(self.client), "f": self.f, "key": _jsonable(self.key),
                "value": _jsonable(self.value), "output": None if self.unknown else _jsonable(self.output),
                "unknown": self.unknown, "call": self.call, "return": self.ret, "where": self.where}


@dataclass
class History:
    """The operations of one history, and where it came from."""

    operations: list[Operation]
    source: str = ""
    format: str = ""
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.operations)


class Builder:
    """Pairs invocations with completions, client by client, numbering events in arrival order."""

    def __init__(self, source: str):
        self.source = source
        self.ops: list[dict[str, Any]] = []
        self.open: dict[Any, int] = {}  # client -> index in ops of its pending call
        self.clock = 0

    def invoke(self, client: Any, f: str, value: Any, key: Any = None, where: str = "") -> None:
        if client in self.open:
            prev = self.ops[self.open[client]]
            raise HistoryError(f"{where}: client {client!r} invokes {f} while its {prev['f']} "
                               f"(invoked at {prev['where']}) has not completed; a client has one call at a time")
        self.open[client] = len(self.ops)
        self.ops.append({"client": client, "f": f, "value": value, "key": key, "call": self.clock, "ret": None,
                         "output": UNKNOWN, "where": where, "drop": False})
        self.clock += 1

    def complete(self, client: Any, output: Any, where: str = "", f: str | None = None, drop: bool = False,
                 value: Any = KEEP) -> None:
        """The completion of `client`'s pending call (`drop`: it certainly did not take effect). A `value`
        given replaces the invocation's, nil included: what the call turned out to do (Knossos' `complete`)."""
        i = self.open.pop(client, None)
        if i is None:
            raise HistoryError(f"{where}: client {client!r} completes an operation it never invoked")
        op = self.ops[i]
        if f is not None and f != op["f"]:
            raise HistoryError(f"{where}: client {client!r} completes {f} but invoked {op['f']} at {op['where']}")
        op["ret"], op["output"], op["drop"] = self.clock, output, drop
        if value is not KEEP:
            op["value"] = value
        self.clock += 1

    def abandon(self, client: Any, where: str = "") -> None:
        """The client gave up on its call without learning the outcome (Jepsen's `:info`)."""
        if self.open.pop(client, None) is None:
            raise HistoryError(f"{where}: client {client!r} reports an indeterminate outcome of an operation "
                               "it never invoked")

    def history(self, fmt: str) -> History:
        """Calls still open, or abandoned, return after every other event with an unknown output."""
        end = self.clock
        out = []
        for op in self.ops:
            if op["drop"]:
                continue
            ret = op["ret"] if op["ret"] is not None else end
            out.append(Operation(len(out), op["client"], op["f"], op["value"], op["output"] if op["ret"] is not None
                                 else UNKNOWN, op["call"], ret, op["key"], op["where"]))
        return History(out, self.source, fmt)


def _show(v: Any) -> str:
    if isinstance(v, tuple):
        return "[" + " ".join(_show(x) for x in v) + "]"
    if v is None:
        return "nil"
    return repr(v) if isinstance(v, str) else str(v)


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple | list):
        return [_jsonable(x) for x in v]
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    return str(v)
