"""Network semantics for actor systems: how messages in flight are held in the global state.

Each kind declares the `network` field and says, in terms, when an envelope can be delivered,
what delivery removes, and what a send adds:

- `SetNetwork`: unordered, each envelope in flight at most once (a send of an envelope already
  in flight fails the step, so a spec never silently merges two messages); with `duplicating`,
  delivery leaves the message in flight, so it can be delivered again.
- `BagNetwork`: unordered, up to `capacity` copies of each envelope in flight.
- `FifoNetwork`: one queue of up to `capacity` messages per (sender, receiver) channel.
"""

from __future__ import annotations

from typing import Any

from ..errors import Location
from ..program import Check
from ..spec import _Stop
from ..terms import BOOL, And, If, Not, Term, as_bool, compare, const, mk
from ..tracing import TraceState, coerce, current_tracer
from ..types import Int, Map, Option, Range, Record, Set, Type


class NetworkKind:
    """The network field and its operations on a tracing view `g` of the global state."""

    duplicating = False
    loc: Location | None = None  # the handler whose sends are being added, for failure reports

    def __init__(self, proc: Range, message: Type, envelope: Record, capacity: int):
        self.proc = proc
        self.message = message
        self.envelope = envelope
        self.capacity = capacity
        self.pids = list(proc.dom().values())  # bound now: value_of runs outside the spec's parameters too

    def field_type(self) -> Type:
        raise NotImplementedError

    def deliverable(self, g: TraceState, src: int, dst: int, msg: Any) -> Any:
        """The condition under which `msg` from `src` can be delivered to `dst`."""
        raise NotImplementedError

    def consume(self, g: TraceState, src: int, dst: int, msg: Any) -> None:
        """Remove one delivered copy."""
        raise NotImplementedError

    def send(self, g: TraceState, src: int, dst: Any, msg: Any, when: Any) -> None:
        """Add `msg` from `src` to `dst` where `when` holds (dst may depend on the state)."""
        if isinstance(dst, Term):
            for d in self.proc:
                self._send_to(g, src, d, msg, And(when, compare("eq", dst, d)))
        else:
            self._send_to(g, src, dst, msg, when)

    def _send_to(self, g: TraceState, src: int, dst: int, msg: Any, when: Any) -> None:
        raise NotImplementedError

    def can_send(self, g: TraceState, src: int, dst: int, msg: Any) -> Any:
        """Whether one more copy fits (used to guard forged messages)."""
        raise NotImplementedError

    def value_of(self, envelopes: list[tuple[int, int, Any]]) -> Any:
        """The field's Python value holding these in-flight (src, dst, msg) envelopes, oldest first."""
        raise NotImplementedError

    def check_room(self, full: Any, message: str) -> None:
        """Fail the step where `full` holds (a send that does not fit), reported at the handler."""
        b = as_bool(full)
        if b is False:
            return
        tracer = current_tracer("a send")
        if b is True:
            tracer.checks.append(Check("assert", const(False, BOOL), message, self.loc))
            raise _Stop()
        tracer.checks.append(Check("assert", Not(b), message, self.loc))

    def overflow(self) -> str:
        return (f"a send exceeds the network's capacity of {self.capacity} message(s) per envelope; "
                "check with a larger --param capacity")


class SetNetwork(NetworkKind):
    def __init__(self, *args: Any, duplicating: bool = False):
        super().__init__(*args)
        self.duplicating = duplicating

    def field_type(self) -> Type:
        return Set(self.envelope)

    def deliverable(self, g, src, dst, msg):
        return g.network.contains(self.envelope(src, dst, msg))

    def consume(self, g, src, dst, msg):
        if not self.duplicating:
            g.network = g.network.remove(self.envelope(src, dst, msg))

    def _send_to(self, g, src, dst, msg, when):
        env = self.envelope(src, dst, msg)
        if not self.duplicating:
            self.check_room(And(when, g.network.contains(env)), self.overflow())
        if when is True:
            g.network = _add_constant(g.network, env)
        elif when is not False:
            g.network = If(when, g.network.add(env), g.network)

    def can_send(self, g, src, dst, msg):
        return Not(g.network.contains(self.envelope(src, dst, msg)))

    def value_of(self, envelopes):
        return frozenset(self.envelope(s, d, m) for s, d, m in envelopes)


