"""The fair synchronous program algebra: syntax, semantics, exact refinement (against an independent
oracle), the laws, and the command line."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings

from lockstep.checker.algebra import check_refines
from lockstep.checker.refinement import accepts_lasso
from lockstep.proofs.fair_algebra_laws import LAWS, check_law, commands, table
from lockstep.specs.fair_algebra.semantics import CommandAutomaton, Semantics
from lockstep.specs.fair_algebra.syntax import AlgebraError, parse
from lockstep.specs.fair_algebra.traces import enumerate_traces, show_word

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def refines(c: str, d: str, n: int = 1):
    return check_refines(parse(c, n), parse(d, n), n)


def equal(c: str, d: str, n: int = 1) -> bool:
    return bool(refines(c, d, n).holds and refines(d, c, n).holds)


# ------------------------------------------------------------------------------ syntax


@settings(max_examples=60, deadline=None)
@given(commands(2, 4))
def test_printed_commands_parse_back(c):
    assert parse(c.show(), 2) == c


def test_ascii_and_unicode_spellings_agree():
    assert parse("(pi(id) || eps)^w |~| c /\\ skip*", 2, {"c"}) == parse("(π(id) ∥ ε)^ω ⊓ c ⋒ skip*", 2, {"c"})
    assert parse("c ||_f d; top", 1, {"c", "d"}) == parse("c ∥_f (d ; ⊤)", 1, {"c", "d"})
    assert parse("π({0->1, 1->1})", 2) == parse("π(-{0->0, 1->0})", 2)


@pytest.mark.parametrize("text, column, message", [
    ("π ; foo", 5, "unknown command 'foo'"),
    ("π ;; ε", 4, "unexpected ';'"),
    ("(π ∥ ε", 7, "the command ends too early"),
    ("π({0->2})", 7, "state 2 is outside Σ = {0..1}"),
    ("π(sometimes)", 3, "unknown relation 'sometimes'"),
    ("skip(id)", 1, "'skip' takes no relation"),
    ("π # ε", 3, "unexpected character '#'"),
])
def test_syntax_errors_point_at_the_column(text, column, message):
    with pytest.raises(AlgebraError) as e:
        parse(text, 2)
    assert f"column {column}: {message}" in str(e.value)
    assert "\n  " + " " * (column - 1) + "^" in str(e.value)


# ------------------------------------------------------------------------------ semantics


def test_atomic_synchronisation():
    """S3: ε∥ε = ε, ε∥π = π, π∥π = ⊤, nil∥π = ⊤, nil∥(ε;c) = ⊤; ⋒: π⋒ε = ⊤."""
    assert equal("ε(id) ∥ ε({0->0, 0->1})", "ε({0->0})", 2)
    assert equal("ε({0->1}) ∥ π", "π({0->1})", 2)
    assert equal("π ∥ π", "⊤")
    assert equal("nil ∥ π", "⊤") and equal("nil ∥ (ε ; fair)", "⊤")
    assert equal("π ⋒ ε", "⊤") and equal("π(id) ⋒ π({0->0, 0->1})", "π({0->0})", 2)


def test_feasible_prefixes_are_kept():
    """π;⊤ ≠ ⊤: the prefix with one π step is a trace of π;⊤ only."""
    r = refines("⊤", "π ; ⊤")
    assert r.holds is False and r.trace == "0 -π-> 0 …"
    assert refines("π ; ⊤", "⊤").holds


def test_iterations():
    assert equal("nil^ω", "⊥") and equal("(nil ⊓ π)^ω", "⊥") and equal("⊤^ω", "nil") and equal("nil*", "nil")
    r = refines("(π ; skip)*", "(π ; skip)^ω")
    assert r.holds is False and r.verdict.counterexample.end == "infinite"
    assert equal("π^∞", "π^ω ; ⊤") and refines("π^ω", "π*").holds


def test_fair_keeps_infinite_traces_with_infinitely_many_program_steps():
    assert equal("fair", "ε* ; (π ; ε*)^ω") and equal("fair ⋒ skip", "ε*") and equal("term ⋒ fair", "α*")
    r = refines("fair", "skip")
    assert r.holds is False and r.trace == "0 (-ε-> 0)^ω"
    assert refines("skip", "fair").trace == "0 -π-> 0 …"


def test_fair_parallel_lets_a_finished_process_wait():
    """A terminated side continues as skip outside its fairness: the other side runs on, fairly."""
    assert equal("π ∥_f (ε ; π)", "π ; π ; skip")  # π∥ε, then skip's ε ∥ π, then skip ∥ skip
    assert not equal("π ∥ (ε ; π)", "π ; π ; skip")  # without ∥_f the finished side cannot wait
    assert equal("nil ∥_f (π ; π)", "π ; π ; skip")
    assert equal("π ∥_f π^∞", "⊤")


def test_brief_example_and_its_repair():
    r = refines("nil ∥ π", "nil ∥_f π")
    assert r.holds is False and r.trace == "0 -π-> 0 …"
    r = refines("ε^∞ ∥_f ε^∞", "ε^∞ ∥ ε^∞")
    assert r.holds is False and r.trace == "0 (-ε-> 0)^ω"
    assert refines("(nil ; skip) ∥ (π ; skip)", "(nil ; skip) ∥_f (π ; skip)").holds


def test_traces_listing():
    a = CommandAutomaton(Semantics(1), parse("π ; (ε ⊓ ⊥)", 1))
    assert [show_word(w, e, lp) for e, w, lp in enumerate_traces(a, 3)] == ["0 -π-> 0 ↯"]  # abort subsumes ε
    a = CommandAutomaton(Semantics(1), parse("π ; (ε ⊓ π ; ⊥)", 1))
    shown = sorted(show_word(w, end, loop) for end, w, loop in enumerate_traces(a, 3))
    assert shown == ["0 -π-> 0 -ε-> 0 ✓", "0 -π-> 0 -π-> 0 ↯"]
    a = CommandAutomaton(Semantics(1), parse("(π ; ε)^∞", 1))
    assert [show_word(w, e, lp) for e, w, lp in enumerate_traces(a, 2)] == ["0 (-π-> 0 -ε-> 0)^ω"]


# ------------------------------------------------------------------------------ refinement vs. an oracle


def has_finite(a, word, end) -> bool:
    """Whether automaton `a` has the finite trace `word` ending in `end` (with abort closure)."""
    current = {c for lt, c in a.initial() if lt == word[0]}
    for letter in word[1:]:
        if any(a.aborts(c) for c in current):
            return True
        current = {c2 for c in current for lt, c2, _ in a.steps(c) if lt == letter}
    if any(a.aborts(c) for c in current):
        return True
    if end == "prefix":
        return bool(current)
    if end == "done":
        return any(a.done(c) for c in current)
    return False


@settings(max_examples=80, deadline=None)
@given(commands(1, 3), commands(1, 3))
def test_refinement_agrees_with_trace_enumeration(c, d):
    """A counterexample is a trace of d and not of c; when c ⊑ d holds, every trace of d to depth 3 is one of c."""
    sem = Semantics(1)
    spec, impl = CommandAutomaton(sem, c), CommandAutomaton(sem, d)
    r = check_refines(c, d, 1)
    if r.holds is None:
        return
    cex = r.verdict.counterexample
    if cex is not None:
        if cex.end == "infinite":
            assert accepts_lasso(impl, cex.word, cex.loop) and not accepts_lasso(spec, cex.word, cex.loop)
        else:
            assert has_finite(impl, cex.word, cex.end) and not has_finite(spec, cex.word, cex.end)
        return
    for end, word, loop in enumerate_traces(impl, 3):
        if end == "infinite":
            assert accepts_lasso(spec, word, loop)
        else:
            assert has_finite(spec, word, end)


# ------------------------------------------------------------------------------ laws


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.name)
def test_law_small_bound(law):
    """Σ = {0}, commands of up to 3 leaves, 8 examples per law (100 to refute a false one): each as expected."""
    r = check_law(law, n=1, examples=8 if law.expect else 100, max_leaves=3)
    assert r.ok, r.outcome
    if not law.expect:
        assert r.counterexample is not None and " has the trace " in r.failure


@pytest.mark.slow
@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.name)
def test_law_two_states(law):
    """Σ = {0, 1}, up to 4 leaves, 60 examples per law (300 to refute a false one)."""
    r = check_law(law, n=2, examples=60 if law.expect else 300, max_leaves=4)
    assert r.ok, r.outcome


def test_false_law_refuted_with_a_trace():
    par_seq = next(law for law in LAWS if law.name == "par_seq")
    r = check_law(par_seq, n=1, examples=20, max_leaves=3)
    assert r.counterexample == {"c": "nil", "d": "skip"}
    assert r.failure == "nil; skip has the trace 0 -ε-> 0 …, which nil ∥ skip does not"
    assert "refuted (c = nil, d = skip)" in table([r])


def test_atomic_distrib_conj_decided_both_ways():
    """The locale axiom as written, with (d0 ∥ d1), fails at k = 0, c0 = c1 = nil, d0 = d1 = π: the left side is
    π ⋒ π = π, the right side π ∥ π = ⊤. With (d0 ⋒ d1), the interchange reading, that instance holds."""
    left = "((nil ⋒ nil) ; π) ⋒ ((nil ⋒ nil) ; π)"
    assert equal(left, "π", 2) and equal("π ∥ π", "⊤", 2)
    assert not equal(left, "(nil ⋒ nil ⋒ nil) ; (π ∥ π)", 2)
    assert equal(left, "(nil ⋒ nil ⋒ nil) ; (π ⋒ π)", 2)
    by_name = {law.name: law for law in LAWS}
    assert by_name["atomic_distrib_conj_as_written"].expect is False and by_name["atomic_distrib_conj"].expect
    r = check_law(by_name["atomic_distrib_conj"], n=2, examples=10, max_leaves=3)
    assert r.ok and r.tried == 10 and "αᵏ = α;…;α, k = 0..3 steps" in r.law.text()


def test_fair_par_interchange_seq_holds_both_ways_exactly():
    a = "(α* ; α^∞) ∥_f (α^∞ ; α*)"
    b = "(α* ∥_f α^∞) ; (α^∞ ∥_f α*)"
    assert refines(a, b, 2).holds and refines(b, a, 2).holds


def test_laws_resting_on_sorry_are_marked():
    by_name = {law.name: law for law in LAWS}
    for name in ("fair_par_assoc", "absorb_fair_skip", "finite_absorb_fair_skip"):
        assert "sorry" in by_name[name].status
    assert by_name["infinite_absorb_fair_skip"].status == "proved"
    assert by_name["fair_par_interchange_seq"].status == "unproved (oops)"
    assert by_name["atomic_distrib_par"].status.startswith("assumed")


def test_committed_laws_table_covers_every_law():
    with open(os.path.join(ROOT, "proofs", "fair_algebra_laws.md")) as f:
        text = f.read()
    for law in LAWS:
        assert f"| {law.name} |" in text
    assert "(unexpected)" not in text and "Bound:" in text and "evidence, not proof" in text


# ------------------------------------------------------------------------------ command line


def test_cli_refines_and_traces(cli):
    r = cli("algebra", "refines", "chaos", "skip")
    assert r.code == 0 and "chaos ⊑ skip: holds" in r.out
    r = cli("algebra", "refines", "fair", "skip", "--states", "1")
    assert r.code == 1 and "skip has the trace 0 (-ε-> 0)^ω, which fair does not" in r.out
    r = cli("algebra", "traces", "π ; (ε ⊓ π ; ⊥)", "--depth", "2", "--states", "1")
    assert r.code == 0 and "0 -π-> 0 -π-> 0 ↯" in r.out and "1 terminated, 1 aborted" in r.out
    r = cli("algebra", "laws", "--law", "par_seq", "--examples", "10")
    assert r.code == 0 and "refuted" in r.out and "1 of 1 laws as expected" in r.out


def test_cli_bad_algebra_input(cli):
    r = cli("algebra", "refines", "π ; (ε", "skip")
    assert r.code == 2 and "column 7: the command ends too early" in r.err
    r = cli("algebra", "refines", "π({0->5})", "skip")
    assert r.code == 2 and "state 5 is outside Σ = {0..1}" in r.err and "--states 6" in r.err
    r = cli("algebra", "traces", "fair")
    assert r.code == 2 and "needs --depth K" in r.err
    r = cli("algebra", "laws", "--law", "no_such_law")
    assert r.code == 2 and "no law named 'no_such_law'" in r.err
    assert all("Traceback" not in x for x in (r.out, r.err))
