"""Liveness under fairness: known verdicts, lasso counterexamples that replay, and a brute-force oracle."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.checker.explicit import Options, check
from lockstep.checker.liveness import check_properties, lasso_violates
from lockstep.checker.loader import load_model
from lockstep.checker.replay import replay
from lockstep.checker.temporal import fairness, select
from lockstep.checker.trace import Trace, TraceError
from lockstep.specs.lang import SpecError
from lockstep.specs.lang.temporal import Temporal
from tests.conftest import model_path

WORKER = model_path("fair_worker.py") + ":Worker"
TICKER = model_path("plain_ticker.py")


def verdict(spec: str, prop: str, overrides: dict | None = None, deadlock: bool = True, **params: int):
    model = load_model(spec, params)
    p = select(model, prop)
    fair = fairness(model, overrides)
    res = check_properties(model, [p], fair, Options(deadlock=deadlock))
    if res.violation is not None and res.violation.kind == "temporal":
        trace = res.violation.trace
        assert trace.loop is not None
        states = [_state(model, s) for s in trace.steps]
        lids = [None] + [_lid(model, a, b) for a, b in zip(states, states[1:])]
        assert lasso_violates(model, p, fair, states, lids, trace.loop) is None
    return res


def _state(model, step):
    return next(s for s in _all_states(model) if model.encode_state(s) == step.state)


def _all_states(model):
    seen, todo = set(), list(model.initial_states())
    while todo:
        s = todo.pop()
        if s not in seen:
            seen.add(s)
            todo.extend(t for _, t in model.successors(s))
    return seen


def _lid(model, a, b):
    return next(lid for lid, t in model.successors(a) if t == b)


# ------------------------------------------------------------------------------ EWD 840


def test_ewd840_matches_tlc_and_liveness_holds():
    """TLC on EWD840 with N = 3: 302 distinct states; Liveness holds under WF(System)."""
    res = verdict("ewd840", "Liveness", deadlock=False)
    assert (res.verdict, res.distinct) == ("holds", 302)
    safety = check(load_model("ewd840"), Options(deadlock=False))
    assert (safety.verdict, safety.distinct, safety.depth) == ("holds", 302, 9)


def test_ewd840_liveness_needs_the_token_to_move():
    """Without WF(System) the token may stop: a lasso where every node is passive and nothing happens."""
    res = verdict("ewd840", "Liveness", {"system": "none"}, deadlock=False)
    v = res.violation
    assert res.verdict == "violation" and v.kind == "temporal" and v.name == "Liveness"
    last = v.trace.steps[-1].shown
    assert last["active"] == "{0: False, 1: False, 2: False}" and v.trace.loop == len(v.trace.steps) - 1


def handwritten_ewd840(n: int) -> tuple[int, int, int]:
    """EWD840 as a hand-written tuple BFS (shares no code with Lockstep): (active, color, tpos, tcolor), 1 = black."""
    from bench.handwritten import bfs

    def successors(s):
        act, col, t, tc = s
        if t == 0 and (tc or col[0]):
            yield (act, (0,) + col[1:], n - 1, 0)
        if t != 0 and (not act[t] or col[t] or tc):
            yield (act, col[:t] + (0,) + col[t + 1:], t - 1, 1 if col[t] else tc)
        for i in range(n):
            if act[i]:
                for j in range(n):
                    if j != i:
                        c = col[:i] + (1,) + col[i + 1:] if j > i else col
                        yield (act[:j] + (1,) + act[j + 1:], c, t, tc)
                yield (act[:i] + (0,) + act[i + 1:], col, t, tc)

    bits = list(itertools.product((0, 1), repeat=n))
    return bfs([(a, c, t, 1) for a in bits for c in bits for t in range(n)], successors)


def test_ewd840_counts_agree_with_a_handwritten_bfs():
    for n in (3, 4):
        res = check(load_model("ewd840", {"n": n}), Options(deadlock=False))
        assert (res.distinct, res.generated, res.depth) == handwritten_ewd840(n)
    assert handwritten_ewd840(3)[0] == 302


def test_ewd840_with_per_node_fairness_instead_of_the_family():
    """Weak fairness of each token-passing action separately is as good as WF(System) here."""
    res = verdict("ewd840", "Liveness", {"initiate_probe": "weak", "pass_token": "weak"}, deadlock=False)
    assert res.verdict == "holds"


def test_ewd840_seeded_bug_breaks_the_invariant():
    res = check(load_model("ewd840_unstained"), Options(deadlock=False))
    assert res.verdict == "violation" and res.violation.name == "Inv"
    assert [s.label for s in res.violation.trace.steps[1:]] == ["initiate_probe", "pass_token(i=2)"]


# ------------------------------------------------------------------------------ weak fairness


def test_weak_fairness_makes_the_worker_finish():
    assert verdict(WORKER, "finishes").verdict == "holds"
    assert verdict(WORKER, "stays_done").verdict == "holds"
    assert verdict(WORKER, "clock_goes_round").verdict == "holds"


def test_without_weak_fairness_the_clock_ticks_for_ever():
    res = verdict(WORKER, "finishes", {"finish": "none"})
    v = res.violation
    assert res.verdict == "violation"
    loop = v.trace.steps[v.trace.loop + 1:]
    assert loop and all(s.label == "tick" for s in loop)  # a real cycle, not stuttering (tick is fair)
    assert all(s.shown["done"] == "False" for s in v.trace.steps)


def test_without_any_fairness_the_system_may_stop():
    res = verdict(WORKER, "clock_goes_round", {"tick": "none", "finish": "none"})
    assert res.verdict == "violation" and len(res.violation.trace.steps) == 1  # stutters in the initial state


def test_eventually_always_violated_by_a_cycle():
    res = verdict(WORKER, "clock_stops")
    v = res.violation
    assert res.verdict == "violation"
    assert any(s.shown["clock"] == "1" for s in v.trace.steps[v.trace.loop:])


# ------------------------------------------------------------------------------ strong fairness


def test_strong_fairness_prevents_starvation():
    assert verdict("lock", "no_starvation").verdict == "holds"
    assert verdict("lock", "no_starvation", n=3).verdict == "holds"
    assert verdict("lock", "lock_used_infinitely_often").verdict == "holds"


def test_weak_fairness_lets_a_process_starve():
    """acquire(0) is enabled only while the lock is free: WF does not force it, process 1 keeps the lock busy."""
    res = verdict("lock_weak", "no_starvation")
    v = res.violation
    assert res.verdict == "violation" and v.name == "no_starvation"
    loop = v.trace.steps[v.trace.loop:]
    assert all("'waiting'" in s.shown["pc"].split(",")[0] for s in loop)
    assert any(s.label == "acquire(p=1)" for s in loop)
    assert any(s.shown["locked"] == "False" for s in loop)  # acquire(0) is enabled in the loop, but not always


def test_starvation_without_fairness():
    res = verdict("lock", "no_starvation", {"acquire": "none", "request": "none", "release": "none"})
    assert res.verdict == "violation"
    assert res.violation.trace.steps[-1].shown["pc"].startswith("{0: 'waiting'")


# ------------------------------------------------------------------------------ plain specs


def test_plain_spec_fairness_and_properties():
    assert verdict(TICKER, "visits_two").verdict == "holds"
    assert verdict(TICKER, "two_forever").verdict == "holds"
    res = verdict(TICKER, "visits_two", {"step": "none"})
    assert res.verdict == "violation" and res.violation.trace.steps[-1].shown == {"state": "0"}


def test_plain_fairness_for_an_unknown_action_is_reported():
    with pytest.raises(SpecError, match="fairness is declared for action 'jump', but no step"):
        verdict(TICKER + ":Misdeclared", "visits_two")


# ------------------------------------------------------------------------------ traces and CLI


def test_lasso_trace_replays_with_its_loop(cli, tmp_path):
    out = tmp_path / "lasso.json"
    r = cli("check", "lock_weak", "--property", "no_starvation", "--out", str(out), "--quiet")
    assert r.code == 1 and "(back to state 1; the loop repeats for ever)" in r.out
    data = json.loads(out.read_text())
    assert data["loop"] == 1 and data["#meta"]["lockstep"]["property"]["kind"] == "temporal"
    r = cli("replay", str(out))
    assert r.code == 0 and "<- loop starts here" in r.out
    assert "a fair behaviour" in r.out and "violates no_starvation" in r.out


def test_replay_rejects_a_lasso_that_does_not_violate(tmp_path):
    """A lasso claimed for the lock's strongly fair spec is not fair there: replay says so."""
    res = verdict("lock_weak", "no_starvation")
    data = res.violation.trace.to_json()
    data["#meta"]["lockstep"]["spec"] = "lock"
    data["#meta"]["lockstep"]["spec_name"] = "Lock"
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TraceError, match=r"the loop is not fair: SF\(acquire\(p=0\)\)"):
        replay(Trace.load(str(path)))


