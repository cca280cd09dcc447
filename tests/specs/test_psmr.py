"""P-SMR: the spec's invariants exhaustively, each seeded bug found by the commands its docstring gives (at the
default parameters) and replayed in the spec and on real processes, and the C-G proof."""

from __future__ import annotations

import multiprocessing
import re
import shlex

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.trace import Trace
from lockstep.checker.vector import check_vector
from lockstep.executors.replay import replay_on_processes
from lockstep.proofs import facts, psmr
from lockstep.specs.psmr.commands import WORKLOAD, Command, cg, cg_first_key, cg_read_wrong_group, dependent
from lockstep.specs.psmr.spec import PSMRFirstKeyCG, PSMRNoAcyclicOrder, PSMRReadWrongGroup


def docstring_commands(cls: type) -> list[list[str]]:
    """The `lockstep check ...` commands a seeded bug's docstring gives, as argument lists."""
    return [shlex.split(c)[1:] for c in re.findall(r"`(lockstep check [^`]+)`", cls.__doc__ or "")]  # after "lockstep"


def test_cdep_and_cg_of_the_workload():
    putall1, putall2, put03, get0, put13 = WORKLOAD[:5]
    assert cg(putall1, 2) == {0, 1} and cg(put03, 2) == cg(get0, 2) == {0} and cg(put13, 2) == {1}
    assert cg(Command("get", 2), 3) == {2}
    assert dependent(putall1, putall2, 2) and dependent(putall1, put13, 2) and dependent(put03, get0, 2)
    assert not dependent(Command("get", 0), Command("get", 0), 2)  # two reads of a key: independent
    assert not dependent(put03, put13, 2)  # different keys
    assert cg_first_key(putall1, 2) == {0}  # a seeded bug: disjoint from put(1, 3)'s group
    assert cg_read_wrong_group(get0, 2) == {1} and cg_read_wrong_group(put03, 2) == {0}  # the other: get(0) unordered


def test_invariants_hold_exhaustively_2_replicas_3_commands():
    res = check(load_model("psmr", {"replicas": 2, "commands": 3}), Options())
    assert res.verdict == "holds" and res.violation is None
    assert (res.distinct, res.depth) == (872, 20)


@pytest.mark.slow
def test_invariants_hold_exhaustively_at_the_default_3_replicas_2_workers_5_commands(cli):
    r = cli("check", "psmr", "--quiet")
    assert r.code == 0 and "107,808 distinct states" in r.out and "depth 37" in r.out, r.out


@pytest.mark.slow
@pytest.mark.parametrize("params, states", [({}, 22_925), ({"crashes": 1}, 81_560), ({"duplicating": 0}, 218_700),
                                            ({"workers": 3, "commands": 4}, 16_368)])
def test_invariants_hold_under_symmetry_with_crashes_and_other_networks(params, states):
    """3 replicas, one state per permutation of them (107,808 states without symmetry at the default)."""
    res = check_vector(load_model("psmr", params, symmetry=True), Options())
    assert res.verdict == "holds", res.violation and res.violation.message
    assert res.distinct == states


def test_no_acyclic_order_deadlocks_the_barrier(cli, tmp_path):
    (cmd,) = docstring_commands(PSMRNoAcyclicOrder)
    assert cmd == ["check", "psmr_no_acyclic_order"]
    out = str(tmp_path / "deadlock.json")
    r = cli(*cmd, "--out", out)
    assert r.code == 1 and "deadlock: no action is enabled" in r.out
    assert "Counterexample (11 steps)" in r.out  # breadth-first: a shortest one
    # the two global commands join the two groups' streams in opposite orders
    assert re.search(r"timeout\(p=1, timer=.tick., w=0, c=0\).*timeout\(p=1, timer=.tick., w=0, c=1\).*"
                     r"timeout\(p=1, timer=.tick., w=1, c=1\).*timeout\(p=1, timer=.tick., w=1, c=0\)", r.out, re.S)
    r = cli("replay", out)
    assert r.code == 0 and "the last state is a deadlock, as recorded" in r.out
    r = cli("replay", out, "--on-processes")
    assert r.code == 0, r.out + r.err
    assert "no handler of any process is enabled in their final state: the deadlock" in r.out
    assert multiprocessing.active_children() == []


def test_first_key_cg_diverges(cli, tmp_path):
    cmds = docstring_commands(PSMRFirstKeyCG)
    assert cmds == [["check", "psmr_first_key_cg", "--invariant", "replicas_agree"]]
    out = str(tmp_path / "diverge.json")
    r = cli(*cmds[0], "--out", out)
    assert r.code == 1 and "invariant replicas_agree is violated" in r.out and "Counterexample (19 steps)" in r.out
    r = cli("replay", out)
    assert r.code == 0
    res = replay_on_processes(Trace.load(out), say=lambda line: None)
    assert res.violated == "replicas_agree" and res.validated
    r = cli("check", "psmr_first_key_cg")  # every invariant: the opposite orders are seen first
    assert r.code == 1 and "invariant dependent_same_order is violated" in r.out and "(16 steps)" in r.out


