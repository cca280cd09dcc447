"""Autobahn BFT: the layout of tips and cuts, the invariants at small bounds (correct and Byzantine
variants), each seeded bug caught with its counterexample, and the counterexamples replayed."""

from __future__ import annotations

import inspect
import re
from collections import Counter

import pytest

import lockstep
from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model, resolve
from lockstep.checker.replay import replay
from lockstep.checker.trace import Trace
from lockstep.specs import autobahn
from lockstep.specs.autobahn.byzantine import acts
from lockstep.specs.autobahn.messages import Layout, Ref
from lockstep.specs.autobahn.params import Sizes
from lockstep.specs.lang import SpecError
from lockstep.specs.registry import SPECS

NAMES = sorted(n for n in SPECS if n.startswith("autobahn"))


def run(spec: str, max_depth: int | None = None, **params: int):
    return check(load_model(spec, params), Options(deadlock=False, max_depth=max_depth))


def _documented(spec: str, command: str = "check") -> list[str]:
    """The `lockstep COMMAND` line in a seeded bug's docstring, as the arguments of `lockstep`."""
    cls, _ = resolve(spec)
    (line,) = [ln.strip() for ln in inspect.getdoc(cls).splitlines() if ln.strip().startswith(f"lockstep {command} ")]
    return line.split()[1:]


def small(spec: str) -> dict[str, int]:
    """The bounds a seeded bug's exhaustive command sets (`-p NAME=VALUE`): the smallest that show the bug."""
    args = _documented(spec)
    return {k: int(v) for k, v in (args[i + 1].split("=") for i, a in enumerate(args) if a == "-p")}


def sizes(**over: int) -> Sizes:
    base = dict(f=1, slots=1, views=2, lanes=2, cars=2, k=1, proposals=2, fast=1, coverage=3, poa_quorum=0,
                quorum=0, tc_quorum=0, fast_quorum=0, override=1, offset=0, vote_after_timeout=0, fetch=1,
                double_vote=0, gst=0)
    return Sizes({**base, **over})


# ------------------------------------------------------------------------------ the model's pieces


def test_every_variant_is_registered_and_the_package_cites_its_sources():
    assert NAMES == ["autobahn", "autobahn_byzantine", "autobahn_double_vote", "autobahn_no_override",
                     "autobahn_quorum_2f", "autobahn_weak_fast_path", "autobahn_weak_poa", "autobahn_wrong_tc_quorum"]
    for name in NAMES:
        cls, _ = resolve(name)
        assert issubclass(cls, autobahn.Autobahn) and inspect.getdoc(cls)
    doc = autobahn.__doc__
    for needle in ("SOSP 2024", "arXiv 2401.10369", "autobahn-artifact", "Simplified", "Out of scope", "after GST",
                   "[D]", "[V]"):
        assert needle in doc


def test_quorum_sizes_default_to_the_papers():
    z = sizes(f=2)
    assert (z.n, z.poa, z.quorum, z.tc_quorum, z.fast_quorum, z.validity) == (7, 3, 5, 5, 7, 3)
    assert sizes(fast_quorum=3).fast_quorum == 3 and sizes(poa_quorum=1).poa == 1 and sizes(tc_quorum=4).tc_quorum == 4
    assert [z.leader(1, v) for v in (1, 2, 3)] == [2, 3, 4]  # leader(s, v) = (s + v) mod n
    assert sizes(offset=2).leader(1, 1) == 0 and sizes(offset=2).led_view(0, 1) == 1


