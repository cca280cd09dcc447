"""Seeded bugs of Autobahn, each a change of one parameter, each caught with a counterexample.

Each variant sets the parameter (and what the bug needs: which view the Byzantine replica leads, a crash,
GST) as its defaults, at the spec's default bounds: n = 4, one slot, two views (a view change), two lanes
of one car each, the fast and the slow path. Those bounds are beyond an exhaustive search (a breadth-first
search passes 18.5 million states at depth 14 in 7 minutes, its levels still growing: `python -m
bench.autobahn_check --growth 13` measures them), so the first command in a variant's docstring
catches the bug there by random walks (`lockstep simulate`, seed 1: the same walks, and the same
counterexample, on every run), each walk run to its end (every behaviour ends within the bounds), the
violating one minimised and shortened. The second command checks the smallest bounds that show the
bug exhaustively (`-p`: the bounds), so its counterexample is a shortest one there. The exception is the
liveness bug `AutobahnWrongTcQuorum`: random walks check no temporal property, and its lasso needs the
whole state graph, so its defaults stay at the small bounds that show it.

`--no-deadlock`: the bounds on slots and views end every behaviour in a state with no successor (the
last view has timed out, or the last slot has committed), which is not a deadlock of Autobahn.
`--no-por` where partial-order reduction costs more than it saves: on these searches it prunes 1 to
10 % of the steps at several times the cost per state, and on the weak fast path it had not reached
a counterexample after 640,000 states (depth 13), where the full search finds one of 12 steps after
635,567.

- `AutobahnQuorum2f`: PrepareQCs and ConfirmQCs of 2f votes instead of 2f+1. The Byzantine leader
  sends two Prepares; one honest replica votes for each, and with its own votes it holds two
  certificates of 2 votes for each cut: two honest replicas commit different cuts (`agreement`; at
  the default bounds the walks check it alone, as `locked_after_commit` fails first otherwise).
- `AutobahnDoubleVote`: an honest replica votes for a second Prepare (and Confirm) of one (slot,
  view). With the paper's quorums, two 2f+1 certificates for different cuts then share only that
  replica and the Byzantine leader, and two honest replicas commit different cuts: checked with
  `--invariant agreement` (`vote_once` fails first otherwise).
- `AutobahnWrongTcQuorum`: a TC needs 2f+2 Timeouts. The leader of view 1 crashes: the three
  correct replicas' Timeouts never make a TC, so after GST the slot never commits:
  `every_slot_commits` fails with a lasso (a fair behaviour that stays in view 1 for ever).
- `AutobahnWeakFastPath`: the fast path commits with 2f+1 Prepare votes instead of n. The
  Byzantine replica's vote makes a fast commit; as the leader of view 2 it builds a TC of 2f+1
  Timeouts (its own reporting nothing) that holds f reports of the committed Prepare, fewer than the
  f+1 the override needs, and proposes another cut, which an honest replica votes for:
  `locked_after_commit`, then `agreement`, fail.
- `AutobahnNoOverride`: the TC rule ignores the f+1 Prepare override and takes only the highest QC.
  A fast commit leaves no QC behind (n Prepare votes, no Confirm), so after a view change the new
  leader is free to propose another cut, with every replica honest.
- `AutobahnWeakPoA`: a PoA has f votes instead of f+1. A Byzantine author's own vote certifies its
  car, which no honest replica need hold; a leader proposes it and the cut commits:
  `committed_cars_available` fails, and `committed_cars_certified` (the PoA is not one by the
  paper's threshold), which the walks at the default bounds find first.
"""

from .byzantine import AutobahnByzantine
from .spec import Autobahn


class AutobahnQuorum2f(AutobahnByzantine):
    """Seeded bug: PrepareQCs and ConfirmQCs of 2f (= 2) votes; the Byzantine leader commits two cuts.

        lockstep simulate autobahn_quorum_2f --invariant agreement --no-deadlock --runs 100000
        lockstep check autobahn_quorum_2f -p lanes=0 -p views=1 --no-deadlock --engine explicit --no-por
    """

    defaults = {"quorum": 2, "offset": 1}  # the Byzantine replica leads view 1


class AutobahnDoubleVote(AutobahnByzantine):
    """Seeded bug: an honest replica votes for two Prepares (and Confirms) of one view; with the Byzantine
    leader's two proposals, agreement fails.

        lockstep simulate autobahn_double_vote --invariant agreement --no-deadlock --runs 100000
        lockstep check autobahn_double_vote -p lanes=0 -p views=1 --invariant agreement --no-deadlock --engine explicit --no-por
    """

    defaults = {"double_vote": 1, "offset": 1}  # the Byzantine replica leads view 1


class AutobahnWrongTcQuorum(Autobahn):
    """Seeded bug: a TC needs 2f+2 (= 4) Timeouts; with the leader of view 1 crashed, the slot never commits.

        lockstep check autobahn_wrong_tc_quorum --property every_slot_commits --no-deadlock --engine explicit
    """

    defaults = {"tc_quorum": 4, "lanes": 0, "views": 2, "gst": 1, "crashes": 1}


class AutobahnWeakFastPath(AutobahnByzantine):
    """Seeded bug: a fast commit needs 2f+1 (= 3) Prepare votes instead of n (the Byzantine replica's
    vote is one of them; as the leader of view 2 it builds a TC that hides it).

        lockstep simulate autobahn_weak_fast_path --no-deadlock --runs 100000
        lockstep check autobahn_weak_fast_path -p lanes=0 --no-deadlock --engine explicit --no-por
    """

    defaults = {"fast_quorum": 3, "offset": 0}  # the Byzantine replica votes in view 1 and leads view 2


class AutobahnNoOverride(Autobahn):
    """Seeded bug: the TC rule ignores the f+1 Prepare override (all replicas honest).

        lockstep simulate autobahn_no_override --no-deadlock --runs 100000
        lockstep check autobahn_no_override -p lanes=0 --no-deadlock --engine explicit --no-por
    """

    defaults = {"override": 0}


class AutobahnWeakPoA(AutobahnByzantine):
    """Seeded bug: a PoA needs f (= 1) votes instead of f+1 (the Byzantine author certifies its own car).

        lockstep simulate autobahn_weak_poa --no-deadlock --runs 100000
        lockstep check autobahn_weak_poa -p lanes=1 -p views=1 --no-deadlock --engine explicit
    """

    defaults = {"poa_quorum": 1, "offset": 0}  # an honest replica leads view 1 (the Byzantine one, view 2)
