"""The Autobahn actor spec: both layers composed, the handlers' dispatch, and the properties.

See the package docstring (`lockstep.specs.autobahn`) for the paper, the model and every
deviation from it.
"""

from __future__ import annotations

from typing import Any

from ..lang import And, Count, Exists, ForAll, Implies, Not, Or, eventually, invariant, require, temporal
from ..lang.actors import ActorSpec, on_message, on_start, on_timeout
from .consensus import Consensus, Timer
from .lanes import Lanes
from .local import At
from .messages import CarRef, Choice, Message, layout
from .params import (
    CARS,
    COVERAGE,
    DOUBLE_VOTE,
    FAST,
    FAST_QUORUM,
    FETCH,
    GST,
    LANES,
    OFFSET,
    OVERRIDE,
    POA_QUORUM,
    PROPOSALS,
    QUORUM,
    SLOTS,
    TC_QUORUM,
    VIEWS,
    VOTE_AFTER_TIMEOUT,
    F,
    K,
    Replica,
    sizes,
)
from .synchrony import PartialSynchrony

CONSENSUS = {"Prepare": "on_prepare", "PrepareVote": "on_prepare_vote", "Confirm": "on_confirm",
             "ConfirmVote": "on_confirm_vote", "Commit": "on_commit"}
LANE = {"Car": "on_car", "CarVote": "on_car_vote", "PoA": "on_poa", "Fetch": "on_fetch", "Fetched": "on_fetched"}


