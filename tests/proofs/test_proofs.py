"""The proofs in proofs/: each fact comes out as its module expects, and each module runs as a script."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from lockstep.proofs import facts, quorum, two_phase


@pytest.mark.parametrize("fact", two_phase.FACTS + quorum.FACTS, ids=lambda f: f.statement)
def test_fact_comes_out_as_expected(fact):
    result = facts.run([fact])[0]
    assert result.outcome.verdict == fact.expected, result.line()


def test_two_phase_counterexample_to_induction_is_a_real_step():
    """Without strengthening, the CTI is a typed state satisfying `consistent` whose step breaks it."""
    out = two_phase.inductive(3, [])
    assert out.verdict == facts.REFUTED
    assert re.search(r"rm_rcv_(commit|abort)_msg\(r=\d\)|rm_choose_to_abort\(r=\d\)", out.detail), out.detail


def test_each_strengthening_invariant_is_needed():
    for name in two_phase.STRENGTHENING:
        rest = [n for n in two_phase.STRENGTHENING if n != name]
        assert two_phase.inductive(3, rest).verdict == facts.REFUTED, name


@pytest.mark.parametrize("f", quorum.EXPLICIT_F)
def test_quorums_of_2f_counterexample_is_concrete(f):
    """The refutation names two sets of 2f processes out of 3f + 1 that share at most f."""
    out = quorum.explicit(f, 2 * f)
    m = re.fullmatch(r"counterexample n=(\d+): Q1=\{([\d, ]*)\}, Q2=\{([\d, ]*)\}", out.detail)
    assert out.verdict == facts.REFUTED and m, out.detail
    n, q1, q2 = int(m[1]), {int(x) for x in m[2].split(", ")}, {int(x) for x in m[3].split(", ")}
    assert n == 3 * f + 1 and len(q1) == len(q2) == 2 * f and q1 | q2 <= set(range(n))
    assert len(q1 & q2) <= f


@pytest.mark.parametrize("module", [two_phase, quorum], ids=lambda m: m.__name__)
def test_modules_run_as_scripts(module):
    """`python -m lockstep.proofs.NAME` prints one line per fact and exits 0 when every outcome is the expected one."""
    run = subprocess.run([sys.executable, "-m", module.__name__], capture_output=True, text=True, timeout=300)
    lines = run.stdout.splitlines()
    assert run.returncode == 0, run.stderr
    assert [line.split(": ")[0] for line in lines] == [f.statement.split(": ")[0] for f in module.FACTS]
    assert all(re.search(r": (proved|refuted) \(\d+\.\d\d s\)", line) for line in lines)


def test_an_unexpected_outcome_fails_the_run(capsys):
    wrong = facts.Fact("two quorums of 2f share f+1 (claimed true)", facts.PROVED,
                       lambda: quorum.for_all_f(lambda f: 2 * f))
    assert facts.main([wrong]) == 1
    assert "UNEXPECTED" in capsys.readouterr().err
