"""Exact Markov-chain analysis, the batched simulator, statistical checks and their commands."""

from __future__ import annotations

import itertools
import math
import os
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from sympy import Rational

from lockstep.checker.probabilistic import analysis, dtmc, exact, smc
from lockstep.checker.probabilistic.batched import Simulator, auto_method
from lockstep.specs.adaptive_majority import AdaptiveMajority, AdaptiveMajorityNoReset
from lockstep.specs.lang import Int, Param, SpecError
from lockstep.specs.lang.population import Population, start
from lockstep.specs.phase_clock import PhaseClock, PhaseClockNoResync
from tests.specs.test_population import Coin, Epidemic


def test_epidemic_hitting_time_has_the_closed_form():
    # k infected: a new infection needs an infected initiator and a susceptible responder,
    # probability k(n-k)/(n(n-1)); so E[T] = sum_k n(n-1)/(k(n-k)) = 50/3 for n = 5
    p = Epidemic(n=5)
    chain = dtmc.build(p)
    done = chain.mask("all_infected")
    start = int(chain.starts[0])
    assert exact.hitting_times(chain, done)[start] == Rational(50, 3)
    assert analysis.hitting_times(chain, done)[start] == pytest.approx(50 / 3, rel=1e-12)


def test_randomized_rule_exact_hitting_time():
    # from all heads, a tails appears when (H, H) meet (always) and the coin says so (1/3): geometric
    chain = dtmc.build(Coin(n=3))
    assert exact.hitting_times(chain, chain.mask("some_tails"))[int(chain.starts[0])] == 3


def agent_level_holding_time(n: int, m: int) -> float:
    """The phase clock's expected holding time from all-zero, on the chain over *ordered agent tuples*
    (no counting abstraction), solved densely: an independent check of the configuration chain."""
    p = PhaseClock(n=n, m=m)
    states = list(itertools.product(range(p.M), repeat=n))
    index = {s: i for i, s in enumerate(states)}
    inside = [p.holds("synchronized", p.configuration(_counts(s))) for s in states]
    keep = [i for i, ok in enumerate(inside) if ok]
    pos = {i: k for k, i in enumerate(keep)}
    A = np.eye(len(keep))
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    for k, i in enumerate(keep):
        s = states[i]
        for a, b in pairs:
            t = list(s)
            t[a], t[b] = p.delta(s[a], s[b])
            j = pos.get(index[tuple(t)])
            if j is not None:
                A[k, j] -= 1 / len(pairs)
    h = np.linalg.solve(A, np.ones(len(keep)))
    return float(h[pos[index[(0,) * n]]])


def _counts(s: tuple[int, ...]) -> dict[int, int]:
    out: dict[int, int] = {}
    for q in s:
        out[q] = out.get(q, 0) + 1
    return out


def test_phase_clock_holding_time_exact_and_independently_confirmed():
    p = PhaseClock(n=3, m=2)
    chain = dtmc.build(p, "zero")
    inside = chain.mask("synchronized")
    z = chain.index_of(p.start_configurations("zero")[0])
    assert exact.holding_times(chain, inside)[z] == 83
    assert analysis.holding_times(chain, inside)[z] == pytest.approx(83, rel=1e-10)
    assert agent_level_holding_time(3, 2) == pytest.approx(83, rel=1e-10)


def test_phase_clock_stabilizes_from_every_configuration():
    p = PhaseClock(n=4, hours=8, m=2)
    chain = dtmc.build(p)
    assert chain.size == math.comb(4 + 16 - 1, 15) == 3876
    sync = chain.mask("synchronized")
    assert analysis.reach_probability(chain, sync).min() == pytest.approx(1.0)
    h = analysis.hitting_times(chain, sync)
    assert np.isfinite(h).all() and 0 < h.max() < 40 * 4


