"""One actor as an OS process: TCP on 127.0.0.1, real timers, a JSONL trace with Lamport and vector clocks.

The process runs the spec's compiled handlers (`LocalExec`) on its local state. A message
whose handler is not enabled (a `require` fails) is kept and retried after each later step, as
the spec keeps it in flight; at most MAX_DEFERRED wait, and a message beyond that is dropped and
recorded as `overflow` (in the spec it stays in flight). Every connection is authenticated with
the run's secret (`wire`); a frame that is not authenticated, not from its sender, or malformed is
recorded as `rejected` (the first MAX_REJECTIONS_LOGGED of them; all are counted in the `end`
record) and dropped; the process keeps running. In controlled mode (replay) timers fire only
when the runner says so, and every event is also reported to the runner.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass
from typing import Any

from lockstep.checker.loader import load_model
from lockstep.checker.safeio import create_new, open_append
from lockstep.specs.lang.jsonvalues import to_json

from ..wire import RELAY, RUNNER, Endpoint, FrameError, MessageCodec, connect, credentials, member_name, parse, serve
from .handlers import LocalExec, Outcome, StepFailed

FAILED_EXIT = 3  # the exit code of a process whose handler failed
FORGE_RATE = 0.3  # how likely a forging process sends each possible forged message
MAX_DEFERRED = 10_000  # deliveries waiting for their handler to be enabled
MAX_REJECTIONS_LOGGED = 1_000  # rejected frames recorded one by one (all are counted)


@dataclass
class NodeConfig:
    """What a spawned process is told (plain data)."""

    spec: str
    params: dict[str, int]
    pid: int
    control_port: int
    trace: str | None
    seed: int = 0
    controlled: bool = False
    restore: bool = False
    durable: bool = False  # write each event through before its messages leave (crashes are planned)


def main(cfg: dict[str, Any]) -> None:
    """Entry point of a spawned process."""
    try:
        asyncio.run(Node(NodeConfig(**cfg)).run())
    except (KeyboardInterrupt, ConnectionError):
        pass


class Node:
    """The state and event loop of one process."""

    def __init__(self, cfg: NodeConfig):
        self.cfg = cfg
        self.pid = cfg.pid
        model = load_model(cfg.spec, cfg.params)
        self.system = model.prog.system
        self.exec = LocalExec(self.system, cfg.pid, cfg.seed * 1000 + cfg.pid)
        self.codec = MessageCodec(self.system)
        self.state = self.system.init_locals[cfg.pid]
        self.timer_field = self.system.local.field("timers") if self.system.timer is not None else None
        self.clock = 0
        self.vc = [0] * self.system.proc.size  # vector clock: entry p counts process p's recorded events
        self.seq = 0
        self.t0 = time.monotonic()
        self.deferred: list[tuple[int, int, Any, list[int] | None]] = []
        self.handles: dict[str, asyncio.TimerHandle] = {}
        self.out: dict[int, Endpoint] = {}
        self.outbox: dict[Endpoint, list[bytes]] = {}
        self.failed = False
        self.started = False
        self.stopped = False
        self.stats = {"events": 0, "sent": 0, "received": 0, "rejected": 0, "deferred": 0, "lost": 0, "overflow": 0}
        self._msg_texts: dict[Any, str] = {}
        self._state_texts: dict[tuple, str] = {}
        self.trace = None
        if cfg.trace:
            self.trace = (open_append if cfg.restore else create_new)(cfg.trace, buffering=1 << 16)

    # -- control ---------------------------------------------------------------------------------
    async def run(self) -> None:
        creds = credentials()
        server, port = await serve(creds, self.system.proc.size, on_frame=self.on_frame, on_rejected=self.broken_stream,
                                   accept=lambda peer: peer != RUNNER)
        self.ctl = await connect(self.cfg.control_port, creds, RUNNER)
        if self.trace is not None and not self.cfg.restore:
            self._write({"kind": "header", "spec": self.cfg.spec, "spec_name": self.system.name,
                         "params": self.cfg.params, "pid": self.pid})
        self.report({"op": "hello", "port": port})
        try:
            while True:
                try:
                    cmd = await self.ctl.read()
                    if await self._command(cmd):
                        break
                except (FrameError, KeyError, TypeError, ValueError) as e:
                    self.reject(f"a malformed control frame from the runner: {e}")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the runner went away: stop
        finally:
            self._close_trace()
            server.close()
            for t in set(self.out.values()):
                t.close()

    async def _command(self, cmd: dict[str, Any]) -> bool:
        """Carry out one command of the runner; True when told to stop."""
        op = cmd.get("op")
        if op == "peers":
            await self._connect({int(k): int(v) for k, v in cmd["ports"].items()}, bool(cmd.get("relay")))
        elif op == "go":
            self.t0 = time.monotonic() - float(cmd.get("elapsed", 0.0))
            self._restore() if self.cfg.restore else self._start(cmd.get("choice"))
            self.started = True
            self._retry()
        elif op == "fire":
            self.fire(str(cmd["timer"]), cmd.get("choice"))
        elif op == "forge":
            self._forge_one(int(cmd["dst"]), self.codec.decode_msg(cmd["msg"]))
        elif op == "stop":
            self.stopped = True
            for handle in self.handles.values():
                handle.cancel()
            self._log({"kind": "end", "pid": self.pid, "clock": self.clock, "seq": self.seq, "time": self._now(),
                       "stats": self.stats})
            self._close_trace()
            self.report({"op": "bye", "stats": self.stats, "deferred": len(self.deferred),
                         "state": self._json_state(self.state)})
            await self.ctl.drain()
            return True
        return False

    async def _connect(self, ports: dict[int, int], relay: bool) -> None:
        """Open an authenticated connection to every process's data port (to the relay's, once, with a relay)."""
        creds = credentials()
        by_port: dict[int, Endpoint] = {}
        for dst, port in sorted(ports.items()):
            if port not in by_port:
                by_port[port] = await connect(port, creds, RELAY if relay else dst, on_frame=self._unexpected,
                                              on_rejected=self.broken_stream)
            self.out[dst] = by_port[port]

    def _unexpected(self, ep: Endpoint, body: bytes) -> None:
        self.reject(f"a frame from {member_name(ep.peer)} on a connection this process only sends on")

    def report(self, obj: dict[str, Any]) -> None:
        self.ctl.send(obj)

    # -- events ----------------------------------------------------------------------------------
    def _start(self, choice: dict[str, Any] | None = None) -> None:
        if self.exec.handles("start") and not self.handle("start", choice=choice):
            self.reject("the start handler is not enabled in the initial state")
        if self.system.forge and self.pid in self.system.byzantine and not self.cfg.controlled:
            self._forge()

    def _forge(self) -> None:
        """A Byzantine process of a spec with `forge = True`: send forged messages, each well-typed
        message to each process at most once (with probability FORGE_RATE), as the spec allows."""
        for dst in self.system.pids:
            for msg in self.system.message.values():
                if self.exec.rng.random() < FORGE_RATE:
                    self._forge_one(dst, msg)

    def _forge_one(self, dst: int, msg: Any) -> None:
        self.clock += 1
        self.seq += 1
        self._tick(None)
        self._log(f'{{"kind":"forge","pid":{self.pid},"clock":{self.clock},"seq":{self.seq},'
                  f'"time":{self._now()},"dst":{dst},"msg":{self._msg_text(msg)},"vc":{self._vc_text()}}}')
        self._send(dst, msg)

    def _restore(self) -> None:
        """Continue from the last state this process recorded before it was killed."""
        from lockstep.checker.validation.runtrace import STEP_KINDS, read_jsonl

        events = read_jsonl(self.cfg.trace, tolerate_torn_end=True)[0] if self.cfg.trace else []
        last = next((e for e in reversed(events) if e.get("kind") in (*STEP_KINDS, "restart")), None)
        if last is None:  # killed before it recorded its start: start afresh
            self._start()
            return
        self.state = self.system.local_from_json(last["state"])
        self.clock = max(e["clock"] for e in events if "clock" in e)
        self.seq = max(e["seq"] for e in events if "seq" in e) + 1
        for e in events:
            if isinstance(e.get("vc"), list) and len(e["vc"]) == len(self.vc):
                self.vc = [max(a, b) for a, b in zip(self.vc, e["vc"])]
        self._tick(None)
        self._log({"kind": "restart", "pid": self.pid, "clock": self.clock, "seq": self.seq, "time": self._now(),
                   "state": self._json_state(self.state), "vc": self.vc})
        self._timers([])

    def on_frame(self, ep: Endpoint, body: bytes) -> None:
        if self.stopped:  # the end is on record: nothing more is served (or sent from a handler)
            return
        self.stats["received"] += 1
        try:
            src, dst, clock, msg, vc = self.codec.decode_frame(body)
        except FrameError as e:
            self.reject(str(e))
            return
        if dst != self.pid:
            self.reject(f"a frame for process {dst} arrived at process {self.pid}")
            return
        if ep.peer != src and ep.peer != RELAY:
            self.reject(f"{member_name(ep.peer)} sent a frame claiming to come from process {src}")
            return
        choice = None
        if self.cfg.controlled and b'"choice"' in body:  # the scheduler names the nondeterministic choice
            choice = parse(body).get("choice")
        self.deliver(src, clock, msg, choice, vc)

    def deliver(self, src: int, clock: int, msg: Any, choice: dict[str, Any] | None = None,
                vc: list[int] | None = None) -> None:
        if self.failed:
            return
        if not self.started:  # every process starts before it handles a message, as in the spec
            self._defer(src, clock, msg, vc)
            return
        if self.handle("message", src, msg, None, clock, choice, vc):
            self._retry()
        else:
            self._defer(src, clock, msg, vc)
            self.stats["deferred"] += 1
            if self.cfg.controlled:
                self.report({"op": "deferred", "pid": self.pid, "src": src, "msg": self.codec.msg_json(msg)})

    def _defer(self, src: int, clock: int, msg: Any, vc: list[int] | None) -> None:
        """Keep a delivery until its handler is enabled; beyond MAX_DEFERRED it is dropped and recorded."""
        if len(self.deferred) < MAX_DEFERRED:
            self.deferred.append((src, clock, msg, vc))
            return
        self.stats["overflow"] += 1
        self._log(f'{{"kind":"overflow","pid":{self.pid},"clock":{self.clock},"time":{self._now()},"src":{src},'
                  f'"sent":{clock},"msg":{self._msg_text(msg)},"waiting":{len(self.deferred)}}}')

    def _retry(self) -> None:
        progress = True
        while progress and self.deferred and not self.failed:
            progress = False
            for i, (src, clock, msg, vc) in enumerate(self.deferred):
                if self.handle("message", src, msg, None, clock, None, vc):
                    del self.deferred[i]
                    progress = True
                    break

    def fire(self, timer: str, choice: dict[str, Any] | None = None) -> None:
        if timer not in self.system.timer_names:
            self.reject(f"the runner fired {timer!r}, which is not a timer of the spec")
            return
        self.handles.pop(timer, None)
        if not self.failed and self.handle("timeout", timer=timer, choice=choice):
            self._retry()
        elif self.cfg.controlled:
            self.report({"op": "deferred", "pid": self.pid, "timer": timer})

    def handle(self, kind: str, src: int | None = None, msg: Any = None, timer: str | None = None,
               in_clock: int = 0, choice: dict[str, Any] | None = None, in_vc: list[int] | None = None) -> bool:
        """Run the handler for one input; False if it is not enabled in the current state."""
        try:
            out = self.exec.run(self.state, kind, src, msg, timer, choice)
        except StepFailed as e:
            self._fail(kind, src, msg, timer, in_clock, str(e), in_vc)
            return True
        if out is None:
            return False
        self.clock = max(self.clock, in_clock) + 1
        self._tick(in_vc)
        self.seq += 1
        self.state = out.state
        self.stats["events"] += 1
        if self.trace is not None or self.cfg.controlled:
            self._log(self._event(kind, src, msg, timer, out, in_clock))
        for dst, m in out.sends:
            self._send(dst, m)
        self._timers(out.restarts)
        return True

    def _send(self, dst: int, msg: Any) -> None:
        """Queue a frame; the frames of one batch of input leave together (one write per connection)."""
        ep = self.out.get(dst)
        if ep is None or ep.is_closing():
            self.stats["lost"] += 1
            return
        box = self.outbox.get(ep)
        if box is None:
            box = self.outbox[ep] = []
            if len(self.outbox) == 1:
                asyncio.get_running_loop().call_soon(self._flush)
        box.append(self.codec.encode(self.pid, dst, self.clock, msg, self.vc))
        self.stats["sent"] += 1

    def _flush(self) -> None:
        boxes, self.outbox = self.outbox, {}
        for ep, bodies in boxes.items():
            ep.send_many(bodies)

    def _timers(self, restarts: list[str]) -> None:
        if self.timer_field is None or self.cfg.controlled:
            return
        armed = self.timer_field.decode(self.state)
        loop = asyncio.get_running_loop()
        for name, on in armed.items():
            h = self.handles.get(name)
            if not on:
                if h is not None:
                    h.cancel()
                    del self.handles[name]
            elif name in restarts or h is None:
                if h is not None:
                    h.cancel()
                self.handles[name] = loop.call_later(self.system.timeouts_ms[name] / 1000, self.fire, name)

    def _fail(self, kind: str, src: int | None, msg: Any, timer: str | None, in_clock: int, message: str,
              in_vc: list[int] | None = None) -> None:
        self.failed = True
        self.clock = max(self.clock, in_clock) + 1
        self._tick(in_vc)
        self.seq += 1
        ev = {"kind": "failure", "pid": self.pid, "clock": self.clock, "seq": self.seq, "time": self._now(),
              "input": kind, "message": message, "vc": self.vc}
        if src is not None:
            ev["src"], ev["msg"] = src, self.codec.msg_json(msg)
        if timer is not None:
            ev["timer"] = timer
        self._log(ev)
        for h in self.handles.values():
            h.cancel()
        if not self.cfg.controlled:  # a failed handler stops the process, as a failed step stops the spec
            self._close_trace()
            os._exit(FAILED_EXIT)

    def reject(self, reason: str) -> None:
        self.stats["rejected"] += 1
        if self.stats["rejected"] <= MAX_REJECTIONS_LOGGED:
            self._log({"kind": "rejected", "pid": self.pid, "clock": self.clock, "time": self._now(), "reason": reason})

    def broken_stream(self, why: str) -> None:
        """A connection that does not authenticate, or whose bytes cannot be split into frames: rejected, closed."""
        self.reject(why + "; connection closed")

    # -- the trace -------------------------------------------------------------------------------
    def _tick(self, received: list[int] | None) -> None:
        """The vector clock of a new recorded event: merged with a received message's clock, own entry + 1.
        A new list, so clocks already sent or logged are not changed."""
        vc = self.vc if received is None else [max(a, b) for a, b in zip(self.vc, received)]
        vc = list(vc)
        vc[self.pid] += 1
        self.vc = vc

    def _vc_text(self) -> str:
        return "[" + ",".join(map(str, self.vc)) + "]"

    def _event(self, kind: str, src: int | None, msg: Any, timer: str | None, out: Outcome, sent: int = 0) -> str:
        """The event as one JSON line, assembled from cached JSON texts of messages and states."""
        parts = [f'{{"kind":"{kind}","pid":{self.pid},"clock":{self.clock},"seq":{self.seq},"time":{self._now()}']
        if kind == "message":
            parts.append(f',"src":{src},"sent":{sent},"msg":{self._msg_text(msg)}')
        elif kind == "timeout":
            parts.append(f',"timer":{json.dumps(timer)}')
        if out.step.choice:
            choice = {n: to_json(d, v) for (n, v), d in zip(out.step.choice, out.step.choice_doms)}
            parts.append(f',"choice":{json.dumps(choice, separators=(",", ":"))}')
        sends = ",".join(f"[{d},{self._msg_text(m)}]" for d, m in out.sends)
        parts.append(f',"sends":[{sends}],"timers":{json.dumps(out.restarts)}')
        if out.observed:
            ops = [to_json(self.system.observation, op) for op in out.observed]  # type: ignore[arg-type]
            parts.append(f',"observed":{json.dumps(ops, separators=(",", ":"))}')
        parts.append(f',"state":{self._state_text(out.state)},"vc":{self._vc_text()}}}')
        return "".join(parts)

    def _msg_text(self, msg: Any) -> str:
        t = self._msg_texts.get(msg)
        if t is None:
            t = self._msg_texts[msg] = json.dumps(self.codec.msg_json(msg), separators=(",", ":"))
        return t

    def _state_text(self, state: tuple) -> str:
        t = self._state_texts.get(state)
        if t is None:
            if len(self._state_texts) > 100_000:
                self._state_texts.clear()
            t = self._state_texts[state] = json.dumps(self._json_state(state), separators=(",", ":"))
        return t

    def _json_state(self, state: tuple) -> Any:
        return self.system.local_json(state)

    def _log(self, ev: dict[str, Any] | str) -> None:
        line = ev if isinstance(ev, str) else json.dumps(ev, separators=(",", ":"))
        if self.trace is not None:
            self.trace.write(line + "\n")
            if self.cfg.durable:
                self.trace.flush()
        if self.cfg.controlled:
            self.report({"op": "event", "event": json.loads(line)})

    def _write(self, obj: dict[str, Any]) -> None:
        assert self.trace is not None
        self.trace.write(json.dumps(obj, separators=(",", ":")) + "\n")

    def _close_trace(self) -> None:
        if self.trace is not None:
            self.trace.close()
            self.trace = None

    def _now(self) -> float:
        return round(time.monotonic() - self.t0, 6)

