"""One SSP worker as an OS process: its partition of a linear Datalog program, evaluated with numpy.

The worker runs the protocol of `lockstep.specs.datalog.ssp` on its keys (key value mod W): deltas
are applied as they arrive (γ: the better value is kept); an iteration runs the plan's steps from the
changed keys, improves its own keys directly, and sends the other workers one batch of deltas each
(pre-aggregated per key), then a tick; it starts only while it has work and is at most s clocks ahead
of every other worker it has heard of. Ticks count clocks over the FIFO connections; quiescence is
detected as in the spec, and the detecting worker sends stop.

Frames are JSON (`executors.wire`): a delta batch `{"op": "delta", "lc", "keys", "vals"}` with the
key indices and values as base64 little-endian int64 (at most `BATCH` pairs a frame), a tick
`{"op": "tick", "lc", "fresh", "idle", "seen"}` and `{"op": "stop", "lc"}`. A malformed frame is
counted and dropped. With a trace path the worker logs every handler run as the spec's local steps
(one `message` event per delta, in order), so the run can be validated against the spec.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from lockstep.checker.safeio import create_new
from lockstep.specs.datalog.plan import StepGroup

from ..wire import RUNNER, Endpoint, FrameError, connect, credentials, parse, serve

BATCH = 40_000  # delta pairs per frame: 2 × 8 bytes each, base64, under the frame size limit
BIG = 1 << 62  # "no value yet" for min programs without a spec bound


@dataclass
class WorkerConfig:
    """What a spawned worker is told (plain data; the partition is read from `partition`, an .npz file)."""

    pid: int
    workers: int
    staleness: int  # -1: unbounded
    control_port: int
    partition: str
    result: str
    func: str  # "min" or "max"
    nil: int | None = None  # the value meaning "none yet" (the spec's); default ±2^62
    worst: int | None = None  # candidates worse than this are not sent (the spec's bound), or None
    best: int | None = None  # a candidate better than this means divergence (the spec's bound), or None
    max_clock: int = 0  # a clock beyond this reports divergence (0: no limit)
    delay_ms: float = 0.0  # a straggler's delay before an iteration
    delay_p: float = 1.0  # the chance that an iteration is delayed (below 1: a transient straggler)
    seed: int = 0  # of the draws of delayed iterations
    trace: str | None = None
    spec: str | None = None  # the spec a trace names, with its parameters
    spec_params: dict[str, int] | None = None
    seen_base: int = 0  # the spec's clocks + 1 (packing of seen clocks in traced ticks)
    kind: str = "linear"  # "pairs": a non-linear path composition (`pairs.PairWorker`, started by `pairs.main`)


def main(cfg: dict[str, Any]) -> None:
    """Entry point of a spawned worker of a linear program."""
    serve_worker(Worker(WorkerConfig(**cfg)))


def serve_worker(worker: Worker) -> None:
    """Run a worker's event loop until it is told to stop (or its runner goes away)."""
    try:
        asyncio.run(worker.run())
    except (KeyboardInterrupt, ConnectionError):
        pass


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<i8").tobytes()).decode("ascii")


def _unb64(text: Any, what: str, limit: int) -> np.ndarray:
    if not isinstance(text, str):
        raise FrameError(f"{what} is not a base64 string")
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise FrameError(f"{what} is not valid base64") from None
    if len(raw) % 8 or len(raw) // 8 > limit:
        raise FrameError(f"{what} holds {len(raw)} bytes: not a whole number of int64 values, or too many")
    return np.frombuffer(raw, dtype="<i8").astype(np.int64)


