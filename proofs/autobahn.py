"""The quorum lemmas Autobahn's safety rests on, for every f (n = 3f + 1, at most f Byzantine).

Each lemma is a statement about the sizes of sets of replicas: the n replicas split into the 2^k
regions of k sets (a PoA's voters, a TC's senders, the Byzantine replicas, ...), whose sizes are
non-negative integers summing to n; a lemma holds for every f >= 1 when z3 finds no sizes (linear
integer arithmetic) that satisfy the premises and break the conclusion. Each is checked again with
explicit sets (one Boolean per replica and set) for f = 1..4. The lemmas:

- a PoA of f+1 votes has an honest voter, who holds the car (availability);
- two quorums of 2f+1 share an honest replica: one PrepareQC per view; a CommitQC and any TC share
  an honest holder of the QC (the slow-path lock);
- a fast commit (n Prepare votes) leaves f+1 honest reports of its Prepare in every TC of 2f+1, so
  the f+1 override sees it;
- two groups of f+1 Timeouts in one TC of 2f+1 share a Timeout, so at most one cut wins the override;
- f+1 Timeouts reporting a Prepare include an honest one;
- the correct replicas alone (n - f of them) send 2f+1 Timeouts: after GST a view change needs no
  Byzantine Timeout (liveness).

Each seeded bug's threshold breaks its lemma (refuted, with the counterexample): a PoA of f votes
may be all Byzantine; a fast quorum of 2f+1 leaves only f honest reports in some TC; without the
override, a fast commit leaves no QC at all for the TC's highest-QC rule to find; two quorums of 2f
may share only the Byzantine replicas (two certificates for different cuts in one view); a TC of
2f+2 Timeouts needs a Timeout from a faulty replica. (The double-vote seeded bug breaks no size
lemma: it breaks the assumption that an honest replica in two quorums voted for one cut.)

    python -m lockstep.proofs.autobahn
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from itertools import product

import z3

from .facts import PROVED, REFUTED, UNKNOWN, Fact, Outcome, main

EXPLICIT_F = (1, 2, 3, 4)

# A lemma: set names, and functions of (f, size of a set expression) giving premises and the claim.
Size = Callable[..., z3.ArithRef]


def for_all_f(sets: list[str], premises: Callable[[z3.ArithRef, Size], list], claim: Callable[[z3.ArithRef, Size], z3.BoolRef],
              byzantine: str | None = "B") -> Outcome:
    """For every f >= 1: the premises imply the claim, over the region sizes of `sets` among n = 3f+1."""
    f = z3.Int("f")
    regions = {bits: z3.Int("r_" + "".join(map(str, bits))) for bits in product((0, 1), repeat=len(sets))}
    index = {name: i for i, name in enumerate(sets)}

    def size(*members: str, outside: tuple[str, ...] = ()) -> z3.ArithRef:
        """How many replicas are in all of `members` and in none of `outside`."""
        return z3.Sum([r for bits, r in regions.items()
                       if all(bits[index[m]] for m in members) and not any(bits[index[o]] for o in outside)])

    s = z3.Solver()
    s.add(f >= 1, *(r >= 0 for r in regions.values()), z3.Sum(list(regions.values())) == 3 * f + 1)
    if byzantine is not None:
        s.add(size(byzantine) <= f)
    s.add(*premises(f, size))
    s.add(z3.Not(claim(f, size)))
    r = s.check()
    if r == z3.unsat:
        return Outcome(PROVED)
    if r == z3.sat:
        m = s.model()
        sizes = ", ".join(f"|{name}|={m.eval(size(name))}" for name in sets)
        return Outcome(REFUTED, f"counterexample f={m[f]}, n={m.eval(3 * f + 1)}: {sizes}")
    return Outcome(UNKNOWN, s.reason_unknown())


def explicit(f: int, sets: list[str], premises: Callable[[int, Size], list], claim: Callable[[int, Size], z3.BoolRef],
             byzantine: str | None = "B") -> Outcome:
    """The same statement for one f, with one Boolean per replica and set."""
    n = 3 * f + 1
    member = {name: [z3.Bool(f"{name}_{p}") for p in range(n)] for name in sets}

    def size(*members: str, outside: tuple[str, ...] = ()) -> z3.ArithRef:
        return z3.Sum([z3.If(z3.And(*(member[m][p] for m in members), *(z3.Not(member[o][p]) for o in outside)), 1, 0)
                       for p in range(n)])

    s = z3.Solver()
    if byzantine is not None:
        s.add(size(byzantine) <= f)
    s.add(*premises(f, size))
    s.add(z3.Not(claim(f, size)))
    r = s.check()
    if r == z3.unsat:
        return Outcome(PROVED)
    if r == z3.sat:
        m = s.model()
        shown = "; ".join(name + "={" + ", ".join(str(p) for p in range(n) if z3.is_true(m.eval(member[name][p]))) + "}"
                          for name in sets)
        return Outcome(REFUTED, f"counterexample n={n}: {shown}")
    return Outcome(UNKNOWN, s.reason_unknown())


# -- the lemmas, with their thresholds as arguments (the seeded bugs change one) ------------------

def poa_has_honest_voter(poa: Callable) -> tuple:
    """A PoA's voters P (|P| = poa(f)) include a replica outside the Byzantine set B."""
    return (["P", "B"], lambda f, size: [size("P") == poa(f)], lambda f, size: size("P", outside=("B",)) >= 1)


