"""The client load generator: an open loop of fixed-size key-value writes, spread over the replicas,
with the latency of each transaction measured from its send to its execution by the replica it went to."""

from __future__ import annotations

import asyncio
import random
import struct
import time
from dataclasses import dataclass
from typing import Any

from ..wire import LENGTH, FrameProtocol, frame, read_frame
from .messages import TX_HEAD, TX_SIZE

CHUNK = 1024  # transactions per frame
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
        self.conns: dict[int, asyncio.Transport] = {}
        self.sent = 0
        self.acked = 0
        self.latencies: list[float] = []
        self.timeline: list[int] = []
        self.t0 = time.monotonic()
        self.template = bytearray(TX_SIZE)
        self.template[TX_HEAD.size:] = bytes(self.rng.getrandbits(8) for _ in range(TX_SIZE - TX_HEAD.size))
        self.running = False

    async def run(self) -> None:
        reader, ctl = await asyncio.open_connection("127.0.0.1", self.cfg.control_port)
        ctl.write(frame({"op": "hello", "pid": self.cfg.pid, "port": 0}))
        loop = asyncio.get_running_loop()
        try:
            while True:
                cmd = await read_frame(reader)
                op = cmd.get("op")
                if op == "peers":
                    for p, port in cmd["ports"].items():
                        if int(p) < self.cfg.n:
                            t, _ = await loop.create_connection(
                                lambda: FrameProtocol(self.on_ack, lambda why: None), "127.0.0.1", port)
                            t.write(LENGTH.pack(1) + b"C")
                            self.conns[int(p)] = t
                elif op == "go":
                    self.t0 = time.monotonic()
                    self.running = True
                    loop.call_later(TICK, self.tick)
                elif op == "stop":
                    self.running = False
                    ctl.write(frame({"op": "bye", "pid": self.cfg.pid, "stats": self.report()}))
                    await ctl.drain()
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass

    def tick(self) -> None:
        if not self.running:
            return
        asyncio.get_running_loop().call_later(TICK, self.tick)
        live = [t for _, t in sorted(self.conns.items()) if not t.is_closing()]
        due = int(self.cfg.rate * (time.monotonic() - self.t0)) - self.sent
        if not live or due <= 0:
            return
        per = [due // len(live) + (1 if i < due % len(live) else 0) for i in range(len(live))]
        now = time.monotonic()
        for t, k in zip(live, per):
            while k > 0:  # frames of at most CHUNK transactions, under the frame size limit
                m = min(k, CHUNK)
                k -= m
                buf = bytearray(b"T" + bytes(self.template) * m)
                for j in range(m):
                    TX_HEAD.pack_into(buf, 1 + j * TX_SIZE, self.sent, now, self.rng.randrange(self.cfg.keys))
                    self.sent += 1
                t.write(LENGTH.pack(len(buf)) + buf)

    def on_ack(self, body: bytes) -> None:
        if body[:1] != b"A" or (len(body) - 1) % 16:
            return
        now = time.monotonic()
        k = (len(body) - 1) // 16
        self.acked += k
        b = int((now - self.t0) / BIN)
        while len(self.timeline) <= b:
            self.timeline.append(0)
        self.timeline[b] += k
        for _, sent in ACK.iter_unpack(body[1:]):  # the replica echoes each transaction's id and send time
            self.latencies.append(now - sent)

    def report(self) -> dict[str, Any]:
        lat = sorted(self.latencies)

        def pct(q: float) -> float:
            return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else 0.0
        return {"sent": self.sent, "acked": self.acked, "p50_ms": pct(0.5), "p99_ms": pct(0.99),
                "timeline": self.timeline, "bin": BIN, "seconds": time.monotonic() - self.t0,
                "cpu_s": round(time.process_time(), 3)}
