"""Fuzzing untrusted input (hypothesis): mutated traces given to `lockstep replay` and `lockstep validate`, and
mutated frames given to the wire decoders and to the processes' frame handlers. Whatever the input, the answer is
a verdict or one error line with exit 2: never exit 4 (an internal error), never a traceback."""

from __future__ import annotations

import copy
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockstep.checker.explicit import Options, check
from lockstep.checker.liveness import check_properties
from lockstep.checker.loader import load_model
from lockstep.checker.temporal import fairness, select
from lockstep.checker.trace import Trace
from lockstep.executors.wire import FrameError, FrameReader, MessageCodec, Session, parse
from tests.executors.wire_helpers import Peer

EXAMPLES = int(os.environ.get("LOCKSTEP_FUZZ_EXAMPLES", "60"))  # more for a long hunt
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


def paths(doc, prefix=()):
    """Every path into a JSON document."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


@st.composite
def mutated(draw, doc):
    """The document with a few of its values replaced, removed or duplicated."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(list(paths(doc))))
        if not where:
            return draw(json_values)
        parent = doc
        for key in where[:-1]:
            parent = parent[key]
        key = where[-1]
        how = draw(st.sampled_from(["replace", "remove", "duplicate"]))
        if how == "replace" or not isinstance(parent, (dict, list)):
            parent[key] = draw(json_values)
        elif how == "remove":
            del parent[key]
        elif isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        else:
            parent[key] = [parent[key], parent[key]]
    return doc


def text_of(draw, doc) -> bytes:
    """The document's text, sometimes cut short or with a byte changed."""
    data = json.dumps(doc).encode()
    how = draw(st.sampled_from(["whole", "whole", "cut", "flip"]))
    if how == "cut" and data:
        return data[:draw(st.integers(0, len(data) - 1))]
    if how == "flip" and data:
        i = draw(st.integers(0, len(data) - 1))
        return data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1:]
    return data


def verdict_or_input_error(r) -> None:
    assert r.code in (0, 1, 2, 3), (r.code, r.err)
    assert "Traceback" not in r.out + r.err and "internal error" not in r.err, r.err


@pytest.fixture(scope="module")
def traces():
    """JSON of counterexamples of several kinds: an invariant, records and sets, a lasso."""
    out = [check(load_model("diehard"), Options()).violation.trace.to_json()]
    model = load_model("two_phase", {"rm": 2})
    path = [(None, model.initial_states()[0])]
    for _ in range(4):
        path.append(model.successors(path[-1][1])[-1])
    out.append(Trace.from_states(model, path).to_json())
    lock = load_model("lock_weak")
    prop = select(lock, "no_starvation")
    res = check_properties(lock, [prop], fairness(lock, {}), Options(deadlock=False))
    out.append(res.violation.trace.to_json())
    return out


@FUZZ
@given(data=st.data())
def test_replay_of_a_mutated_trace(cli, tmp_path, traces, data):
    doc = data.draw(mutated(data.draw(st.sampled_from(traces))))
    path = tmp_path / "fuzzed.json"
    path.write_bytes(text_of(data.draw, doc))
    verdict_or_input_error(cli("replay", str(path)))


@pytest.fixture(scope="module")
def run_lines(tmp_path_factory):
    from lockstep.executors.actors.run import run

    path = tmp_path_factory.mktemp("fuzz") / "run.jsonl"
    run("two_phase_commit", {"rm": 2}, 0.8, trace=str(path), seed=4)
    return [json.loads(x) for x in path.read_text().splitlines()]


@FUZZ
@given(data=st.data())
def test_validate_of_a_mutated_run_trace(cli, tmp_path, run_lines, data):
    lines = copy.deepcopy(run_lines)
    how = data.draw(st.sampled_from(["edit", "edit", "drop", "repeat", "swap"]))
    i = data.draw(st.integers(0, len(lines) - 1))
    if how == "edit":
        lines[i] = data.draw(mutated(lines[i]))
    elif how == "drop":
        del lines[i]
    elif how == "repeat":
        lines.insert(i, lines[i])
    else:
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    text = b"\n".join(json.dumps(x).encode() for x in lines) + b"\n"
    if data.draw(st.booleans()):
        k = data.draw(st.integers(0, len(text) - 1))
        text = text[:k] + bytes([text[k] ^ data.draw(st.integers(1, 255))]) + text[k + 1:]
    path = tmp_path / "fuzzed.jsonl"
    path.write_bytes(text)
    verdict_or_input_error(cli("validate", str(path)))


@pytest.fixture(scope="module")
def codec():
    return MessageCodec(load_model("bracha").prog.system)


FRAME = {"src": 1, "dst": 2, "clock": 5, "msg": {"tag": "Echo", "v": 1}}


