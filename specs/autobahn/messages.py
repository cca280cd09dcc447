"""Autobahn's messages, tips, cuts and certificates, and how a cut is laid out over the lanes.

Lanes. Replica i's lane holds cars at heights 1..cars; the last `lanes` replicas produce cars,
the others' lanes stay at genesis. A tip is a car of one lane, as an index: 0 is genesis; in an
ordinary lane tip t is the car at height t; the last lane (replica n-1) may fork into two
branches (a Byzantine author can get PoAs for two different cars at one height), so its tip
t >= 1 is the car at height (t+1)//2 on branch (t+1)%2, whose parent is t-2 (genesis for t <= 2).

Cuts. A cut holds one tip per lane; it is encoded as one integer (mixed radix over the lanes,
lane 0 least significant), so a message names a cut with one field. With `lanes = 0` there are
no cars and a cut is one of `proposals` abstract values.

Certificates are statements, not signature lists: a Confirm carries the PrepareQC on its
Prepare, a Commit the CommitQC (n Prepare votes or 2f+1 Confirm votes), a view>1 Prepare the TC
that justifies it; each is valid only if its signers really sent those votes, which the spec
guarantees by construction and checks as an invariant (see the package docstring). A PoA
names its signers.
"""

from __future__ import annotations

from typing import Any

from ..lang import And, If, Int, Option, Record, Set, Union
from ..lang.params import ParamExpr
from .params import CARS, LANES, PROPOSALS, SLOTS, VIEWS, F, Replica, Sizes, sizes


def _ncuts(f: int, lanes: int, cars: int, proposals: int) -> int:
    if lanes == 0:
        return proposals
    n = 3 * f + 1
    out = 1
    for i in range(n):
        out *= Layout.tip_count(n, lanes, cars, i)
    return out


NCUTS = ParamExpr(_ncuts, "cuts", (F, LANES, CARS, PROPOSALS))
TIPS = 2 * CARS  # the largest tip index (the forking lane)

Slot = Int(1, SLOTS)
View = Int(1, VIEWS)
Height = Int(0, CARS)
Tip = Int(0, TIPS)
CarTip = Int(1, TIPS)
Cut = Int(0, NCUTS - 1)
Branch = Int(0, 1)

CarRef = Record("CarRef", lane=Replica, tip=CarTip)
Ref = Record("Ref", view=View, cut=Cut)  # a Prepare or a QC inside a Timeout, or a commit
OptRef = Option(Ref)
OptCut = Option(Cut)
CHOICES = ParamExpr(lambda lanes, proposals: proposals if lanes == 0 else 1, "choices", (LANES, PROPOSALS))
Choice = Int(0, CHOICES - 1)  # the cut an abstract leader proposes (lanes = 0); always 0 with lanes

# Data dissemination (the lanes)
Car = Record("Car", lane=Replica, tip=CarTip)  # the car's header and payload; its parent's PoA is implied
CarVote = Record("CarVote", lane=Replica, tip=CarTip)
PoA = Record("PoA", lane=Replica, tip=CarTip, signers=Set(Replica))
Fetch = Record("Fetch", lane=Replica, tip=CarTip)  # ask for a car one does not hold (sync)
Fetched = Record("Fetched", lane=Replica, tip=CarTip)  # a holder's answer: the car

# Consensus on cuts
Prepare = Record("Prepare", s=Slot, v=View, cut=Cut)  # ticket: CommitQC(s-k) in view 1, a TC in views > 1
PrepareVote = Record("PrepareVote", s=Slot, v=View, cut=Cut)
Confirm = Record("Confirm", s=Slot, v=View, cut=Cut)  # carries the PrepareQC (2f+1 Prepare votes)
ConfirmVote = Record("ConfirmVote", s=Slot, v=View, cut=Cut)
Commit = Record("Commit", s=Slot, v=View, cut=Cut)  # carries the CommitQC
Timeout = Record("Timeout", s=Slot, v=View, prop=OptRef, qc=OptRef)  # high Prepare voted, high QC

Message = Union(Car, CarVote, PoA, Fetch, Fetched, Prepare, PrepareVote, Confirm, ConfirmVote, Commit, Timeout)


