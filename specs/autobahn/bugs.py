"""Seeded bugs of Autobahn, each a change of one quorum parameter, each caught with a counterexample.

- `AutobahnWeakFastPath`: the fast path commits with 2f+1 Prepare votes instead of n. With a
  Byzantine voter that hides its vote in its Timeout, a TC of 2f+1 Timeouts holds only f reports of
  the committed Prepare, fewer than the f+1 the override needs, so the next view's leader proposes
  another cut: `locked_after_commit`, then `agreement`, fail.
- `AutobahnNoOverride`: the TC rule ignores the f+1 Prepare override and takes only the highest QC.
  A fast commit leaves no QC behind (n Prepare votes, no Confirm), so after a view change the new
  leader is free to propose another cut, with every replica honest.
- `AutobahnWeakPoA`: a PoA has f votes instead of f+1. A Byzantine author's own vote certifies its
  car, which no honest replica need hold; a leader proposes it and the cut commits:
  `committed_cars_available` fails (and the PoA is not one by the paper's threshold).
"""

from ..lang import Param
from .byzantine import AutobahnByzantineLane, AutobahnByzantineVoter
from .spec import Autobahn


class AutobahnWeakFastPath(AutobahnByzantineVoter):
    """Seeded bug: a fast commit needs 2f+1 (= 3) Prepare votes instead of n (a Byzantine voter hides its vote)."""

    fast_quorum = Param("fast_quorum", default=3, lo=0, doc="Prepare votes for a fast commit; the paper: n")


class AutobahnNoOverride(Autobahn):
    """Seeded bug: the TC rule ignores the f+1 Prepare override (all replicas honest)."""

    override = Param("override", default=0, lo=0, hi=1,
                     doc="the TC rule lets a Prepare reported by f+1 Timeouts override the highest QC")


class AutobahnWeakPoA(AutobahnByzantineLane):
    """Seeded bug: a PoA needs f (= 1) votes instead of f+1 (a Byzantine lane certifies its own car)."""

    poa_quorum = Param("poa_quorum", default=1, lo=0, doc="votes in a PoA; the paper: f+1")
