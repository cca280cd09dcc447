"""Sequences (`Seq(T, max_len)`): the numbering of values, the operations, their failures, and every
interpreter agreeing on them (the models are in tests/models/sequences.py, which the vector/scalar and
z3/scalar agreement tests run too)."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.checker.explicit import Options, check
from lockstep.checker.itf import decode_typed, encode_typed
from lockstep.checker.loader import load_model
from lockstep.checker.typed_model import TypedModel
from lockstep.checker.vector import check_vector
from lockstep.specs.lang import (
    Bool,
    Enum,
    Int,
    Map,
    Range,
    Record,
    Seq,
    Set,
    Spec,
    SpecError,
    Var,
    action,
    build_program,
    invariant,
    require,
)
from lockstep.specs.lang.jsonvalues import from_json, to_json
from lockstep.specs.lang.params import Binding, bound
from tests.conftest import model_path

CHANNEL = model_path("sequences.py")


def seq_dom(elem, n):
    with bound(Binding("test", {})):
        return Seq(elem, n).dom()


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 4), st.integers(0, 4))
def test_sequences_are_numbered_0_to_size_minus_1_by_length_then_elements(k, n):
    d = seq_dom(Int(0, k - 1), n)
    values = [d.value(i) for i in range(d.size)]
    assert [d.index(v) for v in values] == list(range(d.size))
    assert len(set(values)) == d.size == sum(k**j for j in range(n + 1))
    assert [len(v) for v in values] == sorted(len(v) for v in values)  # shorter sequences first


def test_values_round_trip_through_json_and_itf():
    Msg = Record("Msg", bit=Bool, d=Enum("d1", "d2"))
    d = seq_dom(Msg, 3)
    v = (Msg(bit=True, d="d2"), Msg(bit=False, d="d1"))
    assert from_json(d, to_json(d, v)) == v and decode_typed(d, encode_typed(d, v)) == v
    assert encode_typed(d, ()) == []
    with pytest.raises(ValueError, match="at most 3 elements"):
        from_json(d, [to_json(Msg.dom(Binding("t", {})), v[0])] * 4)
    with pytest.raises(SpecError, match="longer than Seq"):
        d.index((v[0],) * 4)


def channel_by_hand() -> tuple[int, int]:
    """Channel (tests/models/sequences.py) explored by a plain breadth-first search over Python tuples."""
    msgs = [(b, d) for b in (False, True) for d in (0, 1)]

    def successors(st):
        q, got, n = st
        out = []
        if len(q) < 3:
            out += [(q + (m,), got, n) for m in msgs]
        if q:
            out.append((q[1:], q[0], min(n + 1, 3)))
        out += [(q[:i] + q[i + 1:], got, n) for i in range(3) if i < len(q)]
        if len(q) >= 2:
            out.append((q, q[-1], n))
        return out

    start = ((), None, 0)
    seen, queue, generated = {start}, deque([start]), 1
    while queue:
        for nxt in successors(queue.popleft()):
            generated += 1
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return len(seen), generated


def test_a_lossy_fifo_channel_has_the_states_a_plain_search_finds():
    want = channel_by_hand()
    model = load_model(CHANNEL + ":Channel")
    for res in (check(model, Options()), check_vector(model, Options())):
        assert (res.verdict, res.distinct, res.generated) == ("holds", *want)


@pytest.mark.parametrize("name, message, steps", [
    ("Overfull", "append to a full sequence: Seq(Int(0, 1), 3) holds at most 3 elements", 3),
    ("EmptyHead", "head of an empty sequence", 1),
])
def test_a_full_append_and_the_head_of_an_empty_sequence_fail_the_step(name, message, steps):
    model = load_model(CHANNEL + ":" + name)
    for res in (check(model, Options()), check_vector(model, Options())):
        v = res.violation
        assert v.kind == "type" and message in v.message and len(v.trace.steps) - 1 == steps
        assert v.location.startswith(CHANNEL)


Proc = Range(2)
Entry = Record("Entry", src=Proc, log=Seq(Int(0, 1), 2))


class Logs(Spec):
    """Sequences as map values, record fields and set elements."""

    log = Map(Proc, Seq(Int(0, 1), 2), init=())
    sent = Set(Entry)
    last = Var(Seq(Int(0, 1), 2), init=(0,))

    @action
    def write(s, p: Proc, x: Int(0, 1)):
        require(s.log[p].len() < 2)
        s.log[p] = s.log[p].append(x)

    @action
    def publish(s, p: Proc):
        s.sent = s.sent.add(Entry(src=p, log=s.log[p]))
        s.last = s.log[p]

    @invariant
    def published_logs_are_short(s):
        return s.last.len() <= 2


def test_sequences_as_map_values_record_fields_and_set_elements():
    model = TypedModel(build_program(Logs), "logs")
    res = check(model, Options(max_states=3000))
    assert res.violation is None and res.distinct > 100
    vec = check_vector(model, Options(max_states=3000))
    assert (vec.distinct, vec.generated) == (res.distinct, res.generated)


def test_misused_sequences_are_explained():
    class Bad(Spec):
        q = Seq(Int(0, 1), 2)

        @action
        def go(s):
            s.q = s.q.append(1)
            require(len(s.q) > 0)

    with pytest.raises(SpecError, match=r"use q\.len\(\)"):
        build_program(Bad)

    class Far(Spec):
        q = Seq(Int(0, 1), 2)

        @action
        def go(s):
            require(s.q[2] == 1)

    with pytest.raises(SpecError, match=r"position 2 is outside Seq\(Int\(0, 1\), 2\) \(0\.\.1\)"):
        build_program(Far)
