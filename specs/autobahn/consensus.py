"""Autobahn's consensus layer: agreement on a cut per slot, in views, with a fast path.

Per slot s and view v (leader(s, v) = (s + v) mod n):

- Prepare. The leader of view 1 proposes the cut of its certified tips once it has seen a
  Prepare of slot s-1 (for s > 1), has committed slot s-k (for s > k; the CommitQC is the
  Prepare's ticket) and, with lanes, once `coverage` lanes have tips newer than in that Prepare.
  The leader of view v > 1 proposes after a TC of view v-1: the TC's winning proposal if it has
  one, else its own cut (the ticket is the TC).
- A replica votes for a Prepare of (s, v) if it is at view <= v (a valid higher-view Prepare moves
  it to v), has not voted in (s, v) and has not committed s.
- 2f+1 Prepare votes form a PrepareQC. With the fast path on, the leader waits (a timer) for n
  votes: n votes commit at once (fast path), else it sends Confirm (slow path).
- A replica votes for a Confirm of (s, v) at view <= v; the Confirm is its high QC.
  2f+1 Confirm votes form the CommitQC, which the leader sends as Commit.
- A replica's slot timer fires while the slot is not committed: it broadcasts Timeout(s, v, its
  highest voted Prepare, its highest QC). 2f+1 Timeouts of (s, v) form a TC: the replica moves to
  view v+1 and restarts its timer; the leader of v+1 proposes. A replica that has committed s
  answers a Timeout of s with its Commit.
- Winning proposal of a TC: the highest-view QC in it, unless f+1 of its Timeouts report a
  Prepare of one cut at higher views than that QC: then that cut (the fast-path rule).
- Committed slots execute in slot order: for each lane, in lane order, the cars from the last
  executed height up to the committed tip, once the replica holds them (it fetches the missing).
"""

from __future__ import annotations

from typing import Any

from ..lang import And, Count, Enum, If, Int, Map, Max, Not, Or, Set, require
from ..lang.actors import Local, broadcast, cancel_timer, send, set_timer
from .messages import (
    Commit,
    Confirm,
    ConfirmVote,
    Cut,
    OptCut,
    OptRef,
    Prepare,
    PrepareVote,
    Ref,
    Slot,
    Timeout,
    Tip,
    View,
    add_if,
    layout,
    some,
)
from .params import SLOTS, Replica, sizes

MAX_SLOTS = 6
Timer = Enum(*(f"{kind}{s}" for kind in ("slot", "fast", "lead") for s in range(1, MAX_SLOTS + 1)))
Phase = Enum("idle", "prepare", "confirm", "done")  # a leader's progress in the view it leads


