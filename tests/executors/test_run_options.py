"""`lockstep run` and `lockstep.run` take each option only where a run honours it: an option of another kind of run,
a contradiction or a value that makes no sense is refused (exit 2, UsageError) before any process starts."""

from __future__ import annotations

import json
import multiprocessing

import pytest

import lockstep

PLAN = {"drop": 0.1}

REFUSED = [
    (["psmr", "--replicas", "0"], "--replicas 0: must be between 1 and 8"),
    (["psmr", "--workers", "0"], "--workers 0: must be between 1 and 16"),
    (["psmr", "--budget", "0"], "--budget 0.0: seconds for the linearizability check"),
    (["psmr", "--param", "n=3"], "--param applies to actor specs"),
    (["psmr", "--tree", "path:3"], "--tree applies to rounds specs; psmr is a psmr spec"),
    (["psmr", "--no-trace"], "--no-trace applies to actor specs (and population, datalog, autobahn); psmr is"),
    (["psmr", "--rate", "10"], "--rate applies to autobahn specs"),
    (["autobahn", "--replicas", "3"], "--replicas applies to psmr specs; autobahn is an autobahn spec"),
    (["autobahn", "--interactions", "5"], "--interactions applies to population specs"),
    (["token_ring", "--budget", "5"], "--budget applies to psmr specs; token_ring is an actor spec"),
    (["token_ring", "--undirected"], "--undirected applies to datalog specs"),
    (["token_ring", "--kill-replica", "1@1"], "--kill-replica applies to psmr specs"),
    (["phase_clock", "--history", "h.jsonl"], "--history applies to psmr specs"),
    (["token_ring", "--trace", "t.jsonl", "--no-trace"], "--trace FILE writes the run's trace and --no-trace records"),
    (["d2_coloring", "--tree", "path:4", "--no-trace"], "d2_coloring is a rounds spec: it validates what it records"),
    (["d2_coloring", "--tree", "path:4", "--kill", "9@2"], "--kill 9@2: give a node (0..3) and a round (1..6"),
    (["d2_coloring", "--tree", "path:4", "--kill", "1@99"], "--kill 1@99: give a node (0..3) and a round (1..6"),
    (["sssp", "--graph", "ssp:0", "--faults", "plan.json"], "'drop' is not supported by a Datalog run"),
    (["sssp", "--graph", "ssp:0", "--weights", "1:3"], "--weights: its graph is the SSP spec's own"),
    (["sssp", "--graph", "ssp:0", "--undirected"], "--undirected applies to generated graphs"),
    (["cc", "--graph", "path:10", "--weights", "1:2"], "--weights: the program's edge relation has 2 columns"),
]


@pytest.mark.parametrize("argv,words", REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_an_option_a_run_would_ignore_is_refused(cli, tmp_path, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    r = cli("run", *argv)
    assert r.code == 2 and words in r.err, r.out + r.err
    assert "Traceback" not in r.err and "Trace written" not in r.out and "Valid" not in r.out  # nothing ran
    assert multiprocessing.active_children() == []


def test_the_api_refuses_keywords_the_spec_s_model_does_not_take(tmp_path):
    for spec, kw, words in [("token_ring", {"interactions": 5}, "interactions=...: only for population runs"),
                            ("token_ring", {"initiator": 1}, "initiator=...: only for rounds runs"),
                            ("phase_clock", {"duration": 1.0}, "duration=...: only for actors runs"),
                            ("phase_clock", {"start": "zero", "initiator": 0}, "initiator=...: only for rounds runs"),
                            ("d2_coloring", {"record": False}, "record=False: only for actors and population runs"),
                            ("d2_coloring", {"start": "x"}, "start=...: only for population runs"),
                            ("token_ring", {"record": False, "trace": str(tmp_path / "t.jsonl")},
                             "record=False records nothing")]:
        with pytest.raises(lockstep.UsageError, match=words.replace("(", r"\(").replace(".", r"\.")):
            lockstep.run(spec, **kw)
    assert multiprocessing.active_children() == []
