"""Ctrl-C during `lockstep run`: the run stops its processes, keeps what they recorded (the trace closed and marked
interrupted), validates that prefix and says so, for every kind of run."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TICKER = os.path.join(HERE, "rounds_forever.py") + ":Ticker"

RUNS = {  # kind: (the run's arguments, whether it writes a merged trace, what its validation may say)
    "actors": (["token_ring", "--duration", "600"], True, ("Valid: all",)),
    "rounds": ([TICKER], True, ("Valid: all", "Validated what was recorded")),  # stopped between rounds, or within one
    "population": (["phase_clock", "--interactions", "100000000"], True, ("Valid: all",)),
    "datalog": (["sssp", "--graph", "ssp:0", "--straggler", "0:3000"], True, ("Valid: all",)),
    "psmr": (["psmr", "--duration", "600", "--replicas", "1", "--workers", "1", "--clients", "1"], False,
             ("Linearizable:",)),
    "autobahn": (["autobahn", "--duration", "600", "--rate", "500"], False, ("Valid:",)),
}


def started(proc: subprocess.Popen, deadline: float = 300.0) -> list[str]:
    """The lines the run printed on stderr up to its first progress report once its processes run (not the
    one before they are built)."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)  # type: ignore[arg-type]
    end = time.monotonic() + deadline
    lines: list[str] = []
    while time.monotonic() < end:
        if not sel.select(end - time.monotonic()):
            break
        line = proc.stderr.readline()  # type: ignore[union-attr]
        if not line:
            break
        lines.append(line)
        if line.startswith("progress:") and not line.startswith("progress: building"):
            return lines
    proc.kill()
    pytest.fail(f"the run reported no progress: {''.join(lines)}")


@pytest.mark.parametrize("kind,group", [(kind, False) for kind in RUNS] + [("actors", True)],
                         ids=list(RUNS) + ["actors-ctrl-c"])
def test_sigint_keeps_and_validates_what_was_recorded(kind, group, tmp_path):
    """SIGINT to the runner, or (ctrl-c) to its whole process group, as a terminal's Ctrl-C sends it."""
    args, merged, valid = RUNS[kind]
    trace = tmp_path / "run.jsonl"
    cmd = [sys.executable, "-m", "lockstep", "run", *args] + (["--trace", str(trace)] if merged else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            start_new_session=group)
    try:
        started(proc)
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert "Interrupted: the run was stopped" in out and "interrupted (SIGINT)" in out, out
    assert any(v in out for v in valid), out  # the prefix was validated
    assert "Traceback" not in err and "exited unexpectedly" not in out and "did not stop" not in out
    if merged:
        lines = trace.read_text().splitlines()
        header, last = json.loads(lines[0]), json.loads(lines[-1])
        # seconds into the run: 0.0 when the signal came within a millisecond of the start
        assert header["interrupted"] >= 0 and any("interrupted (SIGINT)" in n for n in header["notes"])
        assert last["kind"] == "end" and last["events"] > 0
