"""The follow-up commands `lockstep run` prints (validate the trace, re-check the configurations, check the history)
work as printed, for spec files (here in a directory with a space in its name), registered names and parameters."""

from __future__ import annotations

import re
import shlex
import shutil
import textwrap

import pytest

import lockstep
from lockstep.checker.errors import UsageError
from tests.conftest import model_path

HINT = re.compile(r"\((?:validate it|re-check them|check it): (lockstep .+)\)$", re.MULTILINE)

EPIDEMIC = textwrap.dedent('''
    from lockstep.specs.lang import Enum, Param
    from lockstep.specs.lang.population import Population, predicate, start


    class Epidemic(Population):
        n = Param("n", default=5, lo=2)
        agent = Enum("S", "I")

        def delta(self, u, v):
            return (u, "I") if u == "I" else (u, v)

        @start
        def one_infected(self):
            return {"I": 1, "S": self.n - 1}

        @predicate
        def all_infected(self, c):
            return c["S"] == 0
''')


@pytest.fixture
def specs_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    d = tmp_path / "my specs"
    d.mkdir()
    shutil.copy(model_path("actor_gossip.py"), d / "gossip.py")
    (d / "epidemic.py").write_text(EPIDEMIC)
    return "my specs"


def hint(out: str) -> list[str]:
    found = HINT.findall(out)
    assert len(found) == 1, out
    argv = shlex.split(found[0])
    assert argv[0] == "lockstep"
    return argv[1:]


def test_the_validation_printed_after_running_an_actor_spec_file_works(cli, specs_dir):
    ref = f"{specs_dir}/gossip.py:Gossip"
    r = cli("run", ref, "--param", "n=2", "--duration", "0.5", "--trace", "gossip run.jsonl", "--no-validate")
    assert r.code == 0, r.err
    argv = hint(r.out)
    assert argv == ["validate", "gossip run.jsonl", "--spec", ref]
    v = cli(*argv)
    assert v.code == 0, v.out + v.err
    assert "Gossip {'n': 2" in v.out and "Valid: all" in v.out


def test_the_commands_printed_after_running_a_population_spec_file_work(cli, specs_dir):
    ref = f"{specs_dir}/epidemic.py:Epidemic"
    r = cli("run", ref, "--param", "n=4", "--interactions", "60", "--trace", "epi run.jsonl", "--no-validate")
    assert r.code == 0, r.err
    argv = hint(r.out)
    assert argv == ["validate", "epi run.jsonl", "--spec", ref]
    v = cli(*argv, "--configurations", "epi configs.json")
    assert v.code == 0, v.out + v.err
    argv = hint(v.out)
    assert argv == ["replay", "epi configs.json", "--spec", ref]
    replayed = cli(*argv)
    assert replayed.code == 0, replayed.err
    assert "replayed" in replayed.out


def test_the_validation_printed_after_running_a_registered_spec_needs_no_spec(cli, tmp_path):
    trace = tmp_path / "clock.jsonl"
    r = cli("run", "phase_clock", "--param", "n=5", "--interactions", "100", "--trace", str(trace), "--no-validate")
    assert r.code == 0, r.err
    argv = hint(r.out)
    assert argv == ["validate", str(trace)]
    v = cli(*argv)
    assert v.code == 0, v.out + v.err
    assert "PhaseClock" in v.out and "Valid: all 100 interactions" in v.out


def test_the_history_check_printed_after_a_psmr_run_works(cli, tmp_path):
    hist = tmp_path / "psmr history.jsonl"
    r = cli("run", "psmr", "--duration", "0.5", "--history", str(hist), "--no-validate")
    assert r.code == 0, r.err
    argv = hint(r.out)
    assert argv == ["linearizable", str(hist), "--model", "psmr-kv"]
    checked = cli(*argv)
    assert checked.code == 0, checked.out + checked.err
    assert "Linearizable" in checked.out


def test_the_runner_suggested_for_a_spec_with_its_own_executor_runs_it(cli):
    with pytest.raises(UsageError) as e:
        lockstep.run("psmr")
    found = re.search(r"use `lockstep (.+)`", str(e.value))
    assert found and shlex.split(found.group(1)) == ["run", "psmr"]
    r = cli("run", "psmr")
    assert r.code == 0, r.err
    assert "Linearizable" in r.out
