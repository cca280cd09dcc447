"""Why a history is not linearizable: its shortest illegal prefix, and a minimal window of operations in it.

Illegality is monotone in the prefix (operations pending at the cut may or may not have taken
effect), so the shortest illegal prefix is found by bisection over the completions. Within it, a
window is a set of operations that cannot be linearized together whatever the prefix's other
operations did: the others are relaxed — a read (an observer) is left out, any other operation
becomes optional: it may not have taken effect (if it did, it did so between its invocation and
its completion, as recorded). Relaxing only weakens the history, so a window explains the violation
on its own; it is minimal when relaxing any one more of its operations makes the prefix
linearizable. It is found as delta debugging does, relaxing halves, then quarters, ... then single
operations (Zeller & Hildebrandt 2002): each trial that stays illegal costs a full search, and
relaxing many operations at once saves most of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .engine import Timeout, solve
from .history import UNKNOWN, Operation
from .models import Model
from .wgl import ILLEGAL_HISTORY, LINEARIZABLE

TRIAL_SECONDS = 0.1  # a trial of the minimisation may take this long at least, a 32nd of what is left at most


@dataclass
class Explanation:
    """The shortest illegal prefix, the operation whose completion makes it illegal, a window in it."""

    prefix: list[Operation]
    last: Operation
    window: list[Operation]
    minimal: bool  # whether every trial of the minimisation finished
    note: str = ""


def prefix(ops: list[Operation], cut: int) -> list[Operation]:
    """The operations invoked before event position `cut`; those not returned by then are pending."""
    end = max((op.ret for op in ops), default=0) + 1
    out = []
    for op in ops:
        if op.call < cut:
            out.append(op if op.ret < cut else op._replace(output=UNKNOWN, ret=end))
    return out


def explain(ops: list[Operation], model: Model, deadline: float) -> Explanation:
    """The shortest illegal prefix of the illegal `ops` and a minimal window in it."""
    cuts = sorted({op.ret + 1 for op in ops if not op.unknown})
    lo, hi = 0, len(cuts) - 1  # the full part is illegal, so the last cut is
    try:
        while lo < hi:
            mid = (lo + hi) // 2
            if _illegal(prefix(ops, cuts[mid]), model, deadline, set(), set()):
                hi = mid
            else:
                lo = mid + 1
    except Timeout:
        note = "the time budget ran out while shortening the illegal prefix"
    else:
        note = ""
    cut = cuts[hi]
    pre = prefix(ops, cut)
    last = next(op for op in ops if op.ret + 1 == cut)
    window, minimal = minimal_window(pre, last, model, deadline)
    if not minimal:
        note = note or "the time budget ran out while minimising the window"
    return Explanation(pre, last, window, minimal, note)


def minimal_window(pre: list[Operation], last: Operation, model: Model, deadline: float) -> tuple[list[Operation], bool]:
    """The operations of the illegal `pre` that stay after relaxing all others that can be (see the module
    docstring), and whether every trial finished (the window is then minimal). `last`, whose completion makes the
    prefix illegal, always stays: without it the prefix is the previous, linearizable one, or weaker."""
    dropped: set[int] = set()
    relaxed: set[int] = set()
    complete = True
    observers = [i for i, op in enumerate(pre) if op is not last and model.is_observer(op)]
    others = [i for i, op in enumerate(pre) if op is not last and not model.is_observer(op)]
    for candidates, into in ((observers, dropped), (others, relaxed)):
        chunk = max(1, len(candidates) // 2)
        while candidates:
            kept = []
            for start in range(0, len(candidates), chunk):
                group = set(candidates[start:start + chunk])
                trial = (dropped | group, relaxed) if into is dropped else (dropped, relaxed | group)
                now = time.monotonic()
                if now > deadline:
                    return [op for i, op in enumerate(pre) if i not in dropped and i not in relaxed], False
                try:  # a trial may take a share of what is left; one that takes longer proves nothing
                    illegal = _illegal(pre, model, min(deadline, now + max(TRIAL_SECONDS, (deadline - now) / 32)), *trial)
                except Timeout:
                    illegal, complete = False, complete and chunk > 1
                if illegal:
                    into |= group
                else:
                    kept.extend(candidates[start:start + chunk])
            if chunk == 1:
                break
            candidates, chunk = kept, max(1, chunk // 2)
    return [op for i, op in enumerate(pre) if i not in dropped and i not in relaxed], complete


def _illegal(pre: list[Operation], model: Model, deadline: float, dropped: set[int], relaxed: set[int]) -> bool:
    """Whether `pre`, less `dropped` and with `relaxed` optional, is not linearizable; Timeout past `deadline`."""
    if time.monotonic() > deadline:
        raise Timeout()
    ops = [op for i, op in enumerate(pre) if i not in dropped]
    index = {id(op): k for k, op in enumerate(ops)}
    out = solve(ops, model, deadline, {index[id(pre[i])] for i in relaxed})
    if out.code == ILLEGAL_HISTORY:
        return True
    if out.code == LINEARIZABLE:
        return False
    raise Timeout()