def test_cli_liveness_holds_and_fails(cli):
    r = cli("check", "ewd840", "--property", "Liveness", "--no-deadlock", "--quiet")
    assert r.code == 0 and "302 distinct states" in r.out and "WF(family system)" in r.out
    r = cli("check", "ewd840", "--property", "Liveness", "--no-deadlock", "--fairness", "system=none", "--quiet")
    assert r.code == 1 and "temporal property Liveness (P ↝ Q) is violated" in r.out


def test_cli_bad_liveness_input(cli):
    r = cli("check", "lock", "--property", "nope")
    assert r.code == 2 and "no temporal property 'nope'" in r.err and "no_starvation" in r.err
    r = cli("check", "lock", "--property", "no_starvation", "--fairness", "deliver=weak")
    assert r.code == 2 and "no action or fairness family 'deliver'" in r.err and "acquire" in r.err
    r = cli("check", "lock", "--property", "no_starvation", "--fairness", "acquire=sometimes")
    assert r.code == 2 and "expected ACTION=weak" in r.err
    r = cli("check", "lock", "--fairness", "acquire=weak")
    assert r.code == 2 and "name one with --property" in r.err
    r = cli("check", "two_phase", "--property", "every_rm_decides", "--symmetry")
    assert r.code == 2 and "fairness per instance is not kept by symmetry reduction" in r.err
    assert "Traceback" not in r.out + r.err


