"""A Byzantine replica of Autobahn with all the power its keys give it.

The last replica, b = n-1, is Byzantine (one Byzantine replica, also for f > 1; which views it leads
is set by `offset`: with offset=1 it leads view 1 of slot 1, with offset=0 view 2). It may sign
anything with its own key, and it holds the honest signatures it has received, so it sends any
message it can construct, and nothing else:

- as a leader, Prepares of any cuts in the view it leads (up to `equivocations` different ones per
  view: two are enough for two honest replicas to commit different cuts), each justified as an
  honest replica checks it: in view 1 a CommitQC of slot s-k for s > k (a Commit it holds) and,
  with lanes, tips it holds PoAs for; in a later view a TC of the view before whose winning
  proposal is the cut, or that has no winner and, with lanes, tips it holds PoAs for (a new cut
  carries its PoAs in every view). The TC is any set of `tc_quorum` Timeouts it holds: any
  subset of the honest Timeouts it has received, with or without one of its own with any report
  (any Prepare; any QC it holds); the winning proposal is computed by the rule an honest verifier
  applies (`tc_winner`). It assembles TCs (a step each, recording the cuts they justify) and
  proposes (a step each) at any time;
- a Confirm of a cut as soon as it holds a PrepareQC for it (its own vote and the honest Prepare
  votes it received reach `quorum`), a Commit as soon as it holds a CommitQC (`quorum` Confirm
  votes, or `fast_quorum` Prepare votes with the fast path);
- votes: a Prepare vote and a Confirm vote for every Prepare and Confirm an honest leader sends it,
  in any view, whatever it voted before; a car vote for every car it receives;
- Timeouts of any view but the last, with any report: the replicas other than the next view's
  leader get one that reports nothing (only its sender counts there), the next leader one with any
  Prepare and any QC b holds (from a Confirm it received, a Timeout's report, or its own votes);
- as the author of the last lane, two cars at every height (a fork), each certified by its PoA.

It sends each message to every replica, as soon as it can construct it (a Confirm or a Commit in the
step that completes its certificate); which replicas receive it, and when, is the network's choice,
and its messages are never forced through (`synchrony.py`): so one send covers every subset of
recipients and every later send of the same message. A message an honest replica would reject (a short certificate, a Prepare
its ticket does not justify, a signature not its sender's) changes nothing there, so leaving those
out loses no behaviour of the honest replicas. What is left out, as redundant: votes for cuts no
leader proposed (an honest leader counts only votes for its proposal), forwarding certificates an
honest replica already sends to everyone (Commits, Confirms, PoAs), and Fetch requests (it receives
every car).
"""

from __future__ import annotations

from functools import cache
from itertools import combinations
from typing import Any

from ..lang import And, If, Int, Map, Not, Or, Set, require
from ..lang.actors import Local, broadcast, on_message, on_start, on_timeout, send, set_timer
from ..lang.params import ParamExpr
from ..lang.terms import lift
from .consensus import _none_ref
from .messages import (
    CarRef,
    CarVote,
    Commit,
    Confirm,
    ConfirmVote,
    Cut,
    OptRef,
    Prepare,
    PrepareVote,
    Ref,
    Slot,
    Timeout,
    View,
    _ncuts,
    add_if,
    layout,
    some,
)
from .params import CARS, EQUIVOCATIONS, LANES, PROPOSALS, TC_QUORUM, VIEWS, F, N, Replica, sizes
from .spec import Autobahn


