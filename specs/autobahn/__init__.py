"""Autobahn: seamless high speed BFT, as an actor spec with both of its layers.

Source: N. Giridharan, F. Suri-Payer, I. Abraham, L. Alvisi, N. Crooks, "Autobahn: Seamless high
speed BFT", SOSP 2024 (arXiv 2401.10369, v4); details the paper leaves open are taken from its
artifact, github.com/neilgiri/autobahn-artifact (branch `autobahn`, `primary/src/{core,messages,
aggregators}.rs`), as collected in the project's protocol notes (§5; the [V], [D] and [R] marks
below are theirs).

n = 3f+1 replicas (`--param f`), at most f Byzantine. Quorums are parameters (0: the paper's size):
a PoA has f+1 votes [V], a PrepareQC, ConfirmQC or TC 2f+1 [V], a fast commit n [V].

Data dissemination (`lanes.py`). Each of the last `lanes` replicas proposes `cars` cars in its lane,
one after the other; a car is {author, height, payload digest, parent PoA} [V]; the car's payload
travels with it (the runtime sends batches separately and cars carry their digests). Voting rules
[V]: once per (author, height); only with the parent held (FIFO) and certified; only the 2f+1
designated voters (the artifact's `check_cast_vote`). PoA = f+1 votes; a replica's certified tip is
the highest car it has a PoA for. The last lane may fork: a Byzantine author can get PoAs for two
cars at one height from different honest voters [D], so nothing here assumes one car per
(author, height).

Consensus (`consensus.py`), per slot s and view v: leader(s, v) = (s + v) mod n [V]; Prepare with a
cut (one tip per lane) and its ticket (CommitQC of s-k for s > k in view 1, a TC in later views)
[V]; 2f+1 Prepare votes make a PrepareQC and a Confirm, 2f+1 Confirm votes a Commit; with the fast
path, n Prepare votes commit at once [V]; Timeout(s, v, high Prepare, high QC), TC = 2f+1 Timeouts
[V], winning proposal: the highest-view QC, overridden by a Prepare that f+1 Timeouts report at
higher views [V]; at most k slots in flight [V]; committed slots execute in slot order, lanes in
lane order [D: the artifact iterates a HashMap; we fix the lane order].

Signatures are modelled, not computed. A message's sender is its authenticated author (the runtime
signs with ed25519); every vote a replica signs is recorded in its state (`pvote`, `cvote`,
`voted_cars`: the record of signatures). A certificate is a statement (Confirm(s, v, cut) carries
"2f+1 replicas signed Prepare votes for (s, v, cut)"), valid only if its signers really sent those
votes: every replica, Byzantine ones included, builds certificates only from votes it holds (its own
or received), so an honest verifier's check is implied, and `certificates_authentic` checks it
against the record (the votes of honest replicas, every Byzantine replica counted as a signer).
A message that honest verifiers would reject (a bad signature, a short certificate, a Prepare its
TC does not justify) is one no honest replica acts on, so Byzantine replicas are modelled as sending
only messages they can justify; see `byzantine.py` for what they do. A PoA names its signers.

Deviations and gaps filled, each for a small finite model or where the sources are silent:

- Cars, votes and consensus messages are separate messages; the artifact piggybacks consensus
  messages and their votes on cars (an optimisation). A PoA is broadcast by its author as soon as it
  forms; the artifact sends it inside the author's next car, so a lane's last car would never be
  certified in a bounded model.
- A leader proposes in a step of its own (timer `lead<s>`), at some point after it is ready (its
  ticket, k, coverage; or its TC); the artifact proposes in the step that makes it ready.
- Coverage: a view-1 leader waits for `coverage` lanes with newer tips than the previous slot's
  Prepare (the artifact: 2f+1 of the n lanes), capped at the number of producing lanes.
- Timeouts report the highest Prepare a replica voted for and its highest Confirm (QC) [V]. A
  replica that has committed a slot never times out on it (as the artifact's `local_timeout_round`)
  and answers a Timeout of the slot with its Commit (the artifact's "TODO: forward CommitQC"),
  so the rule "a Commit in a Timeout wins" never applies to an honest Timeout; a Byzantine Timeout
  carrying a real Commit would add nothing (its cut is the QC's). The override counts the Timeouts
  that report one cut at any views above the highest QC [D: the artifact counts per Prepare digest
  and notes that this is "slightly imprecise"; counting per view loses a fast commit once some
  replicas have voted for its re-proposal].
- A Prepare vote binds the cut (the paper); the artifact's vote digest omits the proposals (a FIXME).
- A replica that moves to a higher view on a valid Prepare or Confirm restarts its slot timer.
- Views per slot are at most n (so a replica leads at most one view of a slot) and slots, views,
  lanes and cars are bounded by parameters; `offset` shifts the slot numbers (leader(s, v) uses
  s + offset) so that any slot of a long run is slot 1 of some instance.
- `lanes = 0`: no cars; leaders propose one of `proposals` abstract cuts (a choice), for checking
  consensus alone and for validating long runs slot by slot.

Liveness (`spec.py`): every_slot_commits, eventually every honest replica commits every slot, with
deliveries and timers weakly fair. GST is modelled only as "from the start": with views=1 no slot
timer exists, so none fires early; with views > 1 the bound on views ends the view changes, so a
behaviour that times out of the last view never commits and the property is not claimed there.

Properties (`spec.py`): agreement, logs_prefix_consistent, committed_cars_available,
committed_cars_certified, vote_once, open_slots_bounded, certificates_authentic, and
locked_after_commit (once a cut commits at (s, v), honest replicas vote and propose no other cut at
later views: the lemma behind agreement across view changes).

Variants: `byzantine.py` (an equivocating leader, a forking lane, a voter for everything that hides
its votes in Timeouts, one silent in view changes, all at once); `bugs.py` (the seeded bugs).
"""

from .bugs import AutobahnNoOverride, AutobahnWeakFastPath, AutobahnWeakPoA
from .byzantine import (
    AutobahnByzantine,
    AutobahnByzantineLane,
    AutobahnByzantineVoter,
    AutobahnEquivocatingLeader,
    AutobahnSilentTimeouts,
)
from .spec import Autobahn

__all__ = [
    "Autobahn", "AutobahnByzantine", "AutobahnByzantineLane", "AutobahnByzantineVoter", "AutobahnEquivocatingLeader",
    "AutobahnNoOverride", "AutobahnSilentTimeouts", "AutobahnWeakFastPath", "AutobahnWeakPoA",
]
