"""The light install: the core's commands run without the optional libraries, and a part that needs one says which
extra installs it (exit 2, no traceback). A library is made missing by `sys.modules[name] = None` in a fresh process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib

import pytest

from lockstep.checker.extras import EXTRAS
from lockstep.checker.probabilistic import quantiles

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _without(modules: list[str], argv: list[str], tmp_path) -> subprocess.CompletedProcess:
    """`lockstep ARGV` in a fresh process where `modules` cannot be imported."""
    code = ("import sys\n"
            f"sys.modules.update(dict.fromkeys({modules!r}))\n"
            "from lockstep.checker.cli import main\n"
            f"sys.exit(main({argv!r}))\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)


@pytest.mark.parametrize("module,argv,extra", [
    ("matplotlib", ["simulate", "phase_clock", "-p", "n=50", "--start", "spread_out", "--runs", "1", "--plot", "p.png"],
     "plots"),
    ("scipy", ["analyze", "phase_clock", "-p", "n=3", "-p", "m=2", "--measure", "holding-time", "--start", "zero"],
     "analyze"),
    ("sympy", ["analyze", "phase_clock", "-p", "n=3", "-p", "m=2", "--measure", "holding-time", "--start", "zero",
               "--exact"], "analyze"),
    ("starlette", ["explore", "two_phase"], "explore"),
    ("uvicorn", ["explore", "two_phase"], "explore"),
    ("ray", ["check", "two_phase", "--cluster", "local"], "cluster"),
])
def test_a_missing_extra_is_named_in_one_error(module, argv, extra, tmp_path):
    proc = _without([module], argv, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert f"pip install 'lockstep-mc[{extra}]'" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("lockstep: error:") == 1
    assert not (tmp_path / "p.png").exists()


def test_the_core_commands_run_without_any_optional_library(tmp_path):
    optional = sorted(EXTRAS)
    check = _without(optional, ["check", "two_phase", "--quiet"], tmp_path)
    assert check.returncode == 0 and "288 distinct states" in check.stdout, check.stderr
    sim = _without(optional, ["simulate", "phase_clock", "-p", "n=100", "--start", "spread_out", "--runs", "3",
                              "--within", "20", "--prob", "0.9"], tmp_path)
    assert sim.returncode == 0, sim.stderr
    assert re.search(r"hitting time: mean [\d,.]+ ± [\d,.]+ interactions", sim.stdout)  # the Student-t interval
    assert re.search(r"Clopper–Pearson interval at confidence 0.999: \[0\.\d{4}, 1\.0000\]", sim.stdout)


def test_pyproject_core_leaves_out_each_optional_library_and_its_extra_brings_it():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]

    def names(requirements: list[str]) -> set[str]:
        return {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in requirements}

    assert not names(project["dependencies"]) & set(EXTRAS)
    extras = project["optional-dependencies"]
    for module, (extra, _) in EXTRAS.items():
        assert module in names(extras[extra]), (module, extra)
    everything = {e for e in extras if e not in ("all", "test", "bench", "conformance", "docs")}  # tools, not parts
    assert extras["all"] == [f"lockstep-mc[{','.join(sorted(everything, key=list(extras).index))}]"]
    assert "lockstep-mc[all]" in extras["test"]


@pytest.mark.parametrize("q,a,b", [(0.025, 1, 20), (0.975, 3, 18), (0.0005, 1, 20000), (0.9995, 19999, 2),
                                   (0.025, 500, 501), (0.001, 9990, 11), (0.5, 0.5, 0.5), (1e-9, 3, 100000)])
def test_beta_quantiles_match_scipy(q, a, b):
    from scipy import stats

    assert quantiles.beta_quantile(q, a, b) == pytest.approx(stats.beta.ppf(q, a, b), rel=1e-9)


@pytest.mark.parametrize("p,df", [(0.975, 1), (0.975, 2), (0.975, 19), (0.995, 1499), (0.9995, 10**6), (0.025, 7)])
def test_student_t_quantiles_match_scipy(p, df):
    from scipy import stats

    assert quantiles.t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9)
