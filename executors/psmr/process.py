"""The processes of a P-SMR run: group sequencers, the hub, replica workers and client proxies.

Ordering layer (atomic multicast with acyclic order): one sequencer per group g_1..g_W numbers the
commands of its group and sends them, in that order, to worker g of every replica; the hub is
g_all's sequencer: it orders every multi-group command and forwards it, in its order, to the
sequencer of each group the command is addressed to, which merges it into its stream where it
arrives. Every worker therefore delivers a projection of one order per group, and multi-group
commands appear in the same relative order in every stream: the delivery relation is acyclic.
It tolerates crashes of replicas (clients take the first reply); a sequencer or the hub is a
single point of failure (no Paxos underneath).

A replica is W worker processes sharing the key-value store in shared memory; they execute
single-group commands alone and synchronise on multi-group commands with signal/go frames. Every
process writes its events as a log in Lockstep's event schema (`lockstep.trace`, docs/conformance.md):
each frame carries an id, and an event lists the ids of the frames it sent and received, which is
its causal order; `mapping.py` relates the events to the spec's steps. Clients also write the history
of their operations, which `lockstep linearizable` checks.

Every connection is authenticated with the run's secret (`wire`: only the run's processes can
connect or send). Network input is decoded into declared shapes (`_cmds`), never unpickled; a
malformed frame is counted and dropped.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import deque
from multiprocessing import shared_memory
from typing import Any

from lockstep.checker.safeio import create_new
from lockstep.specs.psmr.commands import CG_FUNCTIONS, WORKLOAD, Command, execute
from lockstep.trace import Log

from ..wire import RUNNER, Endpoint, FrameError, connect, credentials, dumps, member_name, parse, serve
from .faults import Injector
from .layout import MAX_RANDOM_VALUE, Layout, ServiceConfig

OPS = ("get", "put", "putall")
# who may send each kind of frame to each role: a member of the run speaks only in its own role
SENDERS = {("sequencer", "mc"): "client", ("sequencer", "fw"): "hub", ("hub", "mc"): "client",
           ("worker", "dl"): "sequencer", ("worker", "sig"): "worker", ("worker", "go"): "worker",
           ("client", "rep"): "worker"}
MAX_CLOCK = 1 << 62  # a Lamport clock beyond this is refused
MAX_REJECTIONS_LOGGED = 1_000  # rejected frames recorded one by one in a process's trace (all are counted)


def main(cfg: dict[str, Any]) -> None:
    """Entry point of a spawned process."""
    service = ServiceConfig(**cfg["service"])
    layout = Layout(service)
    kind = layout.role(cfg["pid"])[0]
    cls = {"sequencer": Sequencer, "hub": Hub, "worker": Worker, "client": Client}[kind]
    try:
        asyncio.run(cls(cfg, service, layout).run())
    except (KeyboardInterrupt, ConnectionError):
        pass


def _cmds(obj: Any) -> list[tuple[int, Command]]:
    """A frame's commands as (id, Command), checked field by field (FrameError otherwise)."""
    if not isinstance(obj, list) or len(obj) > 100_000:
        raise FrameError("cmds must be a list")
    out = []
    for item in obj:
        if not (isinstance(item, list) and len(item) == 4):
            raise FrameError(f"a command must be [id, op, key, value], got {item!r}")
        cid, op, key, value = item
        if not isinstance(cid, int) or op not in OPS or not (key is None or isinstance(key, int)) \
                or not (value is None or isinstance(value, int)):
            raise FrameError(f"malformed command {item!r}")
        if (op == "putall") != (key is None) or (op == "get") != (value is None):
            raise FrameError(f"malformed command {item!r}")
        out.append((cid, Command(op, key, value)))
    return out


def _wire(cid: int, c: Command) -> list:
    return [cid, c.op, c.key, c.value]


def _frame_id(v: Any) -> str:
    """A frame's id (a short string), or FrameError."""
    if not isinstance(v, str) or not 0 < len(v) <= 40:
        raise FrameError(f"a frame's id must be a string of at most 40 characters, got {str(v)[:60]!r}")
    return v


