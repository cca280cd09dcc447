"""Fault plans for `lockstep run --faults FILE`: what the relay and the runner inject.

A JSON object; every key is optional:

    {"drop": 0.05, "duplicate": 0.02, "reorder": 0.1, "delay_ms": [0, 20], "reorder_ms": 30,
     "partitions": [{"start": 0.5, "end": 1.5, "groups": [[0, 1], [2, 3]]}],
     "crashes": [{"pid": 2, "at": 1.0, "restart": 2.0}],
     "stragglers": [{"pid": 1, "delay_ms": 20, "probability": 1.0}]}

Probabilities apply per message; a delay is drawn uniformly from `delay_ms`; a reordered message
is held back up to `reorder_ms` more. During a partition, messages between groups are lost.
A crash is a SIGKILL at `at` seconds; with `restart` the process comes back then and continues
from the last local state it recorded. A straggler is slowed by `delay_ms` before each of its
iterations (Datalog workers), or before each with chance `probability` (a transient straggler).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockstep.checker.loader import LoadError
from lockstep.checker.safejson import JSONInputError, loads, read_text


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
    probability: float = 1.0  # the chance that an iteration is delayed


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

    def network_conflicts(self, params: dict[str, int]) -> list[str]:
        """What the plan does that an actor spec's network model (its `ordered`, `lossy`, `duplicating`
        parameters) cannot express: each such run would be blamed on a correct protocol."""
        out = []
        if self.duplicate and not params.get("duplicating"):
            out.append(f"the plan duplicates messages (duplicate = {self.duplicate:g}), but the spec's network does "
                       "not (duplicating = 0): run with --param duplicating=1, or remove duplicate from the plan")
        lost = [f"drop = {self.drop:g}"] if self.drop else []
        lost += ["partitions"] if self.partitions else []
        if lost and not params.get("lossy"):
            out.append(f"the plan loses messages ({' and '.join(lost)}), but the spec's network does not (lossy = 0): "
                       "run with --param lossy=1, or remove drop and partitions from the plan")
        moved = [f"reorder = {self.reorder:g}"] if self.reorder else []
        moved += [f"delay_ms = [{self.delay_ms[0]:g}, {self.delay_ms[1]:g}]"] if self.delay_ms[1] > self.delay_ms[0] else []
        if moved and params.get("ordered"):
            out.append(f"the plan reorders messages ({' and '.join(moved)}), but the spec's network keeps each channel "
                       "in order (ordered = 1): run with --param ordered=0, or remove reorder and random delays")
        return out

    @property
    def needs_relay(self) -> bool:
        return bool(self.drop or self.duplicate or self.reorder or self.delay_ms[1] or self.partitions or self.crashes)


MAX_MS, MAX_SECONDS = 60_000, 3600  # the longest delay, and the latest time, a plan may name
def check_network(faults: Faults, params: dict[str, int]) -> None:
    """Refuse a plan that the spec's network model cannot express (FaultsError saying which --param to set)."""
    conflicts = faults.network_conflicts(params)
    if conflicts:
        raise FaultsError("the fault plan does not fit the spec's network model, so its runs would fail validation "
                          "although the protocol is correct: " + "; ".join(conflicts))


_KEYS = {"drop", "duplicate", "reorder", "delay_ms", "reorder_ms", "partitions", "crashes", "stragglers"}


def load_faults(path: str, nproc: int) -> Faults:
    """Read and check a faults file for a run of `nproc` processes."""
    try:
        data = loads(read_text(path, "faults file"), path)
    except JSONInputError as e:
        raise FaultsError(str(e)) from None
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

    def number(v: Any, what: str, ms: bool = False) -> float:
        limit = MAX_MS if ms else MAX_SECONDS
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= limit:
            raise bad(f"{what} is {v!r}, not a number between 0 and {limit} {'ms' if ms else 's'}",
                      "give seconds (milliseconds for delay_ms and reorder_ms) as a number")
        return float(v)

    def listed(key: str) -> list:
        v = data.get(key, [])
        if not isinstance(v, list):
            raise bad(f"{key} is {type(v).__name__}, not a list", f'"{key}": [...]')
        return v

    def pid(v: Any, what: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < nproc:
            raise bad(f"{what} is {v!r}, not a process id", f"use 0..{nproc - 1}")
        return v

    out = Faults(prob("drop"), prob("duplicate"), prob("reorder"))
    delay = data.get("delay_ms", [0, 0])
    if not isinstance(delay, list) or len(delay) != 2:
        raise bad("delay_ms must be [min, max]", '"delay_ms": [0, 20]')
    lo, hi = number(delay[0], "delay_ms[0]", ms=True), number(delay[1], "delay_ms[1]", ms=True)
    if lo > hi:
        raise bad("delay_ms has min > max", '"delay_ms": [0, 20]')
    out.delay_ms = (lo, hi)
    out.reorder_ms = number(data.get("reorder_ms", 30.0), "reorder_ms", ms=True)
    for i, p in enumerate(listed("partitions")):
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
    for i, c in enumerate(listed("crashes")):
        w = f"crashes[{i}]"
        if not isinstance(c, dict) or "pid" not in c:
            raise bad(f"{w} needs pid and at", '{"pid": 2, "at": 1.0, "restart": 2.0}')
        at = number(c.get("at", 0), f"{w}.at")
        restart = c.get("restart")
        if restart is not None and number(restart, f"{w}.restart") <= at:
            raise bad(f"{w} restarts before it crashes", "give restart > at")
        out.crashes.append(Crash(pid(c["pid"], f"{w}.pid"), at, None if restart is None else float(restart)))
    for i, c in enumerate(listed("stragglers")):
        w = f"stragglers[{i}]"
        if not isinstance(c, dict) or "pid" not in c:
            raise bad(f"{w} needs pid and delay_ms", '{"pid": 1, "delay_ms": 20}')
        chance = c.get("probability", 1.0)
        if isinstance(chance, bool) or not isinstance(chance, (int, float)) or not 0 <= chance <= 1:
            raise bad(f"{w}.probability is {chance!r}, not a probability", "give a number between 0 and 1")
        out.stragglers.append(Straggler(pid(c["pid"], f"{w}.pid"), number(c.get("delay_ms", 0), f"{w}.delay_ms", ms=True),
                                        float(chance)))
    return out