class Consensus:
    """Local state and handlers of the consensus layer (a mixin of the Autobahn spec)."""

    view = Local(Map(Slot, View), init=1)
    started = Local(Set(Slot))  # slots whose timer has been started
    pvote = Local(Map(Slot, Map(View, OptCut)))  # the Prepare it voted for, per (s, v): its signatures
    cvote = Local(Map(Slot, Map(View, OptCut)))  # the Confirm it voted for (its QCs)
    pballots = Local(Map(Slot, Map(View, Int(0, 2))), init=0)  # Prepare votes it signed, per (s, v)
    cballots = Local(Map(Slot, Map(View, Int(0, 2))), init=0)  # Confirm votes it signed
    ticket = Local(Map(Slot, OptCut))  # the first Prepare of the slot it accepted (the next slot's ticket)
    phase = Local(Map(Slot, Phase), init="idle")  # as the leader of the view of s it leads
    proposal = Local(Map(Slot, Cut), init=0)  # its proposal there
    votes = Local(Map(Slot, Set(Replica)))  # Prepare, then Confirm votes for its proposal
    committed = Local(Map(Slot, OptRef))
    answered = Local(Map(Slot, Set(Replica)))  # replicas whose Timeout it answered with its Commit
    timeouts_from = Local(Map(Slot, Map(View, Set(Replica))))  # senders of Timeouts of (s, v)
    tprop = Local(Map(Slot, Map(Replica, OptRef)))  # as the next leader: their reported Prepares
    tqc = Local(Map(Slot, Map(Replica, OptRef)))  # and QCs
    exec_upto = Local(Int(0, SLOTS), init=0)  # slots executed
    exec_tip = Local(Map(Replica, Tip), init=0)  # executed tip of each lane

    # -- what a replica reports ----------------------------------------------------------------
    def high(p: Any, s: int, votes: Any) -> Any:
        """The highest-view vote of `votes` (p.pvote or p.cvote) in slot s, as an Option(Ref)."""
        out = _none_ref()
        for v in range(1, sizes(p).views + 1):
            mine = votes[s][v]
            out = If(mine.is_some(), some(Ref(v, mine.get()), out), out)
        return out

    # -- leading -----------------------------------------------------------------------------
    def propose(p: Any, s: int, v: int, cut: Any, when: Any, free: Any = True) -> None:
        """p, the leader of (s, v), sends Prepare(s, v, cut) and votes for it itself (`free`: any
        cut would be a valid proposal here, as in view 1 or after a TC without a winner)."""
        if when is False:
            return
        p.phase[s] = If(when, "prepare", p.phase[s])
        p.proposal[s] = If(when, cut, p.proposal[s])
        p.votes[s] = If(when, frozenset({p.id}), p.votes[s])
        p.spec.sign_prepare(p, s, v, cut, when)
        broadcast(Prepare(s, v, cut), when=when, include_self=False)

    def sign_prepare(p: Any, s: int, v: int, cut: Any, when: Any) -> None:
        """Record p's Prepare vote for (s, v, cut): its view moves to v, the slot's ticket is set."""
        grows = And(when, p.view[s] < v)
        p.view[s] = If(when, Max(p.view[s], v), p.view[s])
        set_timer(f"slot{s}", when=And(grows, p.started.contains(s)))
        p.pvote[s][v] = If(when, some(cut, p.pvote[s][v]), p.pvote[s][v])
        p.pballots[s][v] = If(when, p.pballots[s][v] + 1, p.pballots[s][v])
        p.ticket[s] = If(And(when, p.ticket[s].is_none()), some(cut, p.ticket[s]), p.ticket[s])

    def covered(p: Any, s: int) -> Any:
        """Whether enough lanes have certified tips newer than in the ticket of slot s-1."""
        lay, z = layout(p), sizes(p)
        if lay.abstract or z.coverage == 0:
            return True
        prev = p.ticket[s - 1].get() if s > 1 else 0
        newer = [lay.newer(lane, p.certified[lane], lay.tip_term(prev, lane)) for lane in lay.producing]
        return Count(range(len(newer)), lambda i: newer[i]) >= z.coverage

    def own_cut(p: Any, c: int) -> Any:
        """The cut p proposes of its own: its certified tips (with lanes) or the choice c."""
        lay = layout(p)
        return c if lay.abstract else lay.encode([p.certified[lane] for lane in range(lay.n)])

    def ready_view1(p: Any, s: int) -> Any:
        """Whether p, the view-1 leader of slot s, may propose: its ticket and coverage are there."""
        z = sizes(p)
        return And(p.view[s] == 1, p.committed[s].is_none(), p.pvote[s][1].is_none(),
                   True if s == 1 else p.ticket[s - 1].is_some(),
                   True if s <= z.k else p.committed[s - z.k].is_some(),
                   p.spec.covered(p, s))

    def lead_ready(p: Any, s: int) -> Any:
        """Whether p may propose in the view of slot s it leads (False if it leads none): it is idle
        there and in that view, and holds its ticket (view 1) or a TC of the view before."""
        z = sizes(p)
        v = z.led_view(p.id, s)
        if v is None:
            return False
        ticket = p.spec.ready_view1(p, s) if v == 1 else p.timeouts_from[s][v - 1].card() >= z.tc_quorum
        return And(p.phase[s] == "idle", p.view[s] == v, p.spec.in_view(p, s, v), ticket)

    def on_lead_timer(p: Any, s: int, c: int) -> Any:
        """p leads the view v of slot s it leads, once ready (the timer stays armed until then):
        in view 1 with its own cut, in a later view with the winner of its TC of view v-1, or its
        own cut if that TC has none. Returns the condition under which the choice c was used."""
        v = sizes(p).led_view(p.id, s)
        if v is None:
            require(False)
        require(p.spec.lead_ready(p, s))
        if v == 1:
            p.spec.propose(p, s, 1, p.spec.own_cut(p, c), True)
            return True
        has, cut = p.spec.winner(p, s, v - 1)
        p.spec.propose(p, s, v, If(has, cut, p.spec.own_cut(p, c)), True, Not(has))
        return Not(has)

    def start_leading(p: Any) -> None:
        """At start, the view-1 leader of each slot waits to propose there."""
        z = sizes(p)
        for s in range(1, z.slots + 1):
            if z.leader(s, 1) == p.id:
                set_timer(f"lead{s}")

    def winner(p: Any, s: int, v: int) -> tuple[Any, Any]:
        """(has a winner, its cut) of the TC of (s, v) p holds: the Timeouts of `p.timeouts_from[s][v]`."""
        members = p.timeouts_from[s][v]
        return p.spec.tc_winner(p, [(members.contains(r), p.tprop[s][r], p.tqc[s][r]) for r in range(sizes(p).n)])

    def tc_winner(p: Any, reports: list[tuple[Any, Any, Any]]) -> tuple[Any, Any]:
        """(has a winner, its cut) of a TC whose Timeouts are `reports`: (in the TC, reported Prepare,
        reported QC), each an Option(Ref) term or value. The highest-view QC wins, unless f+1 Timeouts
        report a Prepare of one cut at higher views (the override); the same rule for every replica
        that builds a TC and every replica that checks one."""
        lay, z = layout(p), sizes(p)
        qcs = [And(there, qc.is_some()) for there, _, qc in reports]
        qc_view: Any = 0
        for i, (_, _, qc) in enumerate(reports):
            qc_view = Max(qc_view, If(qcs[i], qc.get().view, 0))
        qc_cut: Any = 0
        for i in reversed(range(len(reports))):
            qc = reports[i][2]
            qc_cut = If(And(qcs[i], qc.get().view == qc_view), qc.get().cut, qc_cut)
        has, cut = qc_view > 0, qc_cut
        if z.override:
            for c in reversed(range(lay.ncuts)):
                count = Count(range(len(reports)), lambda i: And(reports[i][0], reports[i][1].is_some(),
                                                                 reports[i][1].get().view > qc_view,
                                                                 reports[i][1].get().cut == c))
                wins = count >= z.validity
                has, cut = Or(wins, has), If(wins, c, cut)
        return has, cut

    # -- replica handlers --------------------------------------------------------------------
    def on_prepare(p: Any, src: int, m: Any) -> None:
        z = sizes(p)
        if src != z.leader(m.s, m.v) or src == p.id:
            require(False)
        accept = And(p.spec.in_view(p, m.s, m.v), p.spec.unvoted(p, p.pvote, p.pballots, m.s, m.v, m.cut))
        p.spec.sign_prepare(p, m.s, m.v, m.cut, accept)
        send(src, PrepareVote(m.s, m.v, m.cut), when=accept)
        p.spec.start_timers(p)

    def on_confirm(p: Any, src: int, m: Any) -> None:
        z = sizes(p)
        if src != z.leader(m.s, m.v) or src == p.id:
            require(False)
        accept = And(p.spec.in_view(p, m.s, m.v), p.spec.unvoted(p, p.cvote, p.cballots, m.s, m.v, m.cut))
        p.spec.sign_confirm(p, m.s, m.v, m.cut, accept)
        send(src, ConfirmVote(m.s, m.v, m.cut), when=accept)

    def unvoted(p: Any, votes: Any, ballots: Any, s: int, v: int, cut: Any) -> Any:
        """Whether p may vote for `cut` in (s, v): it has not voted there (with `double_vote=1`, the seeded
        bug: not for this cut, and at most twice)."""
        if not sizes(p).double_vote:
            return votes[s][v].is_none()
        return Or(votes[s][v].is_none(), And(ballots[s][v] < 2, votes[s][v].get() != cut))

    def in_view(p: Any, s: int, v: int) -> Any:
        """Whether p still takes part in view v of slot s: it has not moved past v, has not timed out
        of v and has not committed s."""
        timed_out = False if sizes(p).vote_after_timeout else p.timeouts_from[s][v].contains(p.id)
        return And(p.view[s] <= v, Not(timed_out), p.committed[s].is_none())

    def sign_confirm(p: Any, s: int, v: int, cut: Any, when: Any) -> None:
        grows = And(when, p.view[s] < v)
        p.view[s] = If(when, Max(p.view[s], v), p.view[s])
        set_timer(f"slot{s}", when=And(grows, p.started.contains(s)))
        p.cvote[s][v] = If(when, some(cut, p.cvote[s][v]), p.cvote[s][v])
        p.cballots[s][v] = If(when, p.cballots[s][v] + 1, p.cballots[s][v])

    def on_commit(p: Any, src: int, m: Any) -> None:
        if src == p.id:
            require(False)
        p.spec.commit(p, m.s, m.v, m.cut, p.committed[m.s].is_none())

    def commit(p: Any, s: int, v: Any, cut: Any, when: Any) -> None:
        """p learns that (s, v, cut) committed: record it, stop the slot's timer, execute."""
        p.committed[s] = If(when, some(Ref(v, cut), p.committed[s]), p.committed[s])
        cancel_timer(f"slot{s}", when=when)
        p.spec.fetch_missing(p, cut, when)
        p.spec.start_timers(p)
        p.spec.try_execute(p)

    # -- leader handlers -----------------------------------------------------------------------
    def on_prepare_vote(p: Any, src: int, m: Any) -> None:
        z = sizes(p)
        if p.id != z.leader(m.s, m.v) or src == p.id:
            require(False)
        counting = And(p.phase[m.s] == "prepare", p.proposal[m.s] == m.cut)
        votes = p.votes[m.s].add(src)
        p.votes[m.s] = If(counting, votes, p.votes[m.s])
        fast = And(counting, z.fast, votes.card() >= z.fast_quorum)
        slow = And(counting, Not(fast), votes.card() >= z.quorum)
        p.spec.lead_commit(p, m.s, m.v, m.cut, fast)
        if z.fast:
            set_timer(f"fast{m.s}", when=And(slow, votes.card() == z.quorum))  # wait for n votes
        else:
            p.spec.send_confirm(p, m.s, m.v, m.cut, slow)

    def send_confirm(p: Any, s: int, v: int, cut: Any, when: Any) -> None:
        when = And(when, p.spec.in_view(p, s, v))  # it signs a Confirm vote of its own
        p.phase[s] = If(when, "confirm", p.phase[s])
        p.votes[s] = If(when, frozenset({p.id}), p.votes[s])
        p.spec.sign_confirm(p, s, v, cut, when)
        broadcast(Confirm(s, v, cut), when=when, include_self=False)

    def on_fast_timer(p: Any, s: int) -> None:
        """The fast path's wait is over: take the slow path with the PrepareQC in hand."""
        v = sizes(p).led_view(p.id, s)
        if v is None:
            require(False)
        ready = And(p.phase[s] == "prepare", p.votes[s].card() >= sizes(p).quorum)
        p.spec.send_confirm(p, s, v, p.proposal[s], ready)

    def on_confirm_vote(p: Any, src: int, m: Any) -> None:
        z = sizes(p)
        if p.id != z.leader(m.s, m.v) or src == p.id:
            require(False)
        counting = And(p.phase[m.s] == "confirm", p.proposal[m.s] == m.cut)
        votes = p.votes[m.s].add(src)
        p.votes[m.s] = If(counting, votes, p.votes[m.s])
        p.spec.lead_commit(p, m.s, m.v, m.cut, And(counting, votes.card() >= z.quorum))

    def lead_commit(p: Any, s: int, v: int, cut: int, when: Any) -> None:
        """The leader holds a CommitQC: send Commit to everyone and commit."""
        p.phase[s] = If(when, "done", p.phase[s])
        cancel_timer(f"fast{s}", when=when)
        broadcast(Commit(s, v, cut), when=when, include_self=False)
        p.spec.commit(p, s, v, cut, And(when, p.committed[s].is_none()))

    # -- view change ---------------------------------------------------------------------------
    def on_slot_timer(p: Any, s: int) -> None:
        """The slot's timer fired: time out of the current view (once per view). The view is the one p is in when
        the timer fires: a TC its own Timeout completes moves it to the next view, which it does not time out of
        in the same step."""
        z = sizes(p)
        current = p.view[s]
        for v in range(1, z.views):
            go = And(current == v, p.committed[s].is_none(), Not(p.timeouts_from[s][v].contains(p.id)))
            prop, qc = p.spec.report(p, s)
            broadcast(Timeout(s, v, prop, qc), when=go, include_self=False)
            p.spec.add_timeout(p, p.id, s, v, prop, qc, go)

    def report(p: Any, s: int) -> tuple[Any, Any]:
        """What p's Timeout of slot s reports: its highest voted Prepare and its highest QC."""
        return p.spec.high(p, s, p.pvote), p.spec.high(p, s, p.cvote)

    def on_timeout_msg(p: Any, src: int, m: Any) -> None:
        z = sizes(p)
        if src == p.id or m.v >= z.views or any(r is not None and r.view > m.v for r in (m.prop, m.qc)):
            require(False)  # never sent: no Timeout at the last view, none reports a later view
        done = p.committed[m.s]
        answer = And(done.is_some(), Not(p.answered[m.s].contains(src)), p.phase[m.s] != "done")
        p.answered[m.s] = add_if(p.answered[m.s], src, answer)  # (as the leader, it sent the Commit already)
        send(src, Commit(m.s, done.get().view, done.get().cut), when=answer)
        p.spec.add_timeout(p, src, m.s, m.v, m.prop, m.qc, done.is_none())

    def add_timeout(p: Any, src: int, s: int, v: int, prop: Any, qc: Any, when: Any) -> None:
        """Count src's Timeout of (s, v); with a TC, move to view v+1 (and propose, if p leads it)."""
        z = sizes(p)
        fresh = And(when, p.view[s] <= v, Not(p.timeouts_from[s][v].contains(src)))  # a sender's first Timeout counts
        p.timeouts_from[s][v] = add_if(p.timeouts_from[s][v], src, fresh)
        nxt = v + 1
        leads = z.leader(s, nxt) == p.id
        if leads:
            p.tprop[s][src] = If(fresh, prop, p.tprop[s][src])
            p.tqc[s][src] = If(fresh, qc, p.tqc[s][src])
        tc = And(fresh, p.timeouts_from[s][v].card() >= z.tc_quorum)
        p.view[s] = If(tc, nxt, p.view[s])
        set_timer(f"slot{s}", when=tc)
        if leads:
            set_timer(f"lead{s}", when=tc)

    def start_timers(p: Any) -> None:
        """Start the timer of every slot p has entered: its predecessor has a Prepare, slot s-k is committed."""
        z = sizes(p)
        for s in range(1, z.slots + 1):
            go = And(Not(p.started.contains(s)), p.committed[s].is_none(),
                     True if s == 1 else p.ticket[s - 1].is_some(),
                     True if s <= z.k else p.committed[s - z.k].is_some())
            p.started = add_if(p.started, s, go)
            set_timer(f"slot{s}", when=go)

    # -- execution -----------------------------------------------------------------------------
    def try_execute(p: Any) -> None:
        """Execute committed slots in order, as far as p holds their cars."""
        lay, z = layout(p), sizes(p)
        for s in range(1, z.slots + 1):
            c = p.committed[s]
            cut = c.get().cut
            held = Or(*(And(cut == k, p.spec.holds_needed(p, k)) for k in range(lay.ncuts)))
            go = And(p.exec_upto == s - 1, c.is_some(), held)
            p.exec_upto = If(go, s, p.exec_upto)
            for lane in lay.producing:
                tip = lay.tip_term(cut, lane)
                p.exec_tip[lane] = If(And(go, lay.newer(lane, tip, p.exec_tip[lane])), tip, p.exec_tip[lane])


def _none_ref() -> Any:
    from ..lang.terms import lift

    return lift(None, OptRef.dom())
