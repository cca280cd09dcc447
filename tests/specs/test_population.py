"""The population language: rule tables, the counting abstraction, and load-time validation."""

from __future__ import annotations

from fractions import Fraction

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.specs.lang import Enum, Int, Param, SpecError
from lockstep.specs.lang.population import ALL, Population, predicate, start
from lockstep.specs.phase_clock import PhaseClock, PhaseClockNoResync

HERE = __file__


def line(marker: str) -> int:
    with open(HERE) as f:
        return next(i for i, text in enumerate(f, 1) if marker in text and "line(" not in text)


class Epidemic(Population):
    """One-way epidemic: an infected initiator infects its responder."""

    n = Param("n", default=4, lo=2)
    agent = Enum("S", "I")

    def delta(self, u, v):
        return (u, "I") if u == "I" else (u, v)

    @start
    def one(self):
        return {"I": 1, "S": self.n - 1}

    @predicate
    def all_infected(self, c):
        return c["S"] == 0


class Coin(Population):
    """A randomized rule: the responder of two heads turns to tails with probability 1/3."""

    n = Param("n", default=3, lo=2)
    agent = Enum("H", "T")

    def delta(self, u, v):
        if u == v == "H":
            return {("H", "T"): Fraction(1, 3), ("H", "H"): Fraction(2, 3)}
        return u, v

    @start
    def heads(self):
        return {"H": self.n}

    @predicate
    def some_tails(self, c):
        return c["T"] > 0


def test_counting_abstraction_of_an_epidemic():
    p = Epidemic(n=5)
    assert p.states == ["S", "I"] and p.Q == 2
    assert p.configuration_count() == 6
    (c0,) = p.init()
    assert tuple(c0) == (4, 1)
    succ = p.weighted_successors(c0)
    # the infected agent must initiate (1 of 5) and meet a susceptible responder (4 of 4)
    assert [(w, tuple(s)) for w, _, s in succ] == [(Fraction(1, 5), (3, 2))]
    assert p.holds("all_infected", (0, 5)) and not p.holds("all_infected", c0)


def test_randomized_rules_keep_exact_probabilities():
    p = Coin(n=3)
    (c0,) = p.init()
    ((w, label, succ),) = p.weighted_successors(c0)
    assert w == Fraction(1, 3) and tuple(succ) == (2, 1)  # every pair is (H, H); 1/3 of them flip
    assert "'H' meets 'H' -> ('H', 'T')" == label


def test_explicit_engine_explores_configurations_and_finds_the_silent_one():
    res = check(load_model("lockstep.specs.phase_clock:PhaseClockNoResync", {"n": 2, "hours": 8, "m": 2}), Options())
    assert res.verdict == "violation" and res.violation.kind == "deadlock"
    # all 136 configurations of 2 agents over 16 states are initial; the first silent one is two lone agents far apart
    assert res.distinct == 136
    last = res.violation.trace.steps[-1].state
    assert sum(int(v["#bigint"]) for v in last.values()) == 2
    res = check(load_model("phase_clock", {"n": 3, "m": 2}), Options())
    assert res.verdict == "holds" and res.distinct == 120  # C(3 + 8 - 1, 7)


def test_every_configuration_start_and_parameter_defaults():
    p = PhaseClock(n=5)
    assert p.params == {"n": 5, "hours": 4, "m": 6} and p.Q == 24  # m = 2·⌈log₂ 5⌉
    assert p.start_configurations() is ALL
    assert p.configuration_count() == len(list(p.all_configurations())) == 98280  # C(28, 5)
    assert PhaseClockNoResync(n=3, m=2).delta(0, 4) == (0, 4)
    assert PhaseClock(n=3, m=2).delta(0, 4) == (4, 4)


class Leader(Population):
    """Leader election by elimination: of two leaders that meet, the responder steps down."""

    n = Param("n", default=4, lo=2)
    agent = Enum("L", "F")

    def delta(self, u, v):
        return (u, "F") if u == v == "L" else (u, v)

    @start
    def everyone(self):
        return {"L": self.n}

    @predicate(invariant=True)
    def some_leader(self, c):
        return c["L"] >= 1


class LeaderBothResign(Leader):
    """Seeded bug: both leaders step down."""

    def delta(self, u, v):
        return ("F", "F") if u == v == "L" else (u, v)