def test_the_forking_lane_has_two_branches_and_cuts_round_trip():
    lay = Layout(sizes(lanes=2, cars=2))
    assert lay.producing == [2, 3] and lay.counts == [1, 1, 3, 5]
    # lane 3 forks: tip t >= 1 is (height (t+1)//2, branch (t+1)%2); its parent is t-2
    assert [(lay.height(3, t), lay.branch(3, t)) for t in range(5)] == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert lay.chain(3, 4) == [4, 2] and lay.chain(3, 3) == [3, 1] and lay.chain(2, 2) == [2, 1]
    assert not lay.ancestor_or_self(3, 1, 4) and lay.ancestor_or_self(3, 2, 4)
    assert lay.ncuts == 15
    for cut in range(lay.ncuts):
        assert lay.encode(lay.tips(cut)) == cut
    assert lay.cars_of(lay.encode([0, 0, 2, 4])) == [(2, 1), (2, 2), (3, 2), (3, 4)]
    assert lay.show_cut(lay.encode([0, 0, 1, 2])) == "{2:1, 3:1b}"


def test_views_beyond_n_are_refused():
    with pytest.raises(SpecError, match="parameter views: value 5 is above its maximum 4"):
        load_model("autobahn", {"views": 5, "lanes": 0})


# ------------------------------------------------------------------------------ invariants hold


def test_consensus_alone_holds_exhaustively():
    """One slot, one view, abstract cuts: every reachable state satisfies every invariant."""
    res = run("autobahn", lanes=0, views=1)
    assert (res.verdict, res.distinct, res.depth) == ("holds", 1789, 18)


def test_the_byzantine_replica_acts_only_with_what_it_can_sign_and_holds():
    """Its choices: a Prepare of any cut; a TC of 2f+1 Timeouts (honest ones it holds, with or without one of
    its own reporting any Prepare and any QC); a Timeout reporting nothing to the others, anything to the next
    leader. Which of them it may take in a state is the handler's business (what it holds)."""
    table = acts(1, 2, 0, 1, 2, 0)
    assert Counter(e[0] for e in table) == {"propose": 2, "tc": 37, "timeout": 10}
    tcs = [e for e in table if e[0] == "tc"]
    assert all(e[1] == 2 and len(e[2]) + (e[3] is not None) >= 3 and 3 not in e[2] for e in tcs)
    assert ("tc", 2, frozenset({0, 1, 2}), None) in tcs and ("tc", 2, frozenset({0, 1}), None) not in tcs
    assert ("timeout", 1, None) in table and ("timeout", 1, (Ref(1, 1), Ref(1, 0))) in table
    assert len(acts(1, 2, 0, 1, 2, 4)) == 2 + 9 + 10  # a TC of 4: every honest Timeout and its own


def test_a_byzantine_leader_of_full_power_cannot_break_safety():
    """The last replica leads view 1 (offset=1) and is Byzantine: two Prepares, Confirms and Commits from the
    votes it holds, votes for everything; with the paper's quorums every invariant holds."""
    res = run("autobahn_byzantine", lanes=0, views=1)
    assert (res.verdict, res.distinct, res.depth) == ("holds", 25408, 21)


def test_a_byzantine_voter_of_full_power_cannot_break_safety():
    res = run("autobahn_byzantine", lanes=0, views=1, offset=0)
    assert (res.verdict, res.distinct) == ("holds", 1637)


@pytest.mark.slow
def test_lanes_and_consensus_hold_exhaustively():
    """One producing lane with one car, one slot, one view, no fetching: 43,016 states, all safe."""
    res = run("autobahn", lanes=1, views=1, fetch=0)
    assert (res.verdict, res.distinct) == ("holds", 43016)


@pytest.mark.slow
def test_two_slots_hold_exhaustively():
    """Two slots, the second's ticket the first's Commit (k = 1), abstract cuts: 1,582,833 states, all safe."""
    res = run("autobahn", lanes=0, views=1, slots=2, k=1)
    assert (res.verdict, res.distinct, res.depth) == ("holds", 1582833, 35)


@pytest.mark.slow
def test_a_forking_lane_cannot_break_availability_or_agreement():
    res = run("autobahn_byzantine", lanes=1, views=1, fetch=0, offset=0)
    assert res.verdict == "holds"


# ------------------------------------------------------------------------------ seeded bugs


def _last(trace) -> dict:
    """The last state of a counterexample, field by field (decoded by replaying it)."""
    out = replay(trace)
    return out.model.prog.decode(out.states[-1])


