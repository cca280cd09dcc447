"""Laws of the fair synchronous concurrent program algebra, checked on generated commands.

Each law is checked over commands drawn by hypothesis (derandomised, so a table is
reproducible) on a small Σ, by exact refinement (`lockstep.specs.fair_algebra.refine`): `=` is `⊑`
both ways. A law the algebra does not have (`expect=False`) must be refuted with a
counterexample. Sources: AFP `Concurrent_Ref_Alg` (S1), the synchronisation and atomic-step
theories of the UQ rg_algebra development (S3), and its `Fairness.thy` (S2), which encodes
the fairness lemmas of Hayes and Meinicke (RAMiCS 2018); their lemma names are given, and for
S2 and S3 how the Isabelle text establishes each one (`status`): proved, assumed (a locale
axiom), proved from a lemma whose proof is `sorry`, left unproved (`oops`), or commented out.
Isabelle's `c ≥ d` is `c ⊑ d` here, its `⊔` is `⊓` (choice), its `⊤` is `⊥` (abort) and its `⊥`
is `⊤` (magic). Checking on generated commands over a finite Σ is evidence, not proof.

`lockstep algebra laws --out proofs/fair_algebra_laws.md` writes the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from lockstep.checker.algebra import check_refines
from lockstep.specs.fair_algebra.commands import (
    CHOICE,
    CONJ,
    ENV,
    FAIR_PAR,
    INF,
    OMEGA,
    PAR,
    PGM,
    SEQ,
    STAR,
    Binary,
    Command,
    Const,
    Iter,
    Step,
    identity,
    substitute,
    universal,
    variables,
)
from lockstep.specs.fair_algebra.syntax import parse

POWER = "αᵏ"  # the metavariable of a law that holds for every finite power α;...;α (k steps, k ≥ 0)
METAVARIABLES = frozenset({"c", "d", "e", "c0", "c1", "d0", "d1", POWER})
MAX_POWER = 3  # αᵏ is drawn for k = 0..MAX_POWER
SECONDS_PER_CHECK = 2.0  # a refinement check that needs longer counts as inconclusive for its example


@dataclass(frozen=True)
class Law:
    """lhs rel rhs (rel is ⊑ or =), for all commands substituted for its metavariables."""

    name: str
    lhs: str
    rel: str
    rhs: str
    source: str
    expect: bool = True
    where: tuple[tuple[str, str], ...] = ()  # a metavariable replaced by a template over it, e.g. ("c", "c;skip")
    given: str | None = None  # a premise "a ⊑ b" or "a = b": examples that break it are discarded
    status: str = ""  # how the Isabelle source establishes it (S2, S3); "" for S1 and for laws of our own

    def text(self) -> str:
        head = f"{self.lhs} {self.rel} {self.rhs}"
        conds = [f"{v} = {t}" for v, t in self.where] + ([self.given] if self.given else [])
        if POWER in head:
            conds.append(f"{POWER} = α;…;α, k = 0..{MAX_POWER} steps")
        return head + (f"  (for {', '.join(conds)})" if conds else "")


PROVED, ASSUMED, UNPROVED = "proved", "assumed (locale axiom)", "unproved (oops)"
ON_SORRY = "proved from par_termination, whose proof is sorry"
NO_ABORT = "nil ⊓ α ; ⊥ ⊑ d0 ⊓ d1"  # neither d0 nor d1 aborts immediately (Isabelle: nil ⊔ Atomic;⊤ ≥ d0, d1)

LAWS: list[Law] = [
    # parallel composition (S1 Parallel.thy; S3 Abstract_Sync.thy)
    Law("par_assoc", "(c ∥ d) ∥ e", "=", "c ∥ (d ∥ e)", "S1 par_assoc"),
    Law("par_commute", "c ∥ d", "=", "d ∥ c", "S1 par_commute"),
    Law("par_skip", "c ∥ skip", "=", "c", "S1 par_skip; S3 par_identity", status=ASSUMED + " in S3"),
    Law("par_distrib", "c ∥ (d ⊓ e)", "=", "(c ∥ d) ⊓ (c ∥ e)", "S1 par_Inf_distrib (39)"),
    Law("abort_par", "⊥ ∥ c", "=", "⊥", "S1 abort_par"),
    # weak conjunction (S1 Conjunction.thy)
    Law("conj_assoc", "(c ⋒ d) ⋒ e", "=", "c ⋒ (d ⋒ e)", "S1 conj_assoc (42)"),
    Law("conj_commute", "c ⋒ d", "=", "d ⋒ c", "S1 conj_commute (43)"),
    Law("conj_idem", "c ⋒ c", "=", "c", "S1 conj_idem (44)"),
    Law("conj_chaos", "c ⋒ chaos", "=", "c", "S1 conj_chaos (45)"),
    # interchange and units (S1 CRA.thy; S3 Atomic_Commands.thy)
    Law("parallel_interchange", "(c0 ∥ c1) ⋒ (d0 ∥ d1)", "⊑", "(c0 ⋒ d0) ∥ (c1 ⋒ d1)",
        "S1 parallel_interchange (50); S3 par_conj_interchange", status=ASSUMED + " in S3"),
    Law("sequential_interchange", "(c0 ; c1) ⋒ (d0 ; d1)", "⊑", "(c0 ⋒ d0) ; (c1 ⋒ d1)",
        "S1 sequential_interchange (51); S3 seq_conj_interchange", status=ASSUMED + " in S3"),
    Law("seq_par_interchange", "(c0 ; d0) ∥ (c1 ; d1)", "⊑", "(c0 ∥ c1) ; (d0 ∥ d1)", "S3 seq_par_interchange",
        status=ASSUMED),
    Law("chaos_skip", "chaos", "⊑", "skip", "S1 chaos_skip"),
    Law("skip_nil", "skip", "⊑", "nil", "S1 skip_nil (41)"),
    Law("skip_absorb", "skip ; skip", "=", "skip", "S1 skip_absorb"),
    Law("chaos_par_chaos", "chaos ∥ chaos", "=", "chaos", "S1 chaos_par_chaos_eq"),
    # iteration (S1 Iteration.thy)
    Law("iter_unfold", "c^ω", "=", "nil ⊓ c ; c^ω", "S1 iter_def (fixed point)"),
    Law("iter_isolation", "c^ω", "=", "c* ⊓ c^∞", "S3 iter_isolation", status=PROVED),
    Law("infiter_annil", "c^∞ ; d", "=", "c^∞", "S1 infiter_annil"),
    # fairness (S2 Fairness.thy): the locale's definitions and axioms, then its lemmas in file order
    Law("fair_definition", "fair", "=", "ε* ; (π ; ε*)^ω", "S2 fair_def", status=ASSUMED),
    Law("fair_par_definition", "c ∥_f d", "=", "((c ⋒ fair) ; skip) ∥ ((d ⋒ fair) ; skip)", "S2 fair_par_def",
        status=ASSUMED),
    Law("atomic_distrib_par", "((c0 ⋒ αᵏ) ; d0) ∥ ((c1 ⋒ αᵏ) ; d1)", "=", "((c0 ⋒ αᵏ) ∥ (c1 ⋒ αᵏ)) ; (d0 ∥ d1)",
        "S2 atomic_distrib_par", given=NO_ABORT, status=ASSUMED),
    Law("atomic_distrib_conj", "((c0 ⋒ αᵏ) ; d0) ⋒ ((c1 ⋒ αᵏ) ; d1)", "=", "(c0 ⋒ c1 ⋒ αᵏ) ; (d0 ⋒ d1)",
        "S2 atomic_distrib_conj, read with ⋒ on the right: the sequential interchange made exact "
        "(the text has ∥ there: see atomic_distrib_conj_as_written)", given=NO_ABORT, status=ASSUMED),
    Law("atomic_distrib_conj_as_written", "((c0 ⋒ αᵏ) ; d0) ⋒ ((c1 ⋒ αᵏ) ; d1)", "=", "(c0 ⋒ c1 ⋒ αᵏ) ; (d0 ∥ d1)",
        "S2 atomic_distrib_conj exactly as written: false (k = 0, c0 = c1 = nil, d0 = d1 = π gives π = ⊤); "
        "no proof in Fairness.thy uses it", given=NO_ABORT, status=ASSUMED, expect=False),
    Law("chaos_fair", "chaos", "⊑", "fair", "S2 chaos_fair", status=PROVED),
    Law("introduce_fair", "c", "⊑", "c ⋒ fair", "S2 introduce_fair", status=PROVED),
    Law("fair_fair", "fair ; fair", "=", "fair", "S2 fair_fair", status=PROVED),
    Law("fair_distrib_seq", "(c ; d) ⋒ fair", "⊑", "(c ⋒ fair) ; (d ⋒ fair)", "S2 fair_distrib_seq", status=PROVED),
    Law("skip_fair", "fair ⋒ skip", "=", "ε*", "S2 skip_fair", status=PROVED),
    Law("atomic_step_env_finite", "α*", "=", "α* ; ε*", "S2 atomic_step_env_finite", status=PROVED),
    Law("term_fair", "term ⋒ fair", "=", "α*", "S2 term_fair", status=PROVED),
    Law("fair_termination", "α*", "⊑", "c ⋒ fair", "S2 fair_termination (theorem)", given="term ⊑ c",
        where=(("c", "term ⋒ c"),), status=PROVED),
    Law("fair_conj_nil", "fair ⋒ nil", "=", "nil", "S2 fair_conj_nil", status=PROVED),
    Law("pgm_com_par_pgm_com", "(π ; c)^ω ∥ (π ; d)^ω", "=", "nil", "S2 pgm_com_par_pgm_com", status=PROVED),
    Law("fair_par_fair_expand", "fair ∥ fair", "=", "ε* ; (nil ⊓ π ; (fair ∥ fair))", "S2 fair_par_fair_expand",
        status=PROVED),
    Law("fair_par_fair", "fair", "⊑", "fair ∥ fair", "S2 fair_par_fair", status=PROVED),
    Law("fair_distrib_par_both", "(c ∥ d) ⋒ fair", "⊑", "(c ⋒ fair) ∥ (d ⋒ fair)", "S2 fair_distrib_par_both",
        status=PROVED),
    Law("fair_par_chaos_expand", "fair ∥ chaos", "=", "ε* ; (nil ⊓ π ; (fair ∥ chaos))", "S2 fair_par_chaos_expand",
        status=PROVED),
    Law("fair_par_chaos", "fair ∥ chaos", "=", "fair", "S2 fair_par_chaos", status=PROVED),
    Law("fair_distrib_par_one", "(c ∥ d) ⋒ fair", "⊑", "(c ⋒ fair) ∥ d", "S2 fair_distrib_par_one", status=PROVED),
    Law("fair_par_skip", "(c ∥_f d) ; skip", "=", "c ∥_f d", "S2 fair_par_skip", status=PROVED),
    Law("finite_absorb_fair_skip", "((c ∥_f d) ⋒ fair) ; skip", "⊑", "c ∥_f d", "S2 finite_absorb_fair_skip",
        where=(("c", "c ⋒ α*"), ("d", "d ⋒ α*")), status=ON_SORRY),
    Law("infinite_annihilates_conj", "(c ⋒ α^∞) ; d", "=", "c ⋒ α^∞", "S2 infinite_annihilates_conj", status=PROVED),
    Law("infinite_absorb_fair_skip", "((c ∥_f d) ⋒ fair) ; skip", "⊑", "c ∥_f d", "S2 infinite_absorb_fair_skip",
        where=(("c", "c ⋒ α^∞"),), status=PROVED),
    Law("introduce_fair_skip", "c ∥_f d", "⊑", "((c ∥_f d) ⋒ fair) ; skip", "S2 introduce_fair_skip",
        status="commented out (subsumed by absorb_fair_skip)"),
    Law("fair_par_commute", "c ∥_f d", "=", "d ∥_f c", "S2 fair_par_commute", status=PROVED),
    Law("fair_par_nil", "c ∥_f nil", "=", "(c ⋒ fair) ; skip", "S2 fair_par_nil", status=PROVED),
    Law("absorb_fair_skip", "((c ∥_f d) ⋒ fair) ; skip", "=", "c ∥_f d", "S2 absorb_fair_skip",
        status=ON_SORRY + " (via finite_absorb_fair_skip)"),
    Law("fair_par_assoc", "(c ∥_f d) ∥_f e", "=", "c ∥_f (d ∥_f e)", "S2 fair_parallel_associative (theorem)",
        status=ON_SORRY + " (via absorb_fair_skip)"),
    Law("fair_par_interchange", "(c0 ∥_f d0) ⋒ (c1 ∥_f d1)", "⊑", "(c0 ⋒ c1) ∥_f (d0 ⋒ d1)", "S2 fair_par_interchange",
        status=PROVED),
    Law("fair_par_interchange_seq", "(α* ; α^∞) ∥_f (α^∞ ; α*)", "⊑", "(α* ∥_f α^∞) ; (α^∞ ∥_f α*)",
        "S2 fair_par_interchange_seq (theorem)", status=UNPROVED),
    Law("fair_par_interchange_seq_converse", "(α* ∥_f α^∞) ; (α^∞ ∥_f α*)", "⊑", "(α* ; α^∞) ∥_f (α^∞ ; α*)",
        "the converse of S2 fair_par_interchange_seq: the two sides are equal"),
    Law("fair_par_distrib", "c ∥_f (d ⊓ e)", "=", "(c ∥_f d) ⊓ (c ∥_f e)", "S2 fair_par_distrib", status=PROVED),
    Law("fair_fixed_point", "fair", "=", "nil ⊓ α ; fair", "S2 fair_pseudo_atomic_fixed_point", status=PROVED),
    Law("distrib_seq_par_fair", "fair ∥ (c ; d)", "=", "(fair ∥ c) ; (fair ∥ d)", "S2 distrib_seq_par_fair",
        status=PROVED),
    Law("distrib_seq_conj_fair", "fair ⋒ (c ; d)", "=", "(fair ⋒ c) ; (fair ⋒ d)", "S2 distrib_seq_conj_fair",
        status=PROVED),
    Law("finite_iter_par_fair", "fair ∥ c*", "=", "(fair ∥ c)*", "S2 pseudo_distrib_finite_iter_par_fair",
        where=(("c", "α ; c"),), status=PROVED),
    Law("finite_iter_conj_fair", "fair ⋒ c*", "=", "(fair ⋒ c)*", "S2 pseudo_distrib_finite_iter_conj_fair",
        where=(("c", "α ; c"),), status=PROVED),
    Law("par_fair_par", "c ∥ d", "⊑", "c ∥_f d", "derived from S2 introduce_fair with ; and ∥ monotone",
        where=(("c", "c ; skip"), ("d", "d ; skip"))),
    # laws the algebra does not have: each must be refuted
    Law("par_fair_par_unrestricted", "c ∥ d", "⊑", "c ∥_f d", "false unless c, d are skip-closed: c = nil, d = π",
        expect=False),
    Law("fair_par_par", "c ∥_f d", "⊑", "c ∥ d", "false: c = d = ε^∞", expect=False),
    Law("par_seq", "c ∥ d", "⊑", "c ; d", "a deliberately false law", expect=False),
    Law("nil_par_env", "nil ∥ (ε ; c)", "=", "ε ; c", "false: nil ∥ (ε;c) = ⊤ (S3 nil_sync_atomic_pre)",
        expect=False),
]


def commands(n: int, max_leaves: int) -> st.SearchStrategy[Command]:
    """Commands over Σ = {0..n-1} with at most `max_leaves` leaves."""
    rels = st.frozensets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)))
    named = [Const("nil"), Const("⊤"), Const("⊥"), Const("skip"), Const("chaos"), Const("fair"),
             Step(PGM, universal(n), n), Step(ENV, universal(n), n)]
    if n > 1:
        named += [Step(PGM, identity(n), n), Step(ENV, identity(n), n)]
    leaves = st.one_of(st.sampled_from(named), st.builds(Step, st.sampled_from([PGM, ENV]), rels, st.just(n)))
    return st.recursive(leaves, lambda kids: st.one_of(
        st.builds(Binary, st.sampled_from([SEQ, CHOICE, PAR, CONJ, FAIR_PAR]), kids, kids),
        st.builds(Iter, st.sampled_from([STAR, OMEGA, INF]), kids)), max_leaves=max_leaves)


def powers(n: int) -> st.SearchStrategy[Command]:
    """α;…;α with k = 0..MAX_POWER steps (nil for k = 0)."""
    return st.integers(0, MAX_POWER).map(lambda k: parse(" ; ".join(["α"] * k) or "nil", n))


@dataclass
class LawResult:
    """How a law fared: the examples tried, and a counterexample if one was found."""

    law: Law
    n: int
    examples: int
    max_leaves: int
    tried: int = 0
    inconclusive: int = 0
    counterexample: dict[str, str] | None = None
    failure: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the outcome is the expected one (holds on every example, or refuted)."""
        return (self.counterexample is None) == self.law.expect

    @property
    def outcome(self) -> str:
        if self.counterexample is not None:
            env = ", ".join(f"{k} = {v}" for k, v in self.counterexample.items())
            return f"refuted ({env}): {self.failure}" if env else f"refuted: {self.failure}"
        if self.law.expect is False:
            return f"NOT refuted in {self.tried} examples"
        extra = f", {self.inconclusive} inconclusive" if self.inconclusive else ""
        return f"holds on {self.tried} examples{extra}" if variables_of(self.law) else "holds (exact)"


