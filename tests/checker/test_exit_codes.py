"""Exit codes and messages CI can trust: spec errors are not violations, errors point at the spec's line,
options given twice are refused, bounds are reported in the units they were given in."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib

import pytest

from tests.conftest import model_path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ERRORS = model_path("spec_errors.py")


def spec_line(path: str, marker: str) -> int:
    with open(path) as f:
        return next(i for i, text in enumerate(f, 1) if marker in text)


# ------------------------------------------------------------------------------ spec errors


@pytest.mark.parametrize("engine", ["vector", "scalar", "smt"])
def test_a_typo_in_an_action_is_a_spec_error_with_the_trace(cli, tmp_path, engine):
    out = tmp_path / "cex.json"
    r = cli("check", ERRORS + ":Typo", "--engine", engine, "--out", str(out), "--quiet")
    assert r.code == 5, r.out + r.err
    assert "Spec error:" in r.out and "Violation" not in r.out
    assert "NameError: name 'zer0' is not defined" in r.out
    assert f"spec_errors.py:{spec_line(ERRORS, 'zer0')}" in r.out
    assert "The run that reaches it (3 steps)" in r.out and out.exists()
    assert json.loads(out.read_text())["#meta"]["lockstep"]["property"]["kind"] == "step"


def test_a_type_error_in_an_action_is_a_spec_error(cli):
    r = cli("check", ERRORS + ":WrongCall", "--quiet")
    assert r.code == 5 and "TypeError: 'tuple' object is not callable" in r.out and "reaches it (2 steps)" in r.out


def test_a_division_by_zero_is_a_spec_error(cli):
    r = cli("check", model_path("failing_action.py") + ":Divide", "--quiet")
    assert r.code == 5 and "ZeroDivisionError" in r.out


@pytest.mark.parametrize("name, text", [("Asserting", "n must skip 2"), ("Overflow", "n := 3 is outside Int(0, 2)")])
def test_assertions_and_values_outside_their_type_stay_violations(cli, name, text):
    r = cli("check", model_path("failing_action.py") + ":" + name, "--quiet")
    assert r.code == 1 and "Violation:" in r.out and text in r.out


def test_an_invariant_that_raises_is_a_spec_error(cli):
    r = cli("check", model_path("broken_predicates.py") + ":BrokenInvariant", "--quiet")
    assert r.code == 5 and "IndexError" in r.out and "broken_predicates.py:15" in r.out


def test_the_exit_codes_are_documented():
    import lockstep.checker.cli as cli_module

    doc = cli_module.__doc__
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    for text in (doc, readme):
        assert re.search(r"5 a spec error", text), text


# ---------------------------------------------------------------------- errors at the spec's line

BAD_SPECS = {
    "range_of_range": ("N = Range('n', default=3)\nclass S(Spec):\n    x = Var(Range(N), init=0)  # HERE\n",
                       "Range(N): N is already a Range"),
    "bad_init": ("class S(Spec):\n    x = Var(Int(0, 3), init=7)  # HERE\n", "init of field 'x': 7 is not a value of Int(0, 3)"),
    "bad_map_init": ("class S(Spec):\n    m = Map(Range(2), Int(0, 3), init=lambda k: 9)  # HERE\n",
                     "init of field 'm': 9 is not a value of Int(0, 3)"),
    "empty_int": ("class S(Spec):\n    x = Var(Int(5, 1), init=5)  # HERE\n", "Int(5, 1) is empty"),
    "empty_int_param": ("n = Param('n', default=0)\nclass S(Spec):\n    x = Var(Int(5, n), init=5)  # HERE\n",
                        "Int(5, 0) is empty"),
    "invariant_int": ("class S(Spec):\n    x = Var(Int(0, 3), init=0)\n    @invariant\n    def small(s):\n"
                      "        return 5  # HERE\n", "invariant small returns 5, not a condition"),
}
ACTION = "    @action\n    def go(s):\n        s.x = 0\n"


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_errors_in_declarations_point_at_the_spec(cli, tmp_path, case):
    body, message = BAD_SPECS[case]
    path = tmp_path / f"{case}.py"
    path.write_text("from lockstep.specs.lang import *\n" + body + ACTION)
    line = spec_line(str(path), "# HERE")
    r = cli("check", str(path), "--quiet")
    assert r.code == 2, r.err
    assert message in r.err and f"{path}:{line}" in r.err
    assert "loader.py" not in r.err and "Traceback" not in r.err and "internal error" not in r.err


# --------------------------------------------------------------------------------- options


def test_max_depth_is_reported_in_steps(cli):
    r = cli("check", "two_phase", "--max-depth", "3", "--quiet")
    assert r.code == 3 and "depth bound of 3 steps reached" in r.out and "depth 4 (3 steps)" in r.out
    r = cli("check", "two_phase", "--quiet")
    assert "depth 11 (10 steps)" in r.out
    r = cli("check", "two_phase", "--max-depth", "0", "--quiet")
    assert r.code == 3 and "depth bound of 0 steps" in r.out and "\n  1 state left unexplored" in r.out


DEPTHS = """
from lockstep.specs.lang import Assert, Int, Spec, Var, action, invariant, require


class Counter(Spec):
    x = Var(Int(0, 3), init=0)

    @action
    def inc(s):
        require(s.x < 3)
        s.x = s.x + 1

    @action
    def reset(s):
        require(s.x == 3)
        s.x = 0


class BadInit(Counter):
    @invariant
    def positive(s):
        return s.x > 0


class BadAfterOne(Counter):
    @invariant
    def zero(s):
        return s.x < 1


class FailsAfterOne(Spec):
    x = Var(Int(0, 3), init=0)

    @action
    def inc(s):
        require(s.x < 3)
        Assert(s.x < 1, "at most one step")
        s.x = s.x + 1