def _committed(trace) -> dict[int, int]:
    """The cut each honest replica committed in slot 1, in the trace's last state."""
    return {p: ref.cut for p, slots in _last(trace)["committed"].items() if p != 3 and (ref := slots[1])}


def test_quorums_of_2f_let_a_byzantine_leader_commit_two_cuts():
    """The Byzantine leader proposes cut 0 to replica 0 and cut 1 to replica 1; its vote and one honest vote
    make a certificate of 2f = 2 for each: replica 0 commits cut 0, replica 1 cut 1."""
    res = run("autobahn_quorum_2f", **small("autobahn_quorum_2f"))
    v = res.violation
    assert (v.kind, v.name, res.distinct) == ("invariant", "agreement", 91460)
    labels = [s.label for s in v.trace.steps[1:]]
    assert "deliver(src=3, dst=0, msg=Prepare(s=1, v=1, cut=0))" in labels
    assert "deliver(src=3, dst=1, msg=Prepare(s=1, v=1, cut=1))" in labels
    assert _committed(v.trace) == {0: 0, 1: 1}


def test_the_paper_quorums_stop_the_same_byzantine_leader():
    res = run("autobahn_quorum_2f", **small("autobahn_quorum_2f"), quorum=0)
    assert (res.verdict, res.distinct) == ("holds", 25408)


def test_an_honest_double_vote_lets_a_byzantine_leader_break_agreement():
    """An honest replica votes for both of the Byzantine leader's Prepares (and Confirms): two certificates of
    2f+1 for different cuts, and agreement (not only vote_once) fails."""
    model = load_model("autobahn_double_vote", small("autobahn_double_vote"), invariants=["agreement"])
    res = check(model, Options(deadlock=False))
    v = res.violation
    assert (v.kind, v.name) == ("invariant", "agreement")
    assert sorted(set(_committed(v.trace).values())) == [0, 1]
    assert res.distinct == 139143


def test_weak_poa_commits_a_car_no_honest_replica_holds():
    """PoA of f = 1 vote: the Byzantine author certifies its own car, which the leader proposes and commits."""
    res = run("autobahn_weak_poa", **small("autobahn_weak_poa"))
    v = res.violation
    assert v.kind == "invariant" and v.name == "committed_cars_available"
    labels = [s.label for s in v.trace.steps[1:]]
    assert len(labels) == 8
    assert re.fullmatch(r"deliver\(src=3, dst=2, msg=PoA\(lane=3, tip=[12], signers=frozenset\(\{3\}\)\)\)", labels[0])
    assert labels[1] == "timeout(p=2, timer='lead1', c=0)"
    assert "Ref(view=1" in v.trace.steps[-1].shown["committed"]


def test_the_correct_poa_threshold_keeps_committed_cars_available():
    res = run("autobahn_byzantine", views=1, fetch=0, offset=0, max_depth=9)
    assert res.verdict in ("holds", "inconclusive") and res.violation is None


def test_a_byzantine_leader_of_view_2_proposes_a_new_cut_only_with_its_poas():
    """A TC without a winner frees the Byzantine leader of view 2 to propose a new cut, which carries the PoAs of
    its tips as in view 1: at the default bounds no honest replica commits a car without one. (With any cut
    allowed, walk 18 of these commits a forked car that only the Byzantine replica signed.)"""
    res = lockstep.simulate("autobahn_byzantine", runs=2000, seed=1, deadlock=False, offset=0)
    assert res.violation is None and res.runs == 2000


