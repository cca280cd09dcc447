"""Every follow-up command a command prints (`Trace written to cex.json (replay it: lockstep replay ...)`) works as
printed: for registered names, `FILE.py:Spec` (here a path with a space, relative to the working directory),
`module:obj` specs and non-default parameters. Each test runs the printed command and checks what it reports."""

from __future__ import annotations

import re
import shlex
import textwrap

import pytest

from tests.conftest import model_path

HINT = re.compile(r"\((?:replay it|validate it|re-check them|check it): (lockstep .+)\)$", re.MULTILINE)

COUNT = textwrap.dedent('''
    from lockstep.specs.lang import Int, Param, Spec, Var, action, invariant, require, witness


    class Count(Spec):
        """x counts up; `below` fails when it reaches the limit."""

        limit = Param("limit", default=3)
        x = Var(Int(0, 9), init=0)

        @action
        def inc(s):
            require(s.x < 9)
            s.x = s.x + 1

        @invariant
        def below(s):
            return s.x < s.limit


    class Bounded(Count):
        """The same counter with no invariant and a witness: x reaches the limit."""

        below = None

        @witness
        def at_limit(s):
            return s.x == s.limit
''')


@pytest.fixture
def spec_file(tmp_path, monkeypatch):
    """A spec file in a directory with a space in its name, named relative to the working directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my specs").mkdir()
    (tmp_path / "my specs" / "count.py").write_text(COUNT)
    return "my specs/count.py"


def hint(out: str) -> list[str]:
    """The printed follow-up command as argv (without `lockstep`); exactly one is printed."""
    found = HINT.findall(out)
    assert len(found) == 1, out
    argv = shlex.split(found[0])
    assert argv[0] == "lockstep"
    return argv[1:]


def test_check_of_a_spec_file_prints_a_replay_that_names_the_spec(cli, spec_file):
    r = cli("check", f"{spec_file}:Count", "--param", "limit=5", "--out", "cex 1.json", "--quiet")
    assert r.code == 1
    argv = hint(r.out)
    assert argv == ["replay", "cex 1.json", "--spec", f"{spec_file}:Count"]
    replayed = cli(*argv)
    assert replayed.code == 0, replayed.err
    assert "spec Count {'limit': 5}" in replayed.out and "replayed 5 steps; invariant below is violated" in replayed.out


def test_check_of_a_registered_spec_with_parameters_prints_a_replay_without_spec(cli, tmp_path):
    out = tmp_path / "cex.json"
    r = cli("check", "diehard", "--param", "big_cap=7", "--out", str(out), "--quiet")
    assert r.code == 1
    argv = hint(r.out)
    assert argv == ["replay", str(out)]
    replayed = cli(*argv)
    assert replayed.code == 0, replayed.err
    assert "'big_cap': 7" in replayed.out and "invariant not_solved is violated in the last state, as recorded" \
        in replayed.out


def test_check_of_a_module_object_prints_a_replay_that_names_it(cli, tmp_path):
    out = tmp_path / "cex.json"
    r = cli("check", "tests.models.failing_action:Asserting", "--out", str(out), "--quiet")
    assert r.code == 1
    argv = hint(r.out)
    assert argv == ["replay", str(out), "--spec", "tests.models.failing_action:Asserting"]
    replayed = cli(*argv)
    assert replayed.code == 0, replayed.err
    assert "as recorded" in replayed.out


def test_a_lasso_of_a_spec_file_replays_as_printed(cli, tmp_path):
    out = tmp_path / "lasso.json"
    ref = f"{model_path('fair_worker.py')}:Worker"
    r = cli("check", ref, "--property", "clock_stops", "--out", str(out), "--quiet")
    assert r.code == 1, r.out + r.err
    argv = hint(r.out)
    assert argv == ["replay", str(out), "--spec", ref]
    replayed = cli(*argv)
    assert replayed.code == 0, replayed.err
    assert "as recorded" in replayed.out


def test_a_reached_witness_of_a_spec_file_replays_as_printed(cli, spec_file):
    r = cli("check", f"{spec_file}:Bounded", "--param", "limit=4", "--no-deadlock", "--out", "w.json", "--quiet")
    assert r.code == 0, r.out + r.err
    argv = hint(r.out)
    assert argv == ["replay", "w.json", "--spec", f"{spec_file}:Bounded"]
    replayed = cli(*argv)
    assert replayed.code == 0, replayed.err
    assert "replayed 4 steps" in replayed.out


def test_simulate_of_a_spec_file_prints_a_replay_that_names_the_spec(cli, spec_file):
    r = cli("simulate", f"{spec_file}:Count", "--param", "limit=4", "--out", "sim.json", "--quiet")
    assert r.code == 1
    replayed = cli(*hint(r.out))
    assert replayed.code == 0, replayed.err
    assert "invariant below is violated in the last state, as recorded" in replayed.out


def test_prove_of_a_spec_file_prints_a_replay_that_names_the_spec(cli, tmp_path):
    ref = f"{model_path('induction.py')}:Hop"
    for invariant, claim in (("zero", "invariant zero is violated in the last state, as recorded"),
                             ("not_three", "a counterexample to induction, as recorded")):
        out = tmp_path / f"{invariant}.json"
        r = cli("prove", ref, "--invariant", invariant, "--out", str(out), "--quiet")
        assert r.code in (1, 3), r.out + r.err
        argv = hint(r.out)
        assert argv == ["replay", str(out), "--spec", ref]
        replayed = cli(*argv)
        assert replayed.code == 0, replayed.err
        assert claim in replayed.out


def test_the_simulation_suggested_for_a_chain_too_large_runs(cli):
    r = cli("analyze", "phase_clock", "--measure", "reach", "--start", "spread_out", "--max-configs", "5", "--quiet")
    assert r.code == 2
    found = re.search(r"\(lockstep (simulate .+)\), or raise --max-configs", r.err)
    assert found, r.err
    argv = shlex.split(found.group(1))
    assert argv == ["simulate", "phase_clock", "-p", "n=3", "-p", "hours=4", "-p", "m=4", "--start", "spread_out"]
    simulated = cli(*argv, "--runs", "3")
    assert simulated.code == 0, simulated.err
    assert "from start spread_out" in simulated.out


def test_the_spec_a_trace_error_suggests_is_one_shell_word(cli, spec_file):
    cli("check", f"{spec_file}:Count", "--out", "cex.json", "--quiet")
    r = cli("replay", "cex.json")
    assert r.code == 2
    suggested = re.search(r"e\.g\. --spec (.+), if that is the code", r.err).group(1)
    assert shlex.split(suggested) == [f"{spec_file}:Count"]
    assert cli("replay", "cex.json", "--spec", *shlex.split(suggested)).code == 0
