"""One agent of a population protocol as an OS process: it meets the partners the scheduler names.

The scheduler sends both agents of interaction k the frame `{"k": k, "i": initiator, "r":
responder}`, over the connection each agent opened to it (so no other sender can announce a
meeting). Every connection is authenticated with the run's secret (`wire`), so a partner's state
comes from that partner. When interaction k is the next of its meetings, each agent sends its state to the
other — the initiator `{"k", "src", "state"}`, the responder also a fresh draw from its own
seeded generator (`"draw"`) — and each applies the protocol's rule
(`lockstep.specs.lang.population.agents.Rules`) to the two states, the draw choosing the outcome of a
randomized rule, and keeps its side of the outcome. Each agent handles its interactions in
increasing k, so the run is the sequential random-pair process, with disjoint interactions
overlapping in time.

Every frame is decoded into declared types (agent states into the protocol's agent type); a
malformed, unauthenticated or unexpected frame is recorded as `rejected` and dropped; a partner's
state for an interaction more than MAX_AHEAD interactions ahead of this agent's next one is
rejected too (at most that many wait). Each agent records its
start state and every interaction (partner, both states before, its state after, the draw) in
a JSON-lines trace whose `clock` is the interaction number.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections import deque
from dataclasses import dataclass
from typing import Any

from lockstep.checker.loader import load_protocol
from lockstep.checker.safeio import create_new
from lockstep.specs.lang.population.agents import DRAWS, Rules, StateCodec, agent_rng, draw

from ..wire import RUNNER, Endpoint, FrameError, connect, credentials, member_name, parse, serve

ACK_EVERY = 32  # interactions an initiator completes between acknowledgements to the scheduler
MAX_AHEAD = 1 << 16  # meetings announced and partners' states held ahead of the interaction in progress
MAX_REJECTIONS_LOGGED = 1_000


@dataclass
class AgentConfig:
    """What a spawned agent is told (plain data)."""

    spec: str
    params: dict[str, int]
    pid: int
    agents: int  # the scheduler is process `agents`
    control_port: int
    trace: str | None
    seed: int
    state: Any  # the JSON form of the agent's start state
    durable: bool = False  # write each record through (crashes are planned)


def main(cfg: dict[str, Any]) -> None:
    """Entry point of a spawned agent; it exits at once when done (its trace is closed by then), skipping
    the interpreter's teardown of a large rule table."""
    try:
        asyncio.run(Agent(AgentConfig(**cfg)).run())
    except (KeyboardInterrupt, ConnectionError):
        pass
    os._exit(0)


def _int(obj: dict[str, Any], key: str, lo: int, hi: int) -> int:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise FrameError(f"{key} {v!r} is not an integer in {lo}..{hi}")
    return v


