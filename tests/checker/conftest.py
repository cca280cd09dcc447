"""Fixtures of the checker tests: the counterexample of two_phase_commit_eager (the README's seeded bug), found once."""

from __future__ import annotations

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model


@pytest.fixture(scope="session")
def eager_cex(tmp_path_factory):
    """The path of the saved counterexample, as `lockstep check two_phase_commit_eager --no-deadlock --out` writes it."""
    res = check(load_model("two_phase_commit_eager"), Options(deadlock=False))
    path = tmp_path_factory.mktemp("eager") / "cex.json"
    res.violation.trace.save(str(path))
    return path
