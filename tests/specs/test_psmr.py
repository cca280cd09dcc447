"""P-SMR: the spec's invariants exhaustively, both seeded bugs found by the commands their docstrings give,
replayed in the spec and on real processes, and the C-G proof."""

from __future__ import annotations

import multiprocessing
import re

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.trace import Trace
from lockstep.executors.replay import replay_on_processes
from lockstep.proofs import facts, psmr
from lockstep.specs.psmr.commands import WORKLOAD, Command, cg, cg_first_key, dependent


def test_cdep_and_cg_of_the_workload():
    putall1, putall2, put13 = WORKLOAD[:3]
    assert cg(putall1, 2) == {0, 1} and cg(put13, 2) == {1} and cg(Command("get", 2), 3) == {2}
    assert dependent(putall1, putall2, 2) and dependent(putall1, put13, 2)
    assert not dependent(Command("get", 0), Command("get", 0), 2)  # two reads of a key: independent
    assert not dependent(Command("put", 0, 1), Command("put", 1, 1), 2)  # different keys
    assert cg_first_key(putall1, 2) == {0}  # the seeded bug: disjoint from put(1, 3)'s group


def test_invariants_hold_exhaustively_2_replicas_2_workers_3_commands():
    res = check(load_model("psmr", {}), Options())
    assert res.verdict == "holds" and res.violation is None
    assert (res.distinct, res.depth) == (76161, 40)


@pytest.mark.slow
def test_invariants_hold_with_a_replica_crash():
    res = check(load_model("psmr", {"crashes": 1}), Options())
    assert res.verdict == "holds", res.violation and res.violation.message


@pytest.mark.slow
def test_invariants_hold_with_3_workers():
    res = check(load_model("psmr", {"workers": 3}), Options())
    assert res.verdict == "holds", res.violation and res.violation.message


def test_no_acyclic_order_deadlocks_the_barrier(cli, tmp_path):
    out = str(tmp_path / "deadlock.json")
    r = cli("check", "psmr_no_acyclic_order", "--out", out)
    assert r.code == 1 and "deadlock: no action is enabled" in r.out
    assert "Counterexample (23 steps)" in r.out  # breadth-first: a shortest one
    # the two global commands reach the two groups in opposite orders
    assert re.search(r"timeout\(p=1, timer=.tick., w=0, c=0\).*timeout\(p=1, timer=.tick., w=0, c=1\).*"
                     r"timeout\(p=1, timer=.tick., w=1, c=1\).*timeout\(p=1, timer=.tick., w=1, c=0\)", r.out, re.S)
    r = cli("replay", out)
    assert r.code == 0 and "the last state is a deadlock, as recorded" in r.out
    r = cli("replay", out, "--on-processes")
    assert r.code == 0, r.out + r.err
    assert "no handler of any process is enabled in their final state: the deadlock" in r.out
    assert multiprocessing.active_children() == []


def test_first_key_cg_diverges(cli, tmp_path):
    out = str(tmp_path / "diverge.json")
    r = cli("check", "psmr_first_key_cg", "--invariant", "replicas_agree", "--out", out)
    assert r.code == 1 and "invariant replicas_agree is violated" in r.out and "Counterexample (14 steps)" in r.out
    r = cli("replay", out)
    assert r.code == 0
    res = replay_on_processes(Trace.load(out), say=lambda line: None)
    assert res.violated == "replicas_agree" and res.validated
    r = cli("check", "psmr_first_key_cg")  # every invariant: a stale reply is seen first
    assert r.code == 1 and "invariant linearizable is violated" in r.out


def test_no_acyclic_order_breaks_the_contract_of_the_correct_spec():
    """With the correct spec's invariants, a per-group ordering layer violates acyclic_order at once."""
    from lockstep.specs.psmr.spec import PSMR, PSMRNoAcyclicOrder

    class Checked(PSMRNoAcyclicOrder):
        acyclic_order = PSMR.__dict__["acyclic_order"]

    import sys
    mod = sys.modules[__name__]
    mod.Checked = Checked
    res = check(load_model(f"{__name__}:Checked", {}), Options())
    assert res.violation is not None and "acyclic_order" in res.violation.message
    assert len(res.violation.trace.steps) - 1 == 12


def test_bmc_finds_nothing_within_depth(cli):
    r = cli("check", "psmr", "--engine", "smt", "--depth", "4")
    assert r.code == 3, r.out + r.err  # no violation within 4 steps proves nothing by itself


@pytest.mark.slow
def test_bmc_to_depth_8(cli):
    r = cli("check", "psmr", "--engine", "smt", "--depth", "8")
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
    assert "refuted" in run.stdout and "put(" in run.stdout
