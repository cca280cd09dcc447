"""Fault plans for `lockstep run --faults FILE`: what the relay and the runner inject.

A JSON object; every key is optional:

    {"drop": 0.05, "duplicate": 0.02, "reorder": 0.1, "delay_ms": [0, 20], "reorder_ms": 30,
     "partitions": [{"start": 0.5, "end": 1.5, "groups": [[0, 1], [2, 3]]}],
     "crashes": [{"pid": 2, "at": 1.0, "restart": 2.0}],
     "stragglers": [{"pid": 1, "delay_ms": 20}]}

Probabilities apply per message; a delay is drawn uniformly from `delay_ms`; a reordered message
is held back up to `reorder_ms` more. During a partition, messages between groups are lost.
A crash is a SIGKILL at `at` seconds; with `restart` the process comes back then and continues
from the last local state it recorded. A straggler is slowed by `delay_ms` before each of its
iterations (Datalog workers).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lockstep.checker.loader import LoadError


class FaultsError(LoadError):
    """A faults file that cannot be used: the message says what, where and how to fix it."""


@dataclass
class Partition:
    start: float
    end: float
    groups: list[frozenset[int]]

    def separates(self, a: int, b: int, t: float) -> bool:
        if not self.start <= t < self.end:
            return False
        return not any(a in g and b in g for g in self.groups)


@dataclass
class Crash:
    pid: int
    at: float
    restart: float | None = None


@dataclass
class Straggler:
    pid: int
    delay_ms: float


@dataclass
class Faults:
    """A parsed fault plan."""

    drop: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    delay_ms: tuple[float, float] = (0.0, 0.0)
    reorder_ms: float = 30.0
    partitions: list[Partition] = field(default_factory=list)
    crashes: list[Crash] = field(default_factory=list)
    stragglers: list[Straggler] = field(default_factory=list)

    @property
    def needs_relay(self) -> bool:
        return bool(self.drop or self.duplicate or self.reorder or self.delay_ms[1] or self.partitions or self.crashes)


_KEYS = {"drop", "duplicate", "reorder", "delay_ms", "reorder_ms", "partitions", "crashes", "stragglers"}


def load_faults(path: str, nproc: int) -> Faults:
    """Read and check a faults file for a run of `nproc` processes."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise FaultsError(f"cannot read faults file {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise FaultsError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    return parse_faults(data, nproc, path)


def parse_faults(data: Any, nproc: int, where: str = "faults") -> Faults:
    def bad(what: str, fix: str) -> FaultsError:
        return FaultsError(f"{where}: {what}\n  fix: {fix}")

    if not isinstance(data, dict):
        raise bad("expected a JSON object", 'write e.g. {"drop": 0.1, "delay_ms": [0, 20]}')
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise bad(f"unknown key {unknown[0]!r}", "use " + ", ".join(sorted(_KEYS)))

    def prob(key: str) -> float:
        v = data.get(key, 0.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise bad(f"{key} is {v!r}, not a probability", f'give a number between 0 and 1, e.g. "{key}": 0.1')
        return float(v)

    def number(v: Any, what: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise bad(f"{what} is {v!r}, not a non-negative number", "give seconds (or milliseconds for *_ms) as a number")
        return float(v)

    def pid(v: Any, what: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < nproc:
            raise bad(f"{what} is {v!r}, not a process id", f"use 0..{nproc - 1}")
        return v

    out = Faults(prob("drop"), prob("duplicate"), prob("reorder"))
    delay = data.get("delay_ms", [0, 0])
    if not isinstance(delay, list) or len(delay) != 2:
        raise bad("delay_ms must be [min, max]", '"delay_ms": [0, 20]')
    lo, hi = number(delay[0], "delay_ms[0]"), number(delay[1], "delay_ms[1]")
    if lo > hi:
        raise bad("delay_ms has min > max", '"delay_ms": [0, 20]')
    out.delay_ms = (lo, hi)
    out.reorder_ms = number(data.get("reorder_ms", 30.0), "reorder_ms")
    for i, p in enumerate(data.get("partitions", [])):
        w = f"partitions[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("groups"), list):
            raise bad(f"{w} needs start, end and groups", '{"start": 0.5, "end": 1.5, "groups": [[0, 1], [2, 3]]}')
        groups = []
        for g in p["groups"]:
            if not isinstance(g, list):
                raise bad(f"{w}: a group is a list of process ids", "[[0, 1], [2, 3]]")
            groups.append(frozenset(pid(x, f"{w} member") for x in g))
        start, end = number(p.get("start", 0), f"{w}.start"), number(p.get("end", 0), f"{w}.end")
        if end <= start:
            raise bad(f"{w} ends before it starts", "give end > start (seconds from the start of the run)")
        out.partitions.append(Partition(start, end, groups))
    for i, c in enumerate(data.get("crashes", [])):
        w = f"crashes[{i}]"
        if not isinstance(c, dict) or "pid" not in c:
            raise bad(f"{w} needs pid and at", '{"pid": 2, "at": 1.0, "restart": 2.0}')
        at = number(c.get("at", 0), f"{w}.at")
        restart = c.get("restart")
        if restart is not None and number(restart, f"{w}.restart") <= at:
            raise bad(f"{w} restarts before it crashes", "give restart > at")
        out.crashes.append(Crash(pid(c["pid"], f"{w}.pid"), at, None if restart is None else float(restart)))
    for i, c in enumerate(data.get("stragglers", [])):
        w = f"stragglers[{i}]"
        if not isinstance(c, dict) or "pid" not in c:
            raise bad(f"{w} needs pid and delay_ms", '{"pid": 1, "delay_ms": 20}')
        out.stragglers.append(Straggler(pid(c["pid"], f"{w}.pid"), number(c.get("delay_ms", 0), f"{w}.delay_ms")))
    return out