def test_malformed_fairness_declarations(tmp_path, cli):
    spec = tmp_path / "bad_fair.py"
    spec.write_text("from lockstep.specs.lang import *\nclass B(Spec):\n    x = Var(Bool, init=False)\n"
                    "    @action(fairness='often')\n    def go(s):\n        s.x = True\n")
    r = cli("check", str(spec))
    assert r.code == 2 and "fairness='often' is not a kind of fairness" in r.err and "bad_fair.py:5" in r.err
    spec = tmp_path / "bad_family.py"
    spec.write_text("from lockstep.specs.lang import *\nclass B(Spec):\n    x = Var(Bool, init=False)\n"
                    "    @action(fairness='weak', family='f')\n    def go(s):\n        s.x = True\n"
                    "    @action(fairness='strong', family='f')\n    def stop(s):\n        s.x = False\n")
    r = cli("check", str(spec))
    assert r.code == 2 and "family 'f'" in r.err and "same fairness" in r.err
    spec = tmp_path / "bad_temporal.py"
    spec.write_text("from lockstep.specs.lang import *\nclass B(Spec):\n    x = Var(Bool, init=False)\n"
                    "    @action\n    def go(s):\n        s.x = True\n    @temporal\n    def p(s):\n        return s.x\n")
    r = cli("check", str(spec), "--property", "p")
    assert r.code == 2 and "not a temporal formula" in r.err


# ------------------------------------------------------------------------------ brute-force oracle


class RandomGraph:
    """A plain spec over states 0..n-1 with the given labelled edges."""

    def __init__(self, n, edges, fair, prop):
        self.n, self.edges = n, edges
        self.fairness = fair
        self.temporal = {"p": prop}

    def init(self):
        return [0]

    def next(self, state):
        return [((a, state, t), t) for s, a, t in self.edges if s == state]