class BagNetwork(NetworkKind):
    def field_type(self) -> Type:
        return Map(self.envelope, Int(0, self.capacity), init=0)

    def deliverable(self, g, src, dst, msg):
        return g.network[self.envelope(src, dst, msg)] > 0

    def consume(self, g, src, dst, msg):
        env = self.envelope(src, dst, msg)
        g.network[env] = g.network[env] - 1

    def _send_to(self, g, src, dst, msg, when):
        env = self.envelope(src, dst, msg)
        self.check_room(And(when, g.network[env] >= self.capacity), self.overflow())
        g.network[env] = g.network[env] + If(when, 1, 0)

    def can_send(self, g, src, dst, msg):
        return g.network[self.envelope(src, dst, msg)] < self.capacity

    def value_of(self, envelopes):
        out = {e: 0 for e in self.envelope}
        for s, d, m in envelopes:
            out[self.envelope(s, d, m)] += 1
        return out


class FifoNetwork(NetworkKind):
    def field_type(self) -> Type:
        return Map(self.proc, Map(self.proc, Map(Int(0, self.capacity - 1), Option(self.message))), init=None)

    def deliverable(self, g, src, dst, msg):
        return g.network[src][dst][0] == msg

    def consume(self, g, src, dst, msg):
        self.remove_at(g, src, dst, 0)

    def remove_at(self, g: TraceState, src: int, dst: int, pos: int) -> None:
        """Drop the message at `pos` of a channel; the ones behind it move up."""
        q = g.network[src][dst]
        old = [q[i] for i in range(self.capacity)]
        for i in range(pos, self.capacity):
            q[i] = old[i + 1] if i + 1 < self.capacity else None

    def _send_to(self, g, src, dst, msg, when):
        q = g.network[src][dst]
        old = [q[i] for i in range(self.capacity)]
        self.check_room(And(when, old[-1].is_some()),
                        f"a send exceeds the channel capacity of {self.capacity}; check with a larger --param capacity")
        if isinstance(msg, Term):  # a message built from terms: held in the queue's Option slots
            msg = coerce(msg, old[0].dom, "sent message")
        for i in range(self.capacity):
            first_free = And(old[i].is_none(), True if i == 0 else old[i - 1].is_some())
            q[i] = If(And(when, first_free), msg, old[i])

    def can_send(self, g, src, dst, msg):
        return g.network[src][dst][self.capacity - 1].is_none()

    def value_of(self, envelopes):
        out = {s: {d: {i: None for i in range(self.capacity)} for d in self.pids} for s in self.pids}
        for s, d, m in envelopes:
            q = out[s][d]
            free = next(i for i in range(self.capacity) if q[i] is None)
            q[free] = m
        return out


def _add_constant(net: Term, env: Any) -> Term:
    """`net.add(env)`, with constant additions gathered into one mask (no deep nesting of unions)."""
    if isinstance(env, Term) or not (net.op == "union" and net.args[1].op == "const"):
        return net.add(env)
    bit = 1 << net.dom.elem.index(env)
    return mk("union", (net.args[0], const(net.args[1].args[0] | bit, net.dom)), net.dom, 0, net.dom.hi)


def choose(proc: Range, message: Type, envelope: Record, ordered: bool, duplicating: bool,
           capacity: int) -> NetworkKind:
    """The network kind for these options."""
    if ordered:
        return FifoNetwork(proc, message, envelope, capacity)
    if duplicating or capacity == 1:
        return SetNetwork(proc, message, envelope, capacity, duplicating=duplicating)
    return BagNetwork(proc, message, envelope, capacity)


__all__ = ["NetworkKind", "SetNetwork", "BagNetwork", "FifoNetwork", "choose"]
