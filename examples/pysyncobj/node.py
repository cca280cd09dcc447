"""One PySyncObj node, instrumented without changing the library: it logs every Raft step in Lockstep's event schema.

The instrumentation wraps what PySyncObj lets a user plug in: its transport (a `TCPTransport` subclass sees
every message sent and received, and adds to each a per-channel number and the sender's vector clock) and its
tick (the node runs `doTick` itself, `autoTick=False`). The node's Raft state is read, never written, from the
`SyncObj` object's attributes after each step. One event is logged per message handled and per tick in which
the node did something on its own (an election timeout, a commit, heartbeats, a client command appended), with
what it did in order (`ops`), the node's role, term, vote, log and commit index before and after, in
PySyncObj's own terms; the mapping (`mapping.py`) relates them to `specs/raft.py`.

A partition is simulated inside the transport: frames to a cut-off peer are not sent (PySyncObj sees a failed
send, as on a dropped connection) and frames from one are dropped on arrival (the message is lost).
"""

from __future__ import annotations

import os
import queue
import time
from typing import Any

from pysyncobj import SyncObj, SyncObjConf, replicated
from pysyncobj.tcp_connection import CONNECTION_STATE
from pysyncobj.transport import TCPTransport

from lockstep.trace import Log

ROLES = ("follower", "candidate", "leader")
NO_OP, REGULAR = 1, 0  # PySyncObj's command types (first byte of a log entry's command)
RAFT_TYPES = ("request_vote", "response_vote", "append_entries", "next_node_idx")


class Recorder:
    """What the node did since its last logged event: the operations, in order, and its state then."""

    def __init__(self, log: Log, index: dict[str, int], me: int):
        self.log, self.index, self.me = log, index, me
        self.obj: KV | None = None
        self.ops: list[list[Any]] = []
        self.after: dict[str, Any] | None = None  # the clock of a message being handled
        self.before: dict[str, Any] = {}  # the state when the node was last looked at
        self.start: dict[str, Any] = {}  # the state after the last logged event
        self.blocked: set[int] = set()
        self.sent_to: dict[int, int] = {}  # per destination: messages sent (the channel's numbering)

    def state(self) -> dict[str, Any]:
        o = self.obj
        assert o is not None
        log = o._SyncObj__raftLog  # type: ignore[attr-defined]
        entries = [[e[2], "noop" if e[0][:1] == bytes([NO_OP]) else "cmd"] for e in list(log)[1:]]
        voted = o._SyncObj__votedForNodeId  # type: ignore[attr-defined]
        return {"term": o._SyncObj__raftCurrentTerm, "role": ROLES[o._SyncObj__raftState],  # type: ignore[attr-defined]
                "voted_for": self.index.get(voted) if voted is not None else None, "log": entries,
                "commit": o._SyncObj__raftCommitIndex, "first": log[0][1]}  # type: ignore[attr-defined]

    def changes(self) -> None:
        """Record what changed in the node's state since the last look (in PySyncObj's order within a step)."""
        now = self.state()
        b = self.before
        if now["term"] != b["term"]:
            self.ops.append(["term", b["term"], now["term"], now["role"]])
        elif now["role"] != b["role"]:
            self.ops.append(["role", b["role"], now["role"]])
        if now["role"] == "leader" and b["role"] != "leader":
            self.ops.append(["leader"])
        if len(now["log"]) > len(b["log"]) and now["log"][:len(b["log"])] == b["log"]:
            for entry in now["log"][len(b["log"]):]:
                self.ops.append(["append", entry])
        elif now["log"] != b["log"]:
            self.ops.append(["log", len(b["log"]), len(now["log"])])
        if now["commit"] != b["commit"]:
            self.ops.append(["commit", b["commit"], now["commit"]])
        self.before = now

    def flush(self, action: str, args: dict[str, Any] | None = None) -> None:
        """Log an event for what happened since the last one (nothing if nothing did)."""
        self.changes()
        if not self.ops and action == "tick":
            return
        self.log.event(action, {**(args or {}), "ops": self.ops, "term_before": self.start["term"],
                                "role_before": self.start["role"]}, self.before, after=self.after, time=time.time())
        self.log.flush()
        self.ops, self.after, self.start = [], None, self.before