def test_seeded_bug_clock_never_synchronizes_from_some_configurations():
    p = PhaseClockNoResync(n=4, hours=8, m=2)
    chain = dtmc.build(p)
    sync = chain.mask("synchronized")
    x = analysis.reach_probability(chain, sync)
    never = np.flatnonzero(x == 0)
    assert len(never) == 140
    assert chain.describe(int(never[0])) == "{6: 1, 9: 1, 12: 1, 15: 1}"  # four lone agents, pairwise far
    assert np.allclose(chain.P.diagonal()[never], 1.0)  # silent: no interaction changes them
    assert not np.isfinite(analysis.hitting_times(chain, sync)).all()


def test_adaptive_majority_follows_a_switched_majority_and_the_seeded_bug_does_not():
    at = [0, 60, 240]
    for b, low in ((0, 0.99), (1, 0.6)):  # an undecided agent and two supporters of A; or A against B, 2 to 1
        good, bad = [], []
        for cls, out in ((AdaptiveMajority, good), (AdaptiveMajorityNoReset, bad)):
            chain = dtmc.build(cls(n=3, m=2, b=b, churn=0), "switched")
            pi0 = np.zeros(chain.size)
            pi0[chain.starts] = 1
            out.extend(analysis.transient(chain, pi0, at) @ chain.mask("correct"))
        assert good[0] == 0 and good[1] > low and good[2] > low
        assert bad == [0, 0, 0]


def test_adaptive_majority_undecided_inputs_appear_and_disappear_at_rate_one_over_n():
    p = AdaptiveMajority(n=10, m=2, a=4, b=2)
    assert p.law == {"A": Fraction(2, 5), "B": Fraction(1, 5), "U": Fraction(2, 5)}
    assert p.input_change("U") == {"A": Fraction(1, 25), "B": Fraction(1, 50)}  # (1/n)·law
    assert p.input_change("A") == {"B": Fraction(1, 50), "U": Fraction(1, 25)}
    q = p.make(2, "U", "U", "B")  # an undecided agent in the vote stage
    outs = p.outcomes[p.index[q] * p.Q + p.index[q]]
    assert sum(pr for _, _, pr in outs) == 1 and len(outs) == 3  # stays undecided, or gains A or B
    switched = p.start_configurations("switched")[0]
    view = p.view(switched)
    assert view.count(lambda s: s.input == "U") == 4 and view.count(lambda s: s.output == "B") == 10
    assert p.majority(view) == "A" and not p.holds("correct", switched)
    with pytest.raises(SpecError, match="a \\+ b = 11 supporters exceed n = 10"):
        AdaptiveMajority(n=10, a=6, b=5)


@pytest.mark.parametrize("a, b", [(1, 0), (3, 1)])
def test_a_small_supported_majority_among_undecided_agents_is_followed(a, b):
    """n = 30, m = 10: one supporter of A (or three against one), the other agents undecided: the outputs
    reach the majority in every run. From `switched` (the clocks just past the reset hour) that takes
    the rest of the cycle and then reset, vote and commit again: 6m parallel time, plus the commit's spread."""
    p = AdaptiveMajority(n=30, a=a, b=b, churn=0)
    assert p.m == 10
    correct = lambda c: p.holds("correct", c)
    times = [Simulator(p, p.start_configurations("switched")[0], seed=s).run_until(correct, 40 * p.M * 30, every=10)
             for s in range(8)]
    assert all(t is not None for t in times)
    assert 6 * p.m <= np.median(times) / 30 < 6 * p.m + 3


def test_the_seeded_bugs_are_caught_by_their_documented_commands_at_default_parameters(cli):
    r = cli("analyze", "adaptive_majority_buggy", "--measure", "reach")
    assert r.code == 1 and "lowest over the start configurations: 0," in r.out
    r = cli("check", "phase_clock_buggy")
    assert r.code == 1 and "deadlock" in r.out
    r = cli("analyze", "phase_clock_buggy", "--measure", "reach")
    assert r.code == 1
    r = cli("check", "phase_clock")
    assert r.code == 0 and "816 distinct states" in r.out


