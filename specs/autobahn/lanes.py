"""Autobahn's data dissemination layer: lanes of cars, car votes, proofs of availability, sync.

Each producing replica proposes cars in its own lane, one at a time: car h+1 goes out once car
h has its PoA (the artifact's proposer; the PoA of car h rides in car h+1's header). The author
votes for its own car; of the others, the 2f+1 - 1 designated voters (all but the f replicas
that follow the author in ring order, as the artifact's `check_cast_vote` for cars without
consensus messages) vote for a car they receive from its author when

- they have not voted in this lane at this height (once per (author, height)),
- they hold the parent car (FIFO; until then the car waits, as the artifact suspends it),
- the parent is certified (implied: an author sends car h only with the PoA of car h-1),

and receiving the car means holding its payload. `poa` votes make a PoA, which the author
broadcasts; a replica's certified tip of a lane is the highest car it has a PoA for (at equal
heights the first one: the artifact's `current_certified_tips`). A replica missing a car it must
execute asks the others for it (`Fetch`); any holder answers with the car.
"""

from __future__ import annotations

from typing import Any

from ..lang import And, If, Map, Not, Or, Set, require
from ..lang.actors import Local, broadcast, send
from .messages import Branch, Car, CarRef, CarVote, Fetch, Fetched, Height, PoA, Tip, add_if, layout
from .params import Replica, sizes


