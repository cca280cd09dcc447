"""Autobahn's quorum lemmas: each proved for every f and for f = 1..4 with explicit sets, and each seeded
bug's threshold refuted with a counterexample of the expected shape; the script runs."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from lockstep.proofs import autobahn, facts


@pytest.mark.parametrize("fact", autobahn.FACTS, ids=lambda f: f.statement)
def test_fact_comes_out_as_expected(fact):
    result = facts.run([fact])[0]
    assert result.outcome.verdict == fact.expected, result.line()


def test_every_lemma_is_proved_and_every_seeded_threshold_refuted():
    verdicts = {f.statement: f.expected for f in autobahn.FACTS}
    assert sum(v == facts.PROVED for v in verdicts.values()) == 30
    assert sum(v == facts.REFUTED for v in verdicts.values()) == 25
    assert all(v == facts.REFUTED for s, v in verdicts.items() if "seeded bug" in s)


def test_the_weak_poa_counterexample_is_an_all_byzantine_poa():
    out = facts.run([f for f in autobahn.FACTS if f.statement.startswith("f = 1") and "poa_quorum = f" in f.statement])
    m = re.search(r"P=\{([\d, ]*)\}; B=\{([\d, ]*)\}", out[0].line())
    assert m and m.group(1) == m.group(2) and m.group(1)  # the one PoA vote is the Byzantine replica's


def test_module_runs_as_a_script():
    run = subprocess.run([sys.executable, "-m", "lockstep.proofs.autobahn"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.splitlines()) == len(autobahn.FACTS)
