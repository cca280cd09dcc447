"""The command line: exit codes, output, and one clear message (no traceback) for bad input."""

from __future__ import annotations

import json

from tests.conftest import model_path


def test_check_holds_exit_0(cli):
    r = cli("check", "two_phase", "--quiet")
    assert r.code == 0
    assert "288 distinct states, 1,146 generated, depth 11" in r.out
    assert "collision probability" in r.out


def test_check_violation_exit_1_and_replay(cli, tmp_path):
    out = tmp_path / "cex.json"
    r = cli("check", "diehard", "--out", str(out), "--quiet")
    assert r.code == 1 and "Violation: invariant not_solved is violated" in r.out
    assert "Counterexample (6 steps)" in r.out and out.exists()
    r = cli("replay", str(out))
    assert r.code == 0 and "invariant not_solved is violated in the last state" in r.out


def test_check_inconclusive_exit_3(cli):
    r = cli("check", "two_phase", "--max-states", "50", "--quiet")
    assert r.code == 3 and "Inconclusive: state bound 50 reached" in r.out


def test_list(cli):
    r = cli("list")
    assert r.code == 0 and "two_phase" in r.out and "[rm=3]" in r.out


def test_user_spec_by_path_and_workers(cli):
    r = cli("check", model_path("plain_counter.py") + ":Counters", "-p", "bound=3", "--workers", "2", "--quiet")
    assert r.code == 0 and "16 distinct states" in r.out


def no_traceback(r):
    assert "Traceback" not in r.out + r.err
    return r


def test_spec_that_fails_to_import(cli):
    r = no_traceback(cli("check", model_path("bad_import.py")))
    assert r.code == 2 and "NameError" in r.err and "bad_import.py:5" in r.err


def test_spec_with_a_syntax_error(cli, tmp_path):
    spec = tmp_path / "broken.py"
    spec.write_text("from lockstep.specs.lang import *\nclass X(Spec)\n    pass\n")
    r = no_traceback(cli("check", str(spec)))
    assert r.code == 2 and "syntax error at" in r.err and "broken.py:2" in r.err


def test_unbounded_action_parameter(cli, tmp_path):
    spec = tmp_path / "unbounded.py"
    spec.write_text("from lockstep.specs.lang import *\nclass U(Spec):\n    x = Var(Int(0, 3), init=0)\n"
                    "    @action\n    def set(s, v: int):\n        s.x = v\n")
    r = no_traceback(cli("check", str(spec)))
    assert r.code == 2 and "parameter 'v' of set has type 'int', which is not a finite domain" in r.err
    assert "unbounded.py:5" in r.err and "fix:" in r.err


def test_unhashable_state(cli):
    r = no_traceback(cli("check", model_path("plain_unhashable.py")))
    assert r.code == 2 and "not hashable" in r.err and "use tuples" in r.err


def test_bad_params(cli):
    r = no_traceback(cli("check", "two_phase", "--param", "nodes=3"))
    assert r.code == 2 and "no parameter 'nodes'" in r.err and "rm" in r.err
    r = no_traceback(cli("check", "two_phase", "--param", "rm=0"))
    assert r.code == 2 and "below its minimum 1" in r.err
    r = no_traceback(cli("check", "two_phase", "--param", "rm=three"))
    assert r.code == 2 and "must be an integer" in r.err
    r = no_traceback(cli("check", "two_phase", "--param", "rm"))
    assert r.code == 2 and "expected name=value" in r.err


def test_unknown_spec_and_invariant(cli):
    r = no_traceback(cli("check", "no_such_spec"))
    assert r.code == 2 and "no spec named 'no_such_spec'" in r.err
    r = no_traceback(cli("check", "two_phase", "--invariant", "nope"))
    assert r.code == 2 and "no invariant 'nope'" in r.err and "consistent" in r.err


def test_bad_trace_files(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"#meta": {"lockstep": {"spec": "diehard"}}, "states": [{"big"')
    r = no_traceback(cli("replay", str(bad)))
    assert r.code == 2 and "not valid JSON" in r.err and "truncated" in r.err
    out = tmp_path / "cex.json"
    cli("check", "diehard", "--out", str(out), "--quiet")
    data = json.loads(out.read_text())
    data["#meta"]["lockstep"]["spec"] = "tcommit"
    out.write_text(json.dumps(data))
    r = no_traceback(cli("replay", str(out)))
    assert r.code == 2 and "belongs to spec DieHard" in r.err


def test_usage_errors(cli, capsys):
    import pytest

    with pytest.raises(SystemExit) as e:
        cli("check", "two_phase", "--workers", "0")
    assert e.value.code == 2
    r = no_traceback(cli("check", "two_phase", "--dfs", "--workers", "2"))
    assert r.code == 2 and "--dfs runs on one worker" in r.err