@pytest.mark.slow
def test_logarithmic_support_among_undecided_agents_is_followed_and_kept():
    """n = 2000, 4·ln n = 31 supporters of A against 15 of B, 1954 undecided, churn 1/n: from `switched` the
    outputs follow in about 6m parallel time, then stay correct at most checks over ten cycles."""
    n = 2000
    p = AdaptiveMajority(n=n, m=math.ceil(math.log2(n)), a=math.ceil(4 * math.log(n)), b=15)
    correct = lambda c: p.holds("correct", c)
    follow, kept = [], []
    for seed in range(6):
        sim = Simulator(p, p.start_configurations("switched")[0], seed=seed)
        t = sim.run_until(correct, 20 * p.M * n, every=n // 50)
        follow.append(math.inf if t is None else t / n)
        ok = []
        sim.run(10 * p.M * n, every=n, observe=lambda s: ok.append(correct(s.config())))
        kept.append(np.mean(ok))
    assert 6 * p.m <= np.median(follow) < 6 * p.m + 10
    assert np.mean(kept) > 0.9


@pytest.mark.slow
def test_the_correct_adaptive_majority_reaches_the_majority_at_default_parameters(cli):
    r = cli("analyze", "adaptive_majority", "--measure", "reach")
    assert r.code == 0 and "230,355 configurations" in r.out
    assert "every start configuration reaches it with probability 1" in r.out


# ------------------------------------------------------------------------------ simulation


@pytest.mark.parametrize("method", ["batched", "agents"])
def test_simulators_match_the_exact_transient_distribution(method):
    p = PhaseClock(n=6, m=2)
    chain = dtmc.build(p, "spread_out")
    start = p.start_configurations("spread_out")[0]
    pi0 = np.zeros(chain.size)
    pi0[chain.index_of(start)] = 1
    T, runs = 9, 6000
    expected = analysis.transient(chain, pi0, [T])[0] * runs
    observed = np.zeros(chain.size)
    sim = Simulator(p, start, seed=11, method=method)
    for _ in range(runs):
        sim.reset(start)
        sim.run(T)
        observed[chain.index_of(sim.config())] += 1
    big = expected >= 5
    obs = np.append(observed[big], runs - observed[big].sum())
    exp = np.append(expected[big], runs - expected[big].sum())
    assert stats.chisquare(obs, exp).pvalue > 0.001


class Cyclic(Population):
    """Three states on a cycle: an initiator converts a responder one step behind it, and of two equal
    agents the responder moves on with probability 1/4 (a randomized rule)."""

    n = Param("n", default=30, lo=2)
    agent = Int(0, 2)

    def delta(self, u, v):
        if u == v:
            return {(u, (u + 1) % 3): Fraction(1, 4), (u, v): Fraction(3, 4)}
        return (u, u) if v == (u - 1) % 3 else (u, v)

    @start
    def lopsided(self):
        return {0: self.n - 2, 1: 1, 2: 1}


class Pairs(Population):
    """Agents start in 0, 1 or 2; an interaction of two of them turns the initiator into 3 + 3·u + v,
    which names the ordered pair of states that met."""

    n = Param("n", default=4, lo=2)
    agent = Int(0, 11)

    def delta(self, u, v):
        return (3 + 3 * u + v, v) if u < 3 and v < 3 else (u, v)

    @start
    def thirds(self):
        return {0: self.n // 2, 1: self.n // 4, 2: self.n - self.n // 2 - self.n // 4}


def simulated_vs_exact(p: Population, start: str, T: int, runs: int, **how) -> tuple[float, float, np.ndarray]:
    """Runs of T interactions from `start` against the exact transient distribution after T: the
    chi-square p-value over configurations (those expected fewer than 5 times lumped together), the
    z-score of the mean count of state 0, and the exact distribution."""
    chain = dtmc.build(p, start)
    first = p.start_configurations(start)[0]
    pi0 = np.zeros(chain.size)
    pi0[chain.index_of(first)] = 1
    exact_pi = analysis.transient(chain, pi0, [T])[0]
    observed = np.zeros(chain.size)
    sim = Simulator(p, first, seed=7, **how)
    for _ in range(runs):
        sim.reset(first)
        sim.run(T)
        observed[chain.index_of(sim.config())] += 1
    expected = exact_pi * runs
    big = expected >= 5
    obs = np.append(observed[big], runs - observed[big].sum())
    exp = np.append(expected[big], runs - expected[big].sum())
    zeros = chain.configs[:, 0].astype(float)
    mean, var = exact_pi @ zeros, exact_pi @ zeros**2 - (exact_pi @ zeros) ** 2
    z = (observed @ zeros / runs - mean) / math.sqrt(var / runs)
    return stats.chisquare(obs, exp).pvalue, z, exact_pi


@pytest.mark.parametrize("how", [{"method": "batched"}, {"method": "batched", "max_batch": 2}, {"method": "agents"}])
def test_batches_with_collisions_and_a_randomized_rule_match_the_exact_chain(how):
    """n = 30: batches of about 3.5 interactions, so 150 interactions hold dozens of batches and their
    collisions. Each check fails a correct simulator with probability 0.001."""
    pvalue, z, _ = simulated_vs_exact(Cyclic(n=30), "lopsided", 150, 4000, **how)
    assert pvalue > 0.001 and abs(z) < 3.29


def test_long_batches_match_the_exact_epidemic():
    """n = 1000: batches of about 20 interactions, agents labelled through a guide table of many
    blocks; after 4n interactions the number infected is spread widely."""
    pvalue, z, exact_pi = simulated_vs_exact(Epidemic(n=1000), "one", 4000, 3000, method="batched")
    assert (exact_pi > 0.01).sum() > 20  # a wide distribution, not a settled one
    assert pvalue > 0.001 and abs(z) < 3.29


def test_batches_beyond_32_bit_labels_pick_uniform_ordered_pairs():
    """n = 2³³ + 5: one interaction names the ordered pair of states that met; over 20,000 runs their
    frequencies follow c[u]·(c[v] − [u = v]) / (n(n − 1)) (chi-square, failing with probability 0.001)."""
    p = Pairs(n=2**33 + 5)
    first = p.start_configurations("thirds")[0]
    c = np.array(first[:3], dtype=float)
    n = float(p.n)
    expected = np.array([c[u] * (c[v] - (u == v)) / (n * (n - 1)) for u in range(3) for v in range(3)])
    sim = Simulator(p, first, seed=3)
    assert sim.method == "batched"
    seen = np.zeros(9)
    for _ in range(20_000):
        sim.reset(first)
        sim.batch(1)
        seen[int(np.flatnonzero(sim.counts[3:])[0])] += 1
    assert stats.chisquare(seen, expected * 20_000).pvalue > 0.001


def test_a_run_is_determined_by_its_seed_and_the_method_by_the_size():
    p = PhaseClock(n=5000, m=3)
    for method in ("agents", "batched"):
        ends = set()
        for _ in range(2):
            sim = Simulator(p, p.start_configurations("spread_out")[0], seed=42, method=method)
            sim.run(20_000)
            ends.add(sim.config())
        assert len(ends) == 1
    assert auto_method(2_500_000, 160) == "agents" and auto_method(2_500_000, 300) == "batched"  # 1 or 2 bytes per agent
    assert auto_method(10**7, 16) == "batched" and auto_method(10**4, 16, track=True) == "batched"


@pytest.mark.parametrize("how", [{"max_batch": 1}, {"method": "agents"}])
def test_simulated_mean_hitting_time_agrees_with_the_exact_value(how):
    p = PhaseClock(n=5, m=2)
    chain = dtmc.build(p, "spread_out")
    start = p.start_configurations("spread_out")[0]
    exact_h = analysis.hitting_times(chain, chain.mask("synchronized"))[chain.index_of(start)]
    test = lambda c: p.holds("synchronized", c)
    times = [Simulator(p, start, seed=s, **how).run_until(test, 10**6) for s in range(1500)]
    mean, half = smc.mean_interval(times, 0.999)
    assert abs(mean - exact_h) <= half


@pytest.mark.parametrize("how", [{"max_batch": 1}, {"method": "agents"}])
def test_simulated_holding_time_agrees_with_the_exact_83(how):
    p = PhaseClock(n=3, m=2)
    lost = lambda c: not p.holds("synchronized", c)
    times = [Simulator(p, {0: 3}, seed=s, **how).run_until(lost, 10**6) for s in range(800)]
    mean, half = smc.mean_interval(times, 0.999)
    assert abs(mean - 83) <= half


def test_tracked_batches_record_every_state_held_during_the_batch():
    """touched ⊇ the states held before and after each batch; with one interaction per batch it is
    exactly their union, and a holding time bounded with it is never later than between batches."""
    p = PhaseClock(n=400, m=3)
    for max_batch in (None, 1):
        sim = Simulator(p, p.start_configurations("spread_out")[0], seed=5, max_batch=max_batch, track=True)
        for _ in range(300):
            before = sim.counts > 0
            sim.batch(10**9)
            after = sim.counts > 0
            assert (sim.touched >= (before | after)).all()
            if max_batch == 1:
                assert (sim.touched == (before | after)).all()
    assert Simulator(p, {0: 400}, seed=1).touched is None  # only when asked for


@pytest.mark.parametrize("method", ["batched", "agents"])
def test_input_changes_in_the_simulator(method):
    p = AdaptiveMajority(n=30, m=2, b=10, churn=0)
    sim = Simulator(p, p.start_configurations("settled")[0], seed=3, method=method)
    assert sim.fractions(p.input) == pytest.approx({"A": 2 / 3, "B": 1 / 3})
    assert sim.change_inputs("A", "B", 15) == 15
    assert sim.fractions(p.input) == pytest.approx({"A": 1 / 6, "B": 5 / 6})
    assert sim.change_inputs("A", "B", 100) == 5  # only five agents still hold A
    assert sim.counts.sum() == 30
    sim.run(3000)
    if method == "agents":  # the agents hold exactly the configuration
        assert np.bincount(sim._agents, minlength=p.Q).tolist() == sim.counts.tolist()


def test_statistics():
    lo, hi = smc.clopper_pearson(0, 10, 0.95)
    assert lo == 0 and hi == pytest.approx(0.3085, abs=1e-4)  # the textbook 0/10 interval
    assert smc.hoeffding_runs(0.01, 0.001) == 38005
    ok = smc.sprt(lambda: True, 0.99, 0.005, 0.001, 0.001, 5000)
    assert ok.holds is True and ok.runs < 2000
    rng = np.random.default_rng(0)
    bad = smc.sprt(lambda: rng.random() < 0.9, 0.99, 0.005, 0.001, 0.001, 5000)
    assert bad.holds is False


# ------------------------------------------------------------------------------ commands


def test_analyze_command(cli):
    r = cli("analyze", "phase_clock", "-p", "n=3", "-p", "m=2", "--measure", "holding-time", "--start", "zero", "--exact")
    assert r.code == 0 and "exact value from {0: 3}: 83" in r.out
    r = cli("analyze", "phase_clock_buggy", "-p", "n=4", "-p", "hours=8", "-p", "m=2", "--measure", "reach")
    assert r.code == 1 and "140 never do" in r.out
    r = cli("analyze", "phase_clock_buggy", "-p", "n=4", "-p", "hours=8", "-p", "m=2")
    assert r.code == 1 and "probability below 1" in r.out
    r = cli("analyze", "phase_clock", "-p", "n=12")
    assert r.code == 2 and "15,338,678,264 configurations" in r.err and "lockstep simulate phase_clock" in r.err
    r = cli("analyze", "two_phase")
    assert r.code == 2 and "not a population protocol" in r.err
    r = cli("analyze", "phase_clock", "--measure", "transient")
    assert r.code == 2 and "needs --at" in r.err
    r = cli("analyze", "phase_clock", "--measure", "reach", "--exact")
    assert r.code == 2 and "--exact applies to" in r.err


def test_simulate_command(cli, tmp_path):
    out = tmp_path / "run.png"
    r = cli("simulate", "phase_clock", "-p", "n=200", "--start", "spread_out", "--runs", "5", "--plot", str(out))
    assert r.code == 0 and "synchronized reached in 5 of 5 runs" in r.out
    assert out.exists() and out.read_bytes()[:4] == b"\x89PNG" and os.path.getsize(out) > 10_000
    r = cli("simulate", "phase_clock", "-p", "n=100", "--start", "spread_out", "--runs", "2", "--within", "20",
            "--prob", "0.9")
    assert r.code == 0 and "the claim holds at confidence 0.999" in r.out
    r = cli("simulate", "phase_clock", "-p", "n=3", "-p", "m=2", "--start", "zero", "--leave", "--sequential", "--runs", "50",
            "--time", "2000")
    assert r.code == 0 and "synchronized left in 50 of 50 runs" in r.out and "holding time: mean" in r.out
    r = cli("simulate", "phase_clock_buggy", "-p", "n=4", "-p", "hours=8", "-p", "m=2", "--start", "spread_out",
            "--runs", "2", "--within", "20", "--prob", "0.9")
    assert r.code == 1 and "synchronized reached in 0 of 2 runs" in r.out and "the claim is rejected" in r.out
    r = cli("simulate", "phase_clock", "-p", "n=100", "--start", "every_configuration")
    assert r.code == 2 and "cannot be simulated" in r.err
    with pytest.raises(SystemExit) as e:
        cli("simulate", "phase_clock", "--within", "-1")
    assert e.value.code == 2


# ------------------------------------------------------------------------------ slow cases


@pytest.mark.slow
def test_exact_stabilization_from_all_475020_configurations():
    p = PhaseClock(n=6)
    chain = dtmc.build(p)
    assert chain.size == math.comb(6 + 24 - 1, 23) == 475020
    sync = chain.mask("synchronized")
    assert analysis.reach_probability(chain, sync).min() == pytest.approx(1.0)
    assert np.isfinite(analysis.hitting_times(chain, sync)).all()


@pytest.mark.slow
def test_batched_simulator_matches_the_exact_chain_with_long_batches():
    # n = 40: batches of several interactions and collisions; the distribution of the number of
    # agents at each counter after 200 interactions, against the exact transient distribution
    p = PhaseClock(n=40, hours=4, m=1)
    chain = dtmc.build(p, "zero", limit=3_000_000)
    start = p.start_configurations("zero")[0]
    pi0 = np.zeros(chain.size)
    pi0[chain.index_of(start)] = 1
    T, runs = 200, 20000
    expected = analysis.transient(chain, pi0, [T])[0] * runs
    observed = np.zeros(chain.size)
    sim = Simulator(p, start, seed=5, method="batched")
    for _ in range(runs):
        sim.reset(start)
        sim.run(T)
        observed[chain.index_of(sim.config())] += 1
    big = expected >= 5
    obs = np.append(observed[big], runs - observed[big].sum())
    exp = np.append(expected[big], runs - expected[big].sum())
    assert stats.chisquare(obs, exp).pvalue > 0.001


@pytest.mark.slow
def test_statistical_claim_recovery_within_5_n_ln_n_at_n_10000(cli):
    r = cli("simulate", "phase_clock", "-p", "n=10000", "--start", "spread_out", "--runs", "3", "--within", "5")
    assert r.code == 0 and "the claim holds at confidence 0.999" in r.out
