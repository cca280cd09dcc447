"""Autobahn: seamless high speed BFT, as an actor spec with both of its layers.

Source: N. Giridharan, F. Suri-Payer, I. Abraham, L. Alvisi, N. Crooks, "Autobahn: Seamless high
speed BFT", SOSP 2024 (arXiv 2401.10369, v4); details the paper leaves open are taken from its
artifact, github.com/neilgiri/autobahn-artifact (branch `autobahn`, `primary/src/{core,messages,
aggregators}.rs`), as collected in the project's protocol notes (§5; the [V], [D] and [R] marks
below are theirs).

n = 3f+1 replicas (`--param f`), at most f Byzantine; the Byzantine variants make one replica
Byzantine, the last. Quorums are parameters (0: the paper's size): a PoA has f+1 votes [V], a
PrepareQC or ConfirmQC 2f+1 (`quorum`) [V], a TC 2f+1 Timeouts (`tc_quorum`) [V], a fast commit n
(`fast_quorum`) [V]. Mechanism by mechanism, what is modelled as in the paper, what is Simplified
(and how), and what is Out of scope:

Data dissemination (`lanes.py`).
- As in the paper: a car is {author, height, payload digest, parent PoA} [V]; a replica votes for a
  car once per (author, height), only with the parent held (FIFO; the car waits until then) and
  certified, and only if it is one of the 2f+1 designated voters (the artifact's `check_cast_vote`)
  [V]; a PoA is f+1 votes [V]; a replica's certified tip of a lane is the highest car it holds a PoA
  for (at equal heights the first: the artifact's `current_certified_tips`). A Byzantine author's
  lane may fork (PoAs for two cars at one height from different honest voters [D]), so nothing
  assumes one car per (author, height). A replica missing a car of a committed cut asks for it
  (`Fetch`) and any holder answers.
- Simplified: the last `lanes` replicas produce `cars` cars each, one after the other; the payload
  travels with the car (the runtime sends batches separately and cars carry their digests); a PoA
  is broadcast by its author as soon as it forms (the artifact sends it inside the author's next car,
  so a lane's last car would never be certified in a bounded model); cars, votes and consensus
  messages are separate messages (the artifact piggybacks consensus messages and their votes on
  cars, an optimisation); only the last lane may fork (its author is the Byzantine replica).
- Out of scope: workers and batch dissemination, garbage collection, the header waiter's retries.

Consensus (`consensus.py`), per slot s and view v.
- As in the paper: leader(s, v) = (s + v) mod n [V]; a Prepare carries a cut (one tip per lane) and
  its ticket: a CommitQC of slot s-k in view 1 for s > k, a TC of view v-1 in later views [V]; a
  replica votes once per (s, v), in its current view, for a Prepare whose ticket is valid [V]; 2f+1
  Prepare votes make a PrepareQC and a Confirm, 2f+1 Confirm votes a CommitQC and a Commit; with the
  fast path the leader waits (a timer) for n Prepare votes, which commit at once, else it takes the
  slow path [V]; at most k slots run above the last committed one [V]; a view-1 leader waits for
  `coverage` lanes with tips newer than the previous slot's Prepare (the artifact: 2f+1) [V];
  committed slots execute in slot order, lanes in lane order [D: the artifact iterates a HashMap; we
  fix the order].
- Simplified: a leader proposes in a step of its own (timer `lead<s>`) at some point after it is
  ready; the artifact proposes in the step that makes it ready. A Prepare vote binds the cut (the
  paper; the artifact's vote digest omits the proposals, a FIXME). A replica that moves to a higher
  view on a valid Prepare or Confirm restarts its slot timer. `lanes = 0`: no cars, leaders propose
  one of `proposals` abstract cuts (consensus alone, and long runs validated slot by slot); `offset`
  shifts the slot numbers (leader(s, v) uses s + offset), so any slot of a long run is slot 1 of
  some instance, and chooses the views the Byzantine replica leads.
- Out of scope: the runtime's and the artifact's state transfer, batching of proposals, exponential
  timeouts (`use_exponential_timeouts`).

View change (`consensus.py`).
- As in the paper: each (s, v) has a timer; when it fires and s is not committed, the replica
  broadcasts Timeout(s, v, its highest voted Prepare, its highest QC) [V]; 2f+1 Timeouts of (s, v)
  make a TC: the replica moves to v+1 and restarts its timer, and leader(s, v+1) proposes the TC's
  winning proposal: the highest-view QC, overridden by a Prepare that f+1 Timeouts report at higher
  views (the fast-path rule) [V]; without a winner the leader proposes freely [V]. A sender's first
  Timeout of a view counts (the artifact's TC maker rejects a second one).
- Simplified: the override counts the Timeouts that report one cut at any views above the highest
  QC [D: the artifact counts per Prepare digest and notes that this is "slightly imprecise";
  counting per view loses a fast commit once some replicas have voted for its re-proposal]. A
  replica that has committed a slot never times out on it (the artifact's `local_timeout_round`)
  and answers a Timeout of the slot with its Commit (the artifact's "TODO: forward CommitQC"), so
  "a Commit in a Timeout wins" never applies to an honest Timeout. A replica that times out of a
  view stops voting in it (`vote_after_timeout=1`: it keeps voting, as the artifact). Views per slot
  are at most n (a replica leads at most one view of a slot), and no Timeout is sent in the last
  view.
- Out of scope: joining a view change on f+1 Timeouts (the runtime does it; a TODO in the artifact).

Signatures and what honest replicas check.
- As in the paper: every message's sender is its authenticated author (the runtime signs with
  ed25519), and an honest replica accepts a message only if its justification is valid: a Prepare
  only from leader(s, v), with a CommitQC of s-k (view 1, s > k) or a TC of view v-1 (2f+1 Timeouts
  of distinct senders) whose winning proposal is the Prepare's cut, or has none; a Confirm only from
  the leader, with a PrepareQC of `quorum` Prepare votes for its cut; a Commit with a CommitQC
  (`quorum` Confirm votes, or `fast_quorum` Prepare votes with the fast path); a Timeout's QC must be
  a real PrepareQC; a PoA only from its author, with `poa` votes.
- Simplified (how): signatures are modelled, not computed. Every vote an honest replica signs is
  recorded in its state (`pvote`, `cvote`, `voted_cars`); a certificate is a statement ("2f+1
  replicas signed Prepare votes for (s, v, cut)"), and a replica (honest or Byzantine) can send one
  only when it holds enough signatures for it: its own and those it received; the Byzantine replica
  builds a TC only from the Timeouts it holds and computes its winner with the honest rule
  (`tc_winner`). So the check an honest verifier makes is the sender's condition, with the verifier's
  thresholds (the quorum parameters); a message that fails it is one no honest replica acts on, and
  leaving it unsent loses no behaviour of the honest replicas. `certificates_authentic` checks the
  result against the record of signatures. A PoA names its signers.

The Byzantine replica (`byzantine.py`): full power, bounded only by cryptography. It signs anything
with its own key (votes for everything it receives, in any view; Prepares of any cuts it can justify
in the views it leads, up to `equivocations` per view; Timeouts of any view with any report; two
cars per height) and builds any certificate from the signatures it holds (Confirms, Commits, TCs
from any subset of the honest Timeouts it holds). It sends each message to every replica (a Timeout
with a report only to the next leader, for whom alone the report counts), and its delivery is never
forced: which replicas receive it, and when, is the network's choice.

Partial synchrony (`synchrony.py`, `--param gst=1`). A weakly fair step `gst` marks global
stabilisation time. Before it, messages take any time and honest timers fire at any time, except the
timers of view `views - 1`: GST comes before the last view change (the bound on views stands for
"enough views for GST to fall within them"). After GST ("after GST" in every claim here): every
message between honest replicas is delivered eventually, as before, and an honest replica's slot
timer fires only when the honest replicas are quiescent (no message between them in flight, no
fast-path timer armed, no leader ready to propose): a view led by an honest replica completes before
a timer expires, the timeliness a timeout longer than the view's message exchanges gives. The
Byzantine replica's messages are never forced through, before or after GST. With gst=0 there is no
GST: timers fire at any time for ever (what safety is checked under).

Properties (`spec.py`): agreement, logs_prefix_consistent, committed_cars_available,
committed_cars_certified, vote_once, open_slots_bounded, certificates_authentic, locked_after_commit
(once a cut commits at (s, v), honest replicas vote and propose no other cut at later views: the
lemma behind agreement across view changes). Liveness: every_slot_commits, eventually every correct
replica commits every slot, with deliveries between honest replicas and honest timers weakly fair;
claimed after GST (gst=1) with the last view's leader correct (a crash, `--param crashes=1`, stops a
view-1 leader), and with views=1 (no timer: the whole run is after GST). Bounds (`slots`, `views`,
`lanes`, `cars`, `k`, `equivocations`) make the state space finite and are printed with every
verdict.

Variants: `byzantine.py` (the Byzantine replica); `bugs.py` (the seeded bugs, each with the commands
that catch it: by random walks at the default bounds, exhaustively at the smallest bounds that show
it). The state counts at each shape are in docs/protocols/autobahn.md.
"""

from .bugs import (
    AutobahnDoubleVote,
    AutobahnNoOverride,
    AutobahnQuorum2f,
    AutobahnWeakFastPath,
    AutobahnWeakPoA,
    AutobahnWrongTcQuorum,
)
from .byzantine import AutobahnByzantine
from .spec import Autobahn

__all__ = [
    "Autobahn", "AutobahnByzantine", "AutobahnDoubleVote", "AutobahnNoOverride", "AutobahnQuorum2f", "AutobahnWeakFastPath",
    "AutobahnWeakPoA", "AutobahnWrongTcQuorum",
]
