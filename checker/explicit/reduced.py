"""Breadth-first levels with partial-order reduction, for the scalar engine.

A level is expanded a chunk of states at a time: the compiled successor function gives every
enabled step of each state (so failing steps and deadlocks are found at every state, as in the
full search), `Reducer.choose` picks each state's reduced set, and the cycle proviso
(C3) expands a state fully when one of its reduced successors was already visited at this
level or an earlier one. States are then visited in the full search's order — frontier row,
then transition — so the vector engine, which does the same per batch, finds the same states.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..model import Model
from ..reduction.ample import PorStats, Reducer, TupleColumns

CHUNK = 2048  # states whose reduced sets are chosen together


def reduced_level(model: Model, red: Reducer, stats: PorStats, deadlock: bool) -> Callable[..., Any]:
    """An expander with `codegen.expand_source`'s protocol (partitioned mode excluded) that explores each
    state's reduced set."""
    successors, fingerprint = model.successors, model.fingerprint
    visible = red.visible

    def expand(frontier, P, N, bad, canon, outside, cap, tick, S, out, nw, me):  # noqa: N803
        gen = 0
        level_new: set[int] = set()
        for start in range(0, len(frontier), CHUNK):
            chunk = frontier[start:start + CHUNK]
            succs: list[list] = []
            failed = None
            for k, (_pf, st) in enumerate(chunk):
                try:
                    succs.append(successors(st))
                except Exception:
                    failed = k
                    break
            states = [st for _, st in chunk[:len(succs)]]
            enabled = np.zeros((red.ntrans, len(states)), dtype=bool)
            unsafe = np.zeros((red.ntrans, len(states)), dtype=bool)
            for j, (st, ss) in enumerate(zip(states, succs)):
                for tid, t in ss:
                    enabled[tid, j] = True
                    if t == st or any(t[x] != st[x] for x in visible):
                        unsafe[tid, j] = True
            ample, reduced = red.choose(TupleColumns(states), enabled, unsafe)
            for j, ss in enumerate(succs):
                pf, st = chunk[j]
                if not (start + j) & 4095:
                    tick(start + j, gen)
                if not ss:
                    if deadlock:
                        return ("deadlock", pf, st, gen)
                    continue
                stats.enabled += len(ss)
                picked = [(tid, t) for tid, t in ss if ample[tid, j]] if reduced[j] else ss
                cands = []
                for _tid, t in picked:
                    c = canon(t) if canon is not None else t
                    cands.append((fingerprint(c), c))
                if reduced[j]:
                    if any(f in P and f not in level_new for f, _ in cands):
                        stats.proviso += 1
                        cands = [(fingerprint(c), c) for c in
                                 ((canon(t) if canon is not None else t) for _, t in ss)]
                        picked = ss
                    else:
                        stats.reduced += 1
                        stats.pruned += len(ss) - len(picked)
                for f, c in cands:
                    gen += 1
                    if f in P:
                        continue
                    if len(P) >= cap:
                        return ("cut", pf, st, gen)
                    P[f] = pf
                    level_new.add(f)
                    if bad(c):
                        return ("invariant", f, c, gen)
                    N.append((f, c))
            if failed is not None:
                pf, st = chunk[failed]
                return ("step", pf, st, gen)
        return gen

    return expand