def quorums_share_honest(q: Callable) -> tuple:
    """Two quorums Q1, Q2 of q(f) replicas share an honest replica."""
    return (["Q1", "Q2", "B"], lambda f, size: [size("Q1") == q(f), size("Q2") == q(f)],
            lambda f, size: size("Q1", "Q2", outside=("B",)) >= 1)


def fast_commit_seen_by_tc(fast: Callable) -> tuple:
    """A fast QC's voters F (|F| = fast(f)) and a TC's senders T (2f+1) share f+1 honest replicas: their
    Timeouts report the committed Prepare, enough for the override (f+1)."""
    return (["F", "T", "B"], lambda f, size: [size("F") == fast(f), size("T") == 2 * f + 1],
            lambda f, size: size("F", "T", outside=("B",)) >= f + 1)


def override_unique() -> tuple:
    """Two groups R1, R2 of f+1 Timeouts within a TC T of 2f+1 share a Timeout (a replica reports one Prepare)."""
    return (["R1", "R2", "T"], lambda f, size: [size("T") == 2 * f + 1, size("R1") == f + 1, size("R2") == f + 1,
                                               size("R1", outside=("T",)) == 0, size("R2", outside=("T",)) == 0],
            lambda f, size: size("R1", "R2") >= 1)


def reports_include_honest() -> tuple:
    """f+1 Timeouts R reporting one Prepare include an honest replica."""
    return (["R", "B"], lambda f, size: [size("R") == f + 1], lambda f, size: size("R", outside=("B",)) >= 1)


def tc_from_correct_replicas(tc: Callable) -> tuple:
    """The correct replicas alone (all but the Byzantine set B, at most f) send tc(f) Timeouts: after GST
    a view change needs no Byzantine Timeout (liveness)."""
    return (["B"], lambda f, size: [], lambda f, size: size(outside=("B",)) >= tc(f))


def qc_after_fast_commit() -> tuple:
    """Without the override, the highest-QC rule must find a QC: after a fast commit no replica holds a
    Confirm (C, the replicas holding a QC for the Prepare, may be empty), so some TC has no QC holder."""
    return (["C", "T"], lambda f, size: [size("T") == 2 * f + 1, size("C") == 0],
            lambda f, size: size("C", "T") >= 1)


def _facts(name: str, lemma: tuple, expected: str, byzantine: str | None = "B") -> list[Fact]:
    sets, premises, claim = lemma
    out = [Fact(f"for all f >= 1, n = 3f+1: {name} (cardinalities, LIA)", expected,
                lambda: for_all_f(sets, premises, claim, byzantine))]
    out += [Fact(f"f = {f}, n = {3 * f + 1}: {name} (explicit sets)", expected,
                 lambda f=f: explicit(f, sets, premises, claim, byzantine)) for f in EXPLICIT_F]
    return out


FACTS = [
    *_facts("a PoA of f+1 votes has an honest voter", poa_has_honest_voter(lambda f: f + 1), PROVED),
    *_facts("two quorums of 2f+1 share an honest replica", quorums_share_honest(lambda f: 2 * f + 1), PROVED),
    *_facts("a fast QC of n votes and a TC of 2f+1 share f+1 honest replicas",
            fast_commit_seen_by_tc(lambda f: 3 * f + 1), PROVED),
    *_facts("two groups of f+1 Timeouts in a TC of 2f+1 share a Timeout", override_unique(), PROVED, None),
    *_facts("f+1 Timeouts include an honest one", reports_include_honest(), PROVED),
    *_facts("the correct replicas alone make a TC of 2f+1 Timeouts", tc_from_correct_replicas(lambda f: 2 * f + 1),
            PROVED),
    # the seeded bugs' thresholds
    *_facts("a PoA of f votes has an honest voter (seeded bug: poa_quorum = f)", poa_has_honest_voter(lambda f: f),
            REFUTED),
    *_facts("a fast QC of 2f+1 votes and a TC of 2f+1 share f+1 honest replicas (seeded bug: fast_quorum = 2f+1)",
            fast_commit_seen_by_tc(lambda f: 2 * f + 1), REFUTED),
    *_facts("after a fast commit, every TC holds a QC for the highest-QC rule (seeded bug: override = 0)",
            qc_after_fast_commit(), REFUTED, None),
    *_facts("two quorums of 2f share an honest replica (seeded bug: quorum = 2f)", quorums_share_honest(lambda f: 2 * f),
            REFUTED),
    *_facts("the correct replicas alone make a TC of 2f+2 Timeouts (seeded bug: tc_quorum = 2f+2)",
            tc_from_correct_replicas(lambda f: 2 * f + 2), REFUTED),
]


if __name__ == "__main__":
    sys.exit(main(FACTS))
