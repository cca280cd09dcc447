"""The P-SMR key-value service on processes: run -> linearizability check -> validation, with a replica crash;
a seeded C-G bug caught on the real processes; bad arguments refused."""

from __future__ import annotations

import json
import multiprocessing

from lockstep.checker.linearizability import check, load_model, read_history
from lockstep.checker.validation.psmr import RunInvalid, validate_run
from lockstep.executors.psmr.layout import ServiceConfig
from lockstep.executors.psmr.run import merge_history, run


def test_round_trip_with_a_replica_crash(cli, tmp_path):
    hist = str(tmp_path / "history.jsonl")
    r = cli("run", "psmr", "--duration", "2", "--kill-replica", "1@0.8", "--history", hist)
    assert r.code == 0, r.out + r.err
    assert "replica 1 killed (SIGKILL, its 2 workers)" in r.out
    assert "follow the spec's rules" in r.out and "Linearizable: the clients' history" in r.out
    lines = [json.loads(x) for x in open(hist)]
    oks = [e for e in lines if e["type"] == "ok"]
    late = [e for e in oks if e["time"] > min(x["time"] for x in lines) + 1.2]
    assert late, "the surviving replica kept serving after the crash"
    r = cli("linearizable", hist, "--model", "psmr-kv")
    assert r.code == 0, r.out
    assert multiprocessing.active_children() == []


def test_validation_catches_a_reordered_trace(tmp_path):
    rep = run(ServiceConfig(workers=2, clients=2, outstanding=2, keys=4, dependent=0.3, commands=40), 1.5,
              str(tmp_path))
    validate_run(rep.traces)  # the genuine trace is valid
    worker = rep.traces[3]  # replica 0, worker 0
    lines = open(worker).read().splitlines()
    execs = [i for i, ln in enumerate(lines) if '"k":"exec"' in ln]
    i, j = execs[0], execs[1]
    lines[i], lines[j] = lines[j], lines[i]
    open(worker, "w").write("\n".join(lines) + "\n")
    try:
        validate_run(rep.traces)
    except RunInvalid as e:
        assert "out of its delivery order" in str(e) or "replied" in str(e)
    else:
        raise AssertionError("a reordered trace was accepted")
    h = read_history(merge_history(rep, str(tmp_path / "h.jsonl")))
    assert check(h, load_model("psmr-kv")).verdict == "linearizable"


def test_first_key_cg_is_caught_on_processes(cli):
    r = cli("run", "psmr_first_key_cg", "--duration", "2", "--dependent", "0.3", "--keys", "4")
    assert r.code == 1, r.out + r.err
    assert "Invalid: the run breaks the spec" in r.out or "Not linearizable" in r.out


def test_bad_arguments(cli):
    assert cli("run", "psmr", "--kill-replica", "5@1").code == 2
    assert cli("run", "psmr", "--kill-replica", "x").code == 2
    assert cli("run", "psmr", "--dependent", "2").code == 2
    assert cli("run", "psmr", "--workers", "4", "--keys", "2").code == 2