class Member:
    """What every process does: the control connection, a server for data frames, peers, a trace."""

    def __init__(self, cfg: dict[str, Any], service: ServiceConfig, layout: Layout):
        self.pid = cfg["pid"]
        self.cfg, self.service, self.layout = cfg, service, layout
        self.role = layout.role(self.pid)
        self.cg = CG_FUNCTIONS[service.cg]
        self.peers: dict[int, int] = {}
        self.out: dict[int, Endpoint] = {}
        self.outbox: dict[int, list] = {}
        self.connecting: dict[int, list] = {}  # frames for peers whose connection is being made
        self.rejected = 0
        self.stopped = False
        self.stats: dict[str, int] = {}
        self.durable = bool(cfg.get("durable"))
        self.ids = 0  # frames sent, for their ids
        path = cfg.get("trace")
        self.trace_file = create_new(path, buffering=1 << 16) if path else None
        self.trace = None if self.trace_file is None else Log(
            self.trace_file, self.pid, clocks=False,
            header={"role": self.role[0], "at": list(self.role[1:]), "service": service.as_dict()})
        self.t0 = time.monotonic()
        plan = cfg.get("faults")
        self.injector = None if plan is None else Injector(plan, self.pid, service.seed, self._replica_of, self.now,
                                                           self._enqueue, self._lost)

    def groups(self, c: Command) -> frozenset[int]:
        return self.cg(c, self.service.workers, self.service.keys)

    def log(self, action: str, args: dict[str, Any], sent: list[str] | None = None,
            recv: list[str] | None = None) -> None:
        """Write an event of this process: what it did, the frames it sent and those it acted on (by id)."""
        if self.trace is not None:
            self.trace.event(action, args, sent=sent, recv=recv, time=self.now())
            if self.durable:
                self.trace_file.flush()  # type: ignore[union-attr]

    def new_id(self) -> str:
        """A new frame id, unique in the run."""
        self.ids += 1
        return f"{self.pid}.{self.ids}"

    async def run(self) -> None:
        creds = credentials()
        server, port = await serve(creds, self.layout.size, on_frame=self._frame, on_rejected=self._broken,
                                   accept=lambda peer: peer != RUNNER)
        self.ctl = await connect(self.cfg["control_port"], creds, RUNNER)
        self.ctl.send({"op": "hello", "port": port})
        try:
            while True:
                try:
                    cmd = await self.ctl.read()
                except FrameError as e:
                    self._broken(f"a malformed control frame: {e}")
                    continue
                op = cmd.get("op")
                if op == "peers":
                    self.peers = {int(k): int(v) for k, v in cmd["ports"].items()}
                elif op == "go":
                    self.t0 = time.monotonic() - float(cmd.get("elapsed", 0.0))
                    self.start()
                elif op == "stop":
                    self.stopped = True  # frames arriving from now on are neither served nor recorded
                    self.finish()
                    self.close_trace()
                    faults = self.injector.stats if self.injector is not None else {}
                    self.ctl.send({"op": "bye", "stats": self.stats | faults | {"rejected": self.rejected}})
                    await self.ctl.drain()
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.close_trace()
            server.close()

    def close_trace(self) -> None:
        """Write the log's end record (it is complete) and close it."""
        if self.trace is not None:
            self.trace.close()
            self.trace_file.close()  # type: ignore[union-attr]
            self.trace = None

    def start(self) -> None:
        """Called once every process is up."""

    def finish(self) -> None:
        """Called when the run stops."""

    # -- frames ------------------------------------------------------------------------------
    def _frame(self, ep: Endpoint, body: bytes) -> None:
        if self.stopped:
            return
        try:
            msg = parse(body)
            want = SENDERS.get((self.role[0], msg.get("t")))
            sender = self.layout.role(ep.peer)[0] if 0 <= ep.peer < self.layout.size else "stranger"
            if want is not None and sender != want:
                raise FrameError(f"a {msg.get('t')!r} frame from {member_name(ep.peer)}, a {sender}: only a {want} "
                                 f"sends it to a {self.role[0]}")
            self.on_frame(msg, ep.peer)
        except (FrameError, KeyError, TypeError, ValueError) as e:
            self._broken(str(e)[:200])

    def _broken(self, why: str) -> None:
        self.rejected += 1
        if self.rejected <= MAX_REJECTIONS_LOGGED:
            self.log("rejected", {"why": why})

    def on_frame(self, msg: dict[str, Any], peer: int) -> None:
        """Act on a frame from member `peer` (already parsed, its kind checked against the sender's role)."""
        raise NotImplementedError

    def send(self, dst: int, msg: dict[str, Any]) -> None:
        """Send a frame to `dst`, through the fault plan if there is one."""
        if self.injector is not None:
            self.injector.send(dst, msg)
        else:
            self._enqueue(dst, msg)

    def _replica_of(self, pid: int) -> int | None:
        role, replica, _ = self.layout.role(pid)
        return replica if role == "worker" else None

    def _lost(self, dst: int, msg: dict[str, Any], why: str) -> None:
        """A frame the fault plan lost (`why`: drop or partition), on record."""
        self.log("fault", {"what": why, "dst": dst, "t": msg.get("t"), "at": self.now()})

    def _enqueue(self, dst: int, msg: dict[str, Any]) -> None:
        """Queue a frame to `dst`; the frames of one turn of the event loop leave in one write."""
        box = self.outbox.get(dst)
        if box is None:
            box = self.outbox[dst] = []
            if len(self.outbox) == 1:
                asyncio.get_running_loop().call_soon(self._flush)
        box.append(msg)

    def _flush(self) -> None:
        boxes, self.outbox = self.outbox, {}
        for dst, msgs in boxes.items():
            ep = self.out.get(dst)
            if ep is not None:
                ep.send_many([dumps(m) for m in msgs])
            elif dst in self.connecting:  # frames wait, in order, for the connection being made
                self.connecting[dst].extend(msgs)
            else:
                self.connecting[dst] = list(msgs)
                asyncio.get_running_loop().create_task(self._connect(dst))

    async def _connect(self, dst: int) -> None:
        try:
            ep = await connect(self.peers[dst], credentials(), dst, on_frame=self._frame, on_rejected=self._broken)
        except (OSError, KeyError):
            lost = self.connecting.pop(dst, [])
            self.stats["lost"] = self.stats.get("lost", 0) + len(lost)
            return
        self.out[dst] = ep
        ep.send_many([dumps(m) for m in self.connecting.pop(dst, [])])

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 6)


