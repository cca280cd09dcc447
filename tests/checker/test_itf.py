"""ITF both ways: our traces as Apalache's ADR-015 and Quint's reader expect them, and traces of Quint replayed
against Lockstep specs. The Quint tests install Quint (npm `@informalsystems/quint`) into a cache the first time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.itf import UNIT, decode_typed, encode_plain, encode_typed, type_string
from lockstep.checker.loader import load_model
from lockstep.checker.replay import replay
from lockstep.checker.trace import Trace, TraceError
from lockstep.specs.lang import Enum, Int, Option, Record, Union
from lockstep.specs.lang.params import Binding, bound
from tests.conftest import model_path, typed_spec_refs

QUINT_VERSION = "0.33.1"
DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")


def doms(*types):
    with bound(Binding("T", {})):
        return [t.dom() for t in types]


def test_values_are_written_as_itf_readers_expect():
    point = Record("Point", x=Int(0, 3))
    ping, stop = Record("Ping", n=Int(0, 3)), Record("Stop")
    rec, union, opt, enum = doms(point, Union(ping, stop), Option(Int(0, 3)), Enum("a", "b"))
    assert encode_typed(rec, point(2)) == {"x": {"#bigint": "2"}}  # a plain record is a JSON object
    assert encode_typed(union, ping(1)) == {"tag": "Ping", "value": {"n": {"#bigint": "1"}}}  # a variant
    assert encode_typed(union, stop()) == {"tag": "Stop", "value": UNIT}  # a variant without fields carries unit
    assert encode_typed(opt, None) == {"tag": "None", "value": UNIT} and encode_typed(opt, 3)["tag"] == "Some"
    assert type_string(rec) == "{ x: Int }" and type_string(union) == "Ping({ n: Int }) | Stop(UNIT)"
    assert type_string(opt) == "None(UNIT) | Some(Int)" and type_string(enum) == "Str"
    # and read back, in the forms other writers use too
    assert decode_typed(rec, {"x": 2}) == point(2)
    assert decode_typed(rec, {"tag": "Point", "value": {"x": {"#bigint": "2"}}}) == point(2)  # Lockstep 1 traces
    assert decode_typed(union, {"tag": "Stop", "value": {}}) == stop()
    assert decode_typed(opt, {"tag": "None", "value": {}}) is None
    assert decode_typed(enum, {"tag": "b", "value": UNIT}) == "b"


def test_plain_values_without_an_itf_form_are_variants():
    assert encode_plain(None) == {"tag": "None", "value": UNIT}
    assert encode_plain(0.25) == {"tag": "Float", "value": {"num": {"#bigint": "1"}, "den": {"#bigint": "4"}}}
    assert encode_plain(float("nan")) == {"tag": "Float", "value": "nan"}
    assert "#unserializable" not in json.dumps(encode_plain((None, 1.5, frozenset({2.0}))))


def test_a_plain_spec_with_none_and_floats_replays(tmp_path):
    spec = model_path("plain_floats.py")
    path = tmp_path / "floats.json"
    check(load_model(spec), Options()).violation.trace.save(str(path))
    data = json.loads(path.read_text())
    assert data["#meta"]["varTypes"]["level"].startswith("Float(") and "#unserializable" not in path.read_text()
    assert "below_one is violated" in replay(Trace.load(str(path)), spec=spec).conclusion


def test_the_action_is_also_written_for_quint(tmp_path):
    model = load_model("two_phase", {"rm": 2})
    path = [(None, model.initial_states()[0])]
    for _ in range(3):
        path.append(model.successors(path[-1][1])[-1])
    data = Trace.from_states(model, path).to_json()
    assert data["vars"][-2:] == ["mbt::actionTaken", "mbt::nondetPicks"]
    assert data["#meta"]["varTypes"]["mbt::nondetPicks"] == "{ r: None(UNIT) | Some(Int) }"
    assert data["#meta"]["varTypes"]["msgs"] == "Set(Prepared({ rm: Int }) | Commit(UNIT) | Abort(UNIT))"
    assert "params" not in data and data["#meta"]["lockstep"]["params"] == {"rm": 2}
    for s in data["states"][1:]:
        assert s["mbt::actionTaken"] == s["#meta"]["action"]
        picks = s["mbt::nondetPicks"]
        assert set(picks) == {"r"} and (picks["r"] == {"tag": "Some", "value": s["#meta"]["args"]["r"]}
                                        if s["#meta"]["args"] else picks["r"]["tag"] == "None")


def test_a_stuttering_lasso_and_a_self_loop_are_told_apart(tmp_path):
    model = load_model("diehard")
    s0 = model.initial_states()[0]
    self_loop = next(lid for lid, t in model.successors(s0) if t == s0)  # emptying an empty jug
    stutter = Trace.from_states(model, [(None, s0)], loop=0)
    looped = Trace.from_states(model, [(None, s0)], loop=0, loop_action=model.label_json(self_loop))
    assert stutter.to_json()["#meta"]["lockstep"]["loop_action"] == "stutter"
    assert looped.to_json()["#meta"]["lockstep"]["loop_action"]["action"] == model.label(self_loop)
    for trace, shape in ((stutter, "stutters in state 0 for ever"), (looped, "leads from state 0 back to itself")):
        path = tmp_path / "lasso.json"
        trace.save(str(path))
        assert shape in replay(Trace.load(str(path))).conclusion
    data = looped.to_json()
    data["#meta"]["lockstep"]["loop_action"] = {"action": "fill_big", "args": {}}  # does not lead back
    path.write_text(json.dumps(data))
    with pytest.raises(TraceError, match="fill_big does not lead from state 0 back to state 0"):
        replay(Trace.load(str(path)))


# -- Quint ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def quint():
    """The Quint CLI and a node script that reads ITF with Quint's own reader; installed once into a cache."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("node and npm are needed to install Quint")
    root = os.path.join(os.path.expanduser("~"), ".cache", "lockstep-tests", f"quint-{QUINT_VERSION}")
    cli = os.path.join(root, "node_modules", ".bin", "quint")
    if not os.path.exists(cli):
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, "package.json"), "w") as f:  # antlr4ts pinned: its newest tag breaks Quint
            json.dump({"name": "lockstep-test-quint", "private": True,
                       "dependencies": {"@informalsystems/quint": QUINT_VERSION},
                       "overrides": {"antlr4ts": "0.5.0-alpha.4"}}, f)
        try:
            subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=root, check=True,
                           capture_output=True, timeout=600)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            pytest.skip(f"Quint could not be installed from npm: {e}")
    reader = os.path.join(root, "read_itf.js")
    with open(reader, "w") as f:
        f.write("const fs = require('fs');\n"
                "const itf = require('@informalsystems/quint/dist/src/itf');\n"
                "const data = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));\n"
                "const back = itf.toItf(data.vars, itf.ofItf(data));\n"
                "if (back.isLeft()) { console.error(JSON.stringify(back.value)); process.exit(1); }\n"
                "console.log(JSON.stringify(back.value.states));\n")
    return cli, reader, root


