"""The scalar engine's construction of the state graph: breadth-first, one state at a time, stopping at the
first invariant violation, deadlock or failing step (reported with its trace)."""

from __future__ import annotations

from collections import deque
from typing import Any

from ..explicit import Options
from ..model import Model
from ..progress import Progress, Stats
from ..result import Violation
from ..temporal import Fairness
from ..trace import Trace
from .graph import Builder, StateGraph
from .symmetric import Quotient


class Stop(Exception):
    """Stops the exploration: a safety violation (with its trace) on the way, and the counts so far."""

    def __init__(self, violation: Violation, distinct: int, generated: int, depth: int):
        self.violation = violation
        self.distinct, self.generated, self.depth = distinct, generated, depth


def explore(model: Model, fair: Fairness, opts: Options, progress: Progress, quotient: Quotient | None = None,
            red: Any = None) -> StateGraph:
    """The reachable graph of `model`, or with `quotient` of its canonical representatives (symmetry reduction);
    raises Stop at an invariant violation, a deadlock or a failing step. With `red` (a `LivenessReduction`) each
    state's steps are its reduced set, under the cycle proviso."""
    b = Builder(fair, interned=not hasattr(model, "prog"))
    canon = quotient.canonical if quotient is not None else None
    queue: deque[int] = deque()
    counts = {"generated": 0, "outside": 0}

    def stop(i: int, kind: str, name: str, message: str, location: str | None) -> Stop:
        steps = [(label, b.states[j]) for label, j in b.path_to(i)]
        if quotient is not None:
            steps, kind, name, message, location = quotient.lift_stop(steps, kind, name, message, location)
        return Stop(safety(model, steps, kind, name, message, location), len(b.states),
                    counts["generated"], max(b.depth, default=-1) + 1)

    def add(st: Any, parent: int, label: int) -> int:
        i = b.add(st, parent, label)
        try:
            bad = model.violated(st)
        except Exception:
            f = model.diagnose_predicate(st)
            raise stop(i, f.kind, f.action, f.message, f.location) from None
        if bad >= 0:
            name = model.invariant_names[bad]
            raise stop(i, "invariant", name, f"invariant {name} is violated", None)
        outside = False
        if model.constraint_names:
            try:
                outside = model.outside(st) >= 0
            except Exception:
                outside = False
        if outside:
            counts["outside"] += 1
        else:
            queue.append(i)
        return i

    for st in model.initial_states():
        counts["generated"] += 1
        if canon is not None:
            st = canon(st)
        if st not in b.index:
            b.initial.append(add(st, -1, -1))
    cap = opts.max_states
    cut: str | None = None
    ahead: deque[tuple[int, list, Any]] = deque()  # (state, its successors, its reduced set or None)
    while queue or ahead:
        if not ahead:
            ahead = _ahead(model, b, queue, opts, red)
        i, succs, picked = ahead.popleft()
        st = b.states[i]
        if succs is None:  # beyond the depth bound
            cut = opts.depth_cut()
            continue
        if isinstance(succs, Exception):
            f = model.diagnose(st)
            raise stop(i, f.kind, f.action, f.describe(), f.location) from None
        counts["generated"] += len(succs)
        if not succs and opts.deadlock:
            raise stop(i, "deadlock", "", "deadlock: no action is enabled", None)
        if picked is not None:
            succs = _proviso(b, i, succs, picked, red)
        steps: list[tuple[int, int]] = []
        for label, t in succs:
            lid = b.label_id(label)
            if t == st:
                continue  # a step that changes nothing is a stuttering step
            if canon is not None:
                t = canon(t)
            j = b.index.get(t)
            if j is None:
                if cap is not None and len(b.states) >= cap:
                    cut = f"state bound {cap} reached"
                    c = b.constraint(lid)
                    if c >= 0:
                        b.extra.setdefault(i, set()).add(c)
                    continue
                j = add(t, i, lid)
            steps.append((j, lid))
        b.expand(i, steps)
        if progress.due():
            progress.report(Stats(len(b.states), counts["generated"], len(queue), b.depth[i] + 1))
    return b.graph(counts["generated"], cut, counts["outside"])


AHEAD = 256  # states whose reduced sets are chosen together


def _ahead(model: Model, b: Builder, queue: deque[int], opts: Options, red: Any) -> deque[tuple[int, Any, Any]]:
    """The next states of the queue with their successors (None beyond the depth bound, the exception where
    generating them failed: reported at that state's turn) and, with a reduction, their reduced sets."""
    out: deque[tuple[int, Any, Any]] = deque()
    while queue and len(out) < (AHEAD if red is not None else 1):
        i = queue.popleft()
        if opts.max_depth is not None and b.depth[i] >= opts.max_depth:
            out.append((i, None, None))
            continue
        try:
            out.append((i, model.successors(b.states[i]), None))
        except Exception as e:
            out.append((i, e, None))
            break
    if red is None:
        return out
    rows = [k for k, (_i, succs, _p) in enumerate(out) if isinstance(succs, list)]
    red.stats.enabled += sum(len(out[k][1]) for k in rows)
    rows = [k for k in rows if len(out[k][1]) > 1]
    if rows:
        ample, reduced = red.choose([b.states[out[k][0]] for k in rows], [out[k][1] for k in rows])
        for r, k in enumerate(rows):
            i, succs, _p = out[k]
            if reduced[r]:
                out[k] = (i, succs, [tid for tid, _t in succs if ample[tid, r]])
    return out


def _proviso(b: Builder, i: int, succs: list, picked: list[int], red: Any) -> list:
    """State i's reduced steps, or all of them where one leads to a state of i's level or an earlier one (the
    cycle proviso); the fairness constraints of the steps left out count as enabled at i."""
    keep = set(picked)
    reduced = [(tid, t) for tid, t in succs if tid in keep]
    depth = b.depth[i]
    if any((j := b.index.get(t)) is not None and b.depth[j] <= depth for _tid, t in reduced):
        red.stats.proviso += 1
        return succs
    red.stats.reduced += 1
    red.stats.pruned += len(succs) - len(reduced)
    for tid, t in succs:
        if tid not in keep and t != b.states[i]:
            c = b.constraint(b.label_id(tid))
            if c >= 0:
                b.extra.setdefault(i, set()).add(c)
    return reduced


def safety(model: Model, steps: list[tuple[Any, Any]], kind: str, name: str, message: str,
           location: str | None) -> Violation:
    """The violation of an invariant, a deadlock or a failing step at the end of `steps` [(label, state)]."""
    prop = {"kind": "invariant" if kind == "invariant" else ("deadlock" if kind == "deadlock" else "step"), "name": name}
    return Violation(kind, name, message, location, Trace.from_states(model, steps, property=prop, message=message,
                                                                        location=location))
