"""The linearizability checker: the Porcupine corpus verdicts, formats, models, explanations, the CLI."""

from __future__ import annotations

import json
import os
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.checker.linearizability import (
    UNKNOWN,
    History,
    HistoryError,
    ModelError,
    Operation,
    check,
    linearizable,
    load_model,
    read_history,
)
from lockstep.checker.linearizability.edn import EDNError, Keyword, Tagged, loads
from lockstep.checker.linearizability.explain import prefix
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
def test_illegal_prefix_is_shortest_and_window_minimal():
    h = read_history(os.path.join(CORPUS, "jepsen/etcd_000.log"))
    m = load_model("cas-register")
    v = check(h, m)
    assert v.verdict == "not linearizable" and v.minimal
    cut = v.last.ret + 1
    assert not linearizable(prefix(h.operations, cut), m)
    shorter = max(op.ret + 1 for op in h.operations if not op.unknown and op.ret + 1 < cut)
    assert linearizable(prefix(h.operations, shorter), m)
    assert v.last in v.window and 2 <= len(v.window) < len(v.prefix)
    assert illegal_window(v.prefix, v.window, m)
    for op in v.window:  # each operation of the window is needed: relaxing it makes the prefix linearizable
        assert not illegal_window(v.prefix, [o for o in v.window if o is not op], m)


def illegal_window(pre, window, model) -> bool:
    """Whether `pre` is illegal with every operation outside `window` relaxed: reads left out, others optional."""
    from lockstep.checker.linearizability.engine import solve

    keep = {op.id for op in window}
    ops = [op for op in pre if op.id in keep or not model.is_observer(op)]
    out = solve(ops, model, optional={k for k, op in enumerate(ops) if op.id not in keep})
    assert out.code in (0, 1)
    return out.code == 0


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
    assert check(History(ops), load_model("mutex")).verdict == "linearizable"


# ---------------------------------------------------------------------------------------- CLI


@needs_corpus
def test_cli_verdicts_and_json(cli, tmp_path):
    out = str(tmp_path / "v.json")
    r = cli("linearizable", os.path.join(CORPUS, "kv/c01-bad.txt"), "--model", "kv", "--out", out)
    assert r.code == 1 and "Shortest illegal prefix" in r.out
    j = json.loads(open(out).read())
    assert j["verdict"] == "not linearizable" and j["failing_key"] == "7"
    assert j["completes_prefix"]["f"] == "get" and len(j["window"]) < len(j["illegal_prefix"])
    assert cli("linearizable", os.path.join(CORPUS, "kv/c01-ok.txt"), "-m", "kv").code == 0


def concurrent_history(n: int) -> History:
    """`n` (even) operations on a register that all overlap: writes of 0, 2, 4, ..., and reads returning them in
    the opposite order (linearizable: the writes in descending order, each followed by its read). The search
    tries the writes in invocation order first: exponentially many configurations lie before the answer."""
    ops = []
    for i in range(n):
        read = i % 2 == 1
        ops.append(Operation(i, i, "read" if read else "write", None if read else i, n - 1 - i if read else True, i,
                             n + i))
    return History(ops, "concurrent", "test")


def test_budget_gives_an_unknown_verdict_with_how_far_it_got():
    n = 4000
    v = check(concurrent_history(n), load_model("cas-register"), budget=2)
    assert v.verdict == "unknown" and v.exit_code == 3 and "time budget of 2 s reached with 0 of 1" in v.note
    assert v.seconds < 30  # (the search stops within ~16k steps of the deadline)
    [part] = v.open
    assert part.operations == n and 0 < len(part.linearized) < n
    pre = [op for op in concurrent_history(n).operations if op.call <= part.until.call]
    assert {op.id for op in pre} <= {op.id for op in part.linearized}  # every call before the cut, linearized
    state = None  # and the order given is a legal one
    for op in part.linearized:
        if op.f == "write":
            state = op.value
        else:
            assert op.output == state


