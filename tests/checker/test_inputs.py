"""Untrusted input: a trace never chooses the code that runs, sizes are refused before anything is built, and bad
files, paths and pipes give one message and exit 2 (never a traceback, an internal error or a hang)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from lockstep.checker.errors import TraceError
from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.trace import Trace
from tests.conftest import model_path


def no_traceback(r):
    assert "Traceback" not in r.out + r.err and "internal error" not in r.err, r.err
    return r


@pytest.fixture
def diehard(tmp_path):
    path = tmp_path / "cex.json"
    check(load_model("diehard"), Options()).violation.trace.save(str(path))
    return path


@pytest.fixture
def booby_trap(tmp_path):
    """A Python file that leaves a mark when imported, and a trace and a run trace that name it."""
    mark = tmp_path / "imported"
    code = tmp_path / "trap.py"
    code.write_text(f"open({str(mark)!r}, 'w').close()\n"
                    "def init():\n    return [0]\n\ndef next(s):\n    return []\n")
    return code, mark


def test_a_trace_naming_a_file_does_not_run_it(cli, diehard, booby_trap, tmp_path):
    code, mark = booby_trap
    data = json.loads(diehard.read_text())
    data["#meta"]["lockstep"]["spec"] = str(code)
    diehard.write_text(json.dumps(data))
    for args in (["replay", str(diehard)], ["replay", str(diehard), "--on-processes"]):
        r = no_traceback(cli(*args))
        assert r.code == 2 and "not a registered spec name" in r.err and "--spec SPEC" in r.err
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"kind": "run", "spec": str(code), "params": {}, "processes": 1}) + "\n")
    for args in (["validate", str(run)], ["validate", str(run), "--configurations", str(tmp_path / "c.json")]):
        r = no_traceback(cli(*args))
        assert r.code == 2 and "not a registered spec name" in r.err and "--spec SPEC" in r.err
    assert not mark.exists(), "the file the trace names was imported"


def test_the_user_names_the_spec_and_traces_replay_from_anywhere(cli, tmp_path, monkeypatch):
    spec = model_path("plain_counter.py")
    out = tmp_path / "a" / "cex.json"
    out.parent.mkdir()
    monkeypatch.chdir(os.path.dirname(os.path.dirname(spec)))
    assert cli("check", "models/plain_counter.py", "--out", str(out)).code == 1
    monkeypatch.chdir(tmp_path)  # another directory: the relative path in the trace means nothing here
    r = no_traceback(cli("replay", str(out)))
    assert r.code == 2 and "--spec" in r.err
    r = cli("replay", str(out), "--spec", spec)
    assert r.code == 0 and "invariant sum_below_7 is violated in the last state, as recorded" in r.out
    r = no_traceback(cli("replay", str(out), "--spec", "diehard"))
    assert r.code == 2 and "belongs to spec" in r.err


def test_a_registered_spec_named_by_module_is_saved_by_its_registered_name(cli, tmp_path):
    out = tmp_path / "cex.json"
    assert cli("check", "lockstep.specs.examples.diehard:DieHard", "--out", str(out)).code == 1
    assert json.loads(out.read_text())["#meta"]["lockstep"]["spec"] == "diehard"
    assert cli("replay", str(out)).code == 0


@pytest.mark.parametrize("content, message", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "not a text file"),
    (b"[" * 100_000, "nested more than"),
    (b'{"#meta": {"lockstep": {"spec": 7}}, "vars": [], "states": [{}]}', "spec\" is missing or not a string"),
    (b'{"#meta": {"lockstep": {"spec": "diehard", "params": {"big_cap": "5"}}}, "vars": ["big"], "states": [{}]}',
     "params\" is not an object of integers"),
    (b'{"#meta": {"lockstep": {"spec": "diehard", "property": []}}, "vars": [], "states": [{}]}',
     "property\" is not an object"),
    (b'{"#meta": {"lockstep": {"spec": "diehard"}}, "vars": "big", "states": [{}]}', "not a list of names"),
    (b'{"#meta": {"lockstep": {"spec": "diehard"}}, "vars": [], "states": [{}, {"#meta": {"action": 3}}]}',
     "does not name its action"),
    (b'{"#meta": {"lockstep": {"spec": "diehard"}}, "vars": [], "states": [{}], "loop": true}', "not a state index"),
    (b'{"#meta": {"lockstep": {"spec": "diehard"}}, "vars": ["big"], "states": [{}]}', "no value for variable 'big'"),
    (b"1" * 5000, "not acceptable JSON"),
])
def test_malformed_trace_files_exit_2(cli, tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    r = no_traceback(cli("replay", str(bad)))
    assert r.code == 2 and message in r.err, r.err


@pytest.mark.parametrize("content, message", [
    (b"\x00\xff\xfe garbage", "not a text file"),
    (b'{"kind": "run", "spec": "two_phase_commit", "params": {}}\n' + b"[" * 100_000 + b"\n", "nested more than"),
    (b'{"kind": "run", "spec": "two_phase_commit", "params": {"rm": "2"}}\n', "params must be integers"),
    (b'{"kind": "run", "spec": "two_phase_commit", "params": {}, "notes": "x"}\n', "'notes' is \"x\", not list"),
    (b'{"kind": "run", "spec": "two_phase_commit", "params": {}, "processes": true}\n', "'processes' is true"),
    (b'{"kind": "run", "spec": "two_phase_commit", "params": {}}\n{"kind": "start", "pid": "0"}\n', "integer \"pid\""),
])
def test_malformed_run_traces_exit_2(cli, tmp_path, content, message):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    r = no_traceback(cli("validate", str(bad)))
    assert r.code == 2 and message in r.err, r.err


def test_output_paths_are_checked_before_the_search(cli, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        cases = [["check", "diehard", "--out", str(tmp_path)],
                 ["check", "diehard", "--out", str(tmp_path / "no" / "x.json")],
                 ["prove", "two_phase", "--invariant", "consistent", "--out", str(tmp_path)],
                 ["run", "two_phase_commit", "--trace", str(tmp_path)]]
        for args in cases:
            with pytest.raises(SystemExit) as err:
                cli(*args)
            assert err.value.code == 2
        if os.geteuid() != 0:  # root may write anywhere
            with pytest.raises(SystemExit):
                cli("check", "diehard", "--out", str(ro / "x.json"))
    finally:
        ro.chmod(0o700)


def test_output_path_errors_say_why(capsys, tmp_path):
    from lockstep.checker.cli import main

    with pytest.raises(SystemExit):
        main(["check", "diehard", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert "is a directory; name a file to write" in err and "Checking" not in err


def test_a_spec_that_exits_at_import_is_not_a_pass(cli, tmp_path):
    spec = tmp_path / "exits.py"
    spec.write_text("import sys\nsys.exit(0)\n")
    r = no_traceback(cli("check", str(spec)))
    assert r.code == 2 and "called sys.exit(0) while it was imported" in r.err


def test_a_spec_that_exits_while_built_is_not_a_pass(cli, tmp_path):
    spec = tmp_path / "exits_later.py"
    spec.write_text("import sys\nfrom lockstep.specs.lang import Int, Spec, Var, action\n\n"
                    "class Quits(Spec):\n    x = Var(Int(0, 1), init=0)\n\n    @action\n"
                    "    def go(s):\n        sys.exit(0)\n")
    r = no_traceback(cli("check", str(spec)))
    assert r.code == 2 and "called sys.exit(0)" in r.err


def test_a_closed_pipe_stops_quietly():
    cmd = f"{sys.executable} -m lockstep list | head -1"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 141 and proc.stderr == "" and len(proc.stdout.splitlines()) == 1


def lasso(cli, tmp_path):
    out = tmp_path / "lasso.json"
    assert cli("check", "lock_weak", "--property", "no_starvation", "--out", str(out)).code == 1
    return out, json.loads(out.read_text())


def test_a_lasso_without_its_loop_is_refused(cli, tmp_path):
    out, data = lasso(cli, tmp_path)
    assert cli("replay", str(out)).code == 0
    del data["loop"]
    out.write_text(json.dumps(data))
    r = no_traceback(cli("replay", str(out)))
    assert r.code == 2 and "it is not a lasso" in r.err


def test_a_claim_of_an_unknown_kind_is_refused(cli, tmp_path):
    out, data = lasso(cli, tmp_path)
    data["#meta"]["lockstep"]["property"]["kind"] = "liveness"
    out.write_text(json.dumps(data))
    r = no_traceback(cli("replay", str(out)))
    assert r.code == 2 and "'liveness', not one of invariant, deadlock" in r.err
    data["#meta"]["lockstep"]["property"]["kind"] = "invariant"
    out.write_text(json.dumps(data))
    r = no_traceback(cli("replay", str(out)))
    assert r.code == 2 and "the trace is a lasso, but claims a invariant violation" in r.err


def test_the_closing_step_of_a_lasso_is_recorded_and_checked(cli, tmp_path):
    out, data = lasso(cli, tmp_path)
    closing = data["#meta"]["lockstep"]["loop_action"]
    last = len(data["states"]) - 1
    assert closing == "stutter" if data["loop"] == last else closing["action"]
    if closing == "stutter":
        data["loop"] = 0
    else:
        data["#meta"]["lockstep"]["loop_action"] = "stutter"
    out.write_text(json.dumps(data))
    r = no_traceback(cli("replay", str(out)))
    assert r.code == 2 and "stuttering" in r.err


@pytest.mark.parametrize("args", [
    ["check", "two_phase", "-p", "rm=1000000"],
    ["check", "ewd840", "-p", "n=99999999999999999999999"],
    ["check", "token_ring", "-p", "n=1000000"],
    ["run", "two_phase_commit", "-p", "rm=100000"],
    ["check", model_path("huge_keys.py")],
])
def test_huge_parameters_are_refused_at_once(cli, args):
    t0 = time.monotonic()
    r = no_traceback(cli(*args))
    assert r.code == 2 and "more than the limit of" in r.err and "fix:" in r.err
    assert time.monotonic() - t0 < 20, "refused only after building"


def test_a_trace_with_huge_parameters_is_refused(cli, diehard, tmp_path):
    data = json.loads(diehard.read_text())
    data["#meta"]["lockstep"]["spec"], data["#meta"]["lockstep"]["params"] = "two_phase", {"rm": 10**30}
    data["#meta"]["lockstep"]["spec_name"] = "TwoPhase"
    diehard.write_text(json.dumps(data))
    r = no_traceback(cli("replay", str(diehard)))
    assert r.code == 2 and "more than the limit of" in r.err
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"kind": "run", "spec": "two_phase_commit", "params": {"rm": 10**30}}) + "\n")
    r = no_traceback(cli("validate", str(run)))
    assert r.code == 2 and "more than the limit of" in r.err


def test_a_configuration_path_with_too_many_initial_states_is_refused_with_its_count(cli, tmp_path):
    model = load_model("phase_clock", {"n": 16})
    start = model.obj.start_configurations()
    first = next(iter(model.obj.all_configurations())) if not isinstance(start, list) else start[0]
    trace = Trace.from_states(model, [(None, first)])
    path = tmp_path / "path.json"
    trace.save(str(path))
    r = no_traceback(cli("replay", str(path)))
    assert r.code == 2 and "1,503,232,609,098 initial states, more than the limit of 1,000,000" in r.err


# -- special files and planted links ------------------------------------------------------------------------

STRANGER = 65534  # another user's uid (nobody): the tests run as root, so ownership is set, not assumed


def lockstep(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """The command in a process of its own, so that a hang is a failed test, not a stuck suite."""
    return subprocess.run([sys.executable, "-m", "lockstep.checker.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def test_replay_of_dev_zero_is_refused_at_once():
    t0 = time.monotonic()
    r = lockstep("replay", "/dev/zero")
    assert r.returncode == 2 and "/dev/zero: it is a character device, not a regular file" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 60  # (a hang is cut at 120 s; it answers in well under a second)


@pytest.mark.parametrize("args", [
    ["validate", "{}"], ["linearizable", "{}", "--model", "kv"], ["draw", "{}", "--out", "{d}/x.svg"],
    ["run", "two_phase_commit", "--faults", "{}"], ["run", "autobahn", "--faults", "{}"],
    ["explore", "two_phase", "--trace", "{}"], ["datalog", "eval", "{}.dl", "--graph", "path:3"],
    ["datalog", "eval", "sssp", "--graph", "{}"]])
def test_every_data_input_must_be_a_regular_file(tmp_path, args):
    """A FIFO with no writer given as a trace, a history, a fault plan, a program or an edge list: refused without
    blocking on it."""
    fifo = str(tmp_path / "input")
    os.mkfifo(fifo)
    os.mkfifo(fifo + ".dl")
    r = lockstep(*[a.replace("{}", fifo).replace("{d}", str(tmp_path)) for a in args])
    assert r.returncode == 2 and "it is a FIFO, not a regular file" in r.stderr, r.stderr


def test_outputs_through_a_planted_link_are_refused(cli, capsys, tmp_path):
    """The attack: another user plants a link at the name of an output, pointing at a file of root's."""
    victim = tmp_path / "root-owned"
    victim.write_text("root:x:0:0\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    for name in ("cex.json", "run.jsonl", "rows.txt", "graph.dot", "verdict.json"):
        os.symlink(victim, shared / name)
        os.lchown(shared / name, STRANGER, STRANGER)
    cases = [["check", "diehard", "--out", str(shared / "cex.json")],
             ["check", "diehard", "--dump-graph", str(shared / "graph.dot")],
             ["run", "two_phase_commit", "--trace", str(shared / "run.jsonl")],
             ["datalog", "eval", "sssp", "--graph", "path:3", "--out", str(shared / "rows.txt")],
             ["linearizable", "h.edn", "--out", str(shared / "verdict.json")]]
    for args in cases:
        with pytest.raises(SystemExit) as err:
            cli(*args)
        assert err.value.code == 2
        assert "symbolic link owned by another user (uid 65534): not written through" in capsys.readouterr().err
    assert victim.read_text() == "root:x:0:0\n"


def test_a_link_planted_after_the_check_is_replaced_not_followed(tmp_path):
    """The check at the start passes; the link appears while the command works: the file written replaces it."""
    from lockstep.checker.validation.runtrace import merge

    victim = tmp_path / "root-owned"
    victim.write_text("root:x:0:0\n")
    out = tmp_path / "cex.json"
    trace = check(load_model("diehard"), Options()).violation.trace
    os.symlink(victim, out)  # a link of the user's own is followed ...
    trace.save(str(out))
    assert len(Trace.load(str(victim)).steps) == len(trace.steps)
    victim.write_text("root:x:0:0\n")
    os.lchown(out, STRANGER, STRANGER)  # ... another user's is not
    with pytest.raises(TraceError, match="symbolic link owned by another user"):
        trace.save(str(out))
    with pytest.raises(TraceError, match="symbolic link owned by another user"):
        merge({}, str(out), "two_phase_commit", "TwoPhaseCommit", {})
    assert victim.read_text() == "root:x:0:0\n"



def test_inputs_out_of_range_or_too_deep_are_input_errors(cli, capsys, tmp_path):
    """Each of these was an internal error (exit 4): now one line and exit 2."""
    with pytest.raises(SystemExit) as err:
        cli("explore", "two_phase", "--port", "99999")
    assert err.value.code == 2 and "99999 is not a port number (0 to 65535)" in capsys.readouterr().err
    for trace in (f"{tmp_path}/", str(tmp_path)):  # `run autobahn` used to take a directory: every run takes a file
        for spec in ("sssp", "autobahn", "psmr"):
            with pytest.raises(SystemExit) as err:
                cli("run", spec, "--trace", trace)
            assert err.value.code == 2 and "directory; name a file to write" in capsys.readouterr().err
    deep = "[" * 100_000 + "]" * 100_000  # deeper than any parser may recurse
    for name, text in (("h.edn", f"[{deep}]"), ("h.jsonl", f'{{"process": 0, "type": "invoke", "value": {deep}}}'),
                       ("trace.json", deep)):
        (tmp_path / name).write_text(text + "\n")
    r = no_traceback(cli("linearizable", str(tmp_path / "h.edn"), "--model", "kv"))
    assert r.code == 2 and "h.edn:1:73: forms nested too deeply" in r.err  # at the first bracket too deep, unparsed
    (tmp_path / "v.edn").write_text('[{:process 0 :type :invoke :f :write :value ' + "[" * 70 + "]" * 70 + "}]\n")
    r = no_traceback(cli("linearizable", str(tmp_path / "v.edn"), "--model", "kv"))
    assert r.code == 2 and "v.edn: event 1: values nested too deeply (more than 64 levels" in r.err
    r = no_traceback(cli("linearizable", str(tmp_path / "h.jsonl"), "--model", "kv"))
    assert r.code == 2 and "nested too deeply" in r.err
    for command in ("replay", "validate"):
        r = no_traceback(cli(command, str(tmp_path / "trace.json")))
        assert r.code == 2 and "nested more than 64 levels deep" in r.err
