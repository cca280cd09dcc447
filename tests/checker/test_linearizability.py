"""The linearizability checker: the Porcupine corpus verdicts, formats, models, explanations, the CLI."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.checker.linearizability import (
    UNKNOWN,
    History,
    HistoryError,
    Operation,
    check,
    linearizable,
    load_model,
    read_history,
)
from lockstep.checker.linearizability.edn import EDNError, Keyword, Tagged, loads
from lockstep.checker.linearizability.search import _renumber, prefix
from tests.conftest import model_path

CORPUS = "/work/shared/corpora/porcupine"
if not os.path.isdir(CORPUS):
    CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "corpora", "porcupine")
needs_corpus = pytest.mark.skipif(not os.path.isdir(CORPUS), reason="the Porcupine corpus is not on this machine")


def expected() -> dict[str, bool]:
    with open(os.path.join(CORPUS, "EXPECTED.json")) as fh:
        return json.load(fh)["verdicts"]


def corpus_model(name: str) -> str:
    return "kv" if name.startswith("kv/") else "cas-register"


@needs_corpus
def test_every_porcupine_verdict():
    """All 102 etcd and 6 kv histories get Porcupine's verdict (the whole corpus runs in seconds)."""
    wrong = []
    for name, want in expected().items():
        v = check(read_history(os.path.join(CORPUS, name)), load_model(corpus_model(name)), budget=60, explain=False)
        if v.verdict != ("linearizable" if want else "not linearizable"):
            wrong.append((name, want, v.verdict))
    assert wrong == []
    assert len(expected()) == 108


@needs_corpus
@pytest.mark.parametrize("name", ["kv/c01-ok.txt", "kv/c01-bad.txt"])
def test_unpartitioned_kv_agrees(name):
    v = check(read_history(os.path.join(CORPUS, name)), load_model("kv-whole"), explain=False)
    assert (v.verdict == "linearizable") == expected()[name]
    assert v.partitions == 1


@pytest.mark.slow
@needs_corpus
@pytest.mark.parametrize("name", ["kv/c10-ok.txt", "kv/c10-bad.txt"])
def test_unpartitioned_kv_agrees_long(name):
    v = check(read_history(os.path.join(CORPUS, name)), load_model("kv-whole"), explain=False)
    assert (v.verdict == "linearizable") == expected()[name]


@needs_corpus
def test_jepsen_log_reading_follows_porcupine():
    h = read_history(os.path.join(CORPUS, "jepsen/etcd_100.log"))
    assert h.format == "jepsen-log" and len(h) == 77
    timeouts = [op for op in h.operations if op.f == "read" and op.unknown and op.ret < max(o.ret for o in h.operations)]
    assert len(timeouts) == 5  # `:fail :read :timed-out` completes in place, output unknown
    end = max(op.ret for op in h.operations)
    assert sum(1 for op in h.operations if op.ret == end) == 11  # the :info calls return, unknown, at the end
    assert any(op.f == "cas" and op.output is False for op in h.operations)  # `:fail :cas` is kept as false


@needs_corpus
def test_illegal_prefix_is_shortest_and_involved_ops_needed():
    h = read_history(os.path.join(CORPUS, "jepsen/etcd_000.log"))
    m = load_model("cas-register")
    v = check(h, m)
    assert v.verdict == "not linearizable" and v.minimal
    cut = v.last.ret + 1
    assert not linearizable(_renumber(prefix(h.operations, cut)), m)
    shorter = max(op.ret + 1 for op in h.operations if not op.unknown and op.ret + 1 < cut)
    assert linearizable(_renumber(prefix(h.operations, shorter)), m)
    assert not linearizable(_renumber(v.involved), m)
    for op in v.involved:  # every read kept is needed
        if op.f == "read" and op.id != v.last.id:
            assert linearizable(_renumber([o for o in v.involved if o.id != op.id]), m)


@needs_corpus
def test_c50_bad_stops_at_first_illegal_key():
    """A naive search starting on key "0" or "9" runs out of time; round-robin partitions do not."""
    v = check(read_history(os.path.join(CORPUS, "kv/c50-bad.txt")), load_model("kv"), budget=30)
    assert v.verdict == "not linearizable" and v.partitions == 10
    assert v.failing_key not in ("0", "9")


