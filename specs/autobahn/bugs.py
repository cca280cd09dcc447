"""Seeded bugs of Autobahn, each a change of one quorum parameter, each caught with a counterexample.

Each variant sets the parameter (and the smallest bounds that show the bug) as its defaults, so

    lockstep check autobahn_weak_fast_path --no-deadlock --engine explicit

finds it (exit 1, the invariant named); `--param fast_quorum=3` on `autobahn_byzantine_voter` is the
same check. `--no-deadlock`: the bounds on slots and views end every behaviour in a state with no
successor (the last view has timed out, or the last slot has committed), which is not a deadlock of
Autobahn. `--engine explicit`: the vector engine's compilation of this spec takes minutes.

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

from .byzantine import AutobahnByzantineLane, AutobahnByzantineVoter
from .spec import Autobahn


class AutobahnWeakFastPath(AutobahnByzantineVoter):
    """Seeded bug: a fast commit needs 2f+1 (= 3) Prepare votes instead of n (a Byzantine voter hides its vote)."""

    defaults = {"fast_quorum": 3, "lanes": 0}


class AutobahnNoOverride(Autobahn):
    """Seeded bug: the TC rule ignores the f+1 Prepare override (all replicas honest)."""

    defaults = {"override": 0, "lanes": 0}


class AutobahnWeakPoA(AutobahnByzantineLane):
    """Seeded bug: a PoA needs f (= 1) votes instead of f+1 (a Byzantine lane certifies its own car)."""

    defaults = {"poa_quorum": 1, "lanes": 1, "views": 1}