class Agent:
    """The state and event loop of one agent."""

    def __init__(self, cfg: AgentConfig):
        self.cfg = cfg
        self.pid = cfg.pid
        self.n = cfg.agents
        protocol = load_protocol(cfg.spec, cfg.params)
        self.rules = Rules(protocol)
        self.codec = StateCodec(protocol)
        self.state = self.codec.decode(cfg.state)
        self.rng: random.Random = agent_rng(cfg.seed, cfg.pid)
        self.meets: deque[tuple[int, int, int]] = deque()
        self.inbox: dict[tuple[int, int], tuple[int, int | None]] = {}  # (k, src) -> (state, draw)
        self.last_meet = 0
        self.sent_for = 0  # the interaction for which this agent has sent its state
        self.drawn = 0  # the draw this agent took as the responder of interaction `sent_for`
        self.outbox: dict[int, list[bytes]] = {}
        self.started = False
        self.seq = 0
        self.completed = self.acked = 0  # interactions this agent initiated and completed; acknowledged
        self.out: dict[int, Endpoint] = {}
        self.stats = {"interactions": 0, "initiated": 0, "received": 0, "rejected": 0}
        self.trace = create_new(cfg.trace, buffering=1 << 16) if cfg.trace else None

    # -- control ---------------------------------------------------------------------------------
    async def run(self) -> None:
        creds = credentials()
        server, port = await serve(creds, self.n + 1, on_frame=self.on_frame, on_rejected=self._broken, after=self.pump,
                                   accept=lambda peer: 0 <= peer < self.n and peer != self.pid)
        self.ctl = await connect(self.cfg.control_port, creds, RUNNER)
        self._log(json.dumps({"kind": "header", "spec": self.cfg.spec, "pid": self.pid}))
        self.ctl.send({"op": "hello", "port": port})
        try:
            while True:
                try:
                    cmd = await self.ctl.read()
                except FrameError as e:
                    self.reject(f"a malformed control frame from the runner: {e}")
                    continue
                op = cmd.get("op")
                if op == "peers":
                    await self._connect({int(k): v for k, v in cmd["ports"].items()})
                elif op == "go":
                    self.started = True
                    self.seq += 1
                    self._log(f'{{"kind":"start","pid":{self.pid},"clock":0,"seq":{self.seq},'
                              f'"state":{self.codec.text[self.state]}}}')
                    if self.trace is not None:
                        self.trace.flush()  # an agent that dies later still has its start on record
                    self.pump()
                elif op == "stop":
                    self._log(f'{{"kind":"end","pid":{self.pid},"clock":{self.done_through()},"seq":{self.seq + 1},'
                              f'"stats":{json.dumps(self.stats)}}}')
                    self._close_trace()
                    self.ctl.send({"op": "bye", "stats": self.stats, "state": self.codec.json[self.state],
                                   "pending": len(self.meets)})
                    await self.ctl.drain()
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the runner went away: stop
        finally:
            self._close_trace()
            server.close()
            for t in self.out.values():
                t.close()

    async def _connect(self, ports: dict[int, int]) -> None:
        creds = credentials()
        for dst, port in sorted(ports.items()):
            if dst != self.pid:
                self.out[dst] = await connect(port, creds, dst, on_frame=self.on_frame, on_rejected=self._broken,
                                              after=self.pump)
        self._send(self.n, f'{{"done":0,"src":{self.pid}}}')  # tells the scheduler whose connection this is
        self._flush()

    # -- frames ----------------------------------------------------------------------------------
    def on_frame(self, ep: Endpoint, body: bytes) -> None:
        """Decode one frame: a meeting from the scheduler, or a partner's state; reject anything else."""
        self.stats["received"] += 1
        from_scheduler = ep.peer == self.n
        try:
            obj = parse(body)
            k = _int(obj, "k", 1, 1 << 62)
            if ("i" in obj) != from_scheduler:
                raise FrameError("meetings come only from the scheduler, and only meetings" if from_scheduler
                                 else "a meeting from a sender other than the scheduler")
            if from_scheduler:
                i, r = _int(obj, "i", 0, self.n - 1), _int(obj, "r", 0, self.n - 1)
                if i == r or self.pid not in (i, r):
                    raise FrameError(f"interaction {k} pairs agents {i} and {r}, which is not a meeting of agent {self.pid}")
                if k <= self.last_meet:
                    raise FrameError(f"interaction {k} announced after interaction {self.last_meet}")
                if len(self.meets) >= MAX_AHEAD:
                    raise FrameError(f"more than {MAX_AHEAD} meetings announced ahead")
                self.last_meet = k
                self.meets.append((k, i, r))
                return
            src = _int(obj, "src", 0, self.n - 1)
            if src != ep.peer:
                raise FrameError(f"{member_name(ep.peer)} sent a state claiming to come from agent {src}")
            if k > self.done_through() + MAX_AHEAD:
                raise FrameError(f"a state for interaction {k}, more than {MAX_AHEAD} ahead of this agent's")
            state = self.codec.decode(obj.get("state"), "state")
            d = obj.get("draw")
            if d is not None and (isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < DRAWS):
                raise FrameError(f"draw {d!r} is not an integer in 0..2**53-1")
            if (k, src) in self.inbox or k <= self.done_through():
                raise FrameError(f"a second state from agent {src} for interaction {k}")
            self.inbox[(k, src)] = (state, d)
        except (FrameError, ValueError) as e:
            self.reject(str(e))

    def done_through(self) -> int:
        """The last interaction number this agent has finished (all its meetings before the queue's head)."""
        return self.meets[0][0] - 1 if self.meets else self.last_meet

    def reject(self, reason: str) -> None:
        self.stats["rejected"] += 1
        if self.stats["rejected"] <= MAX_REJECTIONS_LOGGED:
            self._log(f'{{"kind":"rejected","pid":{self.pid},"reason":{json.dumps(reason)}}}')

    def _broken(self, why: str) -> None:
        """A connection that does not authenticate, or whose bytes cannot be split into frames: rejected, closed."""
        self.reject(why + "; connection closed")

    # -- interactions ----------------------------------------------------------------------------
    def pump(self) -> None:
        """Carry out the meetings at the head of the queue, as far as the partners' states have arrived."""
        if not self.started:
            return
        meets, inbox, rules, text = self.meets, self.inbox, self.rules, self.codec.text
        while meets:
            k, i, r = meets[0]
            initiator = i == self.pid
            partner = r if initiator else i
            if self.sent_for != k:
                self.sent_for = k
                if initiator:
                    self._send(partner, f'{{"k":{k},"src":{self.pid},"state":{text[self.state]}}}')
                else:
                    self.drawn = draw(self.rng)
                    self._send(partner, f'{{"k":{k},"src":{self.pid},"state":{text[self.state]},"draw":{self.drawn}}}')
            got = inbox.pop((k, partner), None)
            if got is None:
                break
            q, d = got
            if initiator:
                if d is None:
                    self.reject(f"agent {partner}'s state for interaction {k} lacks the responder's draw")
                    break
                a, b = self.state, q
            else:
                a, b, d = q, self.state, self.drawn
            used = d if rules.randomized(a, b) else None
            out = rules.pick(a, b, used)
            before, self.state = self.state, out[0] if initiator else out[1]
            self._record(k, "initiator" if initiator else "responder", partner, before, q, used)
            self.stats["interactions"] += 1
            meets.popleft()
            if initiator:
                self.completed += 1
                self.stats["initiated"] += 1
                if self.completed - self.acked >= ACK_EVERY:
                    self._ack()
        if not meets and self.completed != self.acked:  # idle: tell the scheduler everything is done
            self._ack()
        self._flush()

    def _ack(self) -> None:
        self.acked = self.completed
        self._send(self.n, f'{{"done":{self.completed},"src":{self.pid}}}')

    def _send(self, dst: int, body: str) -> None:
        """Queue a frame for `dst`; `_flush` writes each destination's frames at once."""
        box = self.outbox.get(dst)
        if box is None:
            box = self.outbox[dst] = []
        box.append(body.encode())

    def _flush(self) -> None:
        boxes, self.outbox = self.outbox, {}
        for dst, bodies in boxes.items():
            ep = self.out.get(dst)
            if ep is not None:
                ep.send_many(bodies)

    # -- the trace -------------------------------------------------------------------------------
    def _record(self, k: int, role: str, partner: int, before: int, partner_before: int, d: int | None) -> None:
        if self.trace is None:
            return
        self.seq += 1
        text = self.codec.text
        self.trace.write(f'{{"kind":"interact","pid":{self.pid},"clock":{k},"seq":{self.seq},"role":"{role}",'
                         f'"partner":{partner},"before":{text[before]},"partner_before":{text[partner_before]},'
                         f'"after":{text[self.state]},"draw":{"null" if d is None else d}}}\n')
        if self.cfg.durable:
            self.trace.flush()

    def _log(self, line: str) -> None:
        if self.trace is not None:
            self.trace.write(line + "\n")
            if self.cfg.durable:
                self.trace.flush()

    def _close_trace(self) -> None:
        if self.trace is not None:
            self.trace.close()
            self.trace = None
