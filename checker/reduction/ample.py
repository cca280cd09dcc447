"""Reduced sets of actor events for a batch of states: stubborn sets of units, with the visibility proviso.

A set of units is *stubborn* at a state s (Valmari's strong stubborn sets) when no event outside it
conflicts with an enabled event in it and no event outside it can enable a disabled one. Units are
closed under conflicts (`ActorStructure`), and across processes only the crash budget couples
enabled events (failing sends and duplicating networks aside: below), so what remains is enabling:
a delivery of envelope e is disabled at s because its process crashed (for ever), a local guard
fails (only its own unit changes that), or e is not in flight — then the units of the events that
may still send e must be in the set, and an event may not once a kill literal holds, nor once its
own input, which nothing else sends, is no longer in flight (on an ordered network: anywhere in its
channel, not only at the head). The enabled events of a stubborn set form a persistent set (Valmari
1991; Godefroid 1996, Thm. 4.3), so every deadlock is kept.

A send that does not fit fails its step, and the search reports a failing step where it is enabled.
Take each send's failing variant as a transition of its own, enabled while its channel (ordered) or
envelope is full: the sends on it enable it, its consumers (deliveries, drops) disable it. Sends on
one channel (or envelope) conflict, so they share a unit; but a consumer and a send commute while
the send fits, even in one process (a message to oneself): no conflict. So an enabled consumer
needs every unit that may still send on its channel, its own process's too (`overflows`), and a
forge disabled by a full channel needs its consumers, whichever process they belong to. The set is
then stubborn for the failing variants as well; they are visible events, never in a reduced set
while enabled, and the cycle proviso keeps them from being ignored. On a duplicating network no
send fails, but a drop and a send of one envelope in flight do not commute (the send adds nothing):
while the drop is enabled, each needs the other's unit (`redrops`).

The set chosen must also be *invisible* (C2 of Peled 1993): no event in it changes, at s, a slot the
checked invariants read, or loops on s. Each process offers one seed, its enabled
unit with the fewest units it needs; the smallest invisible closure that is not everything wins.
The engines add the cycle proviso (C3) and explore the result.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from lockstep.specs.lang.actors.networks import SetNetwork

from .actors import ActorStructure, Literal, PorUnsupported, slots_read

__all__ = ["Columns", "PorStats", "PorUnsupported", "Reducer", "TupleColumns", "for_model"]


class Columns(Protocol):
    """Slot values of a batch of states, as numpy columns."""

    rows: int

    def value(self, slot: int) -> np.ndarray: ...

    def bit(self, slot: int, i: int) -> np.ndarray: ...


class TupleColumns:
    """Columns of a list of state tuples (the scalar engine's states)."""

    def __init__(self, states: list[tuple]):
        self.states = states
        self.rows = len(states)

    def value(self, slot: int) -> np.ndarray:
        return np.fromiter((st[slot] for st in self.states), np.int64, self.rows)

    def bit(self, slot: int, i: int) -> np.ndarray:
        return np.fromiter(((st[slot] >> i) & 1 for st in self.states), bool, self.rows)


class PorStats:
    """What the reduction did: events pruned, states reduced, states the cycle proviso expanded fully."""

    def __init__(self) -> None:
        self.enabled = 0
        self.pruned = 0
        self.reduced = 0
        self.proviso = 0

    def note(self) -> str:
        share = self.pruned / self.enabled if self.enabled else 0.0
        return (f"partial-order reduction: {self.pruned:,} of {self.enabled:,} enabled events pruned ({share:.0%}), "
                f"{self.reduced:,} states explored with a reduced set, {self.proviso:,} expanded fully by the "
                f"cycle proviso")


class _Literals:
    """Literal values on a batch, each computed once."""

    def __init__(self, cols: Columns):
        self.cols = cols
        self.cache: dict[tuple, np.ndarray] = {}

    def __call__(self, lit: Literal) -> np.ndarray:
        hit = self.cache.get(lit)
        if hit is None:
            kind = lit[0]
            if kind == "bit":
                hit = self.cols.bit(lit[1], lit[2])
            elif kind == "eq":
                hit = self.cols.value(lit[1]) == lit[2]
            else:
                hit = self.cols.value(lit[1]) > 0
            self.cache[lit] = hit
        return hit


class Reducer:
    """Chooses the reduced sets of batches of states for one actor program."""

    def __init__(self, structure: ActorStructure, visible: set[int]):
        self.s = structure
        self.visible = sorted(visible)
        self.ntrans = structure.ntrans
        self.words = max(1, -(-structure.nunits // 64))
        s = structure
        # A step's effect on a network slot depends on what else is in flight (an ordered channel shifts its
        # positions; a consumer of another process changes what a send leaves): invisible at one state, it may be
        # visible after independent steps. A step that may write a visible network slot is always visible.
        net = structure.prog.field("network")
        vnet = {x for x in self.visible if net.base <= x < net.base + net.count}
        self.always_visible = np.array([bool(vnet & set(t.updates)) for t in structure.prog.transitions], dtype=bool)
        self.crash_binding = [(tid, ev.owner) for tid, ev in enumerate(s.events) if ev.kind == "crash"]
        if len(self.crash_binding) <= max(s.system.max_crashes, 1):
            self.crash_binding = []  # the budget never runs out before the crashable processes do
        self.forges = []
        for tid, ev in enumerate(s.events):
            if ev.kind == "forge":
                send = ev.sends[0]
                consumers = s.consumers.get(send.env, [])
                if consumers:
                    self.forges.append((tid, consumers, send.kills[0], s.full(send.env)))
        # consuming an envelope disables the failure of a send that would overflow it: an enabled consumer
        # needs the units that may still send it (or, ordered, anything on its channel), its own process's too
        self.overflows: list[tuple[int, list[tuple]]] = []
        if not (isinstance(s.net, SetNetwork) and s.net.duplicating):
            for tid, ev in enumerate(s.events):
                if ev.consumes is None:
                    continue
                src, dst, mi = ev.consumes
                envs = [(src, dst, i) for i in range(len(s.msgs))] if s.fifo or mi is None else [ev.consumes]
                envs = [e for e in envs if e in s.producers]
                if envs:
                    self.overflows.append((tid, envs))
        # a duplicating network keeps a delivered message, and a send of a message in flight changes nothing:
        # only a drop removes one, and a drop and a send of one envelope do not commute (either way round)
        self.redrops: list[tuple[int, tuple]] = []
        if isinstance(s.net, SetNetwork) and s.net.duplicating:
            self.redrops = [(tid, ev.consumes) for tid, ev in enumerate(s.events)
                            if ev.kind == "drop" and ev.consumes in s.producers]

    def units(self, lit: _Literals, rows: int) -> np.ndarray:
        """(transitions, rows): each event's unit at each row, under the frozen values the row holds."""
        out = np.empty((self.ntrans, rows), dtype=np.int64)
        for pu, base in zip(self.s.processes, self._bases()):
            if not pu.k:
                continue
            pattern = np.zeros(rows, dtype=np.int64)
            for i, p in enumerate(pu.pivots):
                pattern |= lit(p).astype(np.int64) << i
            kinds, inverse = np.unique(pattern, return_inverse=True)
            tables = np.stack([pu.table(int(k)) for k in kinds])  # (patterns, k)
            out[pu.tids] = base + tables[inverse].T
        return out

    def _bases(self) -> list[int]:
        bases, b = [], 0
        for pu in self.s.processes:
            bases.append(b)
            b += pu.k
        return bases

    def choose(self, cols: Columns, enabled: np.ndarray, unsafe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ample, reduced) for a batch: `enabled` and `unsafe` are (transitions, rows) masks — unsafe: the
        step changes a visible slot or loops on the state. `ample` is the events to explore per row (all
        enabled ones where `reduced` is False); the caller still applies the cycle proviso."""
        s, rows = self.s, cols.rows
        reduced = np.zeros(rows, dtype=bool)
        if self.always_visible.any():
            unsafe = unsafe | (enabled & self.always_visible[:, None])
        total = enabled.sum(axis=0)
        if not rows or s.nunits < 2 or not (total > 1).any():
            return enabled, reduced
        lit = _Literals(cols)
        unit = self.units(lit, rows)
        nu, W = s.nunits, self.words
        t_idx, r_idx = np.nonzero(enabled)
        flat = unit[t_idx, r_idx] * rows + r_idx
        counts = np.bincount(flat, minlength=nu * rows).reshape(nu, rows)
        bad = unsafe[t_idx, r_idx]
        unit_bad = np.bincount(flat[bad], minlength=nu * rows).reshape(nu, rows) > 0
        needs = np.zeros((nu, W, rows), dtype=np.uint64)
        self._needs(lit, unit, enabled, needs, rows)
        seeds = self._seeds(counts, unit_bad, needs)  # (processes, rows), -1: none
        reach = self._closure(seeds, needs, rows)  # (processes, W, rows)
        size = np.zeros(seeds.shape, dtype=np.int64)
        hit_bad = np.zeros(seeds.shape, dtype=bool)
        live = np.nonzero(counts.any(axis=1))[0]
        for u in live.tolist():
            inside = ((reach[:, u >> 6, :] >> np.uint64(u & 63)) & np.uint64(1)).astype(bool)
            size += inside * counts[u]
            hit_bad |= inside & unit_bad[u]
        valid = (seeds >= 0) & ~hit_bad & (size < total)
        score = np.where(valid, size, np.iinfo(np.int64).max)
        best = np.argmin(score, axis=0)
        reduced = valid.any(axis=0)
        chosen = reach[best, :, np.arange(rows)]  # (rows, W)
        word = chosen[np.arange(rows)[None, :], unit >> 6] if W > 1 else chosen[:, 0][None, :]
        member = ((word >> (unit & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)
        ample = enabled & (member | ~reduced)
        return ample, reduced

    def _needs(self, lit: _Literals, unit: np.ndarray, enabled: np.ndarray, needs: np.ndarray, rows: int) -> None:
        """needs[u] gets the bit of unit v where a disabled event of u can be enabled by an event of v."""
        s = self.s
        alive: dict[int, np.ndarray] = {}
        for c, env, (absent, negate), crash in s.waits:
            cond = ~lit(absent) if negate else lit(absent).copy()
            if crash is not None:
                cond &= ~lit(crash)
            if not cond.any():
                continue
            uc = unit[c]
            for p, send in s.producers[env]:
                _mark(needs, uc, unit[p], cond & self._alive(lit, alive, send, rows))
        for c, envs in self.overflows:
            cond = enabled[c]
            if not cond.any():
                continue
            for env in envs:
                for p, send in s.producers.get(env, ()):
                    _mark(needs, unit[c], unit[p], cond & self._alive(lit, alive, send, rows))
        for d, env in self.redrops:
            if not enabled[d].any():
                continue
            for p, send in s.producers[env]:
                both = enabled[d] & self._alive(lit, alive, send, rows)
                _mark(needs, unit[d], unit[p], both)
                _mark(needs, unit[p], unit[d], both & enabled[p])
        for tid, consumers, forged, full in self.forges:
            cond = ~lit(forged) & lit(full)
            if cond.any():
                for c in consumers:
                    _mark(needs, unit[tid], unit[c], cond)
        for tid, _p in self.crash_binding:
            for other, _r in self.crash_binding:
                if other != tid:
                    _mark(needs, unit[tid], unit[other], enabled[tid] & enabled[other])

    @staticmethod
    def _alive(lit: _Literals, cache: dict[int, np.ndarray], send: Any, rows: int) -> np.ndarray:
        """Rows where the step may still make this send."""
        hit = cache.get(id(send))
        if hit is None:
            hit = np.ones(rows, dtype=bool)
            for k in send.kills:
                hit &= ~lit(k)
            if send.inputs:
                hit &= np.logical_or.reduce([lit(x) for x in send.inputs])
            cache[id(send)] = hit
        return hit

    def _seeds(self, counts: np.ndarray, unit_bad: np.ndarray, needs: np.ndarray) -> np.ndarray:
        """Per process and row, its enabled invisible unit needing the fewest others (-1: none)."""
        out = np.full((self.s.n, counts.shape[1]), -1, dtype=np.int64)
        degree = np.bitwise_count(needs).sum(axis=1).astype(np.int64)  # (units, rows)
        for q, base in enumerate(self._bases()):
            k = self.s.processes[q].k
            if not k:
                continue
            c, b, d = counts[base:base + k], unit_bad[base:base + k], degree[base:base + k]
            score = np.where((c > 0) & ~b, d * (1 << 20) + c, np.iinfo(np.int64).max)
            arg = np.argmin(score, axis=0)
            ok = score[arg, np.arange(counts.shape[1])] < np.iinfo(np.int64).max
            out[q] = np.where(ok, base + arg, -1)
        return out

    def _closure(self, seeds: np.ndarray, needs: np.ndarray, rows: int) -> np.ndarray:
        """The units each seed needs, transitively, as bitmasks (seeds, W, rows)."""
        n, W = seeds.shape[0], self.words
        reach = np.zeros((n, W, rows), dtype=np.uint64)
        for q in range(n):
            sel = seeds[q] >= 0
            u = seeds[q][sel]
            reach[q, u >> 6, np.nonzero(sel)[0]] = np.uint64(1) << (u & 63).astype(np.uint64)
        active = np.nonzero(needs.any(axis=(1, 2)))[0].tolist()
        while active:
            before = reach.copy()
            for u in active:
                inside = ((reach[:, u >> 6, :] >> np.uint64(u & 63)) & np.uint64(1)).astype(bool)  # (n, rows)
                if inside.any():
                    reach |= np.where(inside[:, None, :], needs[u][None, :, :], np.uint64(0))
            if np.array_equal(before, reach):
                break
        return reach


def _mark(needs: np.ndarray, src: np.ndarray, dst: np.ndarray, cond: np.ndarray) -> None:
    """needs[src[r]] |= bit dst[r] for the rows r where cond holds and the units differ."""
    sel = np.nonzero(cond & (src != dst))[0]
    if sel.size:
        d = dst[sel]
        np.bitwise_or.at(needs, (src[sel], d >> 6, sel), np.uint64(1) << (d & 63).astype(np.uint64))


def for_model(model: Any) -> Reducer:
    """The reducer of a typed model's actor program, its visible slots read from its invariants (and, under
    symmetry, their images); a witness is searched for as an invariant of its own."""
    cached = getattr(model, "_por", None)
    if cached is not None:
        return cached
    prog = getattr(model, "prog", None)
    if prog is None:
        raise PorUnsupported(f"{model.name} is a plain spec; partial-order reduction applies to actor specs")
    visible: set[int] = set()
    for p in prog.invariants:
        if p.error is None:
            visible |= slots_read(p.term)
    sym = getattr(model, "sym", None)
    if sym is not None:
        visible = sym.slot_orbit(visible)
    red = Reducer(ActorStructure(prog), visible)
    model._por = red
    return red