@pytest.mark.slow
def test_weak_fast_path_loses_a_commit_across_a_view_change():
    """A fast commit with 2f+1 votes, one of them the Byzantine replica's; as the leader of view 2 it builds a TC
    (its own Timeout reporting nothing) with a single report of the committed Prepare and proposes another cut,
    which an honest replica votes for."""
    res = run("autobahn_weak_fast_path", **small("autobahn_weak_fast_path"))
    v = res.violation
    assert (v.kind, v.name, res.distinct, res.depth) == ("invariant", "locked_after_commit", 635567, 12)
    labels = [s.label for s in v.trace.steps[1:]]
    tc, propose = [lb for lb in labels if lb.startswith("timeout(p=3, timer='lead1'")]
    entries = acts(1, 2, 0, 1, 2, 0)
    assert entries[int(tc.split("a=")[1][:-1])][0] == "tc" and entries[int(propose.split("a=")[1][:-1])][0] == "propose"
    committed = {p: slots[1] for p, slots in _last(v.trace)["committed"].items() if slots[1] is not None}
    assert [ref.view for ref in committed.values()] == [1]  # the fast commit, at its leader
    assert re.fullmatch(r"deliver\(src=3, dst=[01], msg=Prepare\(s=1, v=2, cut=\d\)\)", labels[-1])
    assert labels[-1][-3] != str(next(iter(committed.values())).cut)


@pytest.mark.slow
def test_no_override_loses_a_fast_commit_with_every_replica_honest():
    res = run("autobahn_no_override", **small("autobahn_no_override"))
    v = res.violation
    assert v.kind == "invariant" and v.name == "locked_after_commit"
    assert any(s.label.startswith("timeout(p=3, timer='slot1'") for s in v.trace.steps[1:])


# ------------------------------------------------------------------------------ replay


def test_a_counterexample_replays_in_the_spec(tmp_path):
    res = run("autobahn_weak_poa", **small("autobahn_weak_poa"))
    path = tmp_path / "cex.json"
    res.violation.trace.save(str(path))
    out = replay(Trace.load(str(path)))
    assert len(out.states) == 9 and "committed_cars_available" in out.conclusion


# ------------------------------------------------------------------------------ the documented commands

# each seeded bug: what the exhaustive command in its docstring prints at the bug's small bounds (the verdict, the
# states searched)
SEEDED = {
    "autobahn_quorum_2f": ("invariant agreement is violated", "91,460 distinct states"),
    "autobahn_double_vote": ("invariant agreement is violated", "139,143 distinct states"),
    "autobahn_wrong_tc_quorum": ("temporal property every_slot_commits (◇P) is violated", "9,177 distinct states"),
    "autobahn_weak_poa": ("invariant committed_cars_available is violated", "21,418 distinct states"),
    "autobahn_weak_fast_path": ("invariant locked_after_commit is violated", "635,567 distinct states"),
    "autobahn_no_override": ("invariant locked_after_commit is violated", "1,014,005 distinct states"),
}
SLOW_SEEDED = {"autobahn_quorum_2f", "autobahn_double_vote", "autobahn_weak_fast_path", "autobahn_no_override"}
# each safety bug: the invariant the random walks of its docstring's `lockstep simulate` find violated at the default
# bounds (the liveness bug has no such command: walks check no temporal property)
AT_DEFAULT_BOUNDS = {
    "autobahn_quorum_2f": "agreement",
    "autobahn_double_vote": "agreement",
    "autobahn_weak_poa": "committed_cars_certified",
    "autobahn_weak_fast_path": "locked_after_commit",
    "autobahn_no_override": "locked_after_commit",
}
SLOW_AT_DEFAULT_BOUNDS = {"autobahn_double_vote", "autobahn_weak_poa"}  # about 20 s each on a loaded machine


def test_every_seeded_bug_documents_its_commands():
    assert set(SEEDED) == {n for n in NAMES if n not in ("autobahn", "autobahn_byzantine")}
    assert set(AT_DEFAULT_BOUNDS) == set(SEEDED) - {"autobahn_wrong_tc_quorum"}
    assert _documented("autobahn_double_vote") == ["check", "autobahn_double_vote", "-p", "lanes=0", "-p", "views=1",
                                                   "--invariant", "agreement", "--no-deadlock", "--engine", "explicit",
                                                   "--no-por"]
    assert _documented("autobahn_double_vote", "simulate") == ["simulate", "autobahn_double_vote", "--invariant",
                                                               "agreement", "--no-deadlock", "--runs", "100000"]
    assert small("autobahn_double_vote") == {"lanes": 0, "views": 1}
    for spec in AT_DEFAULT_BOUNDS:  # the variant sets its bug's parameter, not the bounds
        assert not set(resolve(spec)[0].defaults) & {"slots", "views", "lanes", "cars", "k"}, spec


