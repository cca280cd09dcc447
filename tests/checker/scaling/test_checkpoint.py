"""`check --checkpoint DIR` / `--resume DIR`: a search interrupted at a level boundary (by a bound, or by
`kill -9` of a real run) and resumed ends with exactly the result of an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest

from lockstep.checker.explicit import Options
from lockstep.checker.loader import load_model
from lockstep.checker.vector import VectorModel, VectorOptions, check_vector
from lockstep.checker.vector.checkpoint import Checkpoint

COUNTS = re.compile(r"[\d,]+ distinct states, [\d,]+ generated, depth \d+")


def summary(out: str) -> tuple[str, str]:
    """(the counts line without timings, everything the run printed before it)."""
    m = COUNTS.search(out)
    assert m, out
    return m.group(0), out[:m.start()]


def test_resume_after_a_depth_bound_gives_the_same_counterexample(cli, tmp_path):
    d = str(tmp_path / "ck")
    plain = cli("check", "filter_lock_buggy", "--quiet")
    assert plain.code == 1
    cut = cli("check", "filter_lock_buggy", "--quiet", "--max-depth", "6", "--checkpoint", d, "--checkpoint-every", "0")
    assert cut.code == 3
    assert json.load(open(os.path.join(d, "manifest.json")))["level"] == 6
    resumed = cli("check", "filter_lock_buggy", "--quiet", "--resume", d)
    assert resumed.code == 1
    assert summary(resumed.out) == summary(plain.out)  # the counts and the whole counterexample


def test_resume_in_process_matches_on_a_violation_found_by_the_state_bound(tmp_path):
    m = load_model("two_phase", {"rm": 4})
    vm = VectorModel(m)
    base = check_vector(vm, Options(max_states=900))
    ck = Checkpoint(str(tmp_path), 0, resume=False, deadlock=True)
    ck.bind(vm)
    first = check_vector(vm, Options(max_depth=5), vopts=VectorOptions(checkpoint=ck))
    assert first.verdict == "inconclusive"
    again = Checkpoint(str(tmp_path), 0, resume=True, deadlock=True)
    again.bind(vm)
    res = check_vector(vm, Options(max_states=900), vopts=VectorOptions(checkpoint=again))
    assert (res.verdict, res.distinct, res.generated, res.depth, res.queued, res.cut) == \
        (base.verdict, base.distinct, base.generated, base.depth, base.queued, base.cut)


def test_kill_9_at_a_random_level_then_resume(tmp_path):
    """A real run killed with SIGKILL right after a random level's checkpoint, then resumed."""
    d = str(tmp_path / "ck")
    cmd = [sys.executable, "-m", "lockstep.checker.cli", "check", "two_phase", "-p", "rm=8", "--quiet"]
    plain = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0, plain.stderr
    level = random.Random(os.getpid()).randint(6, 18)
    proc = subprocess.Popen(cmd + ["--checkpoint", d, "--checkpoint-every", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    manifest = os.path.join(d, "manifest.json")
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if os.path.exists(manifest) and json.load(open(manifest))["level"] >= level:
                break
            time.sleep(0.01)
        assert proc.poll() is None, f"the run ended before level {level}: {proc.communicate()}"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    at = json.load(open(manifest))["level"]
    assert at >= level
    resumed = subprocess.run(cmd + ["--resume", d], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert summary(resumed.stdout)[0] == summary(plain.stdout)[0] == \
        "1,745,408 distinct states, 18,507,778 generated, depth 26"


def test_checkpoint_errors_exit_2(cli, tmp_path):
    d = str(tmp_path / "ck")
    r = cli("check", "two_phase", "-p", "rm=3", "--quiet", "--resume", d)
    assert r.code == 2 and "holds no checkpoint" in r.err
    assert cli("check", "two_phase", "-p", "rm=3", "--quiet", "--checkpoint", d, "--checkpoint-every", "0").code == 0
    r = cli("check", "two_phase", "-p", "rm=3", "--quiet", "--checkpoint", d)
    assert r.code == 2 and "already holds a checkpoint" in r.err and "--resume" in r.err
    r = cli("check", "two_phase", "-p", "rm=4", "--quiet", "--resume", d)
    assert r.code == 2 and "differs from this run in: bits, params" in r.err
    r = cli("check", "two_phase", "-p", "rm=3", "--quiet", "--no-deadlock", "--resume", d)
    assert r.code == 2 and "deadlock" in r.err
    r = cli("check", "two_phase", "-p", "rm=3", "--checkpoint", d, "--workers", "2")
    assert r.code == 2 and "drop --workers" in r.err
    r = cli("check", "two_phase", "-p", "rm=3", "--checkpoint", d, "--engine", "scalar")
    assert r.code == 2 and "vector engine" in r.err
    with pytest.raises(SystemExit) as e:
        cli("check", "two_phase", "-p", "rm=3", "--checkpoint-every=-1")
    assert e.value.code == 2
    with open(os.path.join(d, "manifest.json"), "w") as f:
        f.write("{not json")
    r = cli("check", "two_phase", "-p", "rm=3", "--quiet", "--resume", d)
    assert r.code == 2 and "manifest" in r.err and "Traceback" not in r.err


def test_a_damaged_checkpoint_file_is_a_clear_error(cli, tmp_path):
    d = str(tmp_path / "ck")
    assert cli("check", "two_phase", "-p", "rm=3", "--quiet", "--max-depth", "4", "--checkpoint", d,
               "--checkpoint-every", "0").code == 3
    man = json.load(open(os.path.join(d, "manifest.json")))
    with open(os.path.join(d, man["visited"]), "wb") as f:
        f.write(b"garbage")
    r = cli("check", "two_phase", "-p", "rm=3", "--quiet", "--resume", d)
    assert r.code == 2 and "damaged" in r.err and "Traceback" not in r.err