class Sequencer(Member):
    """The sequencer of group g: numbers its group's commands and sends them to worker g of every replica."""

    def __init__(self, *a: Any):
        super().__init__(*a)
        self.g = self.role[1]
        self.next = 0
        self.batch: list = []
        self.batch_ids: list[str] = []  # each position's id, carried by the delivery frame

    def on_frame(self, msg: dict[str, Any], peer: int) -> None:
        if msg.get("t") not in ("mc", "fw"):
            raise FrameError(f"a sequencer takes multicasts, not {msg.get('t')!r}")
        got = _frame_id(msg.get("id"))
        for cid, c in _cmds(msg["cmds"]):
            if self.g not in self.groups(c) or (msg["t"] == "mc" and len(self.groups(c)) > 1):
                raise FrameError(f"command {cid} is not for group {self.g} alone")
            pos = self.new_id()
            self.log("order", {"g": self.g, "seq": self.next, "c": cid, "cmd": _wire(cid, c)[1:], "from": msg["t"]},
                     sent=[pos], recv=[got])
            self.next += 1
            if not self.batch:
                asyncio.get_running_loop().call_soon(self._deliver)
            self.batch.append(_wire(cid, c))
            self.batch_ids.append(pos)

    def _deliver(self) -> None:
        batch, ids, self.batch, self.batch_ids = self.batch, self.batch_ids, [], []
        first = self.next - len(batch)
        for r in range(self.service.replicas):
            self.send(self.layout.worker(r, self.g), {"t": "dl", "g": self.g, "seq": first, "cmds": batch, "ids": ids})
        self.stats["ordered"] = self.next


