"""Autobahn BFT: the layout of tips and cuts, the invariants at small bounds (correct and Byzantine
variants), each seeded bug caught with its counterexample, and the counterexamples replayed."""

from __future__ import annotations

import inspect
import re

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model, resolve
from lockstep.checker.replay import replay
from lockstep.checker.trace import Trace
from lockstep.specs import autobahn
from lockstep.specs.autobahn.messages import Layout
from lockstep.specs.autobahn.params import Sizes
from lockstep.specs.lang import SpecError
from lockstep.specs.registry import SPECS

NAMES = sorted(n for n in SPECS if n.startswith("autobahn"))


def run(spec: str, max_depth: int | None = None, **params: int):
    return check(load_model(spec, params), Options(deadlock=False, max_depth=max_depth))


def sizes(**over: int) -> Sizes:
    base = dict(f=1, slots=1, views=2, lanes=2, cars=2, k=1, proposals=2, fast=1, coverage=3, poa_quorum=0,
                quorum=0, fast_quorum=0, override=1, offset=0, vote_after_timeout=0, fetch=1)
    return Sizes({**base, **over})


# ------------------------------------------------------------------------------ the model's pieces


def test_every_variant_is_registered_and_the_package_cites_its_sources():
    assert NAMES == ["autobahn", "autobahn_byzantine", "autobahn_byzantine_lane", "autobahn_byzantine_voter",
                     "autobahn_equivocating_leader", "autobahn_no_override", "autobahn_silent_timeouts",
                     "autobahn_weak_fast_path", "autobahn_weak_poa"]
    for name in NAMES:
        cls, _ = resolve(name)
        assert issubclass(cls, autobahn.Autobahn) and inspect.getdoc(cls)
    doc = autobahn.__doc__
    for needle in ("SOSP 2024", "arXiv 2401.10369", "autobahn-artifact", "Deviations", "[D]", "[V]"):
        assert needle in doc


def test_quorum_sizes_default_to_the_papers():
    z = sizes(f=2)
    assert (z.n, z.poa, z.quorum, z.fast_quorum, z.validity) == (7, 3, 5, 7, 3)
    assert sizes(fast_quorum=3).fast_quorum == 3 and sizes(poa_quorum=1).poa == 1
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


def test_an_equivocating_leader_cannot_break_agreement():
    res = run("autobahn_equivocating_leader", lanes=0, views=1)
    assert res.verdict == "holds"


def test_a_voter_for_everything_cannot_break_agreement():
    res = run("autobahn_byzantine_voter", lanes=0, views=1)
    assert res.verdict == "holds"


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
    res = run("autobahn_byzantine_lane", lanes=1, views=1, fetch=0)
    assert res.verdict == "holds"


# ------------------------------------------------------------------------------ seeded bugs


def test_weak_poa_commits_a_car_no_honest_replica_holds():
    """PoA of f = 1 vote: the Byzantine author certifies its own car, which the leader proposes and commits."""
    res = run("autobahn_weak_poa")
    v = res.violation
    assert v.kind == "invariant" and v.name == "committed_cars_available"
    labels = [s.label for s in v.trace.steps[1:]]
    assert len(labels) == 8
    assert re.fullmatch(r"deliver\(src=3, dst=2, msg=PoA\(lane=3, tip=[12], signers=frozenset\(\{3\}\)\)\)", labels[0])
    assert labels[1] == "timeout(p=2, timer='lead1', c=0)"
    assert "Ref(view=1" in v.trace.steps[-1].shown["committed"]


def test_the_correct_poa_threshold_keeps_committed_cars_available():
    res = run("autobahn_byzantine_lane", views=1, fetch=0, max_depth=9)
    assert res.verdict in ("holds", "inconclusive") and res.violation is None


@pytest.mark.slow
def test_weak_fast_path_loses_a_commit_across_a_view_change():
    """A fast commit with 2f+1 votes, one of them the Byzantine voter's, which it then hides in its Timeout:
    the TC of view 1 holds a single report of the committed Prepare, the next leader proposes another cut."""
    res = run("autobahn_weak_fast_path")
    v = res.violation
    assert v.kind == "invariant" and v.name == "locked_after_commit"
    labels = [s.label for s in v.trace.steps[1:]]
    assert len(labels) == 12
    assert "timeout(p=3, timer='lead1', c=1, alt=0)" in labels  # the Byzantine view-2 leader proposes cut 1
    assert labels[-1] == "deliver(src=3, dst=0, msg=Prepare(s=1, v=2, cut=1))"


@pytest.mark.slow
def test_no_override_loses_a_fast_commit_with_every_replica_honest():
    res = run("autobahn_no_override")
    v = res.violation
    assert v.kind == "invariant" and v.name == "locked_after_commit"
    assert any(s.label.startswith("timeout(p=3, timer='slot1'") for s in v.trace.steps[1:])


# ------------------------------------------------------------------------------ replay


def test_a_counterexample_replays_in_the_spec(tmp_path):
    res = run("autobahn_weak_poa")
    path = tmp_path / "cex.json"
    res.violation.trace.save(str(path))
    out = replay(Trace.load(str(path)))
    assert len(out.states) == 9 and "committed_cars_available" in out.conclusion


# ------------------------------------------------------------------------------ the documented commands


def _cli(spec: str, capsys) -> tuple[int, str]:
    from lockstep.checker.cli import main as cli

    code = cli(["check", spec, "--no-deadlock", "--engine", "explicit"])
    return code, capsys.readouterr().out


def test_the_documented_command_catches_the_weak_poa(capsys):
    code, out = _cli("autobahn_weak_poa", capsys)
    assert code == 1 and "invariant committed_cars_available is violated" in out
    # the bounds are printed with the verdict; partial-order reduction is on (64,439 states without it)
    assert "21,418 distinct states" in out and "poa_quorum=1" in out and "partial-order reduction" in out


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["autobahn_weak_fast_path", "autobahn_no_override"])
def test_the_documented_command_catches_the_seeded_bug(spec, capsys):
    code, out = _cli(spec, capsys)
    assert code == 1 and "invariant locked_after_commit is violated" in out


@pytest.mark.slow
def test_every_slot_commits_under_fairness_and_not_when_the_leader_crashes(cli):
    """Liveness with views=1 (no timer fires early: after GST from the start), deliveries and timers weakly
    fair: every honest replica commits; a crash of slot 1's only leader leaves it uncommitted for ever."""
    args = ["check", "autobahn", "--property", "every_slot_commits", "--param", "lanes=0", "--param", "views=1",
            "--no-deadlock", "--quiet"]
    ok = cli(*args)
    assert ok.code == 0 and "1,789 distinct states" in ok.out, ok.out
    bad = cli(*args, "--param", "crashes=1")
    assert bad.code == 1 and "every_slot_commits" in bad.out and "crash(p=2)" in bad.out, bad.out
