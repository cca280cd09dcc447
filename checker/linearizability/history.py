"""Client histories: operations with an invocation and, maybe, a completion, in real-time order.

An `Operation` is one call by one client: what it did (`f`, `key`, and `value` as its completion
reports it), what it got back (`output`, or `UNKNOWN` when the client never learned: a timeout, a
crash, Jepsen's `:info`), and when it was invoked and returned, as positions in one real-time order
of events (`call`, `ret`). An operation whose outcome is unknown may take effect at any time after
its invocation, or not at all; one the client gave up on returns after every other event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


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


class Operation(NamedTuple):
    """One client operation; `call` < `ret` are positions in the history's event order. (An immutable tuple:
    a history of a million operations builds them in a second.)"""

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
    cut: str = ""  # where reading stopped, if the time for it ran out: the history is what was read
    cut_in_order: bool = True  # whether what was read is a prefix of the history in its order of events

    def __len__(self) -> int:
        return len(self.operations)


# a pending or completed call in a Builder: [client, f, value, key, call, ret, output, where, dropped]
_CLIENT, _F, _VALUE, _KEY, _CALL, _RET, _OUTPUT, _WHERE, _DROP = range(9)


class Builder:
    """Pairs invocations with completions, client by client, numbering events in arrival order."""

    def __init__(self, source: str):
        self.source = source
        self.ops: list[list[Any]] = []
        self.open: dict[Any, list[Any]] = {}  # client -> its pending call
        self.clock = 0

    def at(self, where: str | int) -> str:
        """A place in the source: `where` itself, or line `where` of it."""
        return where if isinstance(where, str) else f"{self.source}:{where}"

    def invoke(self, client: Any, f: str, value: Any, key: Any = None, where: str | int = "") -> None:
        prev = self.open.get(client)
        if prev is not None:
            raise HistoryError(f"{self.at(where)}: client {client!r} invokes {f} while its {prev[_F]} "
                               f"(invoked at {prev[_WHERE]}) has not completed; a client has one call at a time")
        op = [client, f, value, key, self.clock, None, UNKNOWN, self.at(where), False]
        self.open[client] = op
        self.ops.append(op)
        self.clock += 1

    def complete(self, client: Any, output: Any, where: str | int = "", f: str | None = None, drop: bool = False,
                 value: Any = KEEP) -> None:
        """The completion of `client`'s pending call (`drop`: it certainly did not take effect). A `value`
        given replaces the invocation's, nil included: what the call turned out to do (Knossos' `complete`)."""
        op = self.open.pop(client, None)
        if op is None:
            raise HistoryError(f"{self.at(where)}: client {client!r} completes an operation it never invoked")
        if f is not None and f != op[_F]:
            raise HistoryError(f"{self.at(where)}: client {client!r} completes {f} but invoked {op[_F]} at {op[_WHERE]}")
        op[_RET], op[_OUTPUT], op[_DROP] = self.clock, output, drop
        if value is not KEEP:
            op[_VALUE] = value
        self.clock += 1

    def abandon(self, client: Any, where: str | int = "") -> None:
        """The client gave up on its call without learning the outcome (Jepsen's `:info`)."""
        if self.open.pop(client, None) is None:
            raise HistoryError(f"{self.at(where)}: client {client!r} reports an indeterminate outcome of an operation "
                               "it never invoked")

    def history(self, fmt: str) -> History:
        """Calls still open, or abandoned, return after every other event with an unknown output."""
        end = self.clock
        make = tuple.__new__
        out: list[Operation] = []
        for client, f, value, key, call, ret, output, where, drop in self.ops:
            if not drop:
                out.append(make(Operation, (len(out), client, f, value, output if ret is not None else UNKNOWN, call,
                                            ret if ret is not None else end, key, where)))
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