class Hub(Member):
    """g_all's sequencer: orders multi-group commands and forwards them, in its order, to their groups' sequencers
    (with the spec's workload, every command)."""

    def __init__(self, *a: Any):
        super().__init__(*a)
        self.count = 0

    def on_frame(self, msg: dict[str, Any], peer: int) -> None:
        if msg.get("t") != "mc":
            raise FrameError(f"the hub takes multicasts, not {msg.get('t')!r}")
        got = _frame_id(msg.get("id"))
        for cid, c in _cmds(msg["cmds"]):
            groups = sorted(self.groups(c))
            ids = [self.new_id() for _ in groups]
            self.log("hub", {"seq": self.count, "c": cid, "cmd": _wire(cid, c)[1:], "groups": groups}, sent=ids,
                     recv=[got])
            self.count += 1
            for g, fid in zip(groups, ids):
                self.send(self.layout.sequencer(g), {"t": "fw", "cmds": [_wire(cid, c)], "id": fid})
        self.stats["ordered"] = self.count


class Worker(Member):
    """Worker w of a replica: executes its delivered commands in order, alone or at the barrier (with
    `bug="no_barrier"`, the seeded bug, each worker of replica 0 executes a multi-group command alone)."""

    def __init__(self, *a: Any):
        super().__init__(*a)
        _, self.replica, self.w = self.role
        self.queue: deque[tuple[int, Command, int]] = deque()  # (id, command, its position in the group's stream)
        self.expected = 0  # the next delivery sequence number of its group
        self.signals: dict[int, set[int]] = {}
        self.released: set[int] = set()
        self.lc = 0  # Lamport clock over the replica's signal and go frames
        self.wake = asyncio.Event()
        self.shm = shared_memory.SharedMemory(name=self.cfg["store"])
        self.store = self.shm.buf.cast("q")
        self.executed = 0

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._loop())

    def on_frame(self, msg: dict[str, Any], peer: int) -> None:
        t = msg.get("t")
        if t == "dl":
            if peer != self.layout.sequencer(self.w):
                raise FrameError(f"a delivery from {member_name(peer)}, not from the sequencer of group {self.w}")
            if msg["g"] != self.w or msg["seq"] != self.expected:
                raise FrameError(f"delivery {msg['seq']} of group {msg['g']} at worker {self.w}, expected "
                                 f"{self.expected} of group {self.w}")
            cmds, ids = _cmds(msg["cmds"]), msg.get("ids")
            if not isinstance(ids, list) or len(ids) != len(cmds):
                raise FrameError("a delivery frame carries one id per command")
            ids = [_frame_id(x) for x in ids]
            for (cid, c), pos in zip(cmds, ids):
                self.log("deliver", {"g": self.w, "seq": self.expected, "c": cid, "replica": self.replica}, recv=[pos])
                self.queue.append((cid, c, self.expected))
                self.expected += 1
        elif t in ("sig", "go"):
            cid, frm, lc = msg["c"], msg["w"], msg["lc"]
            if not (isinstance(cid, int) and isinstance(frm, int) and isinstance(lc, int) and 0 <= lc < MAX_CLOCK):
                raise FrameError(f"malformed {t}: c, w and lc must be integers, lc below 2**62")
            if self.layout.role(peer) != ("worker", self.replica, frm):
                raise FrameError(f"a {t} from {member_name(peer)} claiming to come from worker {frm} of replica "
                                 f"{self.replica}")
            got = _frame_id(msg.get("id"))
            self.lc = max(self.lc, lc) + 1
            if t == "sig":
                self.signals.setdefault(cid, set()).add(frm)
            else:
                self.released.add(cid)
            self.log("signalled" if t == "sig" else "released", {"c": cid, "w": frm, "replica": self.replica},
                     recv=[got])
        else:
            raise FrameError(f"a worker takes deliveries, signals and go, not {t!r}")
        self.wake.set()

    async def _until(self, cond: Any) -> None:
        while not cond():
            self.wake.clear()
            await self.wake.wait()

    async def _loop(self) -> None:
        peers = self.layout.replica_workers(self.replica)
        while True:
            await self._until(lambda: bool(self.queue))
            cid, c, i = self.queue.popleft()
            groups = self.groups(c)
            if len(groups) == 1 or (self.service.bug == "no_barrier" and self.replica == 0):
                self._execute(cid, c, i, [], [])
                continue
            leader = min(groups)
            if self.w != leader:
                self.lc += 1
                sig = self.new_id()
                self.log("signal", {"c": cid, "g": self.w, "i": i, "to": leader, "lc": self.lc, "replica": self.replica},
                         sent=[sig])
                self.send(peers[leader], {"t": "sig", "c": cid, "w": self.w, "lc": self.lc, "id": sig})
                await self._until(lambda: cid in self.released)
                self.released.discard(cid)
                self.log("resume", {"c": cid, "lc": self.lc, "replica": self.replica})
            else:
                others = sorted(groups - {leader})
                await self._until(lambda: set(others) <= self.signals.get(cid, set()))
                self.signals.pop(cid, None)
                go = [self.new_id() for _ in others]
                self._execute(cid, c, i, others, go)
                for o, gid in zip(others, go):
                    self.send(peers[o], {"t": "go", "c": cid, "w": self.w, "lc": self.lc, "id": gid})
            await asyncio.sleep(0)  # let frames in between commands

    def _execute(self, cid: int, c: Command, i: int, signalled: list[int], go: list[str]) -> None:
        """Execute command `cid` (position i of this worker's group) on the replica's store, log it with the
        values of the keys it accesses afterwards, and reply to its client (`go`: the ids of the go frames
        that follow)."""
        self._serve()
        store = _StoreView(self.store, self.service.keys)
        result = execute(c, store)  # type: ignore[arg-type]
        self.lc += 1
        self.executed += 1
        rep = self.new_id()
        keys = sorted(c.keys(self.service.keys))
        self.log("exec", {"c": cid, "g": self.w, "i": i, "v": result, "lc": self.lc, "signals": signalled,
                          "replica": self.replica, "store": {str(k): store[k] for k in keys}}, sent=[rep, *go])
        client = self.layout.client(cid // CLIENT_IDS)
        self.send(client, {"t": "rep", "c": cid, "v": result, "r": self.replica, "id": rep})
        self.stats["executed"] = self.executed

    def _serve(self) -> None:
        """The command's service time: a blocking wait (I/O-like) or a busy loop (CPU-bound)."""
        secs = self.service.service_ms / 1000
        if secs <= 0:
            return
        if self.service.service == "io":
            time.sleep(secs)
        else:
            end = time.perf_counter() + secs
            x = 0
            while time.perf_counter() < end:
                for i in range(200):
                    x += i * i

    def finish(self) -> None:
        task = getattr(self, "task", None)
        if task is not None:
            task.cancel()
        self.store.release()
        self.shm.close()


class _StoreView:
    """The replica's shared store as the list that `commands.execute` changes."""

    def __init__(self, buf: memoryview, n: int):
        self.buf, self.n = buf, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> int:
        return self.buf[k]

    def __setitem__(self, k: int, v: int) -> None:
        self.buf[k] = v


CLIENT_IDS = 10_000_000  # command ids: client index * CLIENT_IDS + number


class Client(Member):
    """A client proxy: keeps `outstanding` commands in flight, multicasts each to C-G(C), takes the first reply.
    With `spec_commands` = N it issues the first N commands of the spec's workload (`commands.WORKLOAD`) in
    order, command n once command n - outstanding has its reply, as the spec's client proxy does."""

    def __init__(self, *a: Any):
        super().__init__(*a)
        self.index = self.role[1]
        self.rng = random.Random(self.service.seed * 7919 + self.index)
        self.n = 0
        self.pending: dict[int, tuple[int, Command]] = {}  # id -> (slot, command)
        self.completed: set[int] = set()  # the numbers of the commands that have their reply
        self.done = 0
        path = self.cfg.get("history")
        self.history = create_new(path, buffering=1 << 16) if path else None

    def start(self) -> None:
        if self.service.spec_commands:
            self._issue_in_turn()
            return
        for slot in range(self.service.outstanding):
            self._issue(slot)

    def _command(self) -> Command:
        s = self.service
        if s.spec_commands:
            return WORKLOAD[self.n]
        if self.rng.random() < s.dependent:
            return Command("putall", None, self.rng.randrange(1, MAX_RANDOM_VALUE + 1))
        k = self.rng.randrange(s.keys)
        if self.rng.random() < s.reads:
            return Command("get", k)
        return Command("put", k, self.rng.randrange(1, MAX_RANDOM_VALUE + 1))

    def _issue_in_turn(self) -> None:
        """The spec's workload: every command whose turn has come (the one `outstanding` before it has its reply)."""
        k = self.service.outstanding
        while self.n < self.service.spec_commands and (self.n < k or self.n - k in self.completed):
            self._issue(self.n % k)

    def _issue(self, slot: int) -> None:
        if self.stopped or (self.service.commands and self.n >= self.service.commands):
            return
        cid = self.index * CLIENT_IDS + self.n
        c = self._command()
        self.pending[cid] = (slot, c)
        self._record(slot, "invoke", c, c.value)
        groups = self.groups(c)
        # the spec's workload goes through the hub, which then orders every command (see `mapping.py`)
        via_hub = len(groups) > 1 or self.service.spec_commands
        dst = self.layout.hub if via_hub else self.layout.sequencer(next(iter(groups)))
        mid = self.new_id()
        self.log("invoke", {"c": cid, "n": self.n, "cmd": _wire(cid, c)[1:], "client": self.index}, sent=[mid])
        self.n += 1
        self.send(dst, {"t": "mc", "cmds": [_wire(cid, c)], "id": mid})

    def _record(self, slot: int, kind: str, c: Command, value: Any, output: Any = None) -> None:
        if self.history is None:
            return
        ev = {"process": self.index * self.service.outstanding + slot, "type": kind, "f": c.op, "key": c.key,
              "value": value, "time": time.monotonic()}
        if kind == "ok":
            ev["output"] = output
        self.history.write(json.dumps(ev, separators=(",", ":")) + "\n")

    def on_frame(self, msg: dict[str, Any], peer: int) -> None:
        if msg.get("t") != "rep":
            raise FrameError(f"a client takes replies, not {msg.get('t')!r}")
        cid, v, r = msg["c"], msg["v"], msg.get("r")
        if not (isinstance(cid, int) and isinstance(v, int) and isinstance(r, int)):
            raise FrameError("malformed reply")
        got = _frame_id(msg.get("id"))
        hit = self.pending.pop(cid, None)
        self.log("reply", {"c": cid, "n": cid % CLIENT_IDS, "v": v, "replica": r, "first": hit is not None,
                           "client": self.index}, recv=[got])
        if hit is None:
            return  # a later replica's reply: the first one was taken
        slot, c = hit
        self.done += 1
        self.completed.add(cid % CLIENT_IDS)
        self._record(slot, "ok", c, v if c.op == "get" else c.value, v)
        self.stats["completed"] = self.done
        if not self.service.spec_commands:
            self._issue(slot)
        elif len(self.completed) < self.service.spec_commands:
            self._issue_in_turn()
        else:
            self.ctl.send({"op": "done"})  # the workload is complete: the runner may stop the run

    def finish(self) -> None:
        self.stopped = True
        self.stats["completed"] = self.done
        self.stats["pending"] = len(self.pending)
        if self.history is not None:
            self.history.close()
            self.history = None


__all__ = ["CLIENT_IDS", "main"]
