"""The client load generator: an open loop of fixed-size key-value writes, spread over the replicas,
with the latency of each transaction measured from its send to its execution by the replica it went to.

It is member n of the run: it sends transactions on authenticated connections to the replicas and
takes acks on the connections the replicas open to it (its data server accepts only replicas).
Malformed or unauthenticated input is counted (`rejected` in its report) and dropped."""

from __future__ import annotations

import asyncio
import random
import struct
import time
from dataclasses import dataclass
from typing import Any

from ..wire import RUNNER, Endpoint, FrameError, connect, credentials, parse, serve
from .messages import ACK_SIZE, MAX_BATCH, TX_HEAD, TX_SIZE, Malformed, bytes_frame, frame_payload

CHUNK = min(1024, MAX_BATCH)  # transactions per frame (under the frame size limit)
TICK = 0.005  # seconds between sends
ACK = struct.Struct(">Qd")
BIN = 0.05  # seconds per bin of the throughput timeline


@dataclass
class ClientConfig:
    """What the runner tells the client process (plain data)."""

    pid: int
    n: int
    control_port: int
    rate: int = 20_000  # transactions per second, all replicas together
    keys: int = 10_000
    seed: int = 0


def main(cfg: dict[str, Any]) -> None:
    try:
        asyncio.run(Client(ClientConfig(**cfg)).run())
    except (KeyboardInterrupt, ConnectionError):
        pass


class Client:
    def __init__(self, cfg: ClientConfig):
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.conns: dict[int, Endpoint] = {}
        self.sent = 0
        self.acked = 0
        self.latencies: list[float] = []
        self.timeline: list[int] = []
        self.t0 = time.monotonic()
        self.template = bytearray(TX_SIZE)
        self.template[TX_HEAD.size:] = bytes(self.rng.getrandbits(8) for _ in range(TX_SIZE - TX_HEAD.size))
        self.running = False
        self.rejected = 0

    async def run(self) -> None:
        creds = credentials()
        server, port = await serve(creds, self.cfg.n, on_frame=self.on_frame, on_rejected=self.on_rejected,
                                   accept=lambda peer: 0 <= peer < self.cfg.n)
        ctl = await connect(self.cfg.control_port, creds, RUNNER)
        ctl.send({"op": "hello", "port": port})
        loop = asyncio.get_running_loop()
        try:
            while True:
                try:
                    cmd = await ctl.read()
                except FrameError:
                    self.rejected += 1
                    continue
                op = cmd.get("op")
                if op == "peers":
                    ports = cmd.get("ports")
                    for p in range(self.cfg.n):
                        port = ports.get(str(p)) if isinstance(ports, dict) else None
                        if isinstance(port, int) and not isinstance(port, bool):
                            self.conns[p] = await connect(port, creds, p, on_frame=self.on_frame,
                                                          on_rejected=self.on_rejected)
                elif op == "go":
                    self.t0 = time.monotonic()
                    self.running = True
                    loop.call_later(TICK, self.tick)
                elif op == "stop":
                    self.running = False
                    ctl.send({"op": "bye", "stats": self.report()})
                    await ctl.drain()
                    break
        except ConnectionError:
            pass
        finally:
            server.close()

    def tick(self) -> None:
        if not self.running:
            return
        asyncio.get_running_loop().call_later(TICK, self.tick)
        live = [ep for _, ep in sorted(self.conns.items()) if not ep.is_closing()]
        due = int(self.cfg.rate * (time.monotonic() - self.t0)) - self.sent
        if not live or due <= 0:
            return
        per = [due // len(live) + (1 if i < due % len(live) else 0) for i in range(len(live))]
        now = time.monotonic()
        for ep, k in zip(live, per):
            frames = []
            while k > 0:  # frames of at most CHUNK transactions, under the frame size limit
                m = min(k, CHUNK)
                k -= m
                buf = bytearray(bytes(self.template) * m)
                for j in range(m):
                    TX_HEAD.pack_into(buf, j * TX_SIZE, self.sent, now, self.rng.randrange(self.cfg.keys))
                    self.sent += 1
                frames.append(bytes_frame("T", "txs", bytes(buf)))
            ep.send_many(frames)

    def on_rejected(self, why: str) -> None:
        self.rejected += 1

    def on_frame(self, ep: Endpoint, body: bytes) -> None:
        """Acks from a replica: the ids and send times of the transactions it executed."""
        try:
            frame = parse(body)
            if frame.get("k") != "A" or not 0 <= ep.peer < self.cfg.n:  # type: ignore[operator]
                raise Malformed("the client takes only acks from replicas")
            acks = frame_payload(frame, "acks", ACK_SIZE, MAX_BATCH)
        except (Malformed, FrameError):
            self.rejected += 1
            return
        now = time.monotonic()
        k = len(acks) // ACK_SIZE
        self.acked += k
        b = int((now - self.t0) / BIN)
        while len(self.timeline) <= b:
            self.timeline.append(0)
        self.timeline[b] += k
        for _, sent in ACK.iter_unpack(acks):  # the replica echoes each transaction's id and send time
            self.latencies.append(now - sent)

    def report(self) -> dict[str, Any]:
        lat = sorted(self.latencies)

        def pct(q: float) -> float:
            return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else 0.0
        return {"sent": self.sent, "acked": self.acked, "p50_ms": pct(0.5), "p99_ms": pct(0.99),
                "timeline": self.timeline, "bin": BIN, "seconds": time.monotonic() - self.t0,
                "cpu_s": round(time.process_time(), 3), "rejected": self.rejected}
