"""Linearizability by search: Wing & Gong's algorithm with Lowe's memoisation, as in Porcupine.

The history is a doubly linked list of call and return events in real-time order. The search
repeatedly picks a pending call that comes before the first return, applies it to the model
state and lifts it (with its return) out of the list; when the first remaining event is a return
no operation can be linearised next, so it backtracks. A configuration (set of linearised
operations, model state) already explored is never explored again (Lowe 2017, "Testing for
linearizability"). The model's partition (by key) is checked part by part — P-compositionality
(Herlihy & Wing 1990; Horn & Kroening 2015) — the parts in round-robin slices, so that one hard
part cannot starve the others and the first illegal part ends the check, as Porcupine's parallel
partitions do.

For a history that is not linearizable, `check` also finds the shortest illegal prefix of the
failing part (illegality is monotone in the prefix: operations pending at the cut may or may not
have taken effect) and, within it, the operations involved: every operation that changes the state,
and the fewest reads (operations the model's `is_observer` names) without which the prefix would be linearizable,
found by removing reads one at a time. (Removing a write could make a read illegal on its own, so
writes are never removed: the explanation stays about the history as it happened.)
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import Any

from .history import UNKNOWN, History, Operation
from .models import ILLEGAL, Model

STRIDE = 2048  # search steps per slice between looks at the clock
EXPLAIN_SECONDS = 10.0  # at most this long is spent shortening and minimising a counterexample


class Timeout(Exception):
    """The time budget ran out."""


@dataclass
class Verdict:
    """The outcome of checking one history."""

    verdict: str  # "linearizable" | "not linearizable" | "unknown"
    model: str
    operations: int
    partitions: int
    seconds: float
    steps: int = 0
    failing_key: Any = None
    prefix: list[Operation] = field(default_factory=list)  # the shortest illegal prefix of the failing part
    last: Operation | None = None  # the operation whose completion makes that prefix illegal
    involved: list[Operation] = field(default_factory=list)  # the prefix less the reads it does not need
    minimal: bool = False  # whether `involved` was minimised to the end (not cut by the budget)
    note: str = ""

    @property
    def exit_code(self) -> int:
        return {"linearizable": 0, "not linearizable": 1}.get(self.verdict, 3)

    def to_json(self, history: History | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict, "model": self.model, "operations": self.operations,
                               "partitions": self.partitions, "seconds": round(self.seconds, 4), "steps": self.steps}
        if history is not None:
            out["history"] = history.source
            out["format"] = history.format
        if self.verdict == "not linearizable":
            out["failing_key"] = self.failing_key if not isinstance(self.failing_key, tuple) else list(self.failing_key)
            out["illegal_prefix"] = [op.to_json() for op in self.prefix]
            out["completes_prefix"] = self.last.to_json() if self.last else None
            out["involved"] = [op.to_json() for op in self.involved]
            out["involved_minimal"] = self.minimal
        if self.note:
            out["note"] = self.note
        return out


def _wgl(ops: list[Operation], model: Model, counter: list[int]) -> Generator[None, None, bool]:
    """True iff `ops` is linearizable with respect to `model`; yields every STRIDE steps."""
    n = len(ops)
    if n == 0:
        return True
    events = sorted([(op.call, 0, i) for i, op in enumerate(ops)] + [(op.ret, 1, i) for i, op in enumerate(ops)])
    size = 2 * n
    head, tail = size, size + 1
    nxt = [0] * (size + 2)
    prv = [0] * (size + 2)
    op_of = [0] * size
    is_call = [False] * size
    match = [0] * size
    ret_node = [0] * n
    order = [head] + list(range(size)) + [tail]
    for a, b in zip(order, order[1:]):
        nxt[a], prv[b] = b, a
    for k, (_, kind, i) in enumerate(events):
        op_of[k] = i
        if kind == 0:
            is_call[k] = True
        else:
            ret_node[i] = k
    for k in range(size):
        if is_call[k]:
            match[k] = ret_node[op_of[k]]
    step = model.step
    state = model.init()
    linearized = 0
    seen: set[tuple[int, Any]] = set()
    stack: list[tuple[int, Any]] = []
    entry = nxt[head]
    steps = 0
    while nxt[head] != tail:
        steps += 1
        if steps == STRIDE:
            counter[0] += steps
            steps = 0
            yield
        if is_call[entry]:
            i = op_of[entry]
            new = step(state, ops[i])
            if new is ILLEGAL and ops[i].unknown:
                new = state  # an operation whose outcome is unknown may not have happened
            if new is not ILLEGAL:
                lin = linearized | (1 << i)
                key = (lin, new)
                if key not in seen:
                    seen.add(key)
                    stack.append((entry, state))
                    state, linearized = new, lin
                    m = match[entry]  # lift the call and its return out of the list
                    p, q = prv[entry], nxt[entry]
                    nxt[p], prv[q] = q, p
                    p, q = prv[m], nxt[m]
                    nxt[p], prv[q] = q, p
                    entry = nxt[head]
                    continue
            entry = nxt[entry]
        else:
            if not stack:
                counter[0] += steps
                return False
            entry, state = stack.pop()
            linearized &= ~(1 << op_of[entry])
            m = match[entry]  # put the return back, then the call
            nxt[prv[m]] = m
            prv[nxt[m]] = m
            nxt[prv[entry]] = entry
            prv[nxt[entry]] = entry
            entry = nxt[entry]
    counter[0] += steps
    return True


def linearizable(ops: list[Operation], model: Model, deadline: float | None = None) -> bool:
    """Whether one (sub-)history is linearizable; Timeout past `deadline` (time.monotonic())."""
    gen = _wgl(ops, model, [0])
    try:
        while True:
            next(gen)
            if deadline is not None and time.monotonic() > deadline:
                raise Timeout()
    except StopIteration as stop:
        return bool(stop.value)


def check(history: History, model: Model, budget: float | None = None, explain: bool = True) -> Verdict:
    """Check a whole history: partitions in round-robin slices, stopping at the first illegal one.

    `budget` (seconds) bounds the search; past it the verdict is "unknown". With `explain`, a
    non-linearizable verdict comes with the shortest illegal prefix and the operations involved,
    found within what is left of the budget (at least 1 s, at most EXPLAIN_SECONDS)."""
    t0 = time.monotonic()
    deadline = t0 + budget if budget is not None else None
    model.check_ops(history.operations)
    parts = [p for p in model.partition(list(history.operations)) if p]
    counter = [0]
    running = {k: _wgl(_renumber(p), model, counter) for k, p in enumerate(parts)}
    failing: int | None = None
    while running and failing is None:
        for k in list(running):
            try:
                next(running[k])
            except StopIteration as stop:
                del running[k]
                if not stop.value:
                    failing = k
                    break
        if failing is None and running and deadline is not None and time.monotonic() > deadline:
            done = len(parts) - len(running)
            return Verdict("unknown", model.name, len(history), len(parts), time.monotonic() - t0, counter[0],
                           note=f"time budget of {budget:g} s reached with {done} of {len(parts)} part(s) "
                                "found linearizable")
    for gen in running.values():
        gen.close()
    if failing is None:
        return Verdict("linearizable", model.name, len(history), len(parts), time.monotonic() - t0, counter[0])
    part = parts[failing]
    v = Verdict("not linearizable", model.name, len(history), len(parts), time.monotonic() - t0, counter[0],
                failing_key=part[0].key if len(parts) > 1 else None)
    if explain:
        left = max(1.0, (deadline - time.monotonic()) if deadline is not None else EXPLAIN_SECONDS)
        _explain(v, part, model, time.monotonic() + min(left, EXPLAIN_SECONDS))
        v.seconds = time.monotonic() - t0
    return v


def _renumber(ops: list[Operation]) -> list[Operation]:
    """The same operations numbered 0..n-1 (the search's bit positions)."""
    return [op if op.id == i else replace(op, id=i) for i, op in enumerate(ops)]


def prefix(ops: list[Operation], cut: int) -> list[Operation]:
    """The operations invoked before event position `cut`; those not returned by then are pending."""
    end = max((op.ret for op in ops), default=0) + 1
    out = []
    for op in ops:
        if op.call < cut:
            out.append(op if op.ret < cut else replace(op, output=UNKNOWN, ret=end))
    return out


def _explain(v: Verdict, ops: list[Operation], model: Model, deadline: float) -> None:
    """Fill in the shortest illegal prefix of `ops` and the operations involved in it."""
    cuts = sorted({op.ret + 1 for op in ops if not op.unknown})
    lo, hi = 0, len(cuts) - 1  # the full part is illegal, so the last cut is
    try:
        while lo < hi:
            mid = (lo + hi) // 2
            if linearizable(_renumber(prefix(ops, cuts[mid])), model, deadline):
                lo = mid + 1
            else:
                hi = mid
    except Timeout:
        v.note = "the time budget ran out while shortening the illegal prefix"
    cut = cuts[hi]
    pre = prefix(ops, cut)
    last = next(op for op in ops if op.ret + 1 == cut)
    v.prefix, v.last = pre, last
    core = list(pre)
    try:
        core = _drop_reads(core, last, model, deadline)
        v.minimal = True
    except Timeout as t:
        core = t.args[0] if t.args else core
        v.note = v.note or "the time budget ran out while removing reads not involved"
    v.involved = core


def _drop_reads(ops: list[Operation], last: Operation, model: Model, deadline: float) -> list[Operation]:
    """`ops` less the reads it stays illegal without: chunks of reads first, then one by one (as ddmin).
    Trials that turn linearizable are quick; each removal that keeps the history illegal costs a full
    search, so removing many reads at once saves most of the time. On Timeout, its argument is the
    smallest illegal history found so far."""
    core = list(ops)
    removable = [op.id for op in core if op.id != last.id and model.is_observer(op)]
    chunk = max(1, len(removable) // 2)
    while removable:
        kept = []
        for start in range(0, len(removable), chunk):
            drop = set(removable[start:start + chunk])
            trial = [op for op in core if op.id not in drop]
            try:
                illegal = not linearizable(_renumber(trial), model, deadline)
            except Timeout:
                raise Timeout(core) from None
            if illegal:
                core = trial
            else:
                kept.extend(removable[start:start + chunk])
        if chunk == 1:
            break
        removable, chunk = kept, max(1, chunk // 2)
    return core