@cache
def acts(f: int, views: int, lanes: int, cars: int, proposals: int, tc_quorum: int) -> tuple[tuple, ...]:
    """What the Byzantine replica's timers may do, one entry per choice: ("propose", cut); ("tc", view,
    honest members, own Timeout's (Prepare, QC) or None); ("timeout", view, None: to the replicas other
    than the next leader, or (Prepare, QC): to the next leader). Reports are Ref values or None."""
    n = 3 * f + 1
    cuts = range(_ncuts(f, lanes, cars, proposals))
    tcq = tc_quorum or 2 * f + 1
    honest = range(n - 1)
    out: list[tuple] = [("propose", c) for c in cuts]

    def reports(v: int) -> list[tuple]:  # what a Timeout of view v may report: a Prepare of view v, any QC up to v
        props = [None, *(Ref(v, c) for c in cuts)]
        qcs = [None, *(Ref(w, c) for w in range(1, v + 1) for c in cuts)]
        return [(p, q) for p in props for q in qcs]

    for v in range(2, views + 1):
        for size in range(max(tcq - 1, 0), n):
            for members in combinations(honest, size):
                if size >= tcq:
                    out.append(("tc", v, frozenset(members), None))
                out.extend(("tc", v, frozenset(members), r) for r in reports(v - 1))
    for v in range(1, views):
        out.append(("timeout", v, None))
        out.extend(("timeout", v, r) for r in reports(v))
    return tuple(out)


NACTS = ParamExpr(lambda *a: len(acts(*a)), "byzantine acts", (F, VIEWS, LANES, CARS, PROPOSALS, TC_QUORUM))
Act = Int(0, NACTS - 1)