def test_cli_budget_counts_the_reading(cli, tmp_path):
    path = tmp_path / "big.jsonl"
    with open(path, "w") as fh:
        for op in concurrent_history(20_000).operations:
            fh.write(json.dumps({"process": op.client, "type": "invoke", "f": op.f, "value": op.value}) + "\n")
        for op in concurrent_history(20_000).operations:
            fh.write(json.dumps({"process": op.client, "type": "ok", "f": op.f, "value": op.value if op.f == "write"
                                 else op.output}) + "\n")
    r = cli("linearizable", str(path), "-m", "cas-register", "--budget", "1")
    assert r.code == 3 and "Unknown: " in r.out  # (how far it read and searched depends on the machine's load)
    h = read_history(str(path), deadline=time.monotonic() - 1)  # the time for reading is over at the first look
    assert h.cut == f"{path}:8192" and len(h) == 8191 and all(op.unknown for op in h.operations)
    v = check(h, load_model("cas-register"))  # every call read is pending: linearizable, but the rest is unread
    assert v.verdict == "unknown" and f"the 8,191 operations read before the time for reading ran out (at {path}:8192)" \
        " are linearizable" in v.note


def test_cli_input_errors(cli, tmp_path):
    r = cli("linearizable", str(tmp_path / "missing.edn"), "-m", "kv")
    assert r.code == 2 and "cannot read" in r.err
    r = cli("linearizable", write(tmp_path, "h.edn", "{:process 0 :type :invoke :f :read}"), "-m", "nosuch")
    assert r.code == 2 and "unknown model 'nosuch'" in r.err
    r = cli("linearizable", write(tmp_path, "h2.edn", "{:process 0 :type :invoke :f :read}"), "-m", "kv")
    assert r.code == 2 and "not one of the kv model's" in r.err


# ------------------------------------------------------------- transactions and mutexes (Knossos' models)


def edn_value(v) -> str:
    """A test value in EDN: strings as keywords (micro-operation names and keys), lists as vectors."""
    if v is None:
        return "nil"
    if isinstance(v, list):
        return "[" + " ".join(edn_value(x) for x in v) + "]"
    return f":{v}" if isinstance(v, str) else str(v)


def history_file(tmp_path, name, fmt, events) -> str:
    """`events` — (process, type, f, value) — written as Knossos EDN (one map per line) or as JSON lines."""
    if fmt == "edn":
        lines = [f"{{:process {p}, :type :{t}, :f :{f}, :value {edn_value(v)}}}" for p, t, f, v in events]
    else:
        lines = [json.dumps({"process": p, "type": t, "f": f, "value": v}) for p, t, f, v in events]
    return write(tmp_path, f"{name}.{'edn' if fmt == 'edn' else 'jsonl'}", "\n".join(lines) + "\n")


def txn(*micro):
    return [list(m) for m in micro]


W00 = txn(("write", "x", 0), ("write", "y", 0))
W11 = txn(("write", "x", 1), ("write", "y", 1))
R = txn(("read", "x", None), ("read", "y", None))

# x and y are written together; readers overlapping the second write see both old or both new values,
# and a txn's reads are only known from its completion (the invocation's are nil).
TXN_GOOD = [(0, "invoke", "txn", W00), (0, "ok", "txn", W00),
            (0, "invoke", "txn", W11), (1, "invoke", "txn", R), (2, "invoke", "txn", R),
            (1, "ok", "txn", txn(("read", "x", 0), ("read", "y", 0))),
            (2, "ok", "txn", txn(("read", "x", 1), ("read", "y", 1))),
            (0, "ok", "txn", W11),
            (3, "invoke", "txn", txn(("write", "x", 2), ("read", "x", None))),
            (3, "ok", "txn", txn(("write", "x", 2), ("read", "x", 2))),
            (4, "invoke", "txn", txn(("read", "y", None))), (4, "ok", "txn", txn(("read", "y", None))),  # nil: unknown
            (5, "invoke", "txn", txn(("write", "y", 7))), (5, "fail", "txn", txn(("write", "y", 7))),  # never happened
            (6, "invoke", "txn", txn(("write", "x", 9))), (6, "info", "txn", txn(("write", "x", 9))),  # may have
            (7, "invoke", "txn", txn(("read", "x", None))), (7, "ok", "txn", txn(("read", "x", 9)))]
TXN_TORN = [*TXN_GOOD[:5], (1, "ok", "txn", txn(("read", "x", 1), ("read", "y", 0))), *TXN_GOOD[6:]]
TXN_OWN_WRITE = [(0, "invoke", "txn", txn(("write", "x", 1), ("read", "x", None))),
                 (0, "ok", "txn", txn(("write", "x", 1), ("read", "x", 5)))]
TXN_FAILED_WRITE_SEEN = [*TXN_GOOD[:12], (5, "invoke", "txn", txn(("write", "y", 7))), (5, "fail", "txn", txn(("write", "y", 7))),
                         (4, "invoke", "txn", txn(("read", "y", None))), (4, "ok", "txn", txn(("read", "y", 7)))]

