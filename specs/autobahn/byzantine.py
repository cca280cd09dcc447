"""Byzantine replicas of Autobahn: each variant gives one replica a set of Byzantine behaviours.

A Byzantine replica runs its own handlers (`byzantine=True`) and otherwise behaves as an honest
one. Its signatures are its own: it can send any vote, but a certificate only from votes it
holds (see the package docstring), so what it can do is:

- `votes_all`: vote for every Prepare and Confirm it receives (any view, several per (s, v)) and
  for every car it receives from the car's author;
- `timeouts`: "honest", "hide" (its Timeouts report no Prepare and no QC, hiding its votes) or
  "silent" (it never sends a Timeout);
- `forks`: as the author of the last lane, propose two cars at every height (two branches), vote
  for both and certify both;
- `equivocates`: as a leader, send two Prepares in one (s, v): its proposal and another cut
  (the choice `alt`, any cut it could justify: older tips than it knows, or any abstract cut),
  where the proposal is free (view 1, or a TC without a winner); it counts votes for both and
  completes whichever gets a quorum.

Network delay covers withholding: a message it "sends to everyone" may reach some replicas
late or, for safety, never.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from ..lang import And, If, Map, Or, Set, require
from ..lang.actors import Local, broadcast, on_message, on_start, on_timeout, send
from ..lang.params import resolve
from .consensus import _none_ref
from .messages import CarRef, CarVote, Choice, ConfirmVote, Cut, Prepare, PrepareVote, Slot, layout
from .params import N, Replica, sizes
from .spec import Autobahn

_ALT: ContextVar[list | None] = ContextVar("autobahn_alt", default=None)  # [alt choice, conditions it was used]


class ByzantineAutobahn(Autobahn):
    """Autobahn with a Byzantine replica; subclasses pick the replica and its behaviours."""

    byzantine = (N - 1,)
    votes_all = False
    timeout_mode = "honest"
    forks = False
    equivocates = False

    alt = Local(Map(Slot, Cut), init=0)  # an equivocating leader's second proposal
    alt_votes = Local(Map(Slot, Set(Replica)))  # and the votes for it

    # -- handlers ------------------------------------------------------------------------------
    @on_start(byzantine=True)
    def byz_start(p):
        cls = p.spec
        if cls.forks and p.id in layout(p).producing:
            cls.make_car(p, 0, 1)
            cls.make_car(p, 1, 1)
        else:
            cls.start_lane(p)
        cls.start_timers(p)
        cls.start_leading(p)

    @on_message(byzantine=True)
    def byz_receive(p, src, m):
        cls = p.spec
        tag = m.tag
        if cls.votes_all and tag in ("Prepare", "Confirm") and src == sizes(p).leader(m.s, m.v) and src != p.id:
            reply = PrepareVote if tag == "Prepare" else ConfirmVote
            send(src, reply(m.s, m.v, m.cut))  # whatever it voted before
            (cls.on_prepare_quietly if tag == "Prepare" else cls.on_confirm_quietly)(p, src, m)
        elif cls.votes_all and tag == "Car" and src == m.lane and src != p.id and layout(p).valid(m.lane, m.tip):
            p.voted_cars = p.voted_cars.add(CarRef(m.lane, m.tip))
            send(m.lane, CarVote(m.lane, m.tip))  # designated or not, once per height or not
            p.held = p.held.add(CarRef(m.lane, m.tip))
            cls.try_execute(p)
        elif cls.equivocates and tag == "PrepareVote":
            cls.on_prepare_vote_both(p, src, m)
        else:
            cls.handle(p, src, m)

    @on_timeout(byzantine=True)
    def byz_fire(p, timer, c: Choice, alt: Cut):
        cls = p.spec
        if timer.startswith("slot") and cls.timeout_mode == "silent":
            require(c == 0, alt == 0)  # the timer fires and it does nothing
            return
        cls.with_alt(p, alt, lambda: require(Or(cls.on_timer(p, timer, c), c == 0)))

    # -- behaviours ----------------------------------------------------------------------------
    def with_alt(p: Any, alt: int, body: Any) -> None:
        """Run `body` with the choice `alt` available to `propose`; `alt` must be 0 where unused."""
        if not p.spec.equivocates:
            if alt != 0:
                require(False)
            body()
            return
        token = _ALT.set([alt, []])
        try:
            body()
            used = _ALT.get()[1]
        finally:
            _ALT.reset(token)
        require(Or(*used, alt == 0))

    def propose(p: Any, s: int, v: int, cut: Any, when: Any, free: Any = True) -> None:
        Autobahn.propose(p, s, v, cut, when, free)
        pending = _ALT.get()
        if pending is None or p.id not in _byz(p) or when is False:
            return
        alt = pending[0]
        ok = And(when, free, cut != alt, p.spec.justifiable(p, alt))
        p.alt[s] = If(ok, alt, p.alt[s])
        p.alt_votes[s] = If(ok, frozenset({p.id}), p.alt_votes[s])
        broadcast(Prepare(s, v, alt), when=ok, include_self=False)
        pending[1].append(ok)

    def justifiable(p: Any, alt: int) -> Any:
        """Whether p could propose cut `alt`: each tip no newer than the tip it holds a PoA for."""
        lay = layout(p)
        if lay.abstract:
            return True
        tips = lay.tips(alt)
        return And(*(Or(*(p.certified[lane] == t for t in range(lay.counts[lane])
                           if lay.ancestor_or_self(lane, tips[lane], t)))
                     for lane in lay.producing))

    def on_prepare_quietly(p: Any, src: int, m: Any) -> None:
        """The honest bookkeeping of a Prepare (its vote was sent regardless)."""
        accept = And(p.spec.in_view(p, m.s, m.v), p.pvote[m.s][m.v].is_none())
        p.spec.sign_prepare(p, m.s, m.v, m.cut, accept)
        p.spec.start_timers(p)

    def on_confirm_quietly(p: Any, src: int, m: Any) -> None:
        accept = And(p.spec.in_view(p, m.s, m.v), p.cvote[m.s][m.v].is_none())
        p.spec.sign_confirm(p, m.s, m.v, m.cut, accept)

    def on_prepare_vote_both(p: Any, src: int, m: Any) -> None:
        """An equivocating leader counts votes for both its Prepares; the first with a quorum goes on."""
        z = sizes(p)
        if p.id != z.leader(m.s, m.v) or src == p.id:
            require(False)
        s = m.s
        on_alt = And(p.phase[s] == "prepare", p.alt[s] == m.cut, p.proposal[s] != m.cut,
                     p.alt_votes[s].contains(p.id))
        votes = p.alt_votes[s].add(src)
        switch = And(on_alt, votes.card() >= z.quorum)
        p.alt_votes[s] = If(on_alt, votes, p.alt_votes[s])
        # the alternative reached a quorum first: make it the proposal, with its votes
        p.proposal[s] = If(switch, m.cut, p.proposal[s])
        p.votes[s] = If(switch, p.alt_votes[s], p.votes[s])
        p.alt_votes[s] = If(switch, frozenset(), p.alt_votes[s])
        p.spec.on_prepare_vote(p, src, m)

    def report(p: Any, s: int) -> tuple[Any, Any]:
        if p.id in _byz(p) and p.spec.timeout_mode == "hide":
            return _none_ref(), _none_ref()
        return Autobahn.report(p, s)


def _byz(p: Any) -> frozenset[int]:
    """The ids of the Byzantine replicas of the instance `p` belongs to."""
    binding = object.__getattribute__(p, "_binding")
    return frozenset(resolve(x, binding) for x in p.spec.byzantine)


class AutobahnByzantineVoter(ByzantineAutobahn):
    """Autobahn where the last replica votes for everything and hides its votes in its Timeouts."""

    votes_all = True
    timeout_mode = "hide"


class AutobahnSilentTimeouts(ByzantineAutobahn):
    """Autobahn where the last replica never sends a Timeout."""

    timeout_mode = "silent"


class AutobahnByzantineLane(ByzantineAutobahn):
    """Autobahn where the last replica's lane forks: PoAs for two different cars at one height."""

    forks = True


class AutobahnEquivocatingLeader(ByzantineAutobahn):
    """Autobahn where the leader of slot 1, view 1 (replica 2) sends two Prepares in one (s, v)."""

    byzantine = (2,)
    equivocates = True


class AutobahnByzantine(ByzantineAutobahn):
    """Autobahn with every Byzantine behaviour at once in the last replica (for simulation)."""

    votes_all = True
    timeout_mode = "hide"
    forks = True
    equivocates = True
