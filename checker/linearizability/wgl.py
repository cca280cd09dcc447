"""Wing & Gong's search with Lowe's memoisation, in Python: for models the compiled search does not know.

The history is a doubly linked list of call and return events in real-time order. The search
repeatedly picks a pending call that comes before the first return, applies it to the model
state and lifts it (with its return) out of the list; when the first remaining event is a return
no operation can be linearised next, so it backtracks. A configuration (set of linearised
operations, model state) already explored is never explored again (Lowe 2017, "Testing for
linearizability"). `kernel.c` is the same search in C.

An optional operation (one an explanation relaxes) may not have taken effect: the search lifts it
with its effect, and on the way back without it.
"""

from __future__ import annotations

from collections.abc import Collection, Generator
from dataclasses import dataclass, field

from .history import Operation
from .models import ILLEGAL, Model

STRIDE = 2048  # search steps between yields (looks at the clock and at the other partitions)
MAX_CONFIGS = 20_000_000  # configurations remembered at most; past it the search goes on without remembering more

LINEARIZABLE, ILLEGAL_HISTORY, STOPPED, OUT_OF_MEMORY = 1, 0, -1, -2


@dataclass
class Outcome:
    """What one search of one (sub-)history found. `code`: 1 linearizable, 0 not, -1 stopped (budget or another
    part's verdict), -2 out of memory."""

    code: int
    steps: int = 0
    best_events: int = 0  # every event before this position of the real-time order was linearised, in `witness` order
    witness: list[int] = field(default_factory=list)  # indices into the searched operations
    configs: int = 0
    cache_full: bool = False


def event_order(ops: list[Operation]) -> list[int]:
    """The events in real-time order, as 2 * index + (1 for a return); calls before returns at one position."""
    events = sorted([(op.call, 0, i) for i, op in enumerate(ops)] + [(op.ret, 1, i) for i, op in enumerate(ops)])
    return [2 * i + kind for _, kind, i in events]


def search(ops: list[Operation], model: Model, out: Outcome, optional: Collection[int] = ()) -> Generator[None, None, None]:
    """Whether `ops` is linearizable with respect to `model`, written into `out` (whose code stays STOPPED if the
    generator is closed before the end); yields every STRIDE steps."""
    ev = event_order(ops)
    nev = len(ev)
    head, tail = nev, nev + 1
    nxt = list(range(1, nev + 1)) + [0, 0]
    if nev:
        nxt[nev - 1] = tail
    nxt[head] = 0 if nev else tail
    prv = [k - 1 for k in range(nev)] + [0, nev - 1 if nev else head]
    if nev:
        prv[0] = head
    ret_node = {e >> 1: k for k, e in enumerate(ev) if e & 1}
    match = [-1 if e & 1 else ret_node[e >> 1] for e in ev]
    is_call = [not e & 1 for e in ev]
    op_of = [e >> 1 for e in ev]
    step = model.step
    state = model.init()
    linearized = 0
    remaining = len(ops)
    seen: set[tuple[int, object]] = set()
    stack: list[tuple[int, object, bool]] = []  # (call node, state before, lifted with an effect it may not have had)
    best, witness, wl = 0, [0] * len(ops), 0
    entry = nxt[head]
    steps = 0

    def remember(key: tuple[int, object]) -> bool:
        """Whether `key` is a new configuration (remembered if there is room)."""
        if key in seen:
            return False
        if len(seen) < MAX_CONFIGS:
            seen.add(key)
        else:
            out.cache_full = True
        return True

    try:
        while remaining > 0:
            steps += 1
            if steps % STRIDE == 0:
                yield
            lift = False
            if entry < nev and is_call[entry]:
                i = op_of[entry]
                op = ops[i]
                new = step(state, op)
                if new is ILLEGAL and (op.unknown or i in optional):
                    new = state  # it may not have happened
                if new is not ILLEGAL:
                    lin = linearized | (1 << i)
                    maybe = i in optional and new != state
                    if remember((lin, new)):
                        lift = True
                    elif maybe and remember((lin, state)):
                        lift, maybe, new = True, False, state  # without its effect
                    if lift:
                        stack.append((entry, state, maybe))
                        state, linearized = new, lin
                if not lift:
                    entry = nxt[entry]
                    continue
            else:  # backtrack; an optional operation undone with its effect is lifted again without it
                if not stack:
                    out.code = ILLEGAL_HISTORY
                    return
                entry, state, maybe = stack.pop()
                wl = min(wl, len(stack))
                m = match[entry]  # put the return back, then the call
                nxt[prv[m]] = m
                prv[nxt[m]] = m
                nxt[prv[entry]] = entry
                prv[nxt[entry]] = entry
                remaining += 1
                if maybe and remember((linearized, state)):
                    stack.append((entry, state, False))
                else:
                    linearized &= ~(1 << op_of[entry])
                    entry = nxt[entry]
                    continue
            m = match[entry]  # lift the call and its return out of the list
            p, q = prv[entry], nxt[entry]
            nxt[p], prv[q] = q, p
            p, q = prv[m], nxt[m]
            nxt[p], prv[q] = q, p
            remaining -= 1
            first = nev if nxt[head] == tail else nxt[head]
            if first > best:
                best = first
                for k in range(wl, len(stack)):
                    witness[k] = op_of[stack[k][0]]
                wl = len(stack)
            entry = nxt[head]
        out.code, best = LINEARIZABLE, nev
        witness, wl = [op_of[e] for e, _, _ in stack], len(stack)
    finally:
        out.steps, out.best_events, out.witness, out.configs = steps, best, witness[:wl], len(seen)