MUTEX_GOOD = [(0, "invoke", "acquire", None), (0, "ok", "acquire", None),
              (1, "invoke", "acquire", None), (0, "invoke", "release", None), (0, "ok", "release", None),
              (1, "ok", "acquire", None),
              (2, "invoke", "acquire", None), (2, "info", "acquire", None),  # may never have happened
              (1, "invoke", "release", None), (1, "ok", "release", None),
              (3, "invoke", "acquire", None), (3, "fail", "acquire", None),  # did not happen
              (4, "invoke", "acquire", None), (4, "ok", "acquire", None)]
MUTEX_DOUBLE = [*MUTEX_GOOD[:3], (1, "ok", "acquire", None), (0, "invoke", "release", None), (0, "ok", "release", None)]
MUTEX_FREE_RELEASE = [*MUTEX_GOOD[:2], (0, "invoke", "release", None), (0, "ok", "release", None),
                      (1, "invoke", "release", None), (1, "ok", "release", None)]


@pytest.mark.parametrize("fmt", ["edn", "json"])
def test_transactions_use_the_completed_values(tmp_path, fmt):
    h = read_history(history_file(tmp_path, "good", fmt, TXN_GOOD))
    assert len(h) == 8  # the failed write is dropped, the indeterminate one kept with an unknown outcome
    assert h.operations[2].value[0][2] == 0  # a read's value comes from the completion, not the invocation
    assert check(h, load_model("multi-register")).verdict == "linearizable"
    for name, events in [("own", TXN_OWN_WRITE), ("torn", TXN_TORN), ("failed", TXN_FAILED_WRITE_SEEN)]:
        v = check(read_history(history_file(tmp_path, name, fmt, events)), load_model("multi-register"))
        assert v.verdict == "not linearizable", name


@pytest.mark.parametrize("fmt", ["edn", "json"])
def test_torn_transaction_read_window(cli, tmp_path, fmt):
    """The failing window: the prefix ends at the torn read, which is a window on its own: whatever the writes did
    (each sets both x and y), no state has x = 1 and y = 0."""
    good = history_file(tmp_path, "good", fmt, TXN_GOOD)
    assert cli("linearizable", good, "-m", "multi-register").code == 0
    bad, out = history_file(tmp_path, "torn", fmt, TXN_TORN), str(tmp_path / "v.json")
    r = cli("linearizable", bad, "-m", "multi-register", "--out", out)
    assert r.code == 1 and "Not linearizable" in r.out and "Shortest illegal prefix: 4 operations" in r.out
    torn = "client 1: txn [[:read :x 1] [:read :y 0]] -> ok" if fmt == "edn" else \
        "client 1: txn [['read' 'x' 1] ['read' 'y' 0]] -> ok"
    assert f"made illegal by the completion of\n  {torn}" in r.out
    j = json.loads(open(out).read())
    assert [(op["client"], op["f"], op["id"]) for op in j["window"]] == [(1, "txn", 2)]
    rd, x, y = ("read", "x", "y") if fmt == "json" else (":read", ":x", ":y")
    assert j["window_minimal"] and j["completes_prefix"]["value"] == [[rd, x, 1], [rd, y, 0]]
    assert [op["unknown"] for op in j["illegal_prefix"]] == [False, True, False, True]  # the writer and reader 2 pend


@pytest.mark.parametrize("fmt", ["edn", "json"])
def test_transaction_that_misreads_its_own_write(cli, tmp_path, fmt):
    r = cli("linearizable", history_file(tmp_path, "own", fmt, TXN_OWN_WRITE), "-m", "multi-register")
    assert r.code == 1 and "Shortest illegal prefix: 1 operations" in r.out
    assert "txn [[:write :x 1] [:read :x 5]] -> ok" in r.out or "txn [['write' 'x' 1] ['read' 'x' 5]] -> ok" in r.out