class Layout:
    """Tips and cuts of one instance: concrete decoding (of message fields) and symbolic
    encoding (of a replica's certified tips)."""

    def __init__(self, z: Sizes):
        self.z = z
        self.n = z.n
        self.abstract = z.lanes == 0
        self.fork_lane = self.n - 1
        self.counts = [self.tip_count(self.n, z.lanes, z.cars, i) for i in range(self.n)]
        self.producing = [i for i in range(self.n) if self.counts[i] > 1]
        self.strides = []
        stride = 1
        for c in self.counts:
            self.strides.append(stride)
            stride *= c
        self.ncuts = z.proposals if self.abstract else stride

    @staticmethod
    def tip_count(n: int, lanes: int, cars: int, lane: int) -> int:
        """How many tips lane `lane` has (genesis included)."""
        if lane < n - lanes:
            return 1
        return 2 * cars + 1 if lane == n - 1 else cars + 1

    # -- tips (concrete) ---------------------------------------------------------------------
    def valid(self, lane: int, tip: int) -> bool:
        return 0 <= tip < self.counts[lane]

    def forks(self, lane: int) -> bool:
        return lane == self.fork_lane and lane in self.producing

    def height(self, lane: int, tip: Any) -> Any:
        """The height of a tip (concrete or a term)."""
        return (tip + 1) // 2 if self.forks(lane) else tip

    def branch(self, lane: int, tip: int) -> int:
        return (tip + 1) % 2 if self.forks(lane) and tip else 0

    def tip_of(self, lane: int, height: int, branch: int = 0) -> int:
        if height == 0:
            return 0
        return 2 * (height - 1) + 1 + branch if self.forks(lane) else height

    def parent(self, lane: int, tip: int) -> int:
        if self.forks(lane):
            return tip - 2 if tip > 2 else 0
        return tip - 1

    def chain(self, lane: int, tip: int) -> list[int]:
        """The cars from `tip` down to height 1 (tip first)."""
        out = []
        while tip:
            out.append(tip)
            tip = self.parent(lane, tip)
        return out

    def ancestor_or_self(self, lane: int, a: int, b: int) -> bool:
        """Whether tip a is b or one of b's ancestors (genesis is everyone's ancestor)."""
        return a == 0 or a in self.chain(lane, b)

    # -- cuts --------------------------------------------------------------------------------
    def tips(self, cut: int) -> list[int]:
        """The tip of every lane in a (concrete) cut."""
        if self.abstract:
            return [0] * self.n
        return [(cut // s) % c for s, c in zip(self.strides, self.counts)]

    def tip_term(self, cut: Any, lane: int) -> Any:
        """The tip of one lane in a cut given as a term."""
        if self.abstract or self.counts[lane] == 1:
            return 0
        return (cut // self.strides[lane]) % self.counts[lane]

    def encode(self, tips: Any) -> Any:
        """The cut (a term) of one tip per lane (terms or ints, indexed by lane)."""
        total: Any = 0
        for lane in self.producing:
            total = total + tips[lane] * self.strides[lane]
        return total

    def cars_of(self, cut: int) -> list[tuple[int, int]]:
        """(lane, tip) of every car the cut's tips reach, lanes in order, each lane from height 1 up."""
        out = []
        for lane, tip in enumerate(self.tips(cut)):
            out.extend((lane, t) for t in reversed(self.chain(lane, tip)))
        return out

    def newer(self, lane: int, tip: Any, than: Any) -> Any:
        """Whether `tip` is higher than `than` in the same lane (terms or ints)."""
        return self.height(lane, tip) > self.height(lane, than)

    def show_cut(self, cut: int) -> str:
        if self.abstract:
            return f"cut {cut}"
        parts = []
        for lane, tip in enumerate(self.tips(cut)):
            if lane in self.producing:
                h = self.height(lane, tip)
                parts.append(f"{lane}:{h}" + ("ab"[self.branch(lane, tip)] if self.forks(lane) and tip else ""))
        return "{" + ", ".join(parts) + "}"


def layout(p: Any) -> Layout:
    """The layout of the instance `p` (a process view or a global state) belongs to."""
    z = sizes(p)
    hit = _LAYOUTS.get(id(z))
    if hit is None:
        hit = _LAYOUTS[id(z)] = Layout(z)
    return hit


_LAYOUTS: dict[int, Layout] = {}


def higher(a: Any, b: Any) -> Any:
    """Ref a is at a higher view than Ref b (None lowest); terms or values."""
    return If(a.is_none(), False, If(b.is_none(), True, a.get().view > b.get().view))


def same_ref(a: Any, view: int, cut: Any) -> Any:
    """Option(Ref) a is Some(Ref(view, cut))."""
    return And(a.is_some(), a.get().view == view, a.get().cut == cut)


def some(x: Any, like: Any) -> Any:
    """The Option value holding `x`, of the same Option type as the term `like` (for If branches)."""
    from ..lang.terms import Term, as_option, lift

    if isinstance(x, Term):
        return as_option(x, like.dom)
    return lift(x, like.dom)


def add_if(s: Any, x: Any, when: Any) -> Any:
    """The set term `s` with `x` added where `when` holds."""
    if when is False:
        return s
    return s.add(x) if when is True else If(when, s.add(x), s)
