"""One node of a rounds spec as an OS process: broadcasts over TCP to its neighbours, round by round.

Each round the runner says `{"op": "round", "round": r}`. The node runs its compiled transmit
step and sends every neighbour one data frame for the round — the message, or `"msg": null`
when it listens — so a node knows it has heard the whole round once one frame per neighbour
has arrived. It then detects a collision (two or more neighbours broadcast), a conflict (it
broadcast too) or a reception (exactly one did), runs its compiled receive step, appends the
round to its JSONL trace and reports `done` to the runner, which starts the next round once
every node is done: the round barrier. Frames are JSON decoded into the spec's message type;
a malformed frame is recorded as `rejected` and dropped.

When a counterexample is replayed (`controlled`), the node reports its local state after its
start and, with each `done`, the round's event and its local state after the transmit step; the
round frame may carry `"choice": {"transmit": {...}, "receive": {...}}`, the values of the
handlers' choice parameters to take instead of random ones. The choice is decoded into the
parameters' declared types like any network input; a malformed or disabled one is recorded as
`rejected` and reported to the runner, and the node does not take the round.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass
from typing import Any

from lockstep.checker.codegen import compile_transitions
from lockstep.checker.loader import resolve
from lockstep.specs.lang.jsonvalues import from_json, to_json
from lockstep.specs.lang.rounds import LocalRound, RoundsSystem, rounds_system

from ..wire import FrameProtocol, frame, parse, read_frame


@dataclass
class RoundsNodeConfig:
    """What a spawned node is told (plain data)."""

    spec: str
    params: dict[str, int]
    pid: int
    control_port: int
    trace: str | None
    seed: int = 0
    controlled: bool = False  # replaying a counterexample: report states to the runner, take forced choices


def main(cfg: dict[str, Any]) -> None:
    """Entry point of a spawned node."""
    try:
        asyncio.run(RoundsNode(RoundsNodeConfig(**cfg)).run())
    except (KeyboardInterrupt, ConnectionError):
        pass


def choice_json(step: LocalRound) -> dict[str, Any]:
    """The values of a step's choice parameters, as JSON."""
    return {name: to_json(d, v) for (name, v), d in zip(step.choice, step.choice_doms)}


