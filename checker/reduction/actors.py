"""Partial-order reduction for actor specs: the independence structure of an actor program.

The events of an actor system are its global transitions: a delivery to process p, a timer of
p, the crash of p, a drop of a message to p, a message forged by Byzantine p; each is *owned* by
one process. The builder's traces say what each reads and writes (checked here on the terms):
an event of p reads and writes only p's local slots, consumes its envelope and adds the envelopes
it sends. So events of different processes commute and never disable one another — a send only
adds — except for the crash budget (a crash may disable another crash) and two cases `ample`
handles: a send that overflows the network fails (its consumers disable the failure), and on a
duplicating network a send of a message in flight changes nothing, so it does not commute with
a drop of that message. Two events of one process *conflict* (may disable each other or not commute)
when one writes a local slot the other reads or writes (two additions of constants to one set
commute), when both consume one envelope or both send one (ordered networks: use one channel),
and always with the process's crash; a forge conflicts with its process's sends of its envelope.

Conflicts and sends shrink as a run goes on, and the reduction uses that. A value of a local slot
is *frozen* when every step of its process keeps it (an `Option` set once, say); a frozen value,
once there, stays for ever. Enumerating the values of the few slots each term reads proves, per
step, which frozen values make an update the identity (the step no longer writes that slot) and
which make a send's condition false (the step never sends it again: a *kill*). At a state, each
process's events fall into *units*, the classes of the conflicts still possible under the frozen
values it holds (`ProcessUnits`). `ample.choose` then builds stubborn sets from units.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from itertools import product
from typing import Any

import numpy as np

from lockstep.specs.lang.actors import ActorProgram
from lockstep.specs.lang.actors.networks import BagNetwork, FifoNetwork, SetNetwork
from lockstep.specs.lang.program import Program
from lockstep.specs.lang.terms import Term, slot

from .. import interpret
from ..codegen import _total, term_function

LIMIT = 4096  # value combinations one proof (frozen value, identity, kill) may enumerate
MAX_VALUES = 256  # local slots with more values are not searched for frozen values
MAX_PIVOTS = 8  # frozen values per process whose presence splits its units (2^8 patterns)
MAX_PAIRS = 250_000  # a process with more pairs of events is one unit
INTERPRETED = 64  # a proof enumerating at most this many combinations evaluates its terms without compiling them
MAX_WORK = 2_000_000  # value combinations all proofs together may enumerate (before guards prune them); beyond, no reduction

Literal = tuple  # ("bit", slot, i) | ("eq", slot, v) | ("pos", slot): a test on one global slot


class PorUnsupported(Exception):
    """The spec is not one partial-order reduction applies to (said why)."""


@dataclass
class Send:
    """An envelope an event may send, the kill literals after which it never does, and the literals one of
    which must hold for it still to send (its input is in flight: nothing else sends that one)."""

    env: tuple
    key: tuple  # the envelope, or (ordered) its channel (src, dst, None)
    kills: tuple[Literal, ...]
    reads: frozenset[int]  # local slots its condition reads
    inputs: tuple[Literal, ...] = ()  # empty: no such condition


@dataclass
class Write:
    """A local slot an event assigns: its identity literals (under which the assignment changes
    nothing), whether it only adds constants to a set, and the slots its value reads."""

    slot: int
    ident: tuple[Literal, ...]
    add_only: bool
    reads: frozenset[int]


@dataclass
class Event:
    """One global transition as the reduction sees it."""

    kind: str
    owner: int
    consumes: tuple | None = None  # envelope (src, dst, msg index); ordered: the channel (src, dst, None)
    key: tuple | None = None  # what it consumes, as conflicts compare it
    sends: list[Send] = field(default_factory=list)
    check_reads: frozenset[int] = frozenset()
    writes: list[Write] = field(default_factory=list)


class ProcessUnits:
    """A process's events and the conflicts between them that frozen values may rule out: per pattern
    of those values (which of the `pivots` hold), the class of each event, computed when first met."""

    def __init__(self, tids: list[int], reasons: dict[tuple[int, int], list[frozenset]]):
        self.tids = np.array(tids, dtype=np.int64)
        self.k = len(tids)
        times: dict[frozenset, int] = {}  # each distinct reason and how often it is given
        for rs in reasons.values():
            for r in rs:
                times[r] = times.get(r, 0) + 1
        count: dict[Literal, int] = {}
        for r, c in times.items():
            for lit in r:
                count[lit] = count.get(lit, 0) + c
        self.pivots = sorted(count, key=lambda lit: (-count[lit], repr(lit)))[:MAX_PIVOTS]
        bit = {lit: 1 << i for i, lit in enumerate(self.pivots)}
        mask_of = {r: sum(bit.get(lit, 0) for lit in r) for r in times}
        self.edges: list[tuple[int, int, list[int]]] = []  # (a, b, masks): a and b conflict while, for some
        # mask, none of its literals holds
        always = []
        for (a, b), rs in reasons.items():
            masks = []
            for r in rs:
                m = mask_of[r]
                if m == 0:
                    masks = []
                    always.append((a, b))
                    break
                masks.append(m)
            if masks:
                self.edges.append((a, b, masks))
        self.always = always
        self.tables: dict[int, np.ndarray] = {}
        self.live: np.ndarray | None = None  # per edge and pattern: the conflict is still possible (`_prepare`)

    def table(self, pattern: int) -> np.ndarray:
        """The class (0..k-1, numbered by least member) of each event when the pivots in `pattern` hold."""
        hit = self.tables.get(pattern)
        if hit is None:
            if self.live is None:
                self._prepare()
            sel = self.live[:, pattern]
            a = np.concatenate([self.always_a, self.edge_a[sel]])
            b = np.concatenate([self.always_b, self.edge_b[sel]])
            hit = np.unique(_components(self.k, a, b), return_inverse=True)[1].astype(np.int64)
            self.tables[pattern] = hit
        return hit

    def _prepare(self) -> None:
        """The conflicts as arrays: the always-conflicting pairs, and per other pair and pattern whether some
        reason for the conflict is still there (none of one of its masks' literals holds)."""
        self.always_a = np.array([a for a, _b in self.always], dtype=np.int64)
        self.always_b = np.array([b for _a, b in self.always], dtype=np.int64)
        self.edge_a = np.array([e[0] for e in self.edges], dtype=np.int64)
        self.edge_b = np.array([e[1] for e in self.edges], dtype=np.int64)
        patterns = np.arange(1 << len(self.pivots), dtype=np.int64)
        masks = np.array([m for e in self.edges for m in e[2]], dtype=np.int64)
        starts = np.cumsum([0] + [len(e[2]) for e in self.edges[:-1]], dtype=np.int64)
        if not self.edges:
            self.live = np.zeros((0, patterns.size), dtype=bool)
            return
        open_ = (masks[:, None] & patterns[None, :]) == 0  # (masks, patterns): no literal of the mask holds
        self.live = np.logical_or.reduceat(open_, starts, axis=0)


def _components(k: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per node 0..k-1, the least node of its connected component in the graph of edges (a[i], b[i])."""
    label = np.arange(k, dtype=np.int64)
    while True:
        low = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        while True:  # every label is a node of the component no greater than its own: follow them to the end
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, label):
            return label
        label = new


class ActorStructure:
    """The static independence structure of an actor program."""

    def __init__(self, prog: Program):
        if not is_actor_program(prog):
            raise PorUnsupported("partial-order reduction applies to actor specs (ActorSpec) only")
        system = prog.system
        if prog.constraints:
            raise PorUnsupported("the spec has state constraints, which partial-order reduction does not support")
        self.prog = prog
        self.system = system
        self.n = system.proc.size
        self.ntrans = len(prog.transitions)
        self._proofs: dict[tuple, bool] = {}  # _always's answers by what was asked: processes share handlers
        self._work = 0  # value combinations enumerated so far (bounded by MAX_WORK)
        self.facts = _TermFacts()
        self._fields()
        self._check_footprints()
        self.frozen = {p: self._frozen(p) for p in range(self.n)}
        self.events = [self._event(tid, t) for tid, t in enumerate(prog.transitions)]
        self._dead_inputs()
        self.processes: list[ProcessUnits] = []
        self.offset = np.zeros(self.ntrans, dtype=np.int64)  # unit ids: offset of the owner + class
        base = 0
        for p in range(self.n):
            tids = [tid for tid, ev in enumerate(self.events) if ev.owner == p]
            pu = ProcessUnits(tids, self._reasons(tids))
            self.processes.append(pu)
            self.offset[tids] = base
            base += len(tids)
        self.nunits = base
        self._waits()

    # -- the state's layout ----------------------------------------------------------------------
    def _fields(self) -> None:
        prog, system = self.prog, self.system
        net = system.net
        self.net = net
        self.fifo = isinstance(net, FifoNetwork)
        nf = prog.field("network")
        self.net_base = nf.base
        self.msgs = list(system.message.values())
        self.msg_index = {m: i for i, m in enumerate(self.msgs)}
        self.cap = net.capacity
        names = {f.name for f in prog.fields}
        self.crashed_slot = prog.field("crashed").base if "crashed" in names else None
        self.forged_slot = prog.field("forged").base if "forged" in names else None
        if isinstance(net, (SetNetwork, BagNetwork)):
            elem = nf.dom.elem if isinstance(net, SetNetwork) else nf.dom.key
            self.env_strides = elem.strides
        elif not self.fifo:
            raise PorUnsupported(f"network {type(net).__name__} is not known to partial-order reduction")
        elif self.forged_slot is not None:  # an ordered network's forged envelopes: a set of envelopes
            self.env_strides = prog.field("forged").dom.elem.strides

    def _env(self, src: int, dst: int, msg: Any) -> tuple:
        return (src, dst, self.msg_index[msg])

    def _key(self, env: tuple) -> tuple:
        return (env[0], env[1], None) if self.fifo else env

    def env_index(self, env: tuple) -> int:
        s, d, m = env
        a, b, c = self.env_strides
        return s * a + d * b + m * c

    def head(self, src: int, dst: int, pos: int = 0) -> int:
        return self.net_base + (src * self.n + dst) * self.cap + pos

    def deliverable(self, env: tuple) -> Literal:
        if isinstance(self.net, SetNetwork):
            return ("bit", self.net_base, self.env_index(env))
        if isinstance(self.net, BagNetwork):
            return ("pos", self.net_base + self.env_index(env))
        return ("eq", self.head(env[0], env[1]), 1 + env[2])

    def in_flight(self, env: tuple) -> tuple[Literal, ...]:
        """Literals one of which holds while the envelope is in flight (ordered: at any position of its channel)."""
        if self.fifo:
            return tuple(("eq", self.head(env[0], env[1], pos), 1 + env[2]) for pos in range(self.cap))
        return (self.deliverable(env),)

    def full(self, env: tuple) -> Literal:
        """The envelope has no room for one more copy."""
        if isinstance(self.net, SetNetwork):
            return ("bit", self.net_base, self.env_index(env))
        if isinstance(self.net, BagNetwork):
            return ("eq", self.net_base + self.env_index(env), self.cap)
        return ("pos", self.head(env[0], env[1], self.cap - 1))

    def crashed(self, pid: int) -> Literal | None:
        if self.crashed_slot is None or pid not in self.system.crashable:
            return None
        return ("bit", self.crashed_slot, pid)

    def _check_footprints(self) -> None:
        """What the reduction relies on, checked on the traced terms: an event of process p writes only
        p's local slots and the shared network, history, crashed and forged fields."""
        system, prog = self.system, self.prog
        shared = set()
        for name in ("network", "history", "crashed", "forged"):
            try:
                f = prog.field(name)
            except KeyError:
                continue
            shared.update(range(f.base, f.base + f.count))
        local = {p: set(system.gslots[p]) for p in range(self.n)}
        for t in prog.transitions:
            ev = t.meta.get("event")
            own = local.get(ev[1], set()) if ev and ev[0] in ("deliver", "timeout") else set()
            stray = set(t.updates) - own - shared
            if stray:
                raise PorUnsupported(f"transition {t.label} writes {prog.slot_names[min(stray)]}, outside its process")

    # -- events ------------------------------------------------------------------------------------
    def _event(self, tid: int, t: Any) -> Event:
        ev = t.meta.get("event")
        if ev is None:
            raise PorUnsupported(f"transition {t.label} is not an actor event")
        kind = ev[0]
        if kind in ("deliver", "timeout"):
            pid = ev[1]
            step = self.system.by_key[ev[-1]]
            lt = step.transition
            nstate = self.system.nstate
            requires = [c.term for c in lt.checks if c.kind == "require"]
            check_reads = frozenset(x for c in lt.checks if c.term is not None for x in self.facts.reads(c.term) if x < nstate)
            writes = [self._write(pid, x, u, requires) for x, u in sorted(lt.updates.items()) if x < nstate]
            consumes = self._env(ev[2], pid, ev[3]) if kind == "deliver" else None
            return Event(kind, pid, consumes, self._key(consumes) if consumes else None,
                         self._sends(pid, step, requires), check_reads, writes)
        if kind == "crash":
            return Event(kind, ev[1])
        if kind == "drop":
            env = self._env(ev[2], ev[1], ev[3])
            return Event(kind, ev[1], env, self._key(env))
        if kind == "drop_at":
            return Event(kind, ev[1], (ev[2], ev[1], None), (ev[2], ev[1], None))
        if kind == "forge":
            env = self._env(ev[1], ev[2], ev[3])
            kills = (("bit", self.forged_slot, self.env_index(env)),)
            return Event(kind, ev[1], sends=[Send(env, self._key(env), kills, frozenset())])
        raise PorUnsupported(f"transition {t.label}: unknown actor event {kind!r}")

    def _sends(self, pid: int, step: Any, requires: list[Term]) -> list[Send]:
        out = []
        gs = self.system.gslots[pid]
        crash = self.crashed(pid)
        for when, dst, msg in step.sends:
            cond = requires + ([when] if isinstance(when, Term) else [])
            kills = ((crash,) if crash else ()) + tuple(("eq", gs[x], v) for x, v in self._falsifiers(pid, cond))
            reads = frozenset(x for c in cond + [dst, msg] for x in self.facts.reads(c))  # what decides whether and what
            dsts = [dst] if isinstance(dst, int) else list(range(max(dst.lo, 0), min(dst.hi, self.n - 1) + 1))
            msgs = [msg] if not isinstance(msg, Term) else self.msgs
            for d in dsts:
                for m in msgs:
                    env = self._env(pid, d, m)
                    out.append(Send(env, self._key(env), kills, reads))
        return out

    def _write(self, pid: int, x: int, u: Any, requires: list[Term]) -> Write:
        reads = frozenset(self.facts.reads(u))
        add_only = isinstance(u, Term) and u.op == "union" and isinstance(u.args[0], Term) \
            and u.args[0].op == "slot" and u.args[0].args[0] == x and not self.facts.reads(u.args[1])
        gs = self.system.gslots[pid]
        local = self.system.local
        cands = sorted(reads | {x} | {y for t in requires for y in self.facts.reads(t)})
        ident = []
        for y in cands:
            for v in self.frozen[pid].get(y, ()):
                scope = sorted(set(cands) | {x})
                if y == x or self._proves("identity", requires, [u, slot(x, local.slot_doms[x])], {y: v}, scope,
                                          lambda vals: vals[0] == vals[1]):
                    ident.append(("eq", gs[y], v))
        return Write(x, tuple(ident), add_only, reads - {x} if add_only else reads)

    def _proves(self, kind: str, guards: list[Any], tail: list[Any], fixed: dict[int, Any], reads: Iterable[int],
                ok: Any) -> bool:
        """`_always` over the local program, remembered by (kind of `ok`, the terms, the fixed slots, the
        slots read): the processes of one role ask the same questions of the same handlers."""
        reads = tuple(reads)
        try:
            key = (kind, tuple(t.key if isinstance(t, Term) else ("value", t) for t in guards + [None] + tail),
                   tuple(fixed.items()), reads)
            hash(key)
        except TypeError:  # an unhashable constant: ask without remembering
            self._spend(fixed, reads)
            return _always(guards, tail, fixed, reads, self.system.local, ok, self.facts)
        got = self._proofs.get(key)
        if got is None:
            self._spend(fixed, reads)
            got = self._proofs[key] = _always(guards, tail, fixed, reads, self.system.local, ok, self.facts)
        return got

    def _spend(self, fixed: dict[int, Any], reads: tuple) -> None:
        """Count the combinations one proof enumerates; refuse the reduction (deterministically, before
        the search) once the analysis would run for minutes."""
        total = 1
        for x in reads:
            if x not in fixed:
                total *= self.system.local.slot_doms[x].size
                if total > LIMIT:
                    return  # _always gives up on it at once
        self._work += total
        if self._work > MAX_WORK:
            raise PorUnsupported(f"its handlers are too large for the reduction's static analysis (more than "
                                 f"{MAX_WORK:,} value combinations to try); the search explores every interleaving")

    def _falsifiers(self, pid: int, cond: list[Term]) -> list[tuple[int, Any]]:
        """(local slot, frozen value) pairs under which the conjunction `cond` is false whatever the
        other slots it reads hold."""
        if not cond:
            return []
        reads = sorted(set().union(*(self.facts.reads(t) for t in cond)))
        out = []
        for x in reads:
            for v in self.frozen[pid].get(x, ()):
                if self._proves("false", cond, [], {x: v}, reads, lambda vals: False):
                    out.append((x, v))
        return out

    def _frozen(self, pid: int) -> dict[int, list]:
        """For each scalar local slot of `pid`, the values every step of the process keeps."""
        system = self.system
        local: Program = system.local
        steps = [s for s in system.steps if s.pid == pid and s.kind != "start"]
        out: dict[int, list] = {}
        for x in range(system.nstate):
            dom = local.slot_doms[x]
            if dom.kind == "set" or dom.size > MAX_VALUES:
                continue
            keep = [dom.rep_of_index(j) for j in range(dom.size)]
            for s in steps:
                u = s.transition.updates.get(x)
                if u is None or not keep:
                    continue
                requires = [c.term for c in s.transition.checks if c.kind == "require"]
                reads = sorted(set().union(self.facts.reads(u), *(self.facts.reads(t) for t in requires)) | {x})
                keep = [v for v in keep if self._proves("keeps", requires, [u], {x: v}, reads,
                                                       lambda vals, v=v: vals[0] == v)]
            if keep:
                out[x] = keep
        return out

    def _dead_inputs(self) -> None:
        """A step consuming an envelope nothing sends (after start) can send only while that one is in flight
        (on an ordered network, anywhere in its channel: it reaches the head by the receiver's own steps)."""
        sent = {s.env for ev in self.events for s in ev.sends}
        for ev in self.events:
            if ev.kind == "deliver" and ev.consumes not in sent:
                for s in ev.sends:
                    s.inputs = self.in_flight(ev.consumes)

    # -- conflicts -----------------------------------------------------------------------------------
    def _reasons(self, tids: list[int]) -> dict[tuple[int, int], list[frozenset]]:
        """For each pair of the process's events (by index in `tids`) that may conflict, the literal sets
        under any of which the conflict is gone (an empty set: they always conflict)."""
        out: dict[tuple[int, int], list[frozenset]] = {}
        k = len(tids)
        evs = [self.events[t] for t in tids]
        if k * (k - 1) // 2 > MAX_PAIRS or any(ev.kind == "crash" for ev in evs):
            return {(0, j): [frozenset()] for j in range(1, k)}  # one unit
        fps = [_Footprint(ev) for ev in evs]
        for a in range(k):
            for b in range(a + 1, k):
                if not fps[a].meets(fps[b]):
                    continue
                rs = _pair(fps[a], fps[b]) + _pair(fps[b], fps[a], one_way=True)
                if any(not r for r in rs):
                    out[(a, b)] = [frozenset()]
                elif rs:
                    out[(a, b)] = rs
        return out

    def _waits(self) -> None:
        """Per consuming event: the test that its envelope cannot be consumed now, and which process it is
        (deliveries are disabled for ever once it crashed)."""
        self.consumers: dict[tuple, list[int]] = {}
        waits = []
        for tid, ev in enumerate(self.events):
            if ev.consumes is None:
                continue
            src, dst, mi = ev.consumes
            envs = [ev.consumes] if mi is not None else [(src, dst, i) for i in range(len(self.msgs))]
            for env in envs:
                self.consumers.setdefault(env, []).append(tid)
                if self.fifo:  # a non-empty channel's head changes only by its receiver's own events
                    absent = (("eq", self.head(src, dst), 0), False)
                else:
                    absent = (self.deliverable(env), True)
                crash = self.crashed(dst) if ev.kind == "deliver" else None
                waits.append((tid, env, absent, crash))
        self.producers: dict[tuple, list[tuple[int, Send]]] = {}
        for tid, ev in enumerate(self.events):
            for s in ev.sends:
                self.producers.setdefault(s.env, []).append((tid, s))
        self.waits = [w for w in waits if w[1] in self.producers]


class _Footprint:
    """What `_pair` looks up in an event: its sends' kill sets by envelope key and by local slot read, its
    writes' identity sets, and the keys and slots they involve (pairs that share none never conflict)."""

    def __init__(self, ev: Event):
        self.ev = ev
        self.forge = ev.kind == "forge"
        kills = [frozenset(s.kills) for s in ev.sends]
        self.sends = list(zip((s.key for s in ev.sends), kills))
        self.by_key: dict[tuple, list[frozenset]] = {}
        self.by_read: dict[int, list[frozenset]] = {}
        for send, k in zip(ev.sends, kills):
            self.by_key.setdefault(send.key, []).append(k)
            for x in sorted(send.reads):
                self.by_read.setdefault(x, []).append(k)
        self.writes = [(w, frozenset(w.ident)) for w in ev.writes]
        self.keys = frozenset(self.by_key)
        self.slots = frozenset(w.slot for w in ev.writes)
        self.touches = ev.check_reads.union(self.slots, *(w.reads for w in ev.writes), self.by_read)

    def meets(self, other: _Footprint) -> bool:
        """Whether `_pair` may find a reason for the two to conflict."""
        k = self.ev.key
        return (k is not None and k == other.ev.key or self.forge or other.forge or bool(self.keys & other.keys)
                or bool(self.slots & other.touches) or bool(other.slots & self.touches))


def _pair(a: _Footprint, b: _Footprint, one_way: bool = False) -> list[frozenset]:
    """Reasons a and b conflict because of what a writes or sends (`one_way`: skip the symmetric rules)."""
    rs: list[frozenset] = []
    if not one_way:
        if a.ev.key is not None and a.ev.key == b.ev.key:
            return [frozenset()]
        if a.forge or b.forge:
            f, o = (a, b) if a.forge else (b, a)
            rs.extend(o.by_key.get(f.sends[0][0], ()))
        else:
            for key, ka in a.sends:
                for kb in b.by_key.get(key, ()):
                    rs.append(ka | kb)
    for w, ident in a.writes:
        x = w.slot
        if x in b.ev.check_reads:
            rs.append(ident)
        for wb, idb in b.writes:
            if wb.slot == x:
                if not (w.add_only and wb.add_only):
                    rs.append(ident | idb)
            elif x in wb.reads:
                rs.append(ident | idb)
        for kb in b.by_read.get(x, ()):
            rs.append(ident | kb)
    return rs


class _TermFacts:
    """What the analysis asks of the program's terms, each answered once (a term answered is kept, so that
    its id, the key, stays its own)."""

    def __init__(self) -> None:
        self._reads: dict[int, tuple[Term, frozenset[int]]] = {}
        self._total: dict[int, tuple[Term, bool]] = {}
        self._sub: dict[int, bool] = {}  # codegen's memo, of subterms of the terms kept in _total
        self._fns: dict[int, tuple[Term, Any]] = {}

    def reads(self, t: Any) -> frozenset[int]:
        """The slots a term reads."""
        if not isinstance(t, Term):
            return frozenset()
        hit = self._reads.get(id(t))
        if hit is None:
            hit = self._reads[id(t)] = (t, frozenset(_slots(t)))
        return hit[1]

    def total(self, t: Any) -> bool:
        """Whether evaluating the term can never fail."""
        if not isinstance(t, Term):
            return True
        hit = self._total.get(id(t))
        if hit is None:
            hit = self._total[id(t)] = (t, _total(t, self._sub))
        return hit[1]


    def function(self, t: Any, compiled: bool) -> Any:
        """The term as a function of a state (a list or tuple indexed by slot): compiled (once) or interpreted."""
        if not isinstance(t, Term):
            return lambda st: t
        if not compiled:
            return partial(interpret.evaluate, t)
        hit = self._fns.get(id(t))
        if hit is None:
            hit = self._fns[id(t)] = (t, term_function(t, "proof_term"))
        return hit[1]


def _slots(t: Any) -> set[int]:
    """The slots a term reads."""
    out: set[int] = set()
    stack = [t]
    seen: set[int] = set()
    while stack:
        x = stack.pop()
        if not isinstance(x, Term) or id(x) in seen:
            continue
        seen.add(id(x))
        if x.op == "slot":
            out.add(x.args[0])
        else:
            stack.extend(x.args)
    return out


def _always(guards: list[Any], tail: list[Any], fixed: dict[int, Any], reads: Iterable[int], prog: Program,
            ok: Any, facts: _TermFacts) -> bool:
    """Whether `ok(values of tail)` holds at every value of the slots in `reads` not fixed where all the
    `guards` hold (False if there are too many combinations or a term fails to evaluate).

    Where no term can fail, each guard is tested as soon as the slots it reads have values, so that the
    combinations a false guard rules out are never enumerated; the answer is the exhaustive one."""
    free = [x for x in reads if x not in fixed]
    total = 1
    for x in free:
        total *= prog.slot_doms[x].size
        if total > LIMIT:
            return False
    st = list(prog.init_defaults)
    for x, v in fixed.items():
        st[x] = v
    if not all(facts.total(t) for t in guards + tail):
        return _every(guards, tail, free, st, prog, ok)
    order, at = _schedule(guards, free, facts)
    pools = [[prog.slot_doms[x].rep_of_index(j) for j in range(prog.slot_doms[x].size)] for x in order]
    depth = len(order)

    compiled = total > INTERPRETED  # compiling a term costs about as much as this many evaluations
    at_fns = [[facts.function(g, compiled) for g in gs] for gs in at]
    tail_fns = [facts.function(t, compiled) for t in tail]

    def holds(d: int) -> bool:  # ok at every completion of the first d slots of `order`
        for g in at_fns[d]:
            if not g(st):
                return True
        if d == depth:
            return ok([f(st) for f in tail_fns])
        x = order[d]
        if d + 1 == depth:  # the last slot: its completions tested in place
            last = at_fns[depth]
            for v in pools[d]:
                st[x] = v
                if all(g(st) for g in last) and not ok([f(st) for f in tail_fns]):
                    return False
            return True
        for v in pools[d]:
            st[x] = v
            if not holds(d + 1):
                return False
        return True

    return holds(0)


def _schedule(guards: list[Any], free: list[int], facts: _TermFacts) -> tuple[list[int], list[list[Any]]]:
    """An order of the free slots that gives the guards their values early (the guard reading the fewest
    unordered slots first), and the guards to test once the first d slots have values, for each d."""
    free_set = set(free)
    needs = [facts.reads(g) & free_set for g in guards]
    order: list[int] = []
    placed: set[int] = set()
    pending = sorted(range(len(guards)), key=lambda i: len(needs[i]))
    while pending:
        i = min(pending, key=lambda j: (len(needs[j] - placed), j))
        pending.remove(i)
        for x in sorted(needs[i] - placed):
            order.append(x)
            placed.add(x)
    order += [x for x in free if x not in placed]
    pos = {x: d for d, x in enumerate(order)}
    at: list[list[Any]] = [[] for _ in range(len(order) + 1)]
    for g, ns in zip(guards, needs):
        at[max((pos[x] + 1 for x in ns), default=0)].append(g)
    return order, at


def _every(guards: list[Any], tail: list[Any], free: list[int], base: list[Any], prog: Program, ok: Any) -> bool:
    """`_always` by evaluating every term at every combination (a term may fail: a failure anywhere is False)."""
    pools = [[prog.slot_doms[x].rep_of_index(j) for j in range(prog.slot_doms[x].size)] for x in free]
    ng = len(guards)
    for combo in product(*pools):
        st = list(base)
        for x, v in zip(free, combo):
            st[x] = v
        tup = tuple(st)
        try:
            vals = [interpret.evaluate(t, tup) for t in guards + tail]
        except interpret.EvalError:
            return False
        if all(vals[:ng]) and not ok(vals[ng:]):
            return False
    return True


def slots_read(t: Any) -> set[int]:
    """The slots a term reads (for the engines' visibility sets)."""
    return _slots(t)


def is_actor_program(prog: Program) -> bool:
    """Whether a program comes from an actor spec (its transitions are actor events)."""
    return isinstance(prog, ActorProgram)