class AutobahnByzantine(Autobahn):
    """Autobahn with a Byzantine replica (the last) of full power, bounded only by what it can sign and
    what it holds; by default it leads view 1 of slot 1 (offset=1)."""

    byzantine = (N - 1,)
    defaults = {"offset": 1}
    equivocations = EQUIVOCATIONS

    bprop = Local(Map(Slot, Set(Cut)))  # the cuts it proposed in the view of s it leads
    bjust = Local(Map(Slot, Set(Cut)))  # the cuts a TC it holds justifies there (views > 1)
    bpv = Local(Map(Slot, Map(Cut, Set(Replica))))  # Prepare votes it holds for each cut it proposed
    bcv = Local(Map(Slot, Map(Cut, Set(Replica))))  # Confirm votes it holds
    bcommit = Local(Map(Slot, Set(Cut)))  # the cuts it sent a Commit for
    bqc = Local(Map(Slot, Set(Ref)))  # the PrepareQCs it holds
    bsent = Local(Map(Slot, Map(View, Set(Int(0, 1)))))  # Timeouts sent: 0 to the others, 1 to the next leader

    # -- handlers ------------------------------------------------------------------------------
    @on_start(byzantine=True)
    def byz_start(p):
        z = sizes(p)
        if p.id in layout(p).producing:  # its lane forks: two cars at height 1
            p.spec.make_car(p, 0, 1)
            p.spec.make_car(p, 1, 1)
        for s in range(1, z.slots + 1):
            if z.led_view(p.id, s) is not None:
                set_timer(f"lead{s}")
            if z.views > 1:
                set_timer(f"slot{s}")

    @on_message(byzantine=True)
    def byz_receive(p, src, m):
        tag = m.tag
        if src == p.id:
            require(False)
        handler = {"Prepare": "byz_prepare", "Confirm": "byz_confirm", "Commit": "byz_commit",
                   "PrepareVote": "byz_prepare_vote", "ConfirmVote": "byz_confirm_vote", "Timeout": "byz_timeout",
                   "Car": "byz_car"}.get(tag)
        if handler is None:  # car votes for its own cars, PoAs, fetches: as an honest replica
            p.spec.handle(p, src, m)
        else:
            getattr(p.spec, handler)(p, src, m)

    @on_timeout(byzantine=True)
    def byz_fire(p, timer, a: Act):
        z = sizes(p)
        kind, s = timer[:4], int(timer[4:])
        entry = acts(z.f, z.views, z.lanes, z.cars, z.proposals, z.tc_quorum)[a]
        if s > z.slots:
            require(False)
        if kind == "lead" and entry[0] == "propose":
            p.spec.byz_propose(p, s, entry[1])
        elif kind == "lead" and entry[0] == "tc":
            p.spec.byz_tc(p, s, *entry[1:])
        elif kind == "slot" and entry[0] == "timeout":
            p.spec.byz_send_timeout(p, s, *entry[1:])
        else:
            require(False)
        set_timer(timer)  # it may act again

    # -- leading ---------------------------------------------------------------------------------
    def byz_propose(p: Any, s: int, cut: int) -> None:
        """Prepare(s, v, cut) in the view v of s it leads, if it can justify it and has not used its budget."""
        z = sizes(p)
        v = z.led_view(p.id, s)
        if v is None:
            require(False)
        if v == 1:
            ticket = True if s <= z.k else p.committed[s - z.k].is_some()
            require(ticket, p.spec.justifiable(p, cut))
        else:
            require(p.bjust[s].contains(cut))
        require(Not(p.bprop[s].contains(cut)), p.bprop[s].card() < z.equivocations)
        p.bprop[s] = p.bprop[s].add(cut)
        p.bpv[s][cut] = frozenset({p.id})
        broadcast(Prepare(s, v, cut), include_self=False)

    def justifiable(p: Any, cut: int) -> Any:
        """Whether it holds a PoA for every tip of `cut` (or a descendant of it)."""
        lay = layout(p)
        if lay.abstract:
            return True
        tips = lay.tips(cut)
        return And(*(Or(*(p.certified[lane] == t for t in range(lay.counts[lane])
                           if lay.ancestor_or_self(lane, tips[lane], t)))
                     for lane in lay.producing))

    def byz_tc(p: Any, s: int, v: int, members: frozenset, own: tuple | None) -> None:
        """It assembles a TC of view v-1 from the honest Timeouts `members` it holds and, if `own`, a
        Timeout of its own reporting `own`; the cuts the TC justifies in view v are added to `bjust`."""
        z, lay = sizes(p), layout(p)
        if z.led_view(p.id, s) != v:
            require(False)
        held = p.timeouts_from[s][v - 1]
        for r in members:
            require(held.contains(r))
        reports = [(True, p.tprop[s][r], p.tqc[s][r]) for r in sorted(members)]
        if own is not None:
            prop, qc = own
            if qc is not None:
                require(p.bqc[s].contains(qc))
            reports.append((True, _opt(prop), _opt(qc)))
        has, cut = p.spec.tc_winner(p, reports)
        free = p.bjust[s]  # no winner: any cut whose tips it holds PoAs for, as every proposal of a new cut
        for c in range(lay.ncuts):
            free = add_if(free, c, p.spec.justifiable(p, c))
        new = If(has, p.bjust[s].add(cut), free)
        require(Not(new.issubset(p.bjust[s])))  # it learns something
        p.bjust[s] = new

    # -- votes it collects as a leader -------------------------------------------------------------
    def byz_prepare_vote(p: Any, src: int, m: Any) -> None:
        z = sizes(p)
        if z.leader(m.s, m.v) != p.id:
            require(False)
        s, cut = m.s, m.cut
        require(p.bprop[s].contains(cut))
        before = p.bpv[s][cut]
        after = before.add(src)
        p.bpv[s][cut] = after
        confirm = And(before.card() < z.quorum, after.card() >= z.quorum)
        p.bqc[s] = add_if(p.bqc[s], Ref(m.v, cut), confirm)
        p.bcv[s][cut] = If(confirm, frozenset({p.id}), p.bcv[s][cut])
        broadcast(Confirm(s, m.v, cut), when=confirm, include_self=False)
        if z.fast:
            p.spec.byz_send_commit(p, s, m.v, cut, And(before.card() < z.fast_quorum, after.card() >= z.fast_quorum))

    def byz_confirm_vote(p: Any, src: int, m: Any) -> None:
        z = sizes(p)
        if z.leader(m.s, m.v) != p.id:
            require(False)
        s, cut = m.s, m.cut
        require(p.bpv[s][cut].card() >= z.quorum)  # it sent that Confirm
        before = p.bcv[s][cut]
        after = before.add(src)
        p.bcv[s][cut] = after
        p.spec.byz_send_commit(p, s, m.v, cut, And(before.card() < z.quorum, after.card() >= z.quorum))

    def byz_send_commit(p: Any, s: int, v: int, cut: Any, when: Any) -> None:
        """It holds a CommitQC for (s, v, cut): it sends the Commit (once per cut)."""
        go = And(when, Not(p.bcommit[s].contains(cut)))
        p.bcommit[s] = add_if(p.bcommit[s], cut, go)
        p.committed[s] = If(And(go, p.committed[s].is_none()), some(Ref(v, cut), p.committed[s]), p.committed[s])
        broadcast(Commit(s, v, cut), when=go, include_self=False)

    # -- what honest replicas send it --------------------------------------------------------------
    def byz_prepare(p: Any, src: int, m: Any) -> None:
        if src != sizes(p).leader(m.s, m.v):
            require(False)
        send(src, PrepareVote(m.s, m.v, m.cut))

    def byz_confirm(p: Any, src: int, m: Any) -> None:
        if src != sizes(p).leader(m.s, m.v):
            require(False)
        p.bqc[m.s] = p.bqc[m.s].add(Ref(m.v, m.cut))  # the Confirm carries the PrepareQC
        send(src, ConfirmVote(m.s, m.v, m.cut))

    def byz_commit(p: Any, src: int, m: Any) -> None:
        c = p.committed[m.s]
        p.committed[m.s] = If(c.is_none(), some(Ref(m.v, m.cut), c), c)  # a CommitQC: the ticket of slot s+k

    def byz_timeout(p: Any, src: int, m: Any) -> None:
        """An honest Timeout: it holds it (for a TC of its own) and the QC it reports."""
        z = sizes(p)
        if m.v >= z.views:
            require(False)
        s, v = m.s, m.v
        p.timeouts_from[s][v] = p.timeouts_from[s][v].add(src)
        if z.leader(s, v + 1) == p.id:
            p.tprop[s][src] = m.prop
            p.tqc[s][src] = m.qc
        if m.qc is not None:
            p.bqc[s] = p.bqc[s].add(m.qc)

    def byz_car(p: Any, src: int, m: Any) -> None:
        """A car from its author: it votes for it (designated or not, once per height or not) and holds it."""
        lay = layout(p)
        if not lay.valid(m.lane, m.tip) or src != m.lane:
            require(False)
        ref = CarRef(m.lane, m.tip)
        p.voted_cars = p.voted_cars.add(ref)
        p.held = p.held.add(ref)
        send(m.lane, CarVote(m.lane, m.tip))

    # -- its Timeouts ------------------------------------------------------------------------------
    def byz_send_timeout(p: Any, s: int, v: int, report: tuple | None) -> None:
        """A Timeout of (s, v): reporting nothing to the replicas other than the next leader, or
        reporting (Prepare, QC) to the next leader; once each."""
        z = sizes(p)
        nxt = z.leader(s, v + 1)
        target = 0 if report is None else 1
        if target == 1 and nxt == p.id:
            require(False)  # it is the next leader itself
        require(Not(p.bsent[s][v].contains(target)))
        p.bsent[s][v] = p.bsent[s][v].add(target)
        if report is None:
            for r in range(z.n):
                if r not in (p.id, nxt):
                    send(r, Timeout(s, v, None, None))
            return
        prop, qc = report
        if qc is not None:
            require(p.bqc[s].contains(qc))
        send(nxt, Timeout(s, v, prop, qc))


def _opt(x: Any) -> Any:
    """A Ref value or None as an Option(Ref) term."""
    return _none_ref() if x is None else lift(x, OptRef.dom())
