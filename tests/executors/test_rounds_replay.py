"""Counterexamples of rounds specs replayed on real node processes, with the trace's initiators and choices."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from lockstep.checker.trace import Trace, TraceError
from lockstep.executors.replay import replay_on_processes
from lockstep.executors.rounds import replay as rounds_replay
from lockstep.executors.rounds.process import RoundsNode, RoundsNodeConfig
from lockstep.executors.wire import dumps
from tests.conftest import model_path
from tests.executors.test_replay_processes import counterexample
from tests.executors.wire_helpers import Control, Peer

PICK = model_path("rounds_flood.py") + ":Pick"


def test_the_uncoordinated_colouring_is_reproduced_on_processes(cli, tmp_path):
    path = str(tmp_path / "cex.json")
    assert cli("check", "d2_coloring_uncoordinated", "--out", path).code == 1
    r = cli("replay", path, "--on-processes")
    assert r.code == 0, r.out + r.err
    assert "0  init: every node started; initiators [1]" in r.out
    assert "1  transmit: round 1: nodes [1] broadcast" in r.out
    assert "color = {0: 1, 1: 0, 2: 1, 3: None, 4: 1, 5: None, 6: None}" in r.out  # what the real nodes hold
    assert "their final state violates invariant proper_distance2, as in the counterexample" in r.out
    assert "does not validate" not in r.out
    assert multiprocessing.active_children() == []


def test_a_tampered_rounds_counterexample_is_refused_before_any_process_starts(cli, tmp_path, monkeypatch):
    path = str(tmp_path / "cex.json")
    cli("check", "d2_coloring_uncoordinated", "--out", path)
    data = json.loads(open(path).read())
    data["states"][2]["color"]["#map"][4][1] = {"tag": "Some", "value": {"#bigint": "2"}}
    open(path, "w").write(json.dumps(data))

    def no_processes(*_args, **_kwargs):
        raise AssertionError("a process was started")

    monkeypatch.setattr(rounds_replay, "RoundsCluster", no_processes)
    with pytest.raises(TraceError, match="step 2 .*the spec's step gives another state: color"):
        replay_on_processes(Trace.load(path), say=lambda _s: None)
    r = cli("replay", path, "--on-processes")
    assert r.code == 2 and "the spec's step gives another state" in r.err and "Traceback" not in r.err


def test_the_traces_receive_choices_are_forced_on_the_nodes(tmp_path):
    trace = Trace.load(counterexample(PICK, tmp_path))
    assert trace.steps[2].action["action"] == "receive"
    lines: list[str] = []
    res = replay_on_processes(trace, say=lines.append, spec=PICK)
    assert res.violated == "ends_differ" and res.steps == 2 and res.validated
    assert any("receive(pick@0=1, pick@1=0, pick@2=1): every node ran its receive step" in line for line in lines)
    assert any(line.strip() == "val = {0: 1, 1: 0, 2: 1}" for line in lines)
    assert multiprocessing.active_children() == []


def test_a_violation_by_the_broadcasts_is_reproduced_with_forced_transmit_choices(tmp_path):
    shout = model_path("rounds_flood.py") + ":Shout"
    trace = Trace.load(counterexample(shout, tmp_path))
    lines: list[str] = []
    res = replay_on_processes(trace, say=lines.append, spec=shout)
    assert res.violated == "no_conflict" and res.steps == 1 and res.validated
    assert any("talk@3=True): round 1: nodes [0, 3] broadcast" in line for line in lines)
    assert any("validates up to the broadcasts of round 1, which violate invariant no_conflict" in line
               for line in lines)


@pytest.mark.parametrize("choice, value", [({"receive": {"pick": 1}}, 1), ({"receive": {"pick": 0}}, 0),
                                           ({"transmit": {}, "receive": {"pick": 1}}, 1)])
def test_a_node_takes_the_forced_choice(choice, value):
    node = RoundsNode(RoundsNodeConfig(PICK, {"n": 3}, 0, 0, None, controlled=True))
    node.ctl = Control()  # type: ignore[assignment]
    node.transmit(1, choice)
    node.on_frame(Peer(1), dumps({"src": 1, "round": 1, "msg": {"tag": "Hello"}}))
    done = node.ctl.sent[-1]
    assert done["op"] == "done" and done["event"]["state"]["val"] == value
    assert done["event"]["choice"] == {"pick": value} and done["transmitted"]["val"] == 0


@pytest.mark.parametrize("choice, reason", [
    ({"receive": {"pick": 5}}, "choice.receive.pick: expected an integer in 0..1, got 5"),
    ({"receive": {"pick": True}}, "choice.receive.pick: expected an integer in 0..1"),
    ({"receive": {"other": 1}}, "choice.receive: expected an object with the fields pick"),
    ({"transmit": {"talk": True}}, "choice.transmit: expected an object with the fields (none)"),
    ({"start": {}}, 'choice: expected an object with "transmit" and/or "receive"'),
    ([1], 'choice: expected an object with "transmit" and/or "receive"'),
])
def test_a_malformed_forced_choice_is_rejected_and_the_round_not_taken(choice, reason):
    node = RoundsNode(RoundsNodeConfig(PICK, {"n": 3}, 0, 0, None, controlled=True))
    node.ctl = Control()  # type: ignore[assignment]
    before = node.state
    node.transmit(1, choice)
    assert node.ctl.sent == [{"op": "rejected", "round": 1, "reason": node.ctl.sent[0]["reason"]}]
    assert reason in node.ctl.sent[0]["reason"]
    assert node.stats["rejected"] == 1 and node.state == before and node.sent == {}


def test_a_population_counterexample_is_refused_with_one_message(cli, tmp_path):
    path = counterexample("agent_clock_buggy", tmp_path)
    r = cli("replay", path, "--on-processes")
    assert r.code == 2 and "is not an actor spec or a rounds spec" in r.err and "Traceback" not in r.err