def brute_force_violated(n, edges, fair, bad, region_of):
    """Whether some fair lasso violates: a reachable region state stuttering with nothing fair enabled, or a
    set of region edges, strongly connected, whose cycle satisfies every fairness constraint."""
    steps = [(s, (a, s, t), t) for s, a, t in edges if s != t]

    def constraint(label):
        kind = fair.get(label[0])
        return (kind, label) if kind else None

    enabled = {u: {constraint(lab) for s, lab, _ in steps if s == u} - {None} for u in range(n)}
    reach = _reachable_region(n, steps, region_of)
    if any(not enabled[u] and bad(u) for u in reach):
        return True
    inside = [e for e in steps if e[0] in reach and e[2] in reach]
    for k in range(1, len(inside) + 1):
        for chosen in itertools.combinations(inside, k):
            nodes = {e[0] for e in chosen} | {e[2] for e in chosen}
            if not _strongly_connected(nodes, chosen) or not any(bad(u) for u in nodes):
                continue
            taken = {constraint(lab) for _, lab, _ in chosen} - {None}
            ok = True
            for c in set().union(*(enabled[u] for u in nodes)):
                if c in taken:
                    continue
                if c[0] == "strong" or all(c in enabled[u] for u in nodes):
                    ok = False
            if ok:
                return True
    return False


def _reachable_region(n, steps, region_of):
    starts, region = region_of
    seen, todo = set(starts), list(starts)
    while todo:
        u = todo.pop()
        for s, _, t in steps:
            if s == u and t in region and t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def _strongly_connected(nodes, chosen):
    first = next(iter(nodes))
    for fwd in (True, False):
        seen, todo = {first}, [first]
        while todo:
            u = todo.pop()
            for s, _, t in chosen:
                a, b = (s, t) if fwd else (t, s)
                if a == u and b not in seen:
                    seen.add(b)
                    todo.append(b)
        if seen != nodes:
            return False
    return True


@st.composite
def graphs(draw):
    n = draw(st.integers(2, 4))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from("abc"), st.integers(0, n - 1)),
                          min_size=1, max_size=6, unique=True))
    fair = draw(st.dictionaries(st.sampled_from("abc"), st.sampled_from(["weak", "strong"])))
    kind = draw(st.sampled_from(["eventually", "always_eventually", "eventually_always", "leads_to"]))
    p = draw(st.frozensets(st.integers(0, n - 1)))
    q = draw(st.frozensets(st.integers(0, n - 1)))
    return n, edges, fair, kind, p, q


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_fair_cycle_search_agrees_with_brute_force(g):
    n, edges, fair, kind, p, q = g
    operands = (lambda s: s in p,) if kind != "leads_to" else (lambda s: s in p, lambda s: s in q)
    spec = RandomGraph(n, edges, fair, Temporal(kind, operands))
    from lockstep.checker.plain_model import PlainModel

    model = PlainModel(spec, "random", "RandomGraph", {})
    reach = _reachable_region(n, [(s, None, t) for s, _, t in edges], ([0], set(range(n))))
    used = {a for s, a, _ in edges if s in reach}
    spec.fairness = {a: k for a, k in fair.items() if a in used}
    prop = select(model, "p")
    res = check_properties(model, [prop], fairness(model), Options(deadlock=False))
    if kind == "eventually":
        region = {u for u in range(n) if u not in p}
        shape = (([0] if 0 in region else []), region), lambda u: True
    elif kind == "always_eventually":
        region = {u for u in reach if u not in p}
        shape = (list(region), region), lambda u: True
    elif kind == "eventually_always":
        shape = ([0], set(range(n))), lambda u: u not in p
    else:
        region = {u for u in reach if u not in q}
        shape = ([u for u in region if u in p], region), lambda u: True
    expected = brute_force_violated(n, edges, spec.fairness, shape[1], shape[0])
    assert (res.verdict == "violation") == expected


@pytest.mark.slow
def test_ewd840_larger_rings():
    """N = 4: 1566 distinct states (as TLC on the TLA+ Examples' JSON model); N = 5: 7742. Liveness holds."""
    for n, distinct in ((4, 1566), (5, 7742)):
        res = verdict("ewd840", "Liveness", deadlock=False, n=n)
        assert (res.verdict, res.distinct) == ("holds", distinct)
        assert verdict("ewd840", "Liveness", {"system": "none"}, deadlock=False, n=n).verdict == "violation"
