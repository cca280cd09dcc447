"""Autobahn's parameters: the fault bound, the bounds of a check, and the quorum sizes.

n = 3f+1 replicas. Every quorum is a parameter so that each seeded bug is a parameter change;
0 (the default) means the paper's size: a PoA has f+1 votes, a slow-path quorum (PrepareQC,
ConfirmQC, TC) 2f+1, a fast-path commit n. The bounds (`slots`, `views`, `lanes`, `cars`) make
the state space finite; they are printed with every verdict.
"""

from __future__ import annotations

from typing import Any

from ..lang import Param, Range

F = Param("f", default=1, lo=1, hi=3, doc="Byzantine replicas tolerated (n = 3f+1)")
N = 3 * F + 1
Replica = Range(N)

SLOTS = Param("slots", default=1, lo=1, hi=6, doc="consensus slots (1..slots)")
VIEWS = Param("views", default=2, lo=1, hi=4,
              doc="views per slot (1..views; at most 4 <= n, so a replica leads one view of a slot)")
LANES = Param("lanes", default=2, lo=0, hi=4,
              doc="lanes that produce cars (the last `lanes` replicas); 0: leaders propose abstract cuts")
CARS = Param("cars", default=1, lo=1, hi=3, doc="cars per producing lane")
K = Param("k", default=1, lo=1, hi=6, doc="slots that may run concurrently")
PROPOSALS = Param("proposals", default=2, lo=1, hi=4, doc="abstract cuts a leader may propose when lanes=0")
FAST = Param("fast", default=1, lo=0, hi=1, doc="the fast path (n Prepare votes commit at once)")
COVERAGE = Param("coverage", default=3, lo=0, hi=13,
                 doc="lanes with new tips a view-1 leader waits for (the artifact: 2f+1), at most `lanes`")
POA_QUORUM = Param("poa_quorum", default=0, lo=0, doc="votes in a PoA; 0: f+1 (the paper)")
QUORUM = Param("quorum", default=0, lo=0, doc="votes in a PrepareQC or ConfirmQC; 0: 2f+1 (the paper)")
TC_QUORUM = Param("tc_quorum", default=0, lo=0, doc="Timeouts in a TC; 0: 2f+1 (the paper)")
FAST_QUORUM = Param("fast_quorum", default=0, lo=0, doc="Prepare votes for a fast commit; 0: n (the paper)")
OFFSET = Param("offset", default=0, lo=0, hi=12,
               doc="slot s is the (s + offset)-th of the run: leader(s, v) = (s + offset + v) mod n")
FETCH = Param("fetch", default=1, lo=0, hi=1, doc="replicas fetch the cars of a committed cut they lack (sync)")
VOTE_AFTER_TIMEOUT = Param("vote_after_timeout", default=0, lo=0, hi=1,
                           doc="replicas keep voting in a view they timed out of (the artifact); 0: they stop")
DOUBLE_VOTE = Param("double_vote", default=0, lo=0, hi=1,
                    doc="honest replicas vote for a second proposal of one (slot, view) (a seeded bug); 0: once")
GST = Param("gst", default=0, lo=0, hi=1,
            doc="partial synchrony: a GST step, after which timers are timely (liveness); 0: asynchrony throughout")
EQUIVOCATIONS = Param("equivocations", default=2, lo=1, hi=4,
                      doc="distinct Prepares a Byzantine leader sends per (slot, view)")
OVERRIDE = Param("override", default=1, lo=0, hi=1,
                 doc="the TC rule lets a Prepare reported by f+1 Timeouts override the highest QC")


class Sizes:
    """The parameter values of one instance, as plain ints, with the quorum sizes resolved."""

    def __init__(self, v: dict[str, int]):
        self.f = v["f"]
        self.n = 3 * self.f + 1
        self.slots, self.views, self.lanes, self.cars = v["slots"], v["views"], v["lanes"], v["cars"]
        self.k, self.proposals, self.fast = v["k"], v["proposals"], bool(v["fast"])
        self.override = bool(v["override"])
        self.offset = v["offset"]
        self.vote_after_timeout = bool(v["vote_after_timeout"])
        self.fetch = bool(v["fetch"])
        self.poa = v["poa_quorum"] or self.f + 1
        self.quorum = v["quorum"] or 2 * self.f + 1
        self.tc_quorum = v["tc_quorum"] or 2 * self.f + 1
        self.double_vote = bool(v["double_vote"])
        self.gst = bool(v["gst"])
        self.equivocations = v.get("equivocations", 0)  # a parameter of the Byzantine variants only
        self.fast_quorum = v["fast_quorum"] or self.n
        self.validity = self.f + 1  # Timeouts that must report a Prepare for it to override
        self.coverage = min(v["coverage"], self.lanes)

    def leader(self, s: int, v: int) -> int:
        """leader(s, v) = (s + v) mod n (the artifact's `LeaderElector`), slot s counted from `offset`."""
        return (s + self.offset + v) % self.n

    def led_view(self, p: int, s: int) -> int | None:
        """The view of slot s that replica p leads, if any (views <= n: at most one)."""
        for v in range(1, self.views + 1):
            if self.leader(s, v) == p:
                return v
        return None


def sizes(p: Any) -> Sizes:
    """The `Sizes` of the instance a handler or invariant is being traced for (`p` or `s`)."""
    b = object.__getattribute__(p, "_binding")
    key = tuple(sorted(b.values.items()))
    hit = _CACHE.get(key)
    if hit is None:
        hit = _CACHE[key] = Sizes(b.values)
    return hit


_CACHE: dict[tuple, Sizes] = {}
