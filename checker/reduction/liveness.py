"""Partial-order reduction for temporal properties under fairness: the stuttering provisos.

A reduced set that is not everything enabled may hold only *invisible* events (C2 of Peled 1993), and
for a temporal property under fairness the visible atoms are (a) the slots the property's conditions
read, (b) the slots the checked invariants read, and (c) whether each fair event is enabled: the slots
its guards read, and, where a step of it might change nothing (a duplicating network, a timer), the
slots it reads and writes, since TLA+'s ⟨A⟩_vars counts only steps that change the state. A fair event
itself is never in a reduced set that is not everything (it is visible: whether it is taken is what
its fairness constraint reads). With the cycle proviso (C3: a state whose reduced successors include a
state of its own level or an earlier one is expanded fully, so every cycle of the reduced graph has a
fully expanded state), every behaviour of the full graph has one in the reduced graph that is
stuttering-equivalent on these atoms and takes the same fair events (Peled 1993, Thm. 3.1; an event
added to a behaviour by the reduction is invisible, hence unfair), so fair violating lassos are kept;
the reduced graph's lassos are behaviours of the full graph, so none is invented. The fairness
constraints enabled at a state are read from every step enabled there, stored or pruned.

In an actor spec whose every delivery is fair, each send changes whether a fair delivery is enabled, so
the reduced sets are the whole set and the reduction prunes nothing; it prunes the unfair events that
no fair guard and no condition reads, e.g. a process's local timers under fairness of deliveries only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lockstep.specs.lang.actors.networks import SetNetwork

from ..temporal import Fairness, Property
from .actors import PorUnsupported, slots_read
from .ample import PorStats, Reducer, TupleColumns, for_model

__all__ = ["LivenessReduction", "liveness_reduction"]


class LivenessReduction:
    """A reducer whose visible slots cover the properties' atoms and the fair events' enabledness, and which
    events are fair (never in a reduced set that is not everything)."""

    def __init__(self, red: Reducer, fair_events: np.ndarray):
        self.red = red
        self.fair_events = fair_events  # bool per transition
        self.visible = red.visible
        self.stats = PorStats()
        # every event fair, or writing a visible network slot wherever it sends: no reduced set can be chosen
        self.idle = bool((fair_events | red.always_visible).all())

    def choose(self, states: list[tuple], succs: list[list[tuple[int, tuple]]]) -> tuple[np.ndarray, np.ndarray]:
        """(ample, reduced) for the states and their successors [(transition, state)]: the reduced set of a row
        where `reduced` holds is its events with `ample` set (the caller applies the cycle proviso)."""
        nt, rows = self.red.ntrans, len(states)
        enabled = np.zeros((nt, rows), dtype=bool)
        unsafe = np.zeros((nt, rows), dtype=bool)
        visible = self.visible
        for j, (st, ss) in enumerate(zip(states, succs)):
            for tid, t in ss:
                enabled[tid, j] = True
                if t == st or any(t[x] != st[x] for x in visible):
                    unsafe[tid, j] = True
        unsafe |= enabled & self.fair_events[:, None]
        ample, reduced = enabled.copy(), np.zeros(rows, dtype=bool)
        some = np.nonzero((enabled & ~unsafe).any(axis=0))[0]  # rows with an invisible event: a reduced set may exist
        if some.size:
            a, r = self.red.choose(TupleColumns([states[j] for j in some.tolist()]), enabled[:, some], unsafe[:, some])
            ample[:, some], reduced[some] = a, r
        return ample, reduced


def liveness_reduction(model: Any, props: list[Property], fair: Fairness) -> LivenessReduction:
    """The reduction of `model` (an actor spec's) for `props` under `fair`; PorUnsupported where none applies."""
    if getattr(model, "symmetry", None):
        raise PorUnsupported("partial-order reduction of temporal properties is not combined with symmetry reduction")
    base = for_model(model)  # PorUnsupported for plain specs, non-actor specs, state constraints
    prog = model.prog
    visible: set[int] = set(base.visible)
    names = {p.name for p in props}
    for p in prog.properties:
        if p.name in names:
            for term in p.operands:
                visible |= slots_read(term)
    dup = isinstance(base.s.net, SetNetwork) and base.s.net.duplicating
    fair_events = np.zeros(len(prog.transitions), dtype=bool)
    for tid, t in enumerate(prog.transitions):
        if fair.of(tid) < 0:
            continue
        fair_events[tid] = True
        for g in t.guards:
            visible |= slots_read(g)
        ev = base.s.events[tid]
        if not (ev.kind == "deliver" and ev.consumes is not None and not dup):  # a step that might change nothing
            visible |= set(t.updates)
            for u in t.updates.values():
                visible |= slots_read(u)
    return LivenessReduction(Reducer(base.s, visible), fair_events)