def test_invariants_of_a_population_are_checked_by_the_explicit_engine():
    ok = check(load_model(f"{HERE}:Leader", {"n": 4}), Options(deadlock=False))
    assert ok.verdict == "holds" and ok.distinct == 4  # 4, 3, 2 and 1 leaders
    bad = check(load_model(f"{HERE}:LeaderBothResign", {"n": 4}), Options(deadlock=False))
    assert bad.verdict == "violation" and bad.violation.name == "some_leader"
    steps = bad.violation.trace.steps
    assert len(steps) == 3 and steps[-1].label == "'L' meets 'L' -> ('F', 'F')"


# ----------------------------------------------------------------------------- bad input


def test_n_below_two():
    with pytest.raises(SpecError, match="parameter n: value 1 is below its minimum 2"):
        Epidemic(n=1)


def test_unknown_parameter():
    with pytest.raises(SpecError, match="has no parameter 'k'"):
        Epidemic(k=3)


class OutOfType(Population):
    n = Param("n", default=3, lo=2)
    agent = Int(0, 3)

    def delta(self, u, v):
        return u, v + 1  # bad-state


def test_state_outside_the_declared_type():
    with pytest.raises(SpecError) as e:
        OutOfType()
    msg = str(e.value)
    assert "OutOfType.delta(0, 3) gives the responder state 4, which is not a value of the agent type Int(0, 3)" in msg
    assert f"{HERE}:{line('bad-state') - 1}" in msg and "fix:" in msg


class BadSum(Population):
    n = Param("n", default=3, lo=2)
    agent = Enum("x", "y")

    def delta(self, u, v):
        return {(u, v): Fraction(1, 2), ("y", "y"): Fraction(1, 3)}


def test_probabilities_not_summing_to_one():
    with pytest.raises(SpecError, match=r"BadSum.delta\('x', 'x'\): the probabilities sum to 5/6"):
        BadSum()


class Crashes(Population):
    n = Param("n", default=3, lo=2)
    agent = Int(0, 2)

    def delta(self, u, v):
        return u // (v - 1), v  # crash-here


def test_delta_that_raises():
    with pytest.raises(SpecError) as e:
        Crashes()
    assert "Crashes.delta(0, 1) raised ZeroDivisionError" in str(e.value)
    assert f"{HERE}:{line('crash-here')}" in str(e.value)


def test_cli_reports_bad_population_input_without_traceback(cli):
    r = cli("analyze", "phase_clock", "-p", "n=1")
    assert r.code == 2 and "below its minimum 2" in r.err and "Traceback" not in r.err
    r = cli("analyze", f"{HERE}:BadSum")
    assert r.code == 2 and "probabilities sum to 5/6" in r.err and "Traceback" not in r.err
    r = cli("check", f"{HERE}:OutOfType")
    assert r.code == 2 and "not a value of the agent type" in r.err


def test_rule_table_with_input_changes_equals_mixing_delta_over_the_changed_inputs():
    """The table is built with delta run once per pair; it must equal the definition: the initiator's
    input changes first (probabilities from input_change), then delta, outcomes summed."""
    from lockstep.specs.adaptive_majority import AdaptiveMajority

    p = AdaptiveMajority(n=5, m=2, a=2, b=1)
    calls = []
    for u in p.states[::7]:
        x = p.input(u)
        variants = [(u, 1 - sum(p.input_change(x).values()))] + [(p.with_input(u, y), w) for y, w in p.input_change(x).items()]
        for v in p.states[::11]:
            want: dict[tuple[int, int], Fraction] = {}
            for u0, w in variants:
                a2, b2 = p.delta(u0, v)
                key = (p.index[a2], p.index[b2])
                want[key] = want.get(key, 0) + w
            got = {(a2, b2): pr for a2, b2, pr in p.outcomes[p.index[u] * p.Q + p.index[v]]}
            assert got == {k: w for k, w in want.items() if w}
            calls.append(len(got))
    assert max(calls) == 3 and sum(calls) > 100  # stays, or gains one of the two other inputs


def test_configuration_moves_are_built_on_first_use():
    p = PhaseClock(n=3, m=2)
    assert p._moves_cache is None
    assert len(list(p.next(p.configuration({0: 3})))) > 0 and p._moves_cache is not None