def test_read_wrong_group_executes_a_read_and_the_write_it_depends_on_in_opposite_orders(cli, tmp_path):
    cmds = docstring_commands(PSMRReadWrongGroup)
    assert cmds == [["check", "psmr_read_wrong_group"]]
    out = str(tmp_path / "reorder.json")
    r = cli(*cmds[0], "--out", out)
    assert r.code == 1 and "invariant dependent_same_order is violated" in r.out, r.out
    assert "Counterexample (20 steps)" in r.out
    # get(0) is taken from worker 1's stream (the seeded C-G) by a replica that has not executed put(0, 3)
    assert re.search(r"deliver\(src=1, dst=[234], msg=Deliver\(c=3, g=1, i=2\)\)", r.out), r.out
    res = replay_on_processes(Trace.load(out), say=lambda line: None)
    assert res.violated == "dependent_same_order" and res.validated
    assert multiprocessing.active_children() == []


@pytest.mark.slow
def test_read_wrong_group_gives_a_stale_read(cli, tmp_path):
    """With linearizability alone: get(0), invoked after put(0, 3) completed, is answered first by a replica
    that has not executed put(0, 3); replayed on processes (the last state violates dependent_same_order too)."""
    out = str(tmp_path / "stale.json")
    r = cli("check", "psmr_read_wrong_group", "--invariant", "linearizable", "--out", out)
    assert r.code == 1 and "invariant linearizable is violated" in r.out and "Counterexample (22 steps)" in r.out
    r = cli("replay", out)
    assert r.code == 0 and "invariant linearizable is violated in the last state, as recorded" in r.out
    res = replay_on_processes(Trace.load(out), say=lambda line: None)
    assert res.violated == "linearizable" and res.validated


def test_no_acyclic_order_breaks_the_contract_of_the_correct_spec():
    """With the correct spec's invariants, a per-group ordering layer violates acyclic_order at once."""
    from lockstep.specs.psmr.spec import PSMR

    class Checked(PSMRNoAcyclicOrder):
        acyclic_order = PSMR.__dict__["acyclic_order"]

    import sys
    mod = sys.modules[__name__]
    mod.Checked = Checked
    res = check(load_model(f"{__name__}:Checked", {"replicas": 2}), Options())
    assert res.violation is not None and "acyclic_order" in res.violation.message
    assert len(res.violation.trace.steps) - 1 == 8


def test_bmc_finds_nothing_within_depth(cli):
    r = cli("check", "psmr", "-p", "replicas=1", "-p", "commands=3", "--engine", "smt", "--depth", "4")
    assert r.code == 3, r.out + r.err  # no violation within 4 steps proves nothing by itself


@pytest.mark.slow
def test_bmc_to_depth_8(cli):
    """Two replicas and three commands (about a minute); the default shape's encoding takes gigabytes by depth 2."""
    r = cli("check", "psmr", "-p", "replicas=2", "-p", "commands=3", "--engine", "smt", "--depth", "8")
    assert r.code == 3 and "no violation within 8 steps" in r.out, r.out + r.err


@pytest.mark.parametrize("fact", psmr.FACTS, ids=lambda f: f.statement)
def test_cg_proof(fact):
    result = facts.run([fact])[0]
    assert result.outcome.verdict == fact.expected, result.line()


def test_proof_runs_as_a_script():
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "lockstep.proofs.psmr"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.splitlines()) == len(psmr.FACTS)
    assert "refuted" in run.stdout and "get(0) -> workers [1]" in run.stdout


def test_the_spec_for_a_workload_of_several_clients():
    """`workload.for_workload`: the shipped workload's first 3 commands as one client's, one at a time, have the
    shipped spec's states; two clients of the same commands, and a run's kind of workload (keys beyond the workers,
    values beyond the shipped ones) hold; the read-wrong-group C-G built for two clients, put(0, 3) and get(0), is caught."""
    from lockstep.checker.loader import model_of
    from lockstep.specs.psmr.workload import for_workload

    def explore(cls, **params):
        return check(model_of(cls, cls.__name__, {"replicas": 2, **params}), Options())

    shipped = check(load_model("psmr", {"replicas": 2, "commands": 3, "outstanding": 1}), Options())
    one = explore(for_workload((WORKLOAD[:3],), 2), outstanding=1)
    assert one.verdict == shipped.verdict == "holds" and (one.distinct, one.depth) == (shipped.distinct, 20) == (91, 20)
    two = explore(for_workload((WORKLOAD[:2], WORKLOAD[2:4]), 2), outstanding=1)
    assert two.verdict == "holds" and two.distinct == 6875
    run_like = explore(for_workload(((Command("put", 3, 17), Command("putall", None, 5)),
                                     (Command("get", 3), Command("get", 2))), 4), outstanding=1)
    assert run_like.verdict == "holds" and run_like.distinct == 5527
    bad = explore(for_workload(((Command("put", 0, 3),), (Command("get", 0),)), 2, PSMRReadWrongGroup), outstanding=1)
    assert bad.verdict == "violation" and bad.violation.name == "dependent_same_order"