class _Refuted(Exception):
    pass


def variables_of(law: Law) -> list[str]:
    seen: list[str] = []
    premise = law.given.replace("⊑", "=").split("=") if law.given else []
    for text in (law.lhs, law.rhs, *(t for _, t in law.where), *premise):
        for v in variables(parse(text, 1, METAVARIABLES)):
            if v not in seen:
                seen.append(v)
    return seen


def _relation(text: str, n: int) -> tuple[Command, str, Command]:
    op = "⊑" if "⊑" in text else "="
    a, b = text.split(op)
    return parse(a, n, METAVARIABLES), op, parse(b, n, METAVARIABLES)


def _violates(a: Command, op: str, b: Command, n: int, limit: int) -> tuple[str | None, bool]:
    """(why `a op b` fails, or None; whether a check was inconclusive)."""
    unsure = False
    for spec, impl in [(a, b)] + ([(b, a)] if op == "=" else []):
        r = check_refines(spec, impl, n, limit, SECONDS_PER_CHECK)
        if r.holds is False:
            return f"{impl} has the trace {r.trace}, which {spec} does not", False
        unsure |= r.holds is None
    return None, unsure


def check_law(law: Law, n: int = 1, examples: int = 20, max_leaves: int = 3, limit: int = 20_000) -> LawResult:
    """Check `law` on `examples` generated substitutions over Σ = {0..n-1}."""
    res = LawResult(law, n, examples, max_leaves)
    lhs, rhs = parse(law.lhs, n, METAVARIABLES), parse(law.rhs, n, METAVARIABLES)
    where = {v: parse(t, n, METAVARIABLES) for v, t in law.where}
    premise = _relation(law.given, n) if law.given else None
    names = variables_of(law)

    def attempt(env: dict[str, Command]) -> None:
        full = {v: substitute(where[v], env) if v in where else c for v, c in env.items()}
        if premise is not None:
            a, op, b = premise
            broken, unsure = _violates(substitute(a, full), op, substitute(b, full), n, limit)
            assume(broken is None and not unsure)
        res.tried += 1
        why, unsure = _violates(substitute(lhs, full), law.rel, substitute(rhs, full), n, limit)
        res.inconclusive += unsure
        if why is not None:
            res.counterexample = {v: full[v].show() for v in names}
            res.failure = why
            raise _Refuted()

    if not names:
        try:
            attempt({})
        except _Refuted:
            pass
        return res

    strategies = {v: powers(n) if v == POWER else commands(n, max_leaves) for v in names}

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.fixed_dictionaries(strategies))
    def run(env: dict[str, Command]) -> None:
        attempt(env)

    try:
        run()
    except _Refuted:
        pass
    except Unsatisfiable:
        res.notes.append("too few examples satisfied the premise")
    if res.counterexample is None:
        res.tried = min(res.tried, examples)
    return res