class Autobahn(Lanes, Consensus, ActorSpec):
    """Autobahn BFT (SOSP 2024): lanes of cars with PoAs, consensus on cuts with a fast path, n = 3f+1."""

    Process = Replica
    Message = Message
    Timer = Timer
    timeouts = {**{f"slot{s}": 400 for s in range(1, 7)}, **{f"fast{s}": 30 for s in range(1, 7)},
                **{f"lead{s}": 1 for s in range(1, 7)}}

    f, slots, views, lanes, cars, k, proposals = F, SLOTS, VIEWS, LANES, CARS, K, PROPOSALS
    fast, coverage, poa_quorum, quorum, fast_quorum, override = FAST, COVERAGE, POA_QUORUM, QUORUM, FAST_QUORUM, OVERRIDE
    offset, vote_after_timeout, fetch = OFFSET, VOTE_AFTER_TIMEOUT, FETCH
    tc_quorum, double_vote, gst = TC_QUORUM, DOUBLE_VOTE, GST
    _program_builder = PartialSynchrony  # the `gst` step and timely timers after it (`synchrony.py`)

    # -- handlers ------------------------------------------------------------------------------
    @on_start
    def start(p):
        p.spec.start_lane(p)
        p.spec.start_timers(p)
        p.spec.start_leading(p)

    @on_message
    def receive(p, src, m):
        p.spec.handle(p, src, m)

    def handle(p: Any, src: int, m: Any) -> None:
        """Run the handler of message m."""
        tag = m.tag
        if tag in LANE:
            getattr(p.spec, LANE[tag])(p, src, m)
        elif tag == "Timeout":
            p.spec.on_timeout_msg(p, src, m)
        else:
            getattr(p.spec, CONSENSUS[tag])(p, src, m)

    @on_timeout
    def fire(p, timer, c: Choice):
        require(Or(p.spec.on_timer(p, timer, c), c == 0))

    def on_timer(p: Any, timer: str, c: int) -> Any:
        z = sizes(p)
        kind, s = timer[:4], int(timer[4:])
        if s > z.slots or (kind == "fast" and not z.fast) or (kind == "slot" and z.views == 1):
            require(False)  # never started
        if kind == "lead":
            return p.spec.on_lead_timer(p, s, c)
        if kind == "fast":
            p.spec.on_fast_timer(p, s)
        else:
            p.spec.on_slot_timer(p, s)
        return False

    # every message between honest replicas is eventually delivered and every armed timer of an honest
    # replica eventually fires (a Byzantine replica's steps and messages are never fair: `synchrony.py`)
    fairness = {"deliver": "weak", "timeout": "weak"}

    @staticmethod
    def crashable(values: dict[str, int]) -> tuple[int, ...]:
        """The replicas a crash (`--param crashes=1`) may stop: the leaders of view 1 (a faulty leader the
        view change must get past)."""
        n, offset = 3 * values["f"] + 1, values["offset"]
        return tuple(sorted({(s + offset + 1) % n for s in range(1, values["slots"] + 1)}))

    # -- liveness ------------------------------------------------------------------------------
    @temporal
    def every_slot_commits(s):
        """Every correct replica (neither Byzantine nor crashed) eventually commits every slot. Claimed with
        `gst=1` (timers timely after GST, which comes before the last view change) when the last view's
        leader is correct, and with views=1 (no timer: the whole run is after GST)."""
        z = sizes(s)
        crashes = object.__getattribute__(s, "_binding").values.get("crashes", 0)
        return eventually(ForAll(s.honest, range(1, z.slots + 1), lambda a, t: Or(
            s.crashed.contains(a) if crashes else False, s.committed[a][t].is_some())))

    # -- safety --------------------------------------------------------------------------------
    @invariant
    def agreement(s):
        """At most one cut is committed per slot (by honest replicas)."""
        z = sizes(s)
        return ForAll(s.honest, s.honest, range(1, z.slots + 1), lambda a, b, t: Implies(
            And(s.committed[a][t].is_some(), s.committed[b][t].is_some()),
            s.committed[a][t].get().cut == s.committed[b][t].get().cut))

    @invariant
    def locked_after_commit(s):
        """Once a cut is committed at (t, v), every TC an honest leader holds for a later view has it
        as its winning proposal, and honest replicas propose and vote for no other cut in slot t at a
        later view: the lemma behind agreement across view changes (it fails as soon as a TC loses a
        committed cut, before a second commit)."""
        z = sizes(s)
        views = range(1, z.views + 1)

        def later(a: int, t: int, v: int, b: int, w: int) -> Any:
            c = s.committed[a][t]
            done = And(c.is_some(), c.get().view == v)
            vote = s.pvote[b][t][w]
            votes_other = And(vote.is_some(), vote.get() != c.get().cut)
            leads = z.leader(t, w) == b
            proposes_other = And(s.phase[b][t] != "idle", s.proposal[b][t] != c.get().cut) if leads else False
            tc_loses = False
            if leads:  # b holds a TC of view w-1 whose winning proposal is not the committed cut
                has, cut = s.spec.winner(At(s, b), t, w - 1)
                tc_loses = And(s.timeouts_from[b][t][w - 1].card() >= z.tc_quorum, Not(And(has, cut == c.get().cut)))
            return Implies(done, Not(Or(votes_other, proposes_other, tc_loses)))

        return ForAll(s.honest, range(1, z.slots + 1), views, s.honest, views,
                      lambda a, t, v, b, w: later(a, t, v, b, w) if w > v else True)

    @invariant
    def logs_prefix_consistent(s):
        """Honest execution logs are prefixes of one another: the same cut at every executed slot,
        each executed slot committed (so execution is in slot order)."""
        z = sizes(s)
        slots = range(1, z.slots + 1)
        ordered = ForAll(s.honest, slots, lambda a, t: Implies(s.exec_upto[a] >= t, s.committed[a][t].is_some()))
        same = ForAll(s.honest, s.honest, slots, lambda a, b, t: Implies(
            And(s.exec_upto[a] >= t, s.exec_upto[b] >= t),
            s.committed[a][t].get().cut == s.committed[b][t].get().cut))
        return And(ordered, same)

    @invariant
    def committed_cars_available(s):
        """Every car a committed cut reaches is held by an honest replica (what a PoA guarantees)."""
        lay, z = layout(s), sizes(s)
        if lay.abstract:
            return True

        def held(lane: int, tip: int) -> Any:
            return Exists(s.honest, lambda q: s.held[q].contains(CarRef(lane, tip)))

        return ForAll(s.honest, range(1, z.slots + 1), range(lay.ncuts), lambda a, t, c: Implies(
            And(s.committed[a][t].is_some(), s.committed[a][t].get().cut == c),
            And(*(held(lane, tip) for lane, tip in lay.cars_of(c)))))

    @invariant
    def committed_cars_certified(s):
        """Every car a committed cut reaches has a PoA: f+1 replicas really signed votes for it."""
        lay, z = layout(s), sizes(s)
        if lay.abstract:
            return True

        def signed(lane: int, tip: int) -> Any:
            return Count(Replica, lambda q: s.voted_cars[q].contains(CarRef(lane, tip))) >= z.f + 1

        return ForAll(s.honest, range(1, z.slots + 1), range(lay.ncuts), lambda a, t, c: Implies(
            And(s.committed[a][t].is_some(), s.committed[a][t].get().cut == c),
            And(*(signed(lane, tip) for lane, tip in lay.cars_of(c)))))

    @invariant
    def vote_once(s):
        """Honest replicas vote at most once per (slot, view), in each phase, and per (author, height)."""
        lay, z = layout(s), sizes(s)
        per_view = ForAll(s.honest, range(1, z.slots + 1), range(1, z.views + 1), lambda a, t, v: And(
            s.pballots[a][t][v] <= 1, s.cballots[a][t][v] <= 1))
        forks = [(lane, h) for lane in lay.producing if lay.forks(lane) for h in range(1, z.cars + 1)]
        per_car = ForAll(s.honest, lambda a: And(*(Not(And(
            s.voted_cars[a].contains(CarRef(lane, lay.tip_of(lane, h, 0))),
            s.voted_cars[a].contains(CarRef(lane, lay.tip_of(lane, h, 1))))) for lane, h in forks)))
        return And(per_view, per_car)

    @invariant
    def open_slots_bounded(s):
        """An honest leader opens slot t (view 1) only once slot t-k is committed: at most k slots
        run above the last committed one."""
        z = sizes(s)
        return ForAll(s.honest, lambda a: And(*(
            Implies(s.phase[a][t] != "idle", s.committed[a][t - z.k].is_some())
            for t in range(z.k + 1, z.slots + 1) if z.leader(t, 1) == a)))

    @invariant
    def certificates_authentic(s):
        """Every QC an honest replica holds has enough signers that really voted: a Confirm it voted
        for has a PrepareQC, a commit it learnt a CommitQC (counting every Byzantine replica as a signer)."""
        z = sizes(s)
        byz = len(s.byzantine)

        def voters(votes: str, t: int, v: int, cut: Any) -> Any:
            return Count(s.honest, lambda q: And(getattr(s, votes)[q][t][v].is_some(),
                                                 getattr(s, votes)[q][t][v].get() == cut))

        def confirm_ok(a: int, t: int, v: int) -> Any:
            c = s.cvote[a][t][v]
            return Implies(c.is_some(), voters("pvote", t, v, c.get()) >= z.quorum - byz)

        def commit_ok(a: int, t: int, v: int) -> Any:
            c = s.committed[a][t]
            return Implies(And(c.is_some(), c.get().view == v), Or(
                voters("cvote", t, v, c.get().cut) >= z.quorum - byz,
                And(z.fast, voters("pvote", t, v, c.get().cut) >= z.fast_quorum - byz)))

        return ForAll(s.honest, range(1, z.slots + 1), range(1, z.views + 1),
                      lambda a, t, v: And(confirm_ok(a, t, v), commit_ok(a, t, v)))