def strip_meta(states):
    return [{k: v for k, v in s.items() if k != "#meta"} for s in states]


@pytest.mark.parametrize("spec, params, steps", [("two_phase", {"rm": 2}, 6), ("bracha", {}, 5),
                                                 ("d2_coloring", {}, 4), (model_path("term_corners.py") + ":Messages", {}, 4),
                                                 (model_path("plain_floats.py"), {}, 3), ("alternating_bit", {}, 6),
                                                 (model_path("quorums.py") + ":Vote", {}, 3)])
def test_quints_reader_reads_our_traces(quint, tmp_path, spec, params, steps):
    """Quint's ofItf reads the file; its toItf writes back the same values."""
    _, reader, root = quint
    model = load_model(spec, params)
    path = [(None, model.initial_states()[0])]
    for _ in range(steps):
        succ = model.successors(path[-1][1])
        if not succ:
            break
        path.append(succ[-1])
    out = tmp_path / "trace.itf.json"
    Trace.from_states(model, path).save(str(out))
    proc = subprocess.run(["node", reader, str(out)], cwd=root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    ours = strip_meta(json.loads(out.read_text())["states"])
    assert strip_meta(json.loads(proc.stdout)) == ours


def test_a_quint_trace_replays_against_the_lockstep_spec(quint, cli, tmp_path):
    """`quint run` finds the Die Hard solution in a Quint spec; Lockstep replays Quint's trace against its own
    `diehard`, matching variables and actions by name, and confirms the violation."""
    qcli, _, root = quint
    out = tmp_path / "diehard.itf.json"
    proc = subprocess.run([qcli, "run", os.path.join(DATA, "diehard.qnt"), "--backend", "typescript",
                           "--invariant", "NotSolved", "--max-steps", "30", "--max-samples", "10000", "--seed", "7",
                           "--mbt", "--out-itf", str(out)], cwd=root, capture_output=True, text=True, timeout=300)
    assert "Invariant violated" in proc.stdout + proc.stderr and out.exists(), proc.stderr
    r = cli("replay", str(out))
    assert r.code == 2 and "--spec" in r.err
    r = cli("replay", str(out), "--spec", "diehard")
    assert r.code == 0, r.err
    assert "a behaviour of DieHard; in the last state invariant not_solved is violated" in r.out
    data = json.loads(out.read_text())
    data["states"][-1]["big"] = {"#bigint": "1"}  # not where the step leads
    out.write_text(json.dumps(data))
    r = cli("replay", str(out), "--spec", "diehard")
    assert r.code == 2 and f"step {len(data['states']) - 1}: no step of DieHard leads to the recorded state" in r.err


@pytest.mark.parametrize("ref", typed_spec_refs())
def test_every_typed_spec_writes_and_replays_its_trace(ref, tmp_path):
    """Every field and action parameter type has an ITF form and an Apalache type (sequences, OneOf values, ...):
    a short trace of each typed spec is written, read back and replayed."""
    model = load_model(ref)  # every typed spec of the project loads
    path = [(None, model.initial_states()[0])]
    try:
        succs = model.successors(path[0][1])
    except Exception:  # a model whose first step fails by design (its trace is then the initial state)
        succs = []
    if succs:
        path.append(succs[0])
    trace = Trace.from_states(model, path)
    data = trace.to_json()
    assert set(data["#meta"]["varTypes"]) >= set(model.vars)
    out = tmp_path / "t.json"
    trace.save(str(out))
    assert replay(Trace.load(str(out)), spec=ref).conclusion.startswith(f"replayed {len(path) - 1} step")
