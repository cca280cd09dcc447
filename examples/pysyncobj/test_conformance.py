"""PySyncObj's runs validated against specs/raft.py: a short 3-node run by default, crashes, restarts and partitions
on 3 and 5 nodes with the slow tests (`python -m bench.raft_conformance` prints the same with timings)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pysyncobj", reason="PySyncObj is not installed (pip install -e '.[test]')")

from examples.pysyncobj import scenario  # noqa: E402
from examples.pysyncobj.mapping import spec_params  # noqa: E402
from lockstep.trace import validate  # noqa: E402

MAPPING = os.path.join(os.path.dirname(__file__), "mapping.py")


def check(tmp_path, n, **kw):
    c = scenario.run(str(tmp_path), n, **kw)
    params = spec_params(c.logs)
    assert params["servers"] == n and params["max_term"] >= 2  # at least one election happened
    res = validate(c.logs, "raft", mapping=MAPPING, **params)
    assert res.verdict == "valid", "\n".join(c.events) + "\n" + str(res.frontier) + str(res.reason)
    return c, params, res


def test_a_short_run_of_three_nodes_is_a_behaviour_of_the_spec(tmp_path):
    c, params, res = check(tmp_path, 3, rounds=0, commands=1)
    assert params["max_log"] >= 2  # the leader's no-op and a client command, replicated
    logged = sum(1 for p in c.logs for line in open(p) if '"action"' in line)
    assert res.events == res.total == logged  # every event of every node was matched


def test_a_tampered_log_is_not(tmp_path):
    c = scenario.run(str(tmp_path), 3, rounds=0, commands=1)
    params = spec_params(c.logs)
    # a follower claims a higher term after handling a heartbeat than the leader's message carries
    path = next(p for p in c.logs if '"role":"follower"' in open(p).read() and '"type":"append_entries"' in open(p).read())
    lines = open(path).read().splitlines()
    k = next(i for i, line in enumerate(lines) if '"action":"receive"' in line and '"type":"append_entries"' in line)
    lines[k] = lines[k].replace('"log":[', '"log":[[7,"cmd"],', 1)
    open(path, "w").write("\n".join(lines) + "\n")
    res = validate(c.logs, "raft", mapping=MAPPING, **{**params, "max_term": 9, "max_log": params["max_log"] + 1})
    assert res.verdict == "invalid"
    reasons = [r for f in res.frontier for cand in f.candidates for r in cand.reasons]
    assert any("the logged variables differ: log[" in r for r in reasons), reasons


@pytest.mark.slow
@pytest.mark.parametrize("n", [3, 5])
def test_crashes_restarts_and_partitions_are_behaviours_of_the_spec(tmp_path, n):
    c, params, res = check(tmp_path, n, rounds=2, commands=2)
    assert sum("crashed" in e for e in c.events) == 2 and sum("partition" in e for e in c.events) == 2
