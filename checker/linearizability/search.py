"""Checking a whole history: its parts searched in parallel, a time budget with a partial answer, explanations.

A model may partition a history by key; the history is linearizable iff every part is
(P-compositionality: Herlihy & Wing 1990; Horn & Kroening 2015). For the built-in models each part
is searched by the compiled kernel (`native`), parts on threads across the cores, largest first, and
the first illegal part stops the others, as Porcupine's goroutines do. Other models run the Python
search (`wgl`), parts in round-robin slices on one thread, so that one hard part cannot starve the
others. Past the budget the verdict is "unknown", with each part still open and the longest prefix
of it found linearizable (every operation invoked before some event, in an order that is legal).
A violation is explained by `explain`: the shortest illegal prefix and a minimal window.
"""

from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from . import native, wgl
from .engine import cores
from .explain import explain as explain_part
from .history import History, Operation
from .models import Model
from .wgl import ILLEGAL_HISTORY, LINEARIZABLE, OUT_OF_MEMORY, STOPPED, Outcome

EXPLAIN_SECONDS = 10.0  # at most this long is spent shortening and minimising a counterexample
THREADS_FROM = 1000  # operations from which parts are searched on threads (below, starting them costs more)


@dataclass
class OpenPart:
    """A part whose search the budget cut short, and how far it got."""

    key: Any
    operations: int
    linearized: list[Operation]  # the longest prefix found linearizable, in a legal order (its linearization)
    until: Operation | None  # the operation whose event ends that prefix
    position: int | None = None  # that event's position in the history's order of events

    def to_json(self) -> dict[str, Any]:
        return {"key": _jsonable_key(self.key), "operations": self.operations,
                "linearizable_prefix": len(self.linearized), "prefix_until": self.until.to_json() if self.until else None,
                "linearization": [op.id for op in self.linearized]}


@dataclass
class Verdict:
    """The outcome of checking one history."""

    verdict: str  # "linearizable" | "not linearizable" | "unknown"
    model: str
    operations: int
    partitions: int
    seconds: float
    steps: int = 0
    engine: str = "python"  # "compiled" (kernel.c) or "python"
    failing_key: Any = None
    prefix: list[Operation] = field(default_factory=list)  # the shortest illegal prefix of the failing part
    last: Operation | None = None  # the operation whose completion makes that prefix illegal
    window: list[Operation] = field(default_factory=list)  # operations of that prefix that cannot be linearized together
    minimal: bool = False  # whether `window` was minimised to the end (not cut by the budget)
    finished: int = 0  # parts found linearizable
    open: list[OpenPart] = field(default_factory=list)  # "unknown": the parts still open
    note: str = ""

    @property
    def exit_code(self) -> int:
        return {"linearizable": 0, "not linearizable": 1}.get(self.verdict, 3)

    def to_json(self, history: History | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict, "model": self.model, "operations": self.operations,
                               "partitions": self.partitions, "seconds": round(self.seconds, 4), "steps": self.steps,
                               "engine": self.engine}
        if history is not None:
            out["history"] = history.source
            out["format"] = history.format
        if self.verdict == "not linearizable":
            out["failing_key"] = _jsonable_key(self.failing_key)
            out["illegal_prefix"] = [op.to_json() for op in self.prefix]
            out["completes_prefix"] = self.last.to_json() if self.last else None
            out["window"] = [op.to_json() for op in self.window]
            out["window_minimal"] = self.minimal
        if self.verdict == "unknown":
            out["partitions_linearizable"] = self.finished
            out["open_partitions"] = [p.to_json() for p in self.open]
        if self.note:
            out["note"] = self.note
        return out


def _jsonable_key(key: Any) -> Any:
    return list(key) if isinstance(key, tuple) else key


