"""Small random actor systems, for differential tests of reductions: a description (plain data, so
hypothesis can draw and shrink it) and the ActorSpec class it stands for.

Each process has a counter `x`, a write-once `flag` and a set `heard`; it starts by sending a few
messages; each (process, message tag) has a list of operations run in order: guards on x, updates
of x, flag and heard, and sends whose destination, value and condition may depend on the state.
A timer may fire once per arming and run its own operations. With `forger`, the last process is
Byzantine: it runs the same handlers and may also forge any message once.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from lockstep.specs.lang import And, Enum, If, Implies, Int, Not, Option, Range, Record, Set, Union, invariant, require
from lockstep.specs.lang.actors import ActorSpec, Local, Network, on_message, on_start, on_timeout, send, set_timer

_serial = itertools.count()


@dataclass(frozen=True)
class Desc:
    n: int
    ntags: int
    start: tuple  # per process: ((dst, tag, v), ...)
    ops: tuple  # ((pid, tag) -> op tuple) as ((pid, tag, (op, ...)), ...)
    timer_ops: tuple  # per process: (op, ...) or None (no timer)
    invariant: tuple  # (kind, a, b, c); kind "none": a property that always holds
    ordered: bool = False
    capacity: int = 1
    crashes: int = 0
    lossy: bool = False
    duplicating: bool = False
    symmetric: bool = False
    forger: bool = False


def _cond(p: Any, kind: tuple) -> Any:
    name = kind[0]
    if name == "true":
        return True
    if name == "fresh":
        return p.flag.is_none()
    if name == "x":
        return p.x == kind[1]
    return p.heard.card() >= kind[1]


def _run(p: Any, ops: tuple, src: int | None, v: int | None, n: int, tags: list) -> None:
    for op in ops:
        name = op[0]
        if name == "guard":
            require(p.x != op[1])
        elif name == "set":
            p.x = op[1]
        elif name == "inc":
            p.x = (p.x + 1) % 3
        elif name == "first":
            p.flag = If(p.flag.is_none(), v if v is not None else 0, p.flag)
        elif name == "hear" and src is not None:
            p.heard = p.heard.add(src)
        elif name == "send":
            _, dst, tag, value, cond = op
            d = src if dst == "src" and src is not None else (p.x if dst == "x" and n == 3 else
                                                                 (dst if isinstance(dst, int) else 0))
            when = _cond(p, cond)
            if value == "x":  # the value sent depends on the state
                for val in (0, 1):
                    send(d, tags[tag](val), when=And(when, p.x % 2 == val))
            else:
                send(d, tags[tag]((v or 0) if value == "m" else value), when=when)
        elif name == "arm":
            set_timer("t", when=_cond(p, op[1]))


def build(desc: Desc) -> type:
    """The ActorSpec class a description stands for."""
    n = desc.n
    proc = Range(n, symmetric=desc.symmetric)
    tags = [Record(f"M{i}", v=Int(0, 1)) for i in range(desc.ntags)]
    ops = {(pid, tag): o for pid, tag, o in desc.ops}

    def start(p):
        for dst, tag, v in desc.start[p.id]:
            send(dst, tags[tag](v))
        if desc.timer_ops[p.id] is not None:
            set_timer("t")

    def receive(p, src, m):
        tag = int(m.tag[1:])
        _run(p, ops.get((p.id, tag), ()), src, m.v, n, tags)

    def timeout(p, timer):
        _run(p, desc.timer_ops[p.id] or (), None, None, n, tags)

    kind, a, b, c = desc.invariant

    def inv(s):
        if kind == "pair":
            return Not(And(s.x[a % n] == c, s.x[b % n] == (c + 1) % 3))
        if kind == "none":
            return True
        if kind == "agree":
            fa, fb = s.flag[a % n], s.flag[b % n]
            return Implies(And(fa.is_some(), fb.is_some()), fa == fb)
        return Not(s.heard[a % n].contains(b % n))

    ns: dict[str, Any] = {
        "Process": proc, "Message": Union(*tags) if len(tags) > 1 else tags[0], "Timer": Enum("t"),
        "network": Network(ordered=desc.ordered, capacity=desc.capacity, lossy=desc.lossy,
                           duplicating=desc.duplicating),
        "max_crashes": desc.crashes, "byzantine": (n - 1,) if desc.forger else (), "forge": desc.forger,
        "x": Local(Int(0, 2), init=0), "flag": Local(Option(Int(0, 1))), "heard": Local(Set(proc)),
        "start": on_start(start), "receive": on_message(receive), "timeout": on_timeout(timeout),
        "byzantine_start": on_start(lambda p: start(p), byzantine=True),
        "byzantine_receive": on_message(lambda p, src, m: receive(p, src, m), byzantine=True),
        "byzantine_timeout": on_timeout(lambda p, timer: timeout(p, timer), byzantine=True),
        "prop": invariant(inv),
    }
    return type(f"Random{next(_serial)}", (ActorSpec,), ns)