class RoundsNode:
    """The local state and round loop of one node."""

    def __init__(self, cfg: RoundsNodeConfig):
        self.cfg = cfg
        self.pid = cfg.pid
        cls, _ = resolve(cfg.spec)
        self.system: RoundsSystem = rounds_system(cls, cfg.params, [cfg.pid])
        sysm = self.system
        self.nbrs = sorted(sysm.graph.neighbors(self.pid))
        self.rng = random.Random(cfg.seed * 1000 + cfg.pid)
        self.steps = {}
        for kind, prog in (("start", None), ("transmit", sysm.transmit_prog), ("receive", sysm.receive_prog)):
            steps = sysm.steps[(kind, self.pid)]
            local = prog if prog is not None else sysm.transmit_prog
            fns = compile_transitions(local, [s.transition for s in steps])
            self.steps[kind] = list(zip(steps, fns))
        self.finished_fn = compile_transitions(sysm.transmit_prog, [sysm.finished[self.pid]])[0]
        self.state = sysm.init_locals[self.pid]
        self.pad = tuple(sysm.transmit_prog.init_defaults[sysm.nstate:])
        self.inbox: dict[int, dict[int, int]] = {}
        self.n = sysm.graph.number_of_nodes()
        self.vc = [0] * self.n  # vector clock: entry q counts node q's recorded events (start, rounds)
        self.heard_vc: dict[int, list[int]] = {}  # round -> the neighbours' clocks merged
        self.sent: dict[int, tuple[int, tuple]] = {}  # round -> (broadcast rep, state after transmit)
        self.choice: dict[int, dict[str, Any]] = {}
        self.forced: dict[int, tuple | None] = {}  # round -> the receive choice the runner imposes
        self.out: dict[int, asyncio.Transport] = {}
        self.stats = {"rounds": 0, "broadcasts": 0, "received": 0, "collisions": 0, "conflicts": 0, "rejected": 0}
        self.t0 = time.monotonic()
        self.trace = open(cfg.trace, "w", encoding="utf-8", buffering=1) if cfg.trace else None
        self._write({"kind": "header", "spec": cfg.spec, "spec_name": sysm.name, "params": cfg.params, "pid": self.pid})

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: FrameProtocol(self.on_frame, self.broken_stream), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, self.ctl = await asyncio.open_connection("127.0.0.1", self.cfg.control_port)
        self.ctl.write(frame({"op": "hello", "pid": self.pid, "port": port}))
        try:
            while True:
                cmd = await read_frame(reader)
                op = cmd.get("op")
                if op == "peers":
                    for q in self.nbrs:
                        self.out[q], _ = await loop.create_connection(asyncio.Protocol, "127.0.0.1", cmd["ports"][str(q)])
                elif op == "go":
                    self.start(bool((cmd.get("choice") or {}).get("initiator")))
                elif op == "round":
                    self.transmit(int(cmd["round"]), cmd.get("choice"))
                elif op == "stop":
                    self._close()
                    self.ctl.write(frame({"op": "bye", "pid": self.pid, "stats": self.stats}))
                    await self.ctl.drain()
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._close()
            server.close()
            for t in self.out.values():
                t.close()

    # -- the round ------------------------------------------------------------------------------
    def _run(self, kind: str, padded: tuple, forced: tuple | None = None) -> tuple[Any, tuple]:
        """The step taken (the forced choice, else a random enabled one) and the local state after it."""
        enabled = []
        for step, fn in self.steps[kind]:
            out = fn(padded)
            if out:
                enabled.append((step, out[0][1]))
        if not enabled:
            raise RuntimeError(f"node {self.pid}: no {kind} step is enabled")
        if forced is not None:
            hit = next((e for e in enabled if e[0].choice == forced), None)
            if hit is None:
                raise ValueError(f"the {kind} choice {dict(forced)} is not enabled at node {self.pid}")
            return hit
        return enabled[0] if len(enabled) == 1 else self.rng.choice(enabled)

    def _forced(self, choice: Any) -> dict[str, tuple | None]:
        """The handlers' choices a round frame imposes, decoded into their declared types (ValueError if malformed)."""
        if choice is None:
            return {"transmit": None, "receive": None}
        if not isinstance(choice, dict) or not set(choice) <= {"transmit", "receive"}:
            raise ValueError('choice: expected an object with "transmit" and/or "receive"')
        out: dict[str, tuple | None] = {}
        for kind in ("transmit", "receive"):
            given = choice.get(kind)
            step = self.steps[kind][0][0]
            names = [name for name, _ in step.choice]
            if given is None:
                out[kind] = None
            elif not isinstance(given, dict) or sorted(given) != sorted(names):
                raise ValueError(f"choice.{kind}: expected an object with the fields {', '.join(names) or '(none)'}")
            else:
                out[kind] = tuple((name, from_json(d, given[name], f"choice.{kind}.{name}"))
                                  for name, d in zip(names, step.choice_doms))
        return out

    def refuse(self, r: int, reason: str) -> None:
        """A round the runner asked for that this node does not take: rejected, and reported."""
        self.reject(reason)
        self.ctl.write(frame({"op": "rejected", "round": r, "reason": reason}))

    def start(self, initiator: bool) -> None:
        step, fn = self.steps["start"][int(initiator)]
        out = fn(self.state + self.pad)
        self.state = out[0][1][:self.system.nstate] if out else self.state
        self.vc[self.pid] += 1
        ev = {"kind": "start", "pid": self.pid, "clock": 0, "seq": 0, "time": self._now(),
              "initiator": initiator, "state": self.system.local_json(self.state), "vc": list(self.vc)}
        self._write(ev)
        if self.cfg.controlled:
            self.ctl.write(frame({"op": "started", "event": ev}))

    def transmit(self, r: int, choice: Any = None) -> None:
        n = self.system.nstate
        try:
            forced = self._forced(choice)
            step, full = self._run("transmit", self.state + self.pad, forced["transmit"])
        except ValueError as e:
            self.refuse(r, str(e))
            return
        self.forced[r] = forced["receive"]
        rep = full[n]
        self.sent[r] = (rep, full[:n])
        self.choice[r] = choice_json(step)
        msg = self.system.message_json(rep)
        body = frame({"src": self.pid, "round": r, "msg": msg, "vc": self.vc})
        for q in self.nbrs:
            t = self.out.get(q)
            if t is not None and not t.is_closing():
                t.write(body)
        if rep:
            self.stats["broadcasts"] += 1
        self._try_finish(r)

    def on_frame(self, body: bytes) -> None:
        try:
            obj = parse(body)
            src, r = obj.get("src"), obj.get("round")
            if src not in self.nbrs or isinstance(src, bool):
                raise ValueError(f"src {src!r} is not a neighbour of node {self.pid} ({self.nbrs})")
            if isinstance(r, bool) or not isinstance(r, int) or r < 1:
                raise ValueError(f"round {r!r} is not a positive integer")
            if "msg" not in obj:
                raise ValueError('no "msg" (null when the sender listens)')
            rep = self.system.message_rep(obj["msg"])
            vc = obj.get("vc")
            if vc is not None and not (isinstance(vc, list) and len(vc) == self.n and
                                       all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in vc)):
                raise ValueError(f"vc is not a vector clock of {self.n} non-negative integers")
            box = self.inbox.setdefault(r, {})
            if src in box:
                raise ValueError(f"a second frame from {src} in round {r}")
            box[src] = rep
            if vc is not None:
                have = self.heard_vc.get(r, vc)
                self.heard_vc[r] = [max(a, b) for a, b in zip(have, vc)]
        except ValueError as e:
            self.reject(str(e))
            return
        self._try_finish(r)

    def _try_finish(self, r: int) -> None:
        box = self.inbox.get(r, {})
        if r not in self.sent or len(box) < len(self.nbrs):
            return
        del self.inbox[r]
        mine, mid = self.sent.pop(r)
        spoke = [rep for rep in box.values() if rep]
        received = spoke[0] if not mine and len(spoke) == 1 else 0
        try:
            step, full = self._run("receive", mid + (received,), self.forced.pop(r, None))
        except ValueError as e:
            self.refuse(r, str(e))
            return
        self.state = full[:self.system.nstate]
        heard_vc = self.heard_vc.pop(r, self.vc)
        self.vc = [max(a, b) for a, b in zip(self.vc, heard_vc)]
        self.vc[self.pid] += 1
        self.stats["rounds"] += 1
        self.stats["received"] += bool(received)
        self.stats["collisions"] += len(spoke) >= 2
        self.stats["conflicts"] += bool(mine and spoke)
        choice = {**self.choice.pop(r), **choice_json(step)}
        ev = {"kind": "round", "pid": self.pid, "clock": r, "seq": r, "time": self._now(), "round": r,
              "broadcast": self.system.message_json(mine), "heard": len(spoke),
              "received": self.system.message_json(received), "state": self.system.local_json(self.state),
              "vc": list(self.vc)}
        if choice:
            ev["choice"] = choice
        self._write(ev)
        finished = bool(self.finished_fn(self.state + self.pad))
        done: dict[str, Any] = {"op": "done", "round": r, "finished": finished}
        if self.cfg.controlled:
            done.update(event=ev, transmitted=self.system.local_json(mid))
        self.ctl.write(frame(done))

    def reject(self, reason: str) -> None:
        self.stats["rejected"] += 1
        self._write({"kind": "rejected", "pid": self.pid, "time": self._now(), "reason": reason})

    def broken_stream(self, why: str) -> None:
        """A connection whose bytes cannot be split into frames: rejected, then closed."""
        self.reject(why + "; connection closed")

    # -- the trace ------------------------------------------------------------------------------
    def _write(self, obj: dict[str, Any]) -> None:
        if self.trace is not None:
            self.trace.write(json.dumps(obj, separators=(",", ":")) + "\n")

    def _close(self) -> None:
        if self.trace is not None:
            self.trace.close()
            self.trace = None

    def _now(self) -> float:
        return round(time.monotonic() - self.t0, 6)