class Lanes:
    """Local state and handlers of the lane layer (a mixin of the Autobahn spec)."""

    # as an author: per branch (only a forking Byzantine author uses branch 1)
    own_h = Local(Map(Branch, Height), init=0)  # height of its latest car
    own_poa = Local(Map(Branch, Height), init=0)  # height of its latest certified car
    own_votes = Local(Map(Branch, Set(Replica)))  # votes for its latest car
    # as a replica
    held = Local(Set(CarRef))  # cars (header and payload) it stores
    last_voted = Local(Map(Replica, Height), init=0)  # highest height it voted for, per lane
    voted_cars = Local(Set(CarRef))  # every car vote it signed (the record of its signatures)
    certified = Local(Map(Replica, Tip), init=0)  # certified tip of each lane it knows
    fetching = Local(Set(CarRef))  # cars it has asked the others for

    # -- authoring ---------------------------------------------------------------------------
    @staticmethod
    def designated(author: int, voter: int, n: int, f: int) -> bool:
        """Whether `voter` is one of the 2f+1 replicas that vote for `author`'s cars."""
        return voter == author or (voter - author) % n > f

    def make_car(p: Any, branch: int, height: int, when: Any = True) -> None:
        """Propose car `height` on `branch` of p's own lane: hold it, vote for it, send it."""
        lay, z = layout(p), sizes(p)
        tip = lay.tip_of(p.id, height, branch)
        ref = CarRef(p.id, tip)
        p.own_h[branch] = If(when, height, p.own_h[branch])
        p.own_votes[branch] = If(when, frozenset({p.id}), p.own_votes[branch])
        p.held = add_if(p.held, ref, when)
        p.voted_cars = add_if(p.voted_cars, ref, when)
        p.last_voted[p.id] = If(when, height, p.last_voted[p.id])
        broadcast(Car(p.id, tip), when=when, include_self=False)
        if z.poa <= 1:  # its own vote is a PoA already
            p.spec.form_poa(p, branch, height, when)

    def form_poa(p: Any, branch: int, height: int, when: Any) -> None:
        """p's car `height` on `branch` has its PoA: certify it, broadcast the PoA, go on."""
        lay, z = layout(p), sizes(p)
        tip = lay.tip_of(p.id, height, branch)
        p.own_poa[branch] = If(when, height, p.own_poa[branch])
        cur = p.certified[p.id]
        p.certified[p.id] = If(And(when, lay.newer(p.id, tip, cur)), tip, cur)
        broadcast(PoA(p.id, tip, p.own_votes[branch]), when=when, include_self=False)
        if height < z.cars:
            p.spec.make_car(p, branch, height + 1, when)

    def start_lane(p: Any) -> None:
        """At start, a producing replica proposes its first car."""
        if p.id in layout(p).producing:
            p.spec.make_car(p, 0, 1)

    # -- handlers ----------------------------------------------------------------------------
    def on_car(p: Any, src: int, m: Any) -> None:
        lay, z = layout(p), sizes(p)
        if not lay.valid(m.lane, m.tip) or src != m.lane or src == p.id:
            require(False)  # cars come from their author (a fetched car is a `Fetched`)
        parent = lay.parent(m.lane, m.tip)
        if parent:
            require(p.held.contains(CarRef(m.lane, parent)))  # FIFO: wait for the parent
        h = lay.height(m.lane, m.tip)
        vote = And(Lanes.designated(m.lane, p.id, z.n, z.f), p.last_voted[m.lane] < h)
        p.spec.vote_car(p, m.lane, m.tip, vote)
        p.held = p.held.add(CarRef(m.lane, m.tip))
        p.spec.try_execute(p)

    def vote_car(p: Any, lane: int, tip: int, when: Any) -> None:
        h = layout(p).height(lane, tip)
        p.last_voted[lane] = If(when, h, p.last_voted[lane])
        p.voted_cars = add_if(p.voted_cars, CarRef(lane, tip), when)
        send(lane, CarVote(lane, tip), when=when)

    def on_car_vote(p: Any, src: int, m: Any) -> None:
        lay, z = layout(p), sizes(p)
        if m.lane != p.id or not lay.valid(m.lane, m.tip) or src == p.id:
            require(False)  # votes go to the author; its own vote is counted locally
        b, h = lay.branch(m.lane, m.tip), lay.height(m.lane, m.tip)
        counting = And(p.own_h[b] == h, p.own_poa[b] < h)
        votes = p.own_votes[b].add(src)
        p.own_votes[b] = If(counting, votes, p.own_votes[b])
        p.spec.form_poa(p, b, h, And(counting, votes.card() >= z.poa))

    def on_poa(p: Any, src: int, m: Any) -> None:
        lay, z = layout(p), sizes(p)
        if src != m.lane or not lay.valid(m.lane, m.tip) or len(m.signers) < z.poa:
            require(False)  # only the author sends its PoAs; a short one is never accepted
        cur = p.certified[m.lane]
        p.certified[m.lane] = If(lay.newer(m.lane, m.tip, cur), m.tip, cur)

    def on_fetch(p: Any, src: int, m: Any) -> None:
        if not layout(p).valid(m.lane, m.tip):
            require(False)
        send(src, Fetched(m.lane, m.tip), when=p.held.contains(CarRef(m.lane, m.tip)))

    def on_fetched(p: Any, src: int, m: Any) -> None:
        if not layout(p).valid(m.lane, m.tip):
            require(False)
        p.held = p.held.add(CarRef(m.lane, m.tip))
        p.spec.try_execute(p)

    def fetch_missing(p: Any, cut: int, when: Any = True) -> None:
        """Ask the others for every car of a committed cut that p does not hold."""
        lay = layout(p)
        if not sizes(p).fetch:
            return
        for lane, tip in lay.cars_of(cut):
            ref = CarRef(lane, tip)
            done = lay.height(lane, tip) <= lay.height(lane, p.exec_tip[lane])
            ask = And(when, Not(p.held.contains(ref)), Not(p.fetching.contains(ref)), Not(done))
            p.fetching = add_if(p.fetching, ref, ask)  # once per car
            broadcast(Fetch(lane, tip), when=ask, include_self=False)

    def holds_needed(p: Any, cut: int) -> Any:
        """Whether p holds every car that executing `cut` after its executed tips needs."""
        lay = layout(p)
        need = []
        for lane, tip in lay.cars_of(cut):
            done = lay.height(lane, tip) <= lay.height(lane, p.exec_tip[lane])
            need.append(Or(done, p.held.contains(CarRef(lane, tip))))
        return And(*need)

