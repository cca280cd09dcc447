"""`lockstep check --engine smt` and `lockstep prove`: exit codes, traces, and one clear message for bad input."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.conftest import model_path

STRENGTHENING = ("commit_msg_means_tm_committed,abort_msg_means_tm_aborted,committed_rm_saw_commit,"
                 "commit_msg_means_all_prepared,tm_prepared_were_sent,prepared_rm_aborts_only_on_abort_msg")


def no_traceback(r):
    assert "Traceback" not in r.out + r.err
    return r


# ------------------------------------------------------------------------------ check --engine smt


def test_bmc_violation_exit_1_and_replay(cli, tmp_path):
    out = tmp_path / "cex.json"
    r = cli("check", "peterson_buggy", "--engine", "smt", "--depth", "10", "--out", str(out), "--quiet")
    assert r.code == 1 and "Violation: invariant mutual_exclusion is violated" in r.out
    assert "Counterexample (8 steps)" in r.out and "searched to depth 9 (8 steps)" in r.out
    data = json.loads(out.read_text())
    assert data["#meta"]["lockstep"]["property"] == {"kind": "invariant", "name": "mutual_exclusion"}
    r = cli("replay", str(out))
    assert r.code == 0 and "invariant mutual_exclusion is violated in the last state, as recorded" in r.out


def test_bmc_complete_exit_0_and_bounded_exit_3(cli):
    r = cli("check", "two_phase", "--engine", "smt", "--depth", "12", "--quiet")
    assert r.code == 0 and "No violation: no loop-free path is longer than 10 steps" in r.out
    r = cli("check", "two_phase", "--engine", "smt", "--depth", "4")
    assert r.code == 3 and "Inconclusive: no violation within 4 steps" in r.out and "no proof" in r.out
    assert "progress: depth 3: no violation" in r.err


def test_bmc_options(cli):
    r = cli("check", "tcommit", "--engine", "smt", "--no-deadlock", "--quiet")
    assert r.code == 0 and "deadlock: not checked" in r.out
    r = cli("check", "two_phase", "--engine", "smt", "--invariant", "consistent", "--depth", "2", "--quiet")
    assert r.code == 3 and "invariants: consistent;" in r.out


def test_bmc_usage_errors(cli):
    r = no_traceback(cli("check", "two_phase", "--engine", "smt", "--symmetry", "--workers", "2"))
    assert r.code == 2 and "--symmetry, --workers: only for the explicit engine" in r.err
    r = no_traceback(cli("check", "two_phase", "--depth", "5"))
    assert r.code == 2 and "--depth bounds the SMT engine" in r.err and "--max-depth" in r.err
    r = no_traceback(cli("check", model_path("plain_counter.py"), "--engine", "smt"))
    assert r.code == 2 and "plain spec" in r.err and "typed spec" in r.err
    with pytest.raises(SystemExit) as e:
        cli("check", "two_phase", "--engine", "smt", "--depth", "-1")
    assert e.value.code == 2


# ------------------------------------------------------------------------------------------ prove


def test_prove_strengthened_invariant_exit_0(cli):
    r = cli("prove", "two_phase", "-p", "rm=4", "--invariant", "consistent", "--with", STRENGTHENING)
    assert r.code == 0 and "Proved: consistent holds in every reachable state" in r.out
    assert "6 strengthening invariants" in r.out


def test_prove_prints_and_saves_a_counterexample_to_induction(cli, tmp_path):
    out = tmp_path / "cti.json"
    r = cli("prove", "two_phase", "--invariant", "consistent", "--out", str(out))
    assert r.code == 3 and "Not inductive" in r.out and "Counterexample to induction (1 step)" in r.out
    data = json.loads(out.read_text())
    prop = data["#meta"]["lockstep"]["property"]
    assert prop == {"kind": "induction", "name": "consistent", "assumed": ["consistent"]}
    assert len(data["states"]) == 2
    r = cli("replay", str(out))
    assert r.code == 0 and "a counterexample to induction, as recorded" in r.out


def test_prove_k_induction_and_refutation(cli):
    hop = model_path("induction.py")
    r = cli("prove", hop, "--invariant", "not_three")
    assert r.code == 3 and "x = 2" in r.out and "x = 3" in r.out
    r = cli("prove", hop, "--invariant", "not_three", "--k", "2")
    assert r.code == 0 and "by 2-induction" in r.out
    r = cli("prove", hop, "--invariant", "not_three", "--with", "below_two")
    assert r.code == 0 and "it and 1 strengthening invariant hold initially" in r.out
    r = cli("prove", hop, "--invariant", "not_three", "--with", "zero")
    assert r.code == 1 and "Refuted: invariant zero is violated 1 step from an initial state" in r.out
    r = cli("prove", "diehard", "--invariant", "not_solved", "--k", "7")
    assert r.code == 1 and "Refuted: invariant not_solved is violated 6 steps from an initial state" in r.out
    assert "Counterexample (6 steps)" in r.out


def test_a_tampered_counterexample_to_induction_is_rejected(cli, tmp_path):
    out = tmp_path / "cti.json"
    cli("prove", model_path("induction.py"), "--invariant", "not_three", "--out", str(out))
    data = json.loads(out.read_text())
    data["states"][0]["x"] = {"#bigint": "7"}
    out.write_text(json.dumps(data))
    r = no_traceback(cli("replay", str(out), "--spec", model_path("induction.py")))
    assert r.code == 2 and "step 0: not a state of Hop" in r.err and "7 is not a value of Int(0, 3)" in r.err
    data["states"][0]["x"] = {"#bigint": "0"}
    data["states"][1]["x"] = {"#bigint": "1"}
    out.write_text(json.dumps(data))
    r = no_traceback(cli("replay", str(out), "--spec", model_path("induction.py")))
    assert r.code == 2 and "claims invariant not_three is violated at step 1, but it holds there" in r.err


def test_prove_usage_errors(cli):
    r = no_traceback(cli("prove", "two_phase", "--invariant", "nope"))
    assert r.code == 2 and "no invariant 'nope'" in r.err and "consistent" in r.err
    r = no_traceback(cli("prove", "two_phase", "--invariant", "consistent", "--with", "typo"))
    assert r.code == 2 and "no invariant 'typo'" in r.err
    r = no_traceback(cli("prove", model_path("plain_counter.py"), "--invariant", "sum_below_7"))
    assert r.code == 2 and "plain spec" in r.err
    with pytest.raises(SystemExit) as e:
        cli("prove", "two_phase", "--invariant", "consistent", "--k", "0")
    assert e.value.code == 2


# ------------------------------------------------------------------------------------------ misuse

MISUSES = {
    "and": ("require(s.x > 0 and s.x < 3)", "`and`", "And(a, b)"),
    "or": ("require(s.x == 0 or s.x == 3)", "`or`", "Or(a, b)"),
    "not": ("require(not s.done)", "`not`", "Not(x)"),
    "if": ("if s.x > 1:\n    s.x = 0", "`if`", "require(cond)"),
    "ternary": ("s.x = 1 if s.done else 2", "conditional expression", "If(c, a, b)"),
    "in": ("require(s.x in s.seen)", "`in`", "s.field.contains(x)"),
    "chained": ("require(0 < s.x < 3)", "chained comparison", "And(a < b, b < c)"),
    "while": ("while s.x < 3:\n    s.x = s.x + 1", "`while`", "ForAll/Exists"),
    "assert": ("assert s.x < 3", "`assert`", "Assert(cond"),
}


@pytest.mark.parametrize("command", ["check", "prove"])
@pytest.mark.parametrize("construct", sorted(MISUSES))
def test_python_logic_on_state_values_is_explained(cli, tmp_path, command, construct):
    code, name, fix = MISUSES[construct]
    body = textwrap.indent(code, " " * 8)
    spec = tmp_path / f"misuse_{construct}.py"
    spec.write_text(textwrap.dedent("""\
        from lockstep.specs.lang import *

        class Misuse(Spec):
            x = Var(Int(0, 3), init=0)
            done = Var(Bool, init=False)
            seen = Set(Int(0, 3))

            @invariant
            def small(s):
                return s.x < 4

            @action
            def step(s):
        """) + body + "\n")
    args = ["check", str(spec), "--engine", "smt"] if command == "check" else ["prove", str(spec), "--invariant", "small"]
    r = no_traceback(cli(*args))
    assert r.code == 2, r.out
    where, _, advice = r.err.partition("\n  fix: ")
    assert where.startswith(f"lockstep: error: {spec}:14: ") and name in where and "state-dependent" in where
    assert fix in advice