@FUZZ
@given(data=st.data())
def test_the_wire_decoders_take_any_bytes(codec, data):
    doc = data.draw(mutated(FRAME))
    body = text_of(data.draw, doc) if data.draw(st.booleans()) else data.draw(st.binary(max_size=64))
    for decode in (parse, codec.decode):
        try:
            decode(body)
        except FrameError:
            pass
    reader = FrameReader(limit=256)
    for chunk in (body[:3], body[3:], data.draw(st.binary(max_size=300))):
        for payload in reader.feed(chunk):
            assert len(payload) <= 256
    session = Session(b"k" * 32, b"c" * 16, 1, 2, False)
    with pytest.raises(FrameError):
        session.open(body)


@pytest.fixture(scope="module")
def nodes():
    """A real actor, a rounds node and a population agent, as their processes build them (no sockets)."""
    import networkx as nx

    from lockstep.executors.actors.process import Node, NodeConfig
    from lockstep.executors.population.agent import Agent, AgentConfig
    from lockstep.executors.rounds.process import RoundsNode, RoundsNodeConfig
    from lockstep.specs.lang.rounds.trees import tree_params

    actor = Node(NodeConfig("bracha", {}, 2, 0, None))
    rounds = RoundsNode(RoundsNodeConfig("d2_coloring", tree_params(nx.path_graph(3)), 1, 0, None))
    agent = Agent(AgentConfig("phase_clock", {"n": 4}, 1, 4, 0, None, 0, 0))
    return actor, rounds, agent


@FUZZ
@given(data=st.data())
def test_processes_reject_any_frame_without_failing(nodes, data):
    actor, rounds, agent = nodes
    templates = [FRAME, {"src": 0, "round": 1, "msg": None}, {"k": 1, "src": 0, "state": 0, "draw": 5}]
    for node, template, peer in zip((actor, rounds, agent), templates, (1, 0, 0)):
        body = text_of(data.draw, data.draw(mutated(template)))
        node.on_frame(Peer(data.draw(st.sampled_from([peer, 3]))), body)  # any frame: taken, deferred or rejected


@pytest.fixture(scope="module")
def actor_trace():
    """A counterexample of an actor spec (the pictures draw and export its processes)."""
    return check(load_model("two_phase_commit_eager"), Options()).violation.trace.to_json()


@pytest.fixture(scope="module")
def rounds_lines(tmp_path_factory):
    import contextlib
    import io

    from lockstep.checker.cli import main

    path = tmp_path_factory.mktemp("fuzz") / "rounds.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", "d2_coloring", "--tree", "path:4", "--trace", str(path)]) == 0
    return [json.loads(x) for x in path.read_text().splitlines()]


@FUZZ
@given(data=st.data())
def test_draw_and_export_of_a_mutated_trace(cli, tmp_path, actor_trace, run_lines, rounds_lines, data):
    """The pictures read counterexamples, actor runs and rounds runs: any mutation is an error line or a picture."""
    what = data.draw(st.sampled_from(["trace", "actors", "rounds"]))
    if what == "trace":
        path = tmp_path / "fuzzed.json"
        path.write_bytes(text_of(data.draw, data.draw(mutated(actor_trace))))
    else:
        lines = copy.deepcopy(run_lines if what == "actors" else rounds_lines)
        i = data.draw(st.integers(0, len(lines) - 1))
        lines[i] = data.draw(mutated(lines[i]))
        path = tmp_path / "fuzzed.jsonl"
        path.write_bytes(b"\n".join(json.dumps(x).encode() for x in lines) + b"\n")
    verdict_or_input_error(cli("draw", str(path), "--out", str(tmp_path / "chart.svg")))
    verdict_or_input_error(cli("export", str(path), "--shiviz", str(tmp_path / "run.shiviz")))


# -- checkpoints, fault plans, nested histories, ports and output paths -------------------------------------

@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """A checkpoint of each engine (two_phase rm=3, cut at depth 4)."""
    import contextlib
    import io

    from lockstep.checker.cli import main

    d = tmp_path_factory.mktemp("checkpoints")
    with contextlib.redirect_stdout(io.StringIO()):
        for engine in ("vector", "explicit"):
            assert main(["check", "two_phase", "-p", "rm=3", "--quiet", "--max-depth", "4", "--engine", engine,
                         "--checkpoint", str(d / engine), "--checkpoint-every", "0"]) == 3
    return d


COUNTERS = ["level", "levels", "distinct", "generated", "depth", "frontier", "visited", "links", "roots", "fingerprints"]


