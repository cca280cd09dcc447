"""One node of a rounds spec as an OS process: broadcasts over TCP to its neighbours, round by round.

Each round the runner says `{"op": "round", "round": r}`. The node runs its compiled transmit
step and sends every neighbour one data frame for the round — the message, or `"msg": null`
when it listens — so a node knows it has heard the whole round once one frame per neighbour
has arrived. It then detects a collision (two or more neighbours broadcast), a conflict (it
broadcast too) or a reception (exactly one did), runs its compiled receive step, appends the
round to its JSONL trace and reports `done` to the runner, which starts the next round once
every node is done: the round barrier. Frames travel on connections authenticated with the run's
secret (`wire`) and are JSON decoded into the spec's message type; a frame that is not
authenticated, not from the neighbour it names, or malformed is recorded as `rejected` and
dropped. A node that stops normally ends its trace with an `end` record.

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
from lockstep.checker.safeio import create_new
from lockstep.specs.lang.jsonvalues import from_json, to_json
from lockstep.specs.lang.rounds import LocalRound, RoundsSystem, rounds_system

from ..wire import RUNNER, Endpoint, FrameError, connect, credentials, member_name, parse, serve, vector_clock

MAX_REJECTIONS_LOGGED = 1_000  # rejected frames recorded one by one (all are counted)
MAX_AHEAD = 2  # rounds ahead of its own that a node keeps its neighbours' frames for


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
        self.out: dict[int, Endpoint] = {}
        self.round = 0  # the last round the runner started here
        self.stats = {"rounds": 0, "broadcasts": 0, "received": 0, "collisions": 0, "conflicts": 0, "rejected": 0}
        self.t0 = time.monotonic()
        self.trace = create_new(cfg.trace, buffering=1) if cfg.trace else None
        self._write({"kind": "header", "spec": cfg.spec, "spec_name": sysm.name, "params": cfg.params, "pid": self.pid})

    async def run(self) -> None:
        creds = credentials()
        nbrs = set(self.nbrs)
        server, port = await serve(creds, len(nbrs), on_frame=self.on_frame, on_rejected=self.broken_stream,
                                   accept=lambda peer: peer in nbrs)
        self.ctl = await connect(self.cfg.control_port, creds, RUNNER)
        self.ctl.send({"op": "hello", "port": port})
        try:
            while True:
                try:
                    cmd = await self.ctl.read()
                    op = cmd.get("op")
                    if op == "peers":
                        for q in self.nbrs:
                            self.out[q] = await connect(int(cmd["ports"][str(q)]), creds, q,
                                                        on_frame=self._unexpected, on_rejected=self.broken_stream)
                    elif op == "go":
                        self.start(bool((cmd.get("choice") or {}).get("initiator")))
                    elif op == "round":
                        self.transmit(int(cmd["round"]), cmd.get("choice"))
                    elif op == "stop":
                        self._write({"kind": "end", "pid": self.pid, "clock": self.round, "seq": self.round,
                                     "time": self._now(), "stats": self.stats})
                        self._close()
                        self.ctl.send({"op": "bye", "stats": self.stats})
                        await self.ctl.drain()
                        break
                except (FrameError, KeyError, TypeError, ValueError) as e:
                    self.reject(f"a malformed control frame from the runner: {e}")
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
        self.ctl.send({"op": "rejected", "round": r, "reason": reason})

    def _unexpected(self, ep: Endpoint, body: bytes) -> None:
        self.reject(f"a frame from {member_name(ep.peer)} on a connection this node only sends on")

    def start(self, initiator: bool) -> None:
        step, fn = self.steps["start"][int(initiator)]
        out = fn(self.state + self.pad)
        self.state = out[0][1][:self.system.nstate] if out else self.state
        self.vc[self.pid] += 1
        ev = {"kind": "start", "pid": self.pid, "clock": 0, "seq": 0, "time": self._now(),
              "initiator": initiator, "state": self.system.local_json(self.state), "vc": list(self.vc)}
        self._write(ev)
        if self.cfg.controlled:
            self.ctl.send({"op": "started", "event": ev})

    def transmit(self, r: int, choice: Any = None) -> None:
        n = self.system.nstate
        self.round = max(self.round, r)
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
        body = json.dumps({"src": self.pid, "round": r, "msg": msg, "vc": self.vc}, separators=(",", ":")).encode()
        for q in self.nbrs:
            ep = self.out.get(q)
            if ep is not None:
                ep.send_body(body)
        if rep:
            self.stats["broadcasts"] += 1
        self._try_finish(r)

    def on_frame(self, ep: Endpoint, body: bytes) -> None:
        try:
            obj = parse(body)
            src, r = obj.get("src"), obj.get("round")
            if src not in self.nbrs or isinstance(src, bool):
                raise ValueError(f"src {src!r} is not a neighbour of node {self.pid} ({self.nbrs})")
            if src != ep.peer:
                raise ValueError(f"{member_name(ep.peer)} sent a frame claiming to come from node {src}")
            if isinstance(r, bool) or not isinstance(r, int) or r < 1:
                raise ValueError(f"round {r!r} is not a positive integer")
            if not self.round <= r <= self.round + MAX_AHEAD:
                raise ValueError(f"a frame for round {r} while node {self.pid} is in round {self.round}")
            if "msg" not in obj:
                raise ValueError('no "msg" (null when the sender listens)')
            rep = self.system.message_rep(obj["msg"])
            vc = vector_clock(obj.get("vc"), self.n)
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
        self.ctl.send(done)

    def reject(self, reason: str) -> None:
        self.stats["rejected"] += 1
        if self.stats["rejected"] <= MAX_REJECTIONS_LOGGED:
            self._write({"kind": "rejected", "pid": self.pid, "clock": self.round, "time": self._now(), "reason": reason})

    def broken_stream(self, why: str) -> None:
        """A connection that does not authenticate, or whose bytes cannot be split into frames: rejected, closed."""
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