def check(history: History, model: Model, budget: float | None = None, explain: bool = True,
          deadline: float | None = None, workers: int | None = None) -> Verdict:
    """Check a whole history, stopping at the first illegal part.

    `budget` (seconds from now), or `deadline` (time.monotonic()), bounds the search; past it the verdict is
    "unknown" with the parts still open. With `explain`, a non-linearizable verdict comes with the shortest illegal
    prefix and a minimal window, found within what is left of the budget (at least 1 s, at most EXPLAIN_SECONDS).
    `workers`: threads for the compiled search (default: one per core)."""
    t0 = time.monotonic()
    if deadline is None and budget is not None:
        deadline = t0 + budget
    ops = list(history.operations)
    model.check_ops(ops)
    parts = [p for p in model.partition(ops) if p]
    enc = native.encoder(model, ops) if native.library() is not None else None
    if deadline is not None and time.monotonic() > deadline:
        outcomes: list[Outcome | None] = [None] * len(parts)  # no time left to start searching
    elif enc is not None:
        outcomes = _run_compiled(parts, enc, deadline, workers or cores())
    else:
        outcomes = _run_python(parts, model, deadline)
    steps = sum(o.steps for o in outcomes if o is not None)
    engine = "compiled" if enc is not None else "python"
    failing = next((k for k, o in enumerate(outcomes) if o is not None and o.code == ILLEGAL_HISTORY), None)
    if failing is None:
        pending = [k for k, o in enumerate(outcomes) if o is None or o.code != LINEARIZABLE]
        if not pending and not history.cut:
            return Verdict("linearizable", model.name, len(history), len(parts), time.monotonic() - t0, steps, engine,
                           finished=len(parts))
        if not pending:  # every operation read is linearizable, but not every one was read
            return Verdict("unknown", model.name, len(history), len(parts), time.monotonic() - t0, steps, engine,
                           finished=len(parts), note=f"the {len(history):,} operations read before the time for "
                           f"reading ran out (at {history.cut}) are linearizable; the rest of the file was not read")
        v = Verdict("unknown", model.name, len(history), len(parts), time.monotonic() - t0, steps, engine,
                    finished=len(parts) - len(pending))
        v.open = [_open_part(parts[k], outcomes[k], len(parts) > 1) for k in pending]
        if any(o is not None and o.code == OUT_OF_MEMORY for o in outcomes):
            v.note = f"the search ran out of memory with {v.finished} of {len(parts)} part(s) found linearizable"
        else:
            allowed = budget if budget is not None else deadline - t0  # type: ignore[operator]
            v.note = f"time budget of {allowed:g} s reached with {v.finished} of {len(parts)} part(s) found linearizable"
        if history.cut:
            v.note += f", in the operations read before the time for reading ran out (at {history.cut})"
        return v
    part = parts[failing]
    if not history.cut_in_order:  # a violation among the events read may be undone by an earlier event unread
        return Verdict("unknown", model.name, len(history), len(parts), time.monotonic() - t0, steps, engine,
                       note=f"the operations read before the time for reading ran out (at {history.cut}) are not "
                       "linearizable, but the file orders its events by time and was not read to its end: a later "
                       "line may hold an earlier event")
    v = Verdict("not linearizable", model.name, len(history), len(parts), time.monotonic() - t0, steps, engine,
                failing_key=part[0].key if len(parts) > 1 else None)
    if explain:
        left = max(1.0, (deadline - time.monotonic()) if deadline is not None else EXPLAIN_SECONDS)
        e = explain_part(part, model, time.monotonic() + min(left, EXPLAIN_SECONDS))
        v.prefix, v.last, v.window, v.minimal, v.note = e.prefix, e.last, e.window, e.minimal, e.note
        v.seconds = time.monotonic() - t0
    return v


def _open_part(part: list[Operation], out: Outcome | None, keyed: bool) -> OpenPart:
    """How far the search of a part got: the operations invoked before its best event, and the last of them."""
    key = part[0].key if keyed else None
    if out is None or out.best_events == 0:
        return OpenPart(key, len(part), [], None)
    e = native.event_order(part)[out.best_events - 1]
    until = part[e >> 1]
    return OpenPart(key, len(part), [part[i] for i in out.witness], until, until.ret if e & 1 else until.call)


def _run_compiled(parts: list[list[Operation]], enc: Any, deadline: float | None, workers: int) -> list[Outcome | None]:
    """Every part through the kernel, on up to `workers` threads, largest first; the first illegal part stops the
    rest (their outcomes stay STOPPED, or None if never started)."""
    order = sorted(range(len(parts)), key=lambda k: -len(parts[k]))
    outcomes: list[Outcome | None] = [None] * len(parts)
    stop = ctypes.c_int32(0)
    errors: list[BaseException] = []
    lock = threading.Lock()
    queue = iter(order)

    def work() -> None:
        while not stop.value:
            with lock:
                k = next(queue, None)
            if k is None:
                return
            try:
                out = native.search(enc(parts[k]), deadline, stop)
            except BaseException as e:  # noqa: BLE001 - handed to the calling thread
                errors.append(e)
                stop.value = 1
                return
            outcomes[k] = out
            if out.code in (ILLEGAL_HISTORY, OUT_OF_MEMORY):
                stop.value = 1
            elif out.code == STOPPED:
                return

    n = min(workers, len(parts)) if sum(map(len, parts)) >= THREADS_FROM else 1
    if n <= 1:
        work()
    else:
        threads = [threading.Thread(target=work, name="lockstep-lin", daemon=True) for _ in range(n)]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except BaseException:
            stop.value = 1
            raise
    if errors:
        raise errors[0]
    return outcomes


def _run_python(parts: list[list[Operation]], model: Model, deadline: float | None) -> list[Outcome | None]:
    """Every part through the Python search in round-robin slices; the first illegal part stops the rest."""
    outcomes: list[Outcome | None] = [Outcome(STOPPED) for _ in parts]
    running = {k: wgl.search(p, model, outcomes[k]) for k, p in enumerate(parts)}  # type: ignore[arg-type]
    while running:
        for k in list(running):
            try:
                next(running[k])
            except StopIteration:
                del running[k]
                if outcomes[k].code == ILLEGAL_HISTORY:  # type: ignore[union-attr]
                    for gen in running.values():
                        gen.close()
                    return outcomes
        if running and deadline is not None and time.monotonic() > deadline:
            for gen in running.values():
                gen.close()
            break
    return outcomes