@pytest.mark.parametrize("fmt", ["edn", "json"])
def test_mutex_histories(cli, tmp_path, fmt):
    """An indeterminate acquire that could not have succeeded did not happen; a failed one never did."""
    assert cli("linearizable", history_file(tmp_path, "good", fmt, MUTEX_GOOD), "-m", "mutex").code == 0
    for name, events, size, window in [
            ("double", MUTEX_DOUBLE, 2, ["client 0: acquire -> ok", "client 1: acquire -> ok"]),
            # whether or not the acquire happened, two releases cannot both follow it
            ("free", MUTEX_FREE_RELEASE, 3, ["client 0: release -> ok", "client 1: release -> ok"])]:
        r = cli("linearizable", history_file(tmp_path, name, fmt, events), "-m", "mutex")
        assert r.code == 1 and "Not linearizable" in r.out, name
        assert f"Shortest illegal prefix: {size} operations, made illegal by the completion of\n  {window[-1]}" in r.out
        shown = r.out.split("? = outcome unknown:\n")[1].split("Draw it:")[0].splitlines()
        assert [ln.split("[")[0].strip() for ln in shown] == window, name


def test_indeterminate_operations_may_not_have_happened():
    """Knossos' `:info`: a pending acquire (a crashed client) neither blocks later acquires nor must fit anywhere."""
    ops = [Operation(0, 0, "acquire", None, UNKNOWN, 0, 4), Operation(1, 1, "acquire", None, True, 1, 2),
           Operation(2, 2, "acquire", None, UNKNOWN, 3, 4)]
    assert check(History(ops), load_model("mutex")).verdict == "linearizable"
    t = (("write", "x", 1),)
    ops = [Operation(0, 0, "txn", (("read", "x", 3),), UNKNOWN, 0, 3), Operation(1, 1, "txn", t, True, 1, 2)]
    assert check(History(ops), load_model("multi-register")).verdict == "linearizable"


@pytest.mark.parametrize("events, message", [
    ([(0, "invoke", "txn", txn(("incr", "x", 1))), (0, "ok", "txn", txn(("incr", "x", 1)))],
     r"txn has a micro-operation .* that is not \[read k v\] or \[write k v\]"),
    ([(0, "invoke", "txn", 5), (0, "ok", "txn", 5)], r"txn needs a value \[\[f k v\] \.\.\.\]"),
    ([(0, "invoke", "txn", txn(("read", "x"))), (0, "ok", "txn", txn(("read", "x")))], "micro-operation"),
])
def test_malformed_transactions_are_refused(cli, tmp_path, events, message):
    for fmt in ("edn", "json"):
        r = cli("linearizable", history_file(tmp_path, "m", fmt, events), "-m", "multi-register")
        assert r.code == 2 and r.out == "" and "Traceback" not in r.err
        assert f"m.{'edn' if fmt == 'edn' else 'jsonl'}:1: txn" in r.err and re.search(message, r.err), r.err


def test_completion_values_of_every_model(tmp_path):
    """The ok event's value is what the operation did: a write, cas, put or append completed with another
    value than it was invoked with did that; a value the model cannot apply is refused with its place."""
    events = [(0, "invoke", "write", 1), (0, "ok", "write", 2), (1, "invoke", "read", None), (1, "ok", "read", 2)]
    h = read_history(history_file(tmp_path, "w", "json", events))
    assert check(h, load_model("register")).verdict == "linearizable"
    events = [(0, "invoke", "cas", [None, 1]), (0, "ok", "cas", [None, 3]), (1, "invoke", "read", None), (1, "ok", "read", 3)]
    assert check(read_history(history_file(tmp_path, "c", "json", events)), load_model("cas-register")).verdict == "linearizable"
    events[1] = (0, "ok", "cas", None)
    with pytest.raises(ModelError, match=r"c\.jsonl:1: cas needs a value \[from to\], not None"):
        check(read_history(history_file(tmp_path, "c", "json", events)), load_model("cas-register"))
    lines = [{"process": 0, "type": "invoke", "f": "append", "key": "k", "value": "a"},
             {"process": 0, "type": "ok", "f": "append", "key": "k", "value": "b"},
             {"process": 1, "type": "invoke", "f": "get", "key": "k"},
             {"process": 1, "type": "ok", "f": "get", "key": "k", "value": "b"}]
    h = read_history(write(tmp_path, "kv.jsonl", "\n".join(map(json.dumps, lines))))
    assert check(h, load_model("kv")).verdict == "linearizable"
    lines[1]["value"] = 5
    with pytest.raises(ModelError, match=r"kv\.jsonl:1: append needs a string value, not 5"):
        check(read_history(write(tmp_path, "kv.jsonl", "\n".join(map(json.dumps, lines)))), load_model("kv"))
    h = read_history(write(tmp_path, "n.edn", "{:process 0 :type :invoke :f :write :value [{:a 1} #{2}]}\n"
                                              "{:process 0 :type :ok :f :write :value [{:a 1} #{2}]}"))
    assert check(h, load_model("register")).verdict == "linearizable"  # nested maps are hashable values


