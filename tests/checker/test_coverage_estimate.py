"""Coverage of random walks: distinct states and variable values (exact, then HyperLogLog), and the Good–Turing
estimate of the unseen mass, checked against the exact distribution of the walks on specs whose whole state
space is known (TLC's counts): its 95 % interval brackets the true mass seen, and both drop as walks are added."""

from __future__ import annotations

import json

import numpy as np
from scipy import sparse

import lockstep.checker.simulation.seen as seen_module
from lockstep.checker.loader import load_model
from lockstep.checker.simulation import simulate, tally
from lockstep.checker.simulation.seen import M64, HyperLogLog, summarise, value_hashers

DEPTH = 30
KNOWN = [("two_phase", {"rm": 3}, 288), ("tcommit", {}, 34), ("filter_lock", {}, 705)]  # TLC, TLC, a hand-written BFS


def state_graph(model):
    """(fingerprints, successor lists with multiplicity, initial indices) of the whole reachable state space."""
    index: dict[int, int] = {}
    states, succ = [], []

    def add(st) -> int:
        f = model.fingerprint(st) & M64
        if f not in index:
            index[f] = len(states)
            states.append(st)
        return index[f]

    inits = [add(s) for s in model.initial_states()]
    i = 0
    while i < len(states):
        succ.append([add(t) for _, t in model.successors(states[i])])
        i += 1
    return index, succ, inits


def visit_probabilities(succ, inits, depth) -> np.ndarray:
    """The probability that a walk (uniform initial state, uniform successor, `depth` steps, ending where no step
    is possible) visits each state: the hitting probabilities within `depth` steps, from the initial states."""
    n = len(succ)
    rows, cols, vals = [], [], []
    for x, out in enumerate(succ):
        for y in out:
            rows.append(x)
            cols.append(y)
            vals.append(1.0 / len(out))
    p = sparse.csr_matrix((vals, (rows, cols)), shape=(n, n))
    hit = np.zeros((n, n))
    for _ in range(depth + 1):
        hit = p @ hit
        np.fill_diagonal(hit, 1.0)
    start = np.zeros(n)
    for i in inits:
        start[i] += 1.0 / len(inits)
    return start @ hit


def test_the_unseen_mass_interval_brackets_the_true_mass_and_drops_as_walks_grow():
    """Three specs, 10, 40 and 160 walks, five seeds each: the true unseen mass (from the exact visit
    probabilities of the walks over the whole state space) is inside the 95 % interval in at least 40 of the 45
    cases (41 at the time of writing; 95 % of them on average over many seeds), and the estimate and the truth
    both drop as walks are added."""
    bracketed, cases = 0, 0
    for spec, params, size in KNOWN:
        model = load_model(spec, params)
        index, succ, inits = state_graph(model)
        assert len(index) == size  # the spec's known state count
        pi = visit_probabilities(succ, inits, DEPTH)
        names = value_hashers(model)[0]
        estimates, truths = [], []
        for runs in (10, 40, 160):
            got, true = [], []
            for seed in range(1, 6):
                t = tally(model, range(runs), DEPTH, seed, deadlock=False)
                s = summarise([t.seen], names)
                seen = np.zeros(size, dtype=bool)
                seen[[index[int(f)] for f in t.seen["fps"]]] = True
                assert s.exact and s.walks == runs and s.distinct == int(seen.sum())
                true_unseen = float(pi[~seen].sum() / pi.sum())
                bracketed += s.low <= true_unseen <= s.high
                cases += 1
                got.append(s.unseen)
                true.append(true_unseen)
            estimates.append(np.mean(got))
            truths.append(np.mean(true))
        assert estimates[0] > estimates[1] > estimates[2] and truths[0] > truths[1] > truths[2], (spec, estimates)
    assert bracketed >= 40, f"{bracketed} of {cases} intervals bracket the true unseen mass"


def test_per_variable_values_are_those_of_the_state_space_once_every_state_is_seen():
    model = load_model("tcommit", {})
    res = simulate(model, 400, DEPTH, seed=2, deadlock=False)
    index, succ, inits = state_graph(model)
    assert res.seen.distinct == len(index) == 34 and res.seen.unseen == 0.0
    states = [model.initial_states()[0]]
    seen_states = {model.fingerprint(states[0]): states[0]}
    for st in states:
        for _, t in model.successors(st):
            if model.fingerprint(t) not in seen_states:
                seen_states[model.fingerprint(t)] = t
                states.append(t)
    names, hashes = value_hashers(model)
    expected = {n: len({hashes(st)[i] for st in states}) for i, n in enumerate(names)}
    assert {n: c for n, (c, exact) in res.seen.values.items()} == expected
    assert all(exact for _c, exact in res.seen.values.values())


def test_hyperloglog_counts_within_its_error():
    rng = np.random.default_rng(7)
    values = rng.integers(0, 2**63, size=200_000, dtype=np.uint64)
    hll = HyperLogLog()
    hll.add(values[:120_000])
    other = HyperLogLog()
    other.add(values[80_000:])
    hll.merge(other)
    assert abs(hll.estimate() - 200_000) / 200_000 < 0.04  # 0.8 % standard error
    small = HyperLogLog()
    small.add(values[:500])
    assert abs(small.estimate() - 500) <= 10  # linear counting for small sets


def test_beyond_the_exact_bound_the_counts_are_sampled_the_same_way_whatever_the_workers(monkeypatch):
    model = load_model("two_phase", {"rm": 3})
    exact = simulate(model, 600, DEPTH, seed=2, deadlock=False).seen
    monkeypatch.setattr(seen_module, "EXACT", 40)
    monkeypatch.setattr(seen_module, "VALUES", 4)
    one = simulate(model, 600, DEPTH, seed=2, deadlock=False).seen
    two = simulate(model, 600, DEPTH, seed=2, deadlock=False, workers=2).seen
    assert one == two
    assert not one.exact and one.sample > 0 and abs(one.distinct - exact.distinct) <= 0.05 * exact.distinct
    assert one.incidences == exact.incidences and one.walks == exact.walks
    assert not one.values["rm_state"][1] and one.values["tm_state"] == exact.values["tm_state"]


def test_simulate_prints_and_writes_the_estimate(cli, tmp_path):
    out = tmp_path / "cov.json"
    r = cli("simulate", "two_phase", "--runs", "200", "--depth", "30", "--no-deadlock", "--quiet", "--coverage", str(out))
    assert r.code == 0, r.out
    assert "unseen mass (Good–Turing)" in r.out and "distinct values per variable: rm_state" in r.out
    data = json.loads(out.read_text())
    states = data["states"]
    assert states["walks"] == 200 and states["distinct_exact"] is True
    assert 0 <= states["unseen_mass"]["low"] <= states["unseen_mass"]["estimate"] <= states["unseen_mass"]["high"]
    assert set(states["variables"]) == {"rm_state", "tm_state", "tm_prepared", "msgs"}


def test_a_plain_spec_s_variables_are_the_fields_of_its_states():
    from tests.conftest import model_path

    res = simulate(load_model(model_path("plain_named.py"), {}), 300, DEPTH, seed=1, deadlock=False)
    assert res.seen.distinct == 12 and res.seen.values == {"x": (4, True), "y": (3, True)}
