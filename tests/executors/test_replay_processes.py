"""Counterexamples replayed on real processes reproduce their violations; the command line around runs."""

from __future__ import annotations

import json
import multiprocessing
import re

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.trace import Trace, TraceError
from lockstep.executors.replay import replay_on_processes
from tests.conftest import model_path


def counterexample(spec: str, tmp_path, **params: int) -> str:
    res = check(load_model(spec, params), Options(deadlock=False))
    path = tmp_path / "cex.json"
    res.violation.trace.save(str(path))
    return str(path)


def test_eager_commit_reproduced_on_processes(cli, tmp_path):
    path = counterexample("two_phase_commit_eager", tmp_path)
    r = cli("replay", path, "--on-processes")
    assert r.code == 0, r.err
    assert "1  deliver(src=0, dst=1, msg=Prepare()): process 1 received it and ran its handler" in r.out
    assert "2  timeout(p=1, timer='timeout'): process 1's timer fired" in r.out
    assert 'process 1  rm_state = "committed"' in r.out  # what the real process 1 holds
    assert "their final state violates invariant follows_tm, as in the counterexample" in r.out
    assert multiprocessing.active_children() == []


def test_bracha_low_echo_quorum_reproduced_on_processes(tmp_path):
    """The Byzantine sender's start choice and six deliveries, imposed on four real processes."""
    trace = Trace.load(counterexample("bracha_low_echo_quorum", tmp_path))
    lines: list[str] = []
    res = replay_on_processes(trace, say=lines.append)
    assert res.violated == "ready_agreement" and res.steps == 6
    assert res.validated, "the processes' own trace validates against the spec"
    assert any(re.match(r"\s*process 1  .*readied = \d", line) for line in lines)  # the real process 1 readied


def test_the_history_is_assembled_from_what_real_processes_observed(tmp_path):
    spec = model_path("actor_gossip.py") + ":GossipObservedWrongClaim"
    res = check(load_model(spec, {}), Options(deadlock=False))
    path = tmp_path / "cex.json"
    res.violation.trace.save(str(path))
    lines: list[str] = []
    out = replay_on_processes(Trace.load(str(path)), say=lines.append, spec=spec)
    assert out.violated == "one_reporter"
    assert any(line.strip().startswith("history = {Heard(by=") for line in lines)


def test_a_forged_message_is_forged_by_the_real_byzantine_process(tmp_path):
    spec = model_path("actor_gossip.py") + ":GossipWithForger"
    res = check(load_model(spec, {}), Options(deadlock=False))
    path = tmp_path / "cex.json"
    res.violation.trace.save(str(path))
    lines: list[str] = []
    out = replay_on_processes(Trace.load(str(path)), say=lines.append, spec=spec)
    assert out.violated == "zero_is_silent" and out.validated
    assert any("Byzantine process 0 forged it" in line for line in lines)


def test_a_failing_handler_is_reproduced_on_processes(cli, tmp_path):
    path = counterexample(model_path("actor_failing.py"), tmp_path)
    r = cli("replay", path, "--on-processes", "--spec", model_path("actor_failing.py"))
    assert r.code == 0, r.out + r.err
    assert "3  deliver(src=0, dst=1, msg=Token()): process 1 received it and ran its handler, which failed" in r.out
    assert "then the real handler failed, as in the counterexample" in r.out and "got the token twice" in r.out


def test_a_crash_step_kills_the_real_process(tmp_path):
    """The shortest deadlock of two-phase commit ends with the TM crashed: replayed, it is SIGKILLed."""
    res = check(load_model("two_phase_commit", {}), Options(deadlock=True))
    path = tmp_path / "deadlock.json"
    res.violation.trace.save(str(path))
    trace = Trace.load(str(path))
    assert trace.steps[-1].action["action"] == "crash"
    lines: list[str] = []
    out = replay_on_processes(trace, say=lines.append)
    assert out.violated is None and any("process 0 killed (SIGKILL)" in line for line in lines)
    assert any("crashed = {0}" in line for line in lines)


def test_a_tampered_counterexample_is_refused_before_anything_runs(tmp_path):
    path = counterexample("two_phase_commit_eager", tmp_path)
    data = json.loads(open(path).read())
    data["states"][2]["rm_state"]["#map"][1][1] = "aborted"
    open(path, "w").write(json.dumps(data))
    with pytest.raises(TraceError, match="step 2 .*the spec's step gives another state"):
        replay_on_processes(Trace.load(path), say=lambda _s: None)
    assert multiprocessing.active_children() == []


def test_a_choice_no_step_of_its_process_makes_is_refused():
    """A step's choices are decoded in the domains of the process that takes it; a choice that no step of that
    process makes is a readable error, not a crash."""
    from lockstep.executors.actors.replay import _decode_choice

    prog = load_model("two_phase_commit", {}).prog
    with pytest.raises(TraceError, match="no deliver step of process 99 chooses v"):
        _decode_choice(prog, "deliver", {"src": 0, "dst": 99, "msg": {}, "v": 1})


def test_replay_on_processes_needs_an_actor_spec(cli, tmp_path):
    path = counterexample("diehard", tmp_path)
    r = cli("replay", path, "--on-processes")
    assert r.code == 2 and "not an actor spec" in r.err


# ------------------------------------------------------------------------------ lockstep run


def test_run_command(cli, tmp_path):
    out = tmp_path / "run.jsonl"
    r = cli("run", "two_phase_commit", "--duration", "0.8", "--trace", str(out), "--seed", "4")
    assert r.code == 0, r.out + r.err
    assert "Running TwoPhaseCommit" in r.out and "3 processes for 0.8 s" in r.out
    assert f"Trace written to {out}" in r.out and "Valid: all" in r.out
    r = cli("validate", str(out))
    assert r.code == 0 and "Valid: all" in r.out


def test_run_command_bad_input(cli, tmp_path):
    r = cli("run", "two_phase", "--duration", "1")
    assert r.code == 2 and "two_phase is not an actor spec" in r.err
    faults = tmp_path / "faults.json"
    faults.write_text('{"drop": 2}')
    r = cli("run", "two_phase_commit", "--faults", str(faults))
    assert r.code == 2 and "drop is 2, not a probability" in r.err and "fix:" in r.err
    faults.write_text('{"crashes": [{"pid": 7, "at": 1}]}')
    r = cli("run", "two_phase_commit", "--faults", str(faults))
    assert r.code == 2 and "crashes[0].pid is 7, not a process id" in r.err
    faults.write_text('{"drop": 0.1,')
    r = cli("run", "two_phase_commit", "--faults", str(faults))
    assert r.code == 2 and "not valid JSON" in r.err
    with pytest.raises(SystemExit) as e:
        cli("run", "two_phase_commit", "--duration", "-1")
    assert e.value.code == 2
    assert multiprocessing.active_children() == []
