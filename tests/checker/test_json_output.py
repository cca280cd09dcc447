"""`--format json`: every command that gives a verdict, and `list`, prints exactly one JSON object of the documented
schema (`json_result.SCHEMA`, docs/json.md) — when the property holds, is violated, a bound is reached, the spec's
code fails, and on input and usage errors — with the exit code the text output would give."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jsonschema
import pytest

from lockstep.checker.cli import main
from lockstep.checker.commands.json_result import SCHEMA
from tests.checker.conformance.test_search import MAPPING, RELAY, relay_logs
from tests.checker.test_linearizability import CORPUS
from tests.conftest import Run

SPEC_ERROR = '''
from lockstep.specs.lang import Int, Spec, Var, action, require


class Divides(Spec):
    x = Var(Int(0, 3), init=0)

    @action
    def step(s):
        require(s.x < 3)
        s.x = s.x + 1
        s.x = s.x // (s.x - 1)
'''


@pytest.fixture
def cli(capsys):
    """As the suite's `cli`, with the argument parser's own exit (a usage error) read as the exit code it gives."""

    def run(*args: str) -> Run:
        try:
            code = main(list(args))
        except SystemExit as e:
            code = e.code
        cap = capsys.readouterr()
        return Run(code, cap.out, cap.err)

    return run


def result(cli, *args: str) -> tuple[int, dict]:
    """The command's exit code and its JSON object, checked against the schema (standard output holds nothing
    else)."""
    r = cli(*args, "--format", "json")
    data = json.loads(r.out)
    jsonschema.validate(data, SCHEMA)
    assert data["exit_code"] == r.code
    return r.code, data


def test_check_holds(cli):
    code, d = result(cli, "check", "two_phase", "--quiet")
    assert (code, d["command"], d["verdict"], d["spec"], d["params"]) == (0, "check", "holds", "TwoPhase", {"rm": 3})
    assert d["counts"] == {"distinct": 288, "generated": 1146, "depth": 11, "steps": 10, "queued": 0}
    assert d["violation"] is None and d["trace"] is None and d["error"] is None
    assert d["checked"]["invariants"][0] == "consistent" and d["checked"]["deadlock"] is True
    assert d["options"]["engine"] == "vector" and d["reductions"] == {"symmetry": False, "partial_order": False}


def test_check_violation_names_the_trace_it_wrote(cli, tmp_path):
    out = str(tmp_path / "cex.json")
    code, d = result(cli, "check", "diehard", "--quiet", "--out", out)
    assert (code, d["verdict"], d["trace"]) == (1, "violation", out) and os.path.exists(out)
    assert d["violation"] == {"kind": "invariant", "name": "not_solved", "message": "invariant not_solved is violated",
                              "location": None, "steps": 6}
    assert d["counts"]["depth"] == 7 and d["counts"]["distinct"] == 14


def test_check_with_reductions_says_so(cli):
    code, d = result(cli, "check", "two_phase", "--symmetry", "--quiet")
    assert code == 0 and d["counts"]["distinct"] == 80 and d["reductions"]["symmetry"] is True
    code, d = result(cli, "check", "chang_roberts", "--no-deadlock", "--quiet")
    assert code == 0 and d["reductions"]["partial_order"] is True and d["options"]["por"] is True


def test_a_bound_reached_is_inconclusive(cli):
    code, d = result(cli, "check", "two_phase", "--max-depth", "3", "--quiet")
    assert (code, d["verdict"]) == (3, "inconclusive")
    assert d["counts"]["queued"] == 38 and d["options"]["max_depth"] == 3
    assert d["notes"][0] == "stopped: depth bound of 3 steps reached with unexplored states"
    code, d = result(cli, "check", "two_phase", "--engine", "smt", "--depth", "3", "--quiet")
    assert (code, d["verdict"], d["counts"]) == (3, "inconclusive", {"depth": 4, "steps": 3})


def test_errors_are_json_objects_too(cli, tmp_path):
    code, d = result(cli, "check", "nosuch")
    assert (code, d["verdict"], d["command"]) == (2, "error", "check") and "no spec named 'nosuch'" in d["error"]
    code, d = result(cli, "check", "two_phase", "--bogus")  # refused by the argument parser
    assert (code, d["verdict"]) == (2, "error") and d["error"] == "unrecognized arguments: --bogus"
    path = tmp_path / "divides.py"
    path.write_text(SPEC_ERROR)
    code, d = result(cli, "check", f"{path}:Divides", "--quiet")
    assert (code, d["verdict"], d["violation"]["kind"]) == (5, "spec error", "error")
    assert "ZeroDivisionError" in d["violation"]["message"]


def test_simulate_prove_and_replay(cli, tmp_path):
    out = str(tmp_path / "walk.json")
    code, d = result(cli, "simulate", "peterson_buggy", "--quiet", "--out", out)
    assert (code, d["verdict"], d["trace"], d["violation"]["name"]) == (1, "violation", out, "mutual_exclusion")
    assert d["counts"]["runs"] == 5 and d["options"]["seed"] == 1
    code, d = result(cli, "simulate", "two_phase", "--runs", "20", "--quiet")
    assert (code, d["verdict"], d["counts"]["runs"], d["counts"]["steps"]) == (0, "no violation", 20, 2000)
    code, d = result(cli, "prove", "two_phase", "--invariant", "consistent", "--quiet")
    assert (code, d["verdict"], d["checked"]) == (3, "not inductive", {"invariant": "consistent", "with": [], "k": 1})
    code, d = result(cli, "replay", out)
    assert (code, d["verdict"], d["spec"], d["counts"]) == (0, "reproduced", "PetersonSwapped", {"steps": 8})


def test_validate_linearizable_and_list(cli, tmp_path):
    logs = relay_logs(tmp_path)
    code, d = result(cli, "validate", *logs, "--spec", RELAY, "--map", MAPPING, "--max-internal", "1")
    assert (code, d["command"], d["verdict"]) == (0, "validate", "valid") and d["details"]["verdict"] == "valid"
    code, d = result(cli, "linearizable", os.path.join(CORPUS, "kv/c01-bad.txt"), "--model", "kv")
    assert (code, d["verdict"]) == (1, "not linearizable") and d["details"]["failing_key"] == "7"
    code, d = result(cli, "list")
    assert code == 0 and d["counts"]["specs"] == len(d["specs"]) and {"name": "two_phase", "summary": d["specs"][
        [s["name"] for s in d["specs"]].index("two_phase")]["summary"], "params": {"rm": 3}} in d["specs"]


def test_validate_a_run_trace(cli, tmp_path):
    """A run of real processes (`lockstep run --trace`), validated: the outcome as one object, the result's
    fields under `details`; a tampered run is invalid, and says where."""
    trace = tmp_path / "run.jsonl"
    assert cli("run", "two_phase_commit", "--trace", str(trace)).code == 0
    code, d = result(cli, "validate", str(trace))
    details = d["details"]
    assert (code, d["verdict"], details["model"], d["spec"]) == (0, "valid", "actors", "two_phase_commit")
    assert d["params"]["rm"] == 2
    assert details["events"] == d["counts"]["events"] > 0 and details["mismatch"] is None
    lines = trace.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"kind":"message","pid":1' in line and '"rm_state":"prepared"' in line)
    lines[at] = lines[at].replace('"rm_state":"prepared"', '"rm_state":"aborted"')
    trace.write_text("\n".join(lines) + "\n")
    code, d = result(cli, "validate", str(trace))
    assert (code, d["verdict"]) == (1, "invalid") and d["details"]["mismatch"]


def test_a_history_format_given_as_the_output_format_is_refused_with_the_option_it_meant(cli):
    r = cli("linearizable", os.path.join(CORPUS, "kv/c01-ok.txt"), "--model", "kv", "--format", "edn")
    assert r.code == 2 and "give it as --history-format edn" in r.err
    assert cli("linearizable", os.path.join(CORPUS, "kv/c01-ok.txt"), "--model", "kv", "--history-format",
               "edn").code == 0
    r = cli("linearizable", os.path.join(CORPUS, "kv/c01-ok.txt"), "--model", "kv", "--history-format", "jepsen-log")
    assert r.code == 2 and "not a Jepsen log line" in r.err  # the format given is the one read


def test_the_command_line_pipes_into_a_json_reader():
    """As the issue's acceptance reads: `lockstep check two_phase --format json | python -c 'json.load(...)'`."""
    check = subprocess.Popen([sys.executable, "-m", "lockstep", "check", "two_phase", "--format", "json"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    reader = subprocess.run([sys.executable, "-c", "import json, sys; print(json.load(sys.stdin)['verdict'])"],
                            stdin=check.stdout, capture_output=True, text=True, timeout=300)
    check.stdout.close()
    assert check.wait(timeout=300) == 0 and reader.returncode == 0 and reader.stdout == "holds\n"


def test_the_schema_is_the_documented_one():
    """docs/json.md lists every field of the schema."""
    doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "json.md"), encoding="utf-8").read()
    assert all(f"`{field}`" in doc for field in SCHEMA["properties"])