def table(results: list[LawResult]) -> str:
    """The laws table, in Markdown."""
    lines = ["# Laws of the fair synchronous concurrent program algebra", "",
             "Produced by `lockstep algebra laws`. Each law is checked by exact refinement (finite traces by",
             "subset construction, infinite traces by the Ramsey-based method) on commands generated by",
             "hypothesis; `=` is `⊑` both ways. A law marked *false* must be refuted.", "",
             "**This is evidence, not proof.** \"Holds\" means: no counterexample among the generated commands",
             "over a state space of the size below. A refutation is a proof that the law fails (it comes with",
             "the trace); a law that holds here may still fail on larger commands or a larger Σ.", "",
             "Sources: S1 = AFP `Concurrent_Ref_Alg`; S2 = `AbstractAtomic/Fairness.thy` of the UQ rg_algebra",
             "theories (github.com/jbart178/rg_algebra: the fairness lemmas of Hayes and Meinicke, RAMiCS 2018);",
             "S3 = the atomic-step theories of the same development (`AbstractAtomic/Atomic_Commands.thy`,",
             "`Abstract_Atomic_Sync.thy`, `General/Distributive_Iteration.thy`). Isabelle's `c ≥ d` is `c ⊑ d`",
             "here, its `⊔` is `⊓`, its `⊤` is `⊥` (abort) and its `⊥` is `⊤` (magic). *Isabelle* says how the",
             "S2/S3 text establishes the law: proved; assumed (an axiom of the locale — the most valuable thing",
             "to check); proved from `par_termination`, whose proof is `sorry` (so not proved); unproved (`oops`);",
             "commented out. In `fairness`, `atomic_distrib_conj` has `(d0 ∥ d1)` on its right-hand side; read",
             "that way it is false (the row `atomic_distrib_conj_as_written`), so the locale would have no model",
             "in which π ≠ ⊤; with `(d0 ⋒ d1)` it holds, and is the sequential interchange",
             "(`seq_conj_interchange`) made exact for prefixes of exactly k steps, which is what the locale's",
             "comment describes (\"strong interchange axioms\"). No proof in `Fairness.thy` uses either axiom.",
             "Not checked: `decompose_finite`, `decompose_atomic`, `decompose_parallel` (infinite choices over k)",
             "and `par_termination` (a premise over all atomic a, b), which finite commands cannot state.", "",
             "The committed table was made with `--states 2 --leaves 5 --examples 100`: the slowest law that holds",
             "took about a minute on a shared two-core machine (the previous bound was 4 leaves, 60 examples).", ""]
    if results:
        r0 = next((r for r in results if r.law.expect), results[0])
        lines += [f"Bound: Σ = {{0..{r0.n - 1}}}, commands of at most {r0.max_leaves} leaves, "
                  f"up to {r0.examples} examples per law (more to refute a law marked false; derandomised), "
                  f"αᵏ for k = 0..{MAX_POWER}; a refinement check that needs more than "
                  f"{SECONDS_PER_CHECK:g} s counts as inconclusive for its example.", ""]
    lines += ["| law | statement | source | Isabelle | expected | outcome |", "|---|---|---|---|---|---|"]
    for r in results:
        cell = r.outcome.replace("|", "\\|")
        lines.append(f"| {r.law.name} | `{r.law.text()}` | {r.law.source} | {r.law.status or '—'} | "
                     f"{'holds' if r.law.expect else 'false'} | {cell}{'' if r.ok else ' **(unexpected)**'} |")
    return "\n".join(lines) + "\n"