"""


@pytest.mark.parametrize("engine", ["vector", "scalar"])
@pytest.mark.parametrize("spec, depth", [("BadInit", "depth 1 (0 steps)"), ("BadAfterOne", "depth 2 (1 step)"),
                                         ("FailsAfterOne", "depth 2 (1 step)"), ("Counter", "depth 4 (3 steps)")])
def test_depth_is_counted_one_way_whatever_ends_the_search(cli, tmp_path, engine, spec, depth):
    """TLC's depth (an initial state at depth 1), then steps: a bad initial state, an invariant broken after one step,
    a step failing after one step and a search that holds, on both engines; the API's result agrees."""
    import lockstep

    path = tmp_path / "depths.py"
    path.write_text(DEPTHS)
    r = cli("check", f"{path}:{spec}", "--engine", engine, "--quiet")
    assert r.code == (0 if spec == "Counter" else 1) and f", {depth}, " in r.out, r.out
    res = lockstep.check(f"{path}:{spec}", engine=engine)
    assert f"depth {res.depth} " in depth + " "


def test_the_same_invariant_twice_is_refused(cli):
    r = cli("check", "two_phase", "--invariant", "consistent", "--invariant", "consistent")
    assert r.code == 2 and "--invariant consistent is given twice" in r.err


def test_the_same_parameter_twice_is_refused(cli):
    r = cli("check", "two_phase", "--param", "rm=3", "-p", "rm=4")
    assert r.code == 2 and "--param rm is given twice (3 and 4)" in r.err


def test_options_refused_with_property_say_why(cli):
    r = cli("check", "ewd840", "--property", "Liveness", "--workers", "3")
    assert r.code == 2 and "--workers 3" in r.err and "symmetry" not in r.err and "two threads at most" in r.err
    r = cli("check", "ewd840", "--property", "Liveness", "--workers", "2", "--engine", "scalar")
    assert r.code == 2 and "runs the vector engine" in r.err
    r = cli("check", "ewd840", "--property", "Liveness", "--symmetry")
    assert r.code == 2 and "declares no symmetric Range, so --symmetry has nothing to reduce" in r.err
    r = cli("check", "ewd840", "--property", "Liveness", "--dfs")
    assert r.code == 2 and "breadth-first" in r.err and "symmetry" not in r.err


# ------------------------------------------------------------------------------ test command


def readme_test_command() -> str:
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    block = text.split("Run the test suite:", 1)[1]
    return next(line.strip() for line in block.splitlines() if line.strip())


def test_the_readme_test_command_prints_the_count():
    """`-q` given twice (in addopts and on the command line) hides pytest's "N passed" line."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        addopts = shlex.split(tomllib.load(f)["tool"]["pytest"]["ini_options"]["addopts"])
    given = shlex.split(readme_test_command().rsplit("&&", 1)[1])
    quiet = sum(a.count("q") for a in addopts + given if re.fullmatch(r"-q+", a)) + ("--quiet" in addopts + given)
    assert quiet <= 1


def test_ci_runs_the_readme_test_command():
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        lines = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert readme_test_command() in lines


ACTOR_TEMPORAL = '''from lockstep.specs.lang import Int, Range, Record, eventually, temporal
from lockstep.specs.lang.actors import ActorSpec, Local, on_message, on_start, send

Ping = Record("Ping", k=Int(0, 1))


class Pinger(ActorSpec):
    Process = Range("n", default=2)
    Message = Ping
    got = Local(Int(0, 1), init=0)

    @on_start
    def start(p):
        send((p.id + 1) % p.n, Ping(0))

    @on_message
    def receive(p, src, m):
        p.got = 1

    @temporal
    def all_get(s):  # HERE
        return eventually(s.network.card() == 0)
'''


def test_a_temporal_property_on_an_actor_spec_is_checked_not_dropped(cli, tmp_path):
    path = tmp_path / "pinger.py"
    path.write_text(ACTOR_TEMPORAL)
    r = cli("check", str(path), "--quiet", "--property", "all_get", "--no-deadlock")
    assert r.code == 1 and "temporal property all_get" in r.out, r.out + r.err  # no fairness: a message may wait
    r = cli("check", str(path), "--quiet", "--property", "all_get", "--no-deadlock", "--fairness", "deliver=weak")
    assert r.code == 0, r.out + r.err
    r = cli("check", str(path), "--quiet", "--property", "nothing")
    assert r.code == 2 and "Traceback" not in r.err


def test_the_version_is_printed(capsys):
    from lockstep import __version__
    from lockstep.checker.cli import main

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out == f"lockstep {__version__}\n"


def test_a_plain_spec_file_is_named_by_its_file(cli):
    r = cli("check", model_path("plain_counter.py"), "--quiet")
    assert r.code == 1 and r.out.startswith("Checking plain_counter:") and "lockstep_user_" not in r.out
    r = cli("check", model_path("plain_counter.py"), "-p", "bound=3")
    assert r.code == 2 and "plain spec plain_counter takes no parameters" in r.err


def test_a_plain_spec_trace_replays_in_another_process(cli, tmp_path):
    """The trace records the spec by its file's name, which does not depend on the process's string hashing."""
    out = tmp_path / "cex.json"
    r = cli("check", model_path("plain_counter.py"), "--out", str(out), "--quiet")
    assert r.code == 1 and json.loads(out.read_text())["#meta"]["lockstep"]["spec_name"] == "plain_counter"
    env = dict(os.environ, PYTHONHASHSEED="12345")
    p = subprocess.run([sys.executable, "-m", "lockstep", "replay", str(out), "--spec", model_path("plain_counter.py")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