# ------------------------------------------------------------------ the compiled search against the Python one


def random_history(data, model: str) -> list[Operation]:
    """A few clients' overlapping operations with arbitrary outputs (so both verdicts occur), some unknown."""
    n = data.draw(st.integers(1, 9))
    small = st.integers(0, 2)
    ops = []
    for i in range(n):
        call = data.draw(st.integers(0, 2 * n))
        ret = call + 1 + data.draw(st.integers(0, n))
        unknown = data.draw(st.booleans()) and data.draw(st.booleans())
        if model == "cas-register":
            f = data.draw(st.sampled_from(["read", "write", "cas"]))
            value = {"read": None, "write": data.draw(small), "cas": (data.draw(small), data.draw(small))}[f]
            out = data.draw(st.one_of(st.none(), small)) if f == "read" else data.draw(st.booleans()) if f == "cas" else True
        elif model == "kv":
            f = data.draw(st.sampled_from(["get", "put", "append"]))
            value = None if f == "get" else data.draw(st.sampled_from(["a", "b", "ab"]))
            out = data.draw(st.sampled_from(["", "a", "b", "ab", "aab", "ba"])) if f == "get" else True
        elif model == "psmr-kv":
            f = data.draw(st.sampled_from(["get", "put"]))
            value = None if f == "get" else data.draw(small)
            out = data.draw(small)
        else:
            f, value, out = data.draw(st.sampled_from(["acquire", "release"])), None, True
        ops.append(Operation(i, i, f, value, UNKNOWN if unknown else out, call * 2, ret * 2 + 1, "k"))
    return ops


@pytest.mark.parametrize("model", ["cas-register", "kv", "mutex", "psmr-kv"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_compiled_search_agrees_with_python(model, data):
    import ctypes

    from lockstep.checker.linearizability import native, wgl

    if native.library() is None:
        pytest.skip(f"no compiled search here: {native.unavailable()}")
    m = load_model(model)
    ops = random_history(data, model)
    optional = set(data.draw(st.sets(st.integers(0, len(ops) - 1)))) if data.draw(st.booleans()) else set()
    py = wgl.Outcome(wgl.STOPPED)
    for _ in wgl.search(ops, m, py, optional):
        pass
    c = native.search(native.encoder(m, ops)(ops), None, ctypes.c_int32(0), optional)
    assert c.code == py.code
    if c.code == 1 and not optional:  # the witness is a legal linearization of every operation
        assert sorted(c.witness) == list(range(len(ops)))
        state = m.init()
        for i in c.witness:
            new = m.step(state, ops[i])
            assert new is not None or ops[i].unknown
            state = state if new is None else new


def test_a_cut_reading_of_a_file_ordered_by_time_proves_no_violation(tmp_path):
    """A stale read early in a long history: read whole, or cut in a file ordered by its lines, it is a violation; cut
    in a file ordered by time, it is not proven one (an unread line could hold an earlier write)."""
    lines = [{"process": 0, "type": "invoke", "f": "write", "value": 1}, {"process": 0, "type": "ok", "f": "write", "value": 1},
             {"process": 1, "type": "invoke", "f": "read"}, {"process": 1, "type": "ok", "f": "read", "value": 2}]
    for _ in range(5000):
        lines += [{"process": 2, "type": "invoke", "f": "read"}, {"process": 2, "type": "ok", "f": "read", "value": 1}]
    plain, timed = tmp_path / "plain.jsonl", tmp_path / "timed.jsonl"
    plain.write_text("".join(json.dumps(x) + "\n" for x in lines))
    timed.write_text("".join(json.dumps({**x, "time": k}) + "\n" for k, x in enumerate(lines)))
    m = load_model("cas-register")
    assert check(read_history(str(timed)), m).verdict == "not linearizable"
    cut = read_history(str(plain), deadline=time.monotonic() - 1)
    assert cut.cut and cut.cut_in_order and check(cut, m).verdict == "not linearizable"
    cut = read_history(str(timed), deadline=time.monotonic() - 1)
    assert cut.cut and not cut.cut_in_order
    v = check(cut, m)
    assert v.verdict == "unknown" and "a later line may hold an earlier event" in v.note