@FUZZ
@given(data=st.data())
def test_resume_of_a_mutated_checkpoint(cli, tmp_path_factory, checkpoints, data):
    """A checkpoint's manifest (its counters above all) and its frontier, mutated: resuming it is a verdict or one
    error line."""
    import shutil

    import numpy as np

    engine = data.draw(st.sampled_from(["vector", "explicit"]))
    d = tmp_path_factory.mktemp("ck") / engine
    shutil.copytree(checkpoints / engine, d)
    manifest = json.loads((d / "manifest.json").read_text())
    what = data.draw(st.sampled_from(["counter", "counter", "manifest", "frontier"]))
    if what == "counter":
        manifest[data.draw(st.sampled_from(COUNTERS))] = data.draw(json_values | st.integers(-(2**80), 2**80))
        (d / "manifest.json").write_text(json.dumps(manifest))
    elif what == "manifest":
        (d / "manifest.json").write_bytes(text_of(data.draw, data.draw(mutated(manifest))))
    elif engine == "vector":
        words = np.load(d / manifest["frontier"])
        flat = words.reshape(-1)
        for _ in range(data.draw(st.integers(1, 3))):
            flat[data.draw(st.integers(0, len(flat) - 1))] = np.uint64(data.draw(st.integers(0, 2**64 - 1)))
        np.save(d / manifest["frontier"], words)
    else:
        states = json.loads((d / manifest["frontier"]).read_text())
        (d / manifest["frontier"]).write_bytes(text_of(data.draw, data.draw(mutated(states))))
    verdict_or_input_error(cli("check", "two_phase", "-p", "rm=3", "--quiet", "--engine", engine, "--resume", str(d)))


PLAN = {"drop": 0.1, "duplicate": 0.1, "reorder": 0.2, "delay_ms": [0, 20], "reorder_ms": 30,
        "partitions": [{"start": 0.5, "end": 1.0, "groups": [[0, 1], [2, 3]]}],
        "crashes": [{"pid": 1, "at": 0.5, "restart": 1.0}], "stragglers": [{"pid": 0, "delay_ms": 20}],
        "byzantine": {"pid": 3, "behaviour": "vote_all"}}


@FUZZ
@given(data=st.data())
def test_a_mutated_fault_plan_is_a_plan_or_a_faults_error(tmp_path, data):
    from lockstep.executors.autobahn.run import load_plan
    from lockstep.executors.faults import FaultsError, load_faults

    doc = data.draw(mutated(PLAN)) if data.draw(st.booleans()) else \
        {data.draw(st.sampled_from(sorted(PLAN))): data.draw(json_values | st.integers(-(2**80), 2**80))}
    path = tmp_path / "faults.json"
    path.write_bytes(text_of(data.draw, doc))
    for load in (load_faults, load_plan):
        try:
            load(str(path), 4)
        except FaultsError:
            pass


@st.composite
def nested(draw, edn: bool) -> str:
    """A value nested up to 2,000 levels deep (beyond what a parser may recurse into), as EDN or JSON."""
    depth = draw(st.integers(1, 2000))
    opens, closes = draw(st.sampled_from([("[", "]"), ("{:k ", "}"), ("(", ")")] if edn else [("[", "]"), ('{"k": ', "}")]))
    inner = draw(st.sampled_from(["1", '"x"', "[]"]))
    return opens * depth + inner + closes * depth


@FUZZ
@given(data=st.data())
def test_a_deeply_nested_history_is_a_verdict_or_an_error(cli, tmp_path, data):
    edn = data.draw(st.booleans())
    value = data.draw(nested(edn))
    if edn:
        text = (f"{{:process 0, :type :invoke, :f :write, :value {value}}}\n"
                f"{{:process 0, :type :ok, :f :write, :value {value}}}\n")
    else:
        text = (f'{{"process": 0, "type": "invoke", "f": "put", "key": "k", "value": {value}}}\n'
                f'{{"process": 0, "type": "ok", "f": "put", "key": "k", "value": {value}}}\n')
    path = tmp_path / ("h.edn" if edn else "h.jsonl")
    path.write_text(text if data.draw(st.booleans()) else value)
    verdict_or_input_error(cli("linearizable", str(path), "--model", data.draw(st.sampled_from(["kv", "register"]))))


@FUZZ
@given(text=st.integers(-(2**70), 2**70).map(str) | st.text(max_size=12))
def test_a_port_is_a_port_number_or_a_usage_error(text):
    import argparse

    from lockstep.checker.commands.explore import port

    try:
        assert 0 <= port(text) <= 65535
    except argparse.ArgumentTypeError:
        pass


@FUZZ
@given(data=st.data())
def test_an_output_path_is_writable_or_a_usage_error(tmp_path_factory, data):
    """--trace, --out and the like: a directory (existing or written with a slash), a missing directory, a link of
    another user's, or a plain new file."""
    import argparse

    from lockstep.checker.commands.common import output_file
    from lockstep.checker.safeio import write_text

    base = tmp_path_factory.mktemp("out")
    (base / "dir").mkdir()
    os.symlink(base / "dir", base / "theirs")
    os.lchown(base / "theirs", 65534, 65534)
    name = data.draw(st.sampled_from(["dir", "dir/", "theirs", "missing/x", "new.jsonl", "dir/new.jsonl", ""])
                     | st.text(alphabet="ab/.", max_size=6))
    try:
        path = output_file(str(base / name) if name else name)
    except argparse.ArgumentTypeError:
        return
    write_text(path, "x")  # what the check let through can be written, as the commands write it