@pytest.mark.parametrize("spec", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW_SEEDED else s
                                  for s in sorted(SEEDED)])
def test_the_documented_command_catches_the_seeded_bug(spec, cli):
    verdict, searched = SEEDED[spec]
    r = cli(*_documented(spec))
    assert r.code == 1 and verdict in r.out and searched in r.out, r.out


@pytest.mark.parametrize("spec", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW_AT_DEFAULT_BOUNDS else s
                                  for s in sorted(AT_DEFAULT_BOUNDS)])
def test_the_documented_walks_catch_the_seeded_bug_at_the_default_bounds(spec, cli, tmp_path):
    """The walks find the invariant violated at the default bounds, and the counterexample replays to it."""
    cex = tmp_path / "cex.json"
    r = cli(*_documented(spec, "simulate"), "--quiet", "--out", str(cex))
    assert r.code == 1 and f"invariant {AT_DEFAULT_BOUNDS[spec]} is violated" in r.out, r.out
    assert "slots=1, views=2, lanes=2, cars=1," in r.out and "Counterexample (" in r.out
    assert f"invariant {AT_DEFAULT_BOUNDS[spec]}" in replay(Trace.load(str(cex))).conclusion


# ------------------------------------------------------------------------------ liveness after GST

LIVENESS = ["check", "autobahn", "--property", "every_slot_commits", "--param", "lanes=0", "--param", "views=2",
            "--param", "gst=1", "--param", "crashes=1", "--no-deadlock", "--quiet"]


def test_every_slot_commits_after_gst_past_a_crashed_leader(cli):
    """Two views, GST modelled, the leader of view 1 may crash (at any point, or never): after GST the
    correct replicas time out, make a TC and the leader of view 2 commits (one cut: 11,476 states)."""
    r = cli(*LIVENESS, "--param", "proposals=1")
    assert r.code == 0 and "No violation" in r.out and "11,476 distinct states" in r.out, r.out
    assert "WF(gst)" in r.out


@pytest.mark.slow
def test_every_slot_commits_after_gst_with_two_cuts(cli):
    r = cli(*LIVENESS)
    assert r.code == 0 and "22,905 distinct states" in r.out, r.out


def test_a_tc_quorum_of_2f_plus_2_is_stuck_in_view_1_for_ever():
    """The lasso: the leader of view 1 crashes, GST passes, the three correct replicas time out and wait for a
    fourth Timeout that never comes."""
    res = lockstep.check("autobahn_wrong_tc_quorum", engine="scalar", deadlock=False, properties=["every_slot_commits"])
    v = res.violation
    labels = [s.label for s in v.trace.steps[1:]]
    assert v.name == "every_slot_commits" and "crash(p=2)" in labels and "gst" in labels
    last = _last(v.trace)
    assert all(last["view"][p][1] == 1 and last["timeouts_from"][p][1][1] == {0, 1, 3} for p in (0, 1, 3))


@pytest.mark.slow
def test_every_slot_commits_under_fairness_and_not_when_the_leader_crashes(cli):
    """Liveness with views=1 (no timer fires early: after GST from the start), deliveries and timers weakly
    fair: every correct replica commits; a crash of slot 1's only leader leaves it uncommitted for ever."""
    args = ["check", "autobahn", "--property", "every_slot_commits", "--param", "lanes=0", "--param", "views=1",
            "--no-deadlock", "--quiet"]
    ok = cli(*args)
    assert ok.code == 0 and "1,789 distinct states" in ok.out, ok.out
    bad = cli(*args, "--param", "crashes=1")
    assert bad.code == 1 and "every_slot_commits" in bad.out and "crash(p=2)" in bad.out, bad.out