class LoggingTransport(TCPTransport):
    """PySyncObj's TCP transport, observed: sends and receipts of Raft messages are recorded."""

    recorder: Recorder

    def setOnMessageReceivedCallback(self, callback):  # noqa: N802 - PySyncObj's name
        if callback is None:
            return super().setOnMessageReceivedCallback(None)

        def received(node, message):
            rec = self.recorder
            src = rec.index.get(node.id)
            if src is None or not isinstance(message, dict) or message.get("type") not in RAFT_TYPES:
                return callback(node, message)
            if src in rec.blocked:
                return None  # partitioned: the message is lost
            n = message.pop("_n", 0)
            vc = message.pop("_vc", None)
            rec.flush("tick")
            rec.after = vc
            rec.ops = [["receive", src, _plain(message)]]
            out = callback(node, message)
            rec.flush("receive", {"from": src, "type": message["type"], "n": n})
            return out

        return super().setOnMessageReceivedCallback(received)

    def send(self, node, message):
        rec = self.recorder
        dst = rec.index.get(node.id)
        if dst is None or not isinstance(message, dict) or message.get("type") not in RAFT_TYPES:
            return super().send(node, message)
        conn = self._connections.get(node)
        if dst in rec.blocked or conn is None or conn.state != CONNECTION_STATE.CONNECTED:
            if message.get("entries"):  # not sent (PySyncObj has advanced its next index past these entries)
                rec.changes()
                rec.ops.append(["unsent", dst, _plain(message)])
            return False
        rec.changes()
        n = rec.sent_to.get(dst, 0) + 1
        rec.sent_to[dst] = n
        clock = rec.log.clock
        clock[str(rec.me)] = rec.log.seq + 1  # the clock of the event this send belongs to
        if rec.after:
            for k, v in rec.after.items():
                clock[k] = max(clock.get(k, 0), v)
        rec.ops.append(["send", dst, _plain(message)])
        return super().send(node, {**message, "_n": n, "_vc": clock})


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A Raft message's fields as JSON (entries as [term, kind], the commands left out)."""
    out = {k: v for k, v in message.items() if k not in ("entries", "_n", "_vc")}
    if "entries" in message:
        out["entries"] = [[e[2], "noop" if e[0][:1] == bytes([NO_OP]) else "cmd"] for e in message["entries"]]
    return out


class KV(SyncObj):
    """A replicated counter: the client commands of the experiment."""

    def __init__(self, me: str, others: list[str], conf: SyncObjConf, transport_class: type):
        super().__init__(me, others, conf=conf, transportClass=transport_class)
        self.total = 0

    @replicated
    def add(self, v: int) -> int:
        self.total += v
        return self.total


def run_node(cfg: dict[str, Any], control: Any, status: Any) -> None:
    """A node's process: tick PySyncObj, obey the control queue (block, unblock, command, stop), report status."""
    me, addrs = cfg["index"], cfg["addresses"]
    index = {a: i for i, a in enumerate(addrs)}
    log = Log(cfg["log"], node=me, resume=cfg["restart"], header={"implementation": "pysyncobj"})
    rec = Recorder(log, index, me)
    rec.sent_to = dict(cfg.get("sent_to") or {})

    class Transport(LoggingTransport):
        recorder = rec

    conf = SyncObjConf(password=cfg["password"], autoTick=False, journalFile=cfg["journal"],
                       raftMinTimeout=cfg["min_timeout"], raftMaxTimeout=cfg["max_timeout"],
                       appendEntriesPeriod=cfg["period"], logCompactionMinEntries=1 << 30,
                       logCompactionMinTime=1 << 30, connectionTimeout=cfg["connection_timeout"])
    obj = KV(addrs[me], [a for a in addrs if a != addrs[me]], conf, Transport)
    rec.obj = obj
    rec.before = rec.start = rec.state()
    if cfg["restart"]:
        log.event("restart", {}, rec.before, time=time.time())
    else:
        log.event("start", {}, rec.before, time=time.time())
    log.flush()
    stop = False
    last = None
    while not stop:
        obj.doTick(0.01)
        rec.flush("tick")
        try:
            while True:
                cmd = control.get_nowait()
                if cmd[0] == "block":
                    rec.blocked = set(cmd[1])
                elif cmd[0] == "add":
                    if rec.before["role"] == "leader":
                        obj.add(cmd[1], sync=False)
                elif cmd[0] == "stop":
                    stop = True
        except queue.Empty:
            pass
        st = rec.before
        now = (me, os.getpid(), st["role"], st["term"], len(st["log"]), st["commit"])
        if now != last:
            status.put(now)
            last = now
    obj.destroy()
    log.close()