class Worker:
    """The state and event loop of one worker."""

    def __init__(self, cfg: WorkerConfig):
        self.cfg = cfg
        self.pid, self.W = cfg.pid, cfg.workers
        self.better = np.less if cfg.func == "min" else np.greater
        self.nil = cfg.nil if cfg.nil is not None else (BIG if cfg.func == "min" else -BIG)
        self._load()
        self.clock = 0
        self.known = [0] * self.W
        self.rep_idle = [False] * self.W
        self.rep_seen = [[0] * self.W for _ in range(self.W)]
        self.done = False
        self.lc = 0  # Lamport clock of the trace
        self.seq = 0
        self.t0 = time.monotonic()
        self.out: dict[int, Endpoint] = {}
        self.wake = asyncio.Event()
        self.stats = {"iterations": 0, "deltas_sent": 0, "deltas_received": 0, "improved": 0, "frames_rejected": 0,
                      "wait_s": 0.0, "compute_s": 0.0, "delayed_s": 0.0}
        self.failure: str | None = None
        self.stopped = False  # the runner said stop
        self.early: list[tuple[bytes, int | None]] | None = []  # frames (and senders) received before the start
        self.trace = create_new(cfg.trace, buffering=1 << 16) if cfg.trace else None
        self.rng = np.random.default_rng([cfg.seed, cfg.pid])

    def _load(self) -> None:
        """This worker's partition: its keys, their initial values, and the steps reading them."""
        with np.load(self.cfg.partition, allow_pickle=False) as z:
            self.nkeys = int(z["nkeys"])
            self.own = z["own"]  # bool per key index: owned by this worker
            self.owner = z["owner"]  # worker of each key index
            init_k, init_v = z["init_keys"], z["init_vals"]
            self.groups = [self._group(z, i) for i in range(int(z["ngroups"]))]
        self.val = np.full(self.nkeys, self.nil, dtype=np.int64)
        self.val[init_k] = init_v
        self.changed = np.zeros(self.nkeys, dtype=bool)
        self.changed[init_k] = True

    def accepts(self, keys: np.ndarray) -> bool:
        """Whether a delta for these key indices may come from another worker (here: keys this one owns)."""
        return bool(self.own[keys].all())

    def _group(self, z, i: int) -> tuple[StepGroup, np.ndarray]:
        meta = json.loads(str(z[f"g{i}_meta"]))
        env = {name: z[f"g{i}_env_{name}"] for name in meta["env"]}
        from lockstep.specs.datalog.parser import parse

        rule = parse(meta["rule"]).rules[0]  # the group's remaining literals, re-read from their text
        literals = tuple(lit for lit in rule.body if not hasattr(lit, "pred"))
        head = rule.head.agg.var if rule.head.agg is not None else None
        g = StepGroup(z[f"g{i}_src"], z[f"g{i}_dst"], env, meta["value_var"], literals, head)
        order = np.argsort(g.src, kind="stable")
        g = StepGroup(g.src[order], g.dst[order], {k: c[order] for k, c in g.env.items()}, g.value_var, g.literals,
                      g.head)
        indptr = np.zeros(self.nkeys + 1, dtype=np.int64)
        np.cumsum(np.bincount(g.src, minlength=self.nkeys), out=indptr[1:])
        return g, indptr

    # -- control ----------------------------------------------------------------------------------
    async def run(self) -> None:
        creds = credentials()
        server, port = await serve(creds, self.W, on_frame=self._frame, on_rejected=self.broken,
                                   accept=lambda peer: peer != RUNNER and 0 <= peer < self.W and peer != self.pid)
        self.ctl = await connect(self.cfg.control_port, creds, RUNNER)
        if self.trace is not None:
            self._write({"kind": "header", "spec": self.cfg.spec, "spec_name": self.cfg.spec,
                         "params": self.cfg.spec_params, "pid": self.pid})
        self.ctl.send({"op": "hello", "port": port})
        task = None
        try:
            while True:
                try:
                    cmd = await self.ctl.read()
                except FrameError:
                    self.broken("a malformed control frame")
                    continue
                op = cmd.get("op")
                if op == "peers":
                    for dst, p in sorted((int(k), v) for k, v in cmd["ports"].items()):
                        if dst != self.pid:
                            try:
                                self.out[dst] = await connect(int(p), creds, dst, on_frame=self._frame,
                                                              on_rejected=self.broken)
                            except OSError as e:  # the run's failure, not the protocol's: said to the runner only
                                self.failure = f"could not connect to worker {dst}: {e.strerror or e}"
                                self.ctl.send({"op": "failed", "pid": self.pid, "message": self.failure})
                elif op == "go":
                    self.t0 = time.monotonic()
                    self._start()
                    early, self.early = self.early, None
                    for body, peer in early or []:  # frames that came before this worker started, as the spec orders
                        self.on_frame(body, peer)
                    task = asyncio.ensure_future(self._loop())
                elif op == "stop":
                    self.stopped = True
                    if task is not None:
                        task.cancel()
                    self._finish()
                    if self.trace is not None:  # the trace is complete: validation need not stop short of its end
                        self._write({"kind": "end", "pid": self.pid, "clock": self.lc, "seq": self.seq,
                                     "time": self._now(), "stats": self.stats})
                    self.ctl.send({"op": "bye", "pid": self.pid, "stats": self.stats, "clock": self.clock,
                                   "done": self.done, "failure": self.failure})
                    await self.ctl.drain()
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            if self.trace is not None:
                self.trace.close()
            server.close()
            for ep in self.out.values():
                ep.close()

    def _frame(self, ep: Endpoint, body: bytes) -> None:
        """A frame from an authenticated member of the run (`ep.peer`: the worker that sent it); none is taken
        once the runner said stop (the trace is then complete)."""
        if not self.stopped:
            self.on_frame(body, ep.peer)

    def _finish(self) -> None:
        mine = np.flatnonzero(self.own)
        keep = mine[self.val[mine] != self.nil]
        tmp = self.cfg.result + ".part.npz"
        np.savez(tmp, keys=keep, vals=self.val[keep])
        os.replace(tmp, self.cfg.result)

    def broken(self, why: str) -> None:
        self.stats["frames_rejected"] += 1

    def _report_done(self) -> None:
        self.ctl.send({"op": "done", "pid": self.pid, "clock": self.clock, "time": self._now()})

    # -- the protocol -----------------------------------------------------------------------------
    def _start(self) -> None:
        self._log("start", None, None, [], ["iterate"])

    def idle(self) -> bool:
        return not self.changed.any()

    def enabled(self) -> bool:
        if self.done or self.failure:
            return False
        others = [v for v in range(self.W) if v != self.pid]
        work = not self.idle() or any(self.clock < self.known[v] for v in others)
        within = self.cfg.staleness < 0 or all(self.clock - self.known[v] <= self.cfg.staleness for v in others)
        return work and within

    async def _loop(self) -> None:
        while not self.done and not self.failure:
            if not self.enabled():
                self.wake.clear()
                t = time.perf_counter()
                await self.wake.wait()
                self.stats["wait_s"] += time.perf_counter() - t
                continue
            if self.cfg.delay_ms and (self.cfg.delay_p >= 1 or self.rng.random() < self.cfg.delay_p):
                t = time.perf_counter()
                await asyncio.sleep(self.cfg.delay_ms / 1000)  # a straggler: deliveries go on meanwhile
                self.stats["delayed_s"] += time.perf_counter() - t
                if not self.enabled():
                    continue
            t = time.perf_counter()
            self.iterate()
            self.stats["compute_s"] += time.perf_counter() - t
            await asyncio.sleep(0)  # let incoming frames in between iterations

    def iterate(self) -> None:
        frontier = np.flatnonzero(self.changed & self.own)
        cand_k, cand_v = [], []
        for g, indptr in self.groups:
            start, stop = indptr[frontier], indptr[frontier + 1]
            counts = stop - start
            total = int(counts.sum())
            if not total:
                continue
            rows = np.repeat(start, counts) + (np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts))
            v, ok = g.apply(self.val[g.src[rows]], rows)
            if self.cfg.best is not None and (ok & self.better(v, self.cfg.best)).any():
                bad = int(g.dst[rows][ok & self.better(v, self.cfg.best)][0])
                self._fail(f"divergence: key index {bad} would get a value better than every bounded derivation")
                return
            if self.cfg.worst is not None:
                ok &= ~self.better(self.cfg.worst, v)
            cand_k.append(g.dst[rows][ok])
            cand_v.append(v[ok])
        self.changed[frontier] = False
        sends: list[tuple[int, dict]] = []
        batches: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if cand_k:
            k = np.concatenate(cand_k)
            v = np.concatenate(cand_v)
            k, v = _best(k, v, self.cfg.func)
            local = self.own[k]
            lk, lv = k[local], v[local]
            imp = self.better(lv, self.val[lk])
            self.val[lk[imp]] = lv[imp]
            self.changed[lk[imp]] = True
            self.stats["improved"] += int(imp.sum())
            rk, rv = k[~local], v[~local]
            keep = rv != self.nil
            rk, rv = rk[keep], rv[keep]
            dests = self.owner[rk]
            for dst in range(self.W):
                if dst == self.pid:
                    continue
                sel = dests == dst
                if sel.any():
                    batches[dst] = (rk[sel], rv[sel])
            if self.trace is not None:
                sends = [(int(self.owner[x]), {"tag": "Delta", "k": int(x), "v": int(y)}) for x, y in zip(rk, rv)]
        self._end_iteration(batches, sends)

    def _end_iteration(self, batches: dict[int, tuple[np.ndarray, np.ndarray]], sends: list[tuple[int, dict]]) -> None:
        """Advance the clock, send the iteration's delta batches (per worker) and ticks, and detect quiescence."""
        self.clock += 1
        self.stats["iterations"] += 1
        idle = self.idle()
        self.lc += 1
        for dst, (bk, bv) in sorted(batches.items()):
            for i in range(0, len(bk), BATCH):
                self._send(dst, {"op": "delta", "lc": self.lc, "keys": _b64(bk[i:i + BATCH]),
                                 "vals": _b64(bv[i:i + BATCH])})
            self.stats["deltas_sent"] += len(bk)
        ticks = self._ticks(True, idle)
        stops = self._detect()
        if self.trace is not None:
            self._log("timeout", None, None, sends + ticks + stops, ["iterate"], timer="iterate", bumped=True)
        if self.cfg.max_clock and self.clock > self.cfg.max_clock and not self.done:
            self._fail(f"divergence: clock {self.clock} passed {self.cfg.max_clock} iterations without quiescence")

    def _ticks(self, fresh: bool, idle: bool) -> list[tuple[int, dict]]:
        out = []
        for v in range(self.W):
            if v == self.pid:
                continue
            seen = [self.known[u] if u != self.pid else self.clock for u in range(self.W)]
            self._send(v, {"op": "tick", "lc": self.lc, "fresh": fresh, "idle": idle, "seen": seen})
            if self.trace is not None:
                out.append((v, {"tag": "Tick", "fresh": fresh, "idle": idle, "seen": self._seen_code(self.pid)}))
        return out

    def _seen_code(self, sender: int) -> int:
        base = self.cfg.seen_base or 1
        code = 0
        for i, u in enumerate(u for u in range(self.W) if u != sender):
            code += self.known[u] * base ** i
        return code

    def _detect(self) -> list[tuple[int, dict]]:
        if self.done or not self.idle():
            return []
        for v in range(self.W):
            if v == self.pid:
                continue
            if not self.rep_idle[v]:
                return []
            for u in range(self.W):
                if u != v and self.rep_seen[v][u] != (self.clock if u == self.pid else self.known[u]):
                    return []
        self.done = True
        out = []
        for v in range(self.W):
            if v != self.pid:
                self._send(v, {"op": "stop", "lc": self.lc})
                out.append((v, {"tag": "Stop"}))
        self._report_done()
        return out

    # -- incoming frames --------------------------------------------------------------------------
    def on_frame(self, body: bytes, peer: int | None) -> None:
        if self.early is not None:
            self.early.append((body, peer))
            return
        try:
            obj = parse(body)
            src = obj.get("src")
            if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < self.W or src == self.pid:
                raise FrameError(f"src {src!r} is not another worker")
            if src != peer:
                raise FrameError(f"a frame from worker {peer} claiming to come from worker {src}")
            lc = obj.get("lc")
            if isinstance(lc, bool) or not isinstance(lc, int) or lc < 0:
                raise FrameError("lc is not a non-negative integer")
            op = obj.get("op")
            if op == "delta":
                keys = _unb64(obj.get("keys"), "keys", BATCH)
                vals = _unb64(obj.get("vals"), "vals", BATCH)
                if len(keys) != len(vals) or (len(keys) and (keys.min() < 0 or keys.max() >= self.nkeys)):
                    raise FrameError("keys and vals differ in length, or a key is out of range")
                if len(keys) and not self.accepts(keys):
                    raise FrameError("a delta for a key this worker does not take deltas for")
                self._deltas(src, lc, keys, vals)
            elif op == "tick":
                fresh, idle, seen = obj.get("fresh"), obj.get("idle"), obj.get("seen")
                if not isinstance(fresh, bool) or not isinstance(idle, bool) or not isinstance(seen, list) \
                        or len(seen) != self.W or not all(isinstance(x, int) and not isinstance(x, bool) for x in seen):
                    raise FrameError("a tick needs booleans fresh and idle and a list of W integers seen")
                self._tick(src, lc, fresh, idle, seen)
            elif op == "stop":
                self._stop(src, lc)
            else:
                raise FrameError(f"unknown op {op!r}")
        except FrameError:
            self.stats["frames_rejected"] += 1
            return
        self.wake.set()

    def _deltas(self, src: int, lc: int, keys: np.ndarray, vals: np.ndarray) -> None:
        self.stats["deltas_received"] += len(keys)
        if self.trace is not None:  # one handler run per delta, as the spec delivers them
            for k, v in zip(keys.tolist(), vals.tolist()):
                self.lc = max(self.lc, lc) + 1
                if self.better(v, self.val[k]):
                    self.val[k] = v
                    self.changed[k] = True
                    self.stats["improved"] += 1
                self._log("message", src, {"tag": "Delta", "k": k, "v": v}, [], [])
            return
        self.lc = max(self.lc, lc) + 1
        k, v = _best(keys, vals, self.cfg.func)
        imp = self.better(v, self.val[k])
        self.val[k[imp]] = v[imp]
        self.changed[k[imp]] = True
        self.stats["improved"] += int(imp.sum())

    def _tick(self, src: int, lc: int, fresh: bool, idle: bool, seen: list[int]) -> None:
        self.lc = max(self.lc, lc) + 1
        if fresh:
            self.known[src] += 1
        self.rep_idle[src] = idle
        for u in range(self.W):
            if u != src:
                self.rep_seen[src][u] = seen[u]
        sends = []
        if fresh and self.idle() and not self.done:
            sends = self._ticks(False, True)
        sends += self._detect()
        if self.trace is not None:
            base = self.cfg.seen_base or 1
            code = sum(seen[u] * base ** i for i, u in enumerate(u for u in range(self.W) if u != src))
            self._log("message", src, {"tag": "Tick", "fresh": fresh, "idle": idle, "seen": code}, sends, [])

    def _stop(self, src: int, lc: int) -> None:
        self.lc = max(self.lc, lc) + 1
        if not self.done:
            self.done = True
            self._report_done()
        if self.trace is not None:
            self._log("message", src, {"tag": "Stop"}, [], [])

    def _send(self, dst: int, obj: dict) -> None:
        ep = self.out.get(dst)
        if ep is not None and not ep.is_closing():
            obj["src"] = self.pid
            ep.send(obj)

    def _fail(self, message: str) -> None:
        self.failure = message
        if self.trace is not None:
            self.lc += 1
            self.seq += 1
            self._write({"kind": "failure", "pid": self.pid, "clock": self.lc, "seq": self.seq, "time": self._now(),
                         "input": "timeout", "timer": "iterate", "message": message})
        self.ctl.send({"op": "failed", "pid": self.pid, "message": message})

    # -- the trace --------------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        W = self.W
        return {"val": {str(i): int(x) for i, x in enumerate(self.val.tolist())},
                "changed": np.flatnonzero(self.changed).tolist(), "clock": self.clock,
                "known": {str(v): (self.known[v] if v != self.pid else 0) for v in range(W)},
                "rep_idle": {str(v): self.rep_idle[v] for v in range(W)},
                "rep_seen": {str(v): {str(u): (self.rep_seen[v][u] if v != self.pid else 0) for u in range(W)}
                             for v in range(W)},
                "done": self.done, "timers": {"iterate": True}}

    def _log(self, kind: str, src: int | None, msg: dict | None, sends: list, timers: list[str],
             timer: str | None = None, bumped: bool = False) -> None:
        if self.trace is None:
            return
        if not bumped:
            self.lc += 0 if kind == "message" else 1
        self.seq += 1
        ev: dict[str, Any] = {"kind": kind, "pid": self.pid, "clock": self.lc, "seq": self.seq, "time": self._now()}
        if kind == "message":
            ev["src"], ev["msg"] = src, msg
        elif kind == "timeout":
            ev["timer"] = timer
        ev["sends"] = [[d, m] for d, m in sends]
        ev["timers"] = timers
        ev["state"] = self._state()
        self._write(ev)

    def _write(self, obj: dict) -> None:
        assert self.trace is not None
        self.trace.write(json.dumps(obj, separators=(",", ":")) + "\n")

    def _now(self) -> float:
        return round(time.monotonic() - self.t0, 6)


def _best(k: np.ndarray, v: np.ndarray, func: str) -> tuple[np.ndarray, np.ndarray]:
    """One (key, best value) per key."""
    if len(k) == 0:
        return k, v
    order = np.lexsort((v if func == "min" else -v, k))
    k, v = k[order], v[order]
    first = np.ones(len(k), dtype=bool)
    first[1:] = k[1:] != k[:-1]
    return k[first], v[first]