# --------------------------------------------------------------------------- sequential histories


def sequential(kinds: list[tuple[str, int]]) -> History:
    """A one-client register history run against a real register: every read sees the last write."""
    ops, cur, clock = [], None, 0
    for i, (f, v) in enumerate(kinds):
        if f == "write":
            ops.append(Operation(i, i % 3, "write", v, True, clock, clock + 1))
            cur = v
        else:
            ops.append(Operation(i, i % 3, "read", None, cur, clock, clock + 1))
        clock += 2
    return History(ops, "generated", "test")


ops_strategy = st.lists(st.tuples(st.sampled_from(["read", "write"]), st.integers(0, 3)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(ops_strategy)
def test_sequential_histories_are_linearizable(kinds):
    for model in ("register", "cas-register"):
        assert check(sequential(kinds), load_model(model)).verdict == "linearizable"


@settings(max_examples=60, deadline=None)
@given(ops_strategy, st.data())
def test_one_stale_read_is_not(kinds, data):
    h = sequential(kinds)
    values, stale_at = [], []
    for op in h.operations:  # reads that could return an older value than the current one
        if op.f == "write":
            values.append(op.value)
        elif any(v != op.output for v in [None, *values]):
            stale_at.append(op.id)
    if not stale_at:
        kinds = kinds + [("write", 7), ("read", 0)]
        h = sequential(kinds)
        stale_at = [len(kinds) - 1]
    i = data.draw(st.sampled_from(stale_at))
    op = h.operations[i]
    seen = [None] + [o.value for o in h.operations[:i] if o.f == "write"]
    old = data.draw(st.sampled_from([v for v in seen if v != op.output]))
    h.operations[i] = Operation(op.id, op.client, "read", None, old, op.call, op.ret)
    v = check(h, load_model("register"))
    assert v.verdict == "not linearizable"
    assert v.last.id == i  # the stale read itself completes the shortest illegal prefix


# ------------------------------------------------------------------------------------ formats


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_edn_values_and_errors():
    forms = loads('{:f :cas, :value [1 2], :s #{:a}} ; comment\n #_ {:skipped 1} (nil true "a\\nb" \\x -3 2.5) #inst "2020"')
    assert forms[0] == {Keyword("f"): Keyword("cas"), Keyword("value"): (1, 2), Keyword("s"): frozenset({Keyword("a")})}
    assert forms[1] == (None, True, "a\nb", "x", -3, 2.5)
    assert forms[2] == Tagged("inst", "2020")
    with pytest.raises(EDNError, match=r"h.edn:2:5: unexpected '\)'"):
        loads("{:a 1}\n[1 2))", "h.edn")
    with pytest.raises(EDNError, match="ends inside a form"):
        loads("{:a [1 2]", "h.edn")
    with pytest.raises(EDNError, match="even number"):
        loads("{:a 1 :b}", "h.edn")


def test_knossos_semantics_of_fail_and_info(tmp_path):
    """`:fail` did not happen (dropped); `:info` may have happened at any time after its invocation."""
    text = """[{:process 0, :type :invoke, :f :write, :value 1}
 {:process 0, :type :info, :f :write, :value 1}
 {:process 1, :type :invoke, :f :write, :value 2}
 {:process 1, :type :fail, :f :write, :value 2}
 {:process :nemesis, :type :info, :f :start, :value nil}
 {:process 2, :type :invoke, :f :read, :value nil}
 {:process 2, :type :ok, :f :read, :value 1}]"""
    h = read_history(write(tmp_path, "h.edn", text))
    assert [op.f for op in h.operations] == ["write", "read"] and h.operations[0].output is UNKNOWN
    assert check(h, load_model("register")).verdict == "linearizable"
    bad = text.replace(":ok, :f :read, :value 1", ":ok, :f :read, :value 2")
    assert check(read_history(write(tmp_path, "bad.edn", bad)), load_model("register")).verdict == "not linearizable"


def test_json_lines_ordered_by_time(tmp_path):
    lines = [{"process": 1, "type": "ok", "f": "put", "key": "k", "value": "a", "time": 0.3},
             {"process": 1, "type": "invoke", "f": "put", "key": "k", "value": "a", "time": 0.1},
             {"process": 2, "type": "invoke", "f": "get", "key": "k", "value": None, "time": 0.4},
             {"process": 2, "type": "ok", "f": "get", "key": "k", "value": "a", "time": 0.5}]
    h = read_history(write(tmp_path, "h.jsonl", "\n".join(json.dumps(x) for x in lines)))
    assert h.format == "json" and check(h, load_model("kv")).verdict == "linearizable"


@pytest.mark.parametrize("text, message", [
    ('{"process": 1, "type": "ok", "f": "get", "value": 1}', "never invoked"),
    ('{"process": 1, "type": "invoke", "f": "get"}\n{"process": 1, "type": "invoke", "f": "get"}', "one call at a time"),
    ('{"process": 1, "type": "done", "f": "get"}', "not invoke, ok, fail or info"),
    ('{"process": 1, "type": "invoke"}', "has no f"),
    ('{"process": 1, "type": "invoke", "f": "get"}\n{"process": 1', "h.txt:2:"),
    ("hello", "cannot tell the history's format"),
    ("INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - x", "h.txt:2: not a Jepsen log line"),
])
def test_bad_histories_are_reported(tmp_path, text, message):
    with pytest.raises(HistoryError, match=message):
        read_history(write(tmp_path, "h.txt", text))


def test_user_model_class(cli, tmp_path):
    lines = [{"process": 0, "type": "invoke", "f": "incr"}, {"process": 0, "type": "ok", "f": "incr"},
             {"process": 1, "type": "invoke", "f": "read"}, {"process": 1, "type": "ok", "f": "read", "value": 1}]
    path = write(tmp_path, "c.jsonl", "\n".join(json.dumps(x) for x in lines))
    r = cli("linearizable", path, "--model", model_path("lin_counter.py") + ":Counter")
    assert r.code == 0, r.out + r.err
    lines[-1]["value"] = 2
    path = write(tmp_path, "c2.jsonl", "\n".join(json.dumps(x) for x in lines))
    r = cli("linearizable", path, "--model", model_path("lin_counter.py") + ":Counter")
    assert r.code == 1 and "Not linearizable" in r.out


def test_mutex_model():
    ops = [Operation(0, 0, "acquire", None, True, 0, 1), Operation(1, 1, "acquire", None, True, 2, 3)]
    assert check(History(ops), load_model("mutex")).verdict == "not linearizable"
    ops.insert(1, Operation(2, 0, "release", None, True, 1, 2))
    assert check(History(_renumber(ops)), load_model("mutex")).verdict == "linearizable"


# ---------------------------------------------------------------------------------------- CLI


@needs_corpus
def test_cli_verdicts_and_json(cli, tmp_path):
    out = str(tmp_path / "v.json")
    r = cli("linearizable", os.path.join(CORPUS, "kv/c01-bad.txt"), "--model", "kv", "--out", out)
    assert r.code == 1 and "Shortest illegal prefix" in r.out
    j = json.loads(open(out).read())
    assert j["verdict"] == "not linearizable" and j["failing_key"] == "7"
    assert j["completes_prefix"]["f"] == "get" and len(j["involved"]) <= len(j["illegal_prefix"])
    assert cli("linearizable", os.path.join(CORPUS, "kv/c01-ok.txt"), "-m", "kv").code == 0
    r = cli("linearizable", os.path.join(CORPUS, "jepsen/etcd_099.log"), "-m", "cas-register", "--budget", "0.05")
    assert r.code == 3 and "Unknown" in r.out


def test_cli_input_errors(cli, tmp_path):
    r = cli("linearizable", str(tmp_path / "missing.edn"), "-m", "kv")
    assert r.code == 2 and "cannot read" in r.err
    r = cli("linearizable", write(tmp_path, "h.edn", "{:process 0 :type :invoke :f :read}"), "-m", "nosuch")
    assert r.code == 2 and "unknown model 'nosuch'" in r.err
    r = cli("linearizable", write(tmp_path, "h2.edn", "{:process 0 :type :invoke :f :read}"), "-m", "kv")
    assert r.code == 2 and "not one of the kv model's" in r.err
