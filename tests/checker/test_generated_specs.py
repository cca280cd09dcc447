"""Generated specs (hypothesis) on which the interpreters must agree: vector with scalar, z3 with scalar.

Each spec mixes what once made the vector engine compile wrong code — a set wider than one 63-bit
column, a map, a small set, a sequence and integer constants, some of them with the bit pattern of a set constant
(`{0}` is 1, `{0, 1}` is 3, `{63}` is 2**63) — in guards and updates drawn from a small typed grammar.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockstep.checker.explicit import Options, check
from lockstep.checker.smt.conformance import compare
from lockstep.checker.smt.encode import DEFAULT
from lockstep.checker.typed_model import TypedModel
from lockstep.checker.vector import check_vector
from lockstep.specs.lang import (
    And,
    Bool,
    If,
    Int,
    Map,
    Max,
    Min,
    Not,
    Or,
    Range,
    Seq,
    Set,
    Spec,
    Var,
    action,
    build_program,
    require,
)
from lockstep.specs.lang.terms import lift

STATES = 300  # distinct states explored per generated spec

# integer constants, among them the bit patterns of the set constants below
INTS = [0, 1, 2, 3, 63, 64, 65, 128]  # small enough that no product leaves 62 bits
WIDE_ELEMS = [0, 1, 6, 63, 64, 65]


def _ints(depth: int) -> st.SearchStrategy:
    leaves = st.one_of(st.tuples(st.just("const"), st.sampled_from(INTS)),
                       st.just(("x",)), st.just(("m_i",)), st.just(("m_0",)),
                       st.just(("card_w",)), st.just(("card_t",)), st.just(("len_q",)), st.just(("head_q",)))
    if depth == 0:
        return leaves
    sub, cond = _ints(depth - 1), _bools(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(st.sampled_from(["add", "sub", "mul", "min", "max", "mod"]), sub, sub),
        st.tuples(st.just("ite"), cond, sub, sub),
    )


def _sets(depth: int) -> st.SearchStrategy:
    consts = st.tuples(st.just("wconst"), st.frozensets(st.sampled_from(WIDE_ELEMS), max_size=3))
    leaves = st.one_of(st.just(("w",)), consts)
    if depth == 0:
        return leaves
    sub = _sets(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(st.sampled_from(["wadd", "wremove"]), _ints(depth - 1)),
        st.tuples(st.sampled_from(["union", "inter", "diff"]), sub, sub),
        st.tuples(st.just("wite"), _bools(depth - 1), sub, sub),
    )


def _bools(depth: int) -> st.SearchStrategy:
    leaves = st.one_of(st.just(("true",)), st.just(("b",)), st.tuples(st.just("tcontains"), st.integers(0, 4)))
    if depth == 0:
        return leaves
    i = _ints(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(st.sampled_from(["lt", "eq"]), i, i),
        st.tuples(st.just("wcontains"), i),
        st.tuples(st.just("weq"), _sets(depth - 1), _sets(depth - 1)),
        st.tuples(st.just("not"), _bools(depth - 1)),
        st.tuples(st.sampled_from(["and", "or"]), _bools(depth - 1), _bools(depth - 1)),
    )


UPDATES = st.one_of(
    st.tuples(st.just("x"), _ints(2)),
    st.tuples(st.just("m_i"), _ints(2)),
    st.tuples(st.just("w"), _sets(2)),
    st.tuples(st.just("t"), _ints(1)),
    st.tuples(st.just("b"), _bools(2)),
    st.tuples(st.just("q_push"), _ints(1)),
    st.tuples(st.just("q_pop"),),
    st.tuples(st.just("q_lose"), _ints(1)),
)
ACTIONS = st.lists(st.tuples(st.booleans(), _bools(2), st.lists(UPDATES, min_size=1, max_size=3)), min_size=1, max_size=4)
SHAPES = st.tuples(st.integers(64, 130), st.integers(1, 4), st.integers(1, 9))  # set width, map keys, int bound


class Ctx:
    """What a generated body reads: the state view, the action's key parameter, the wide set's width."""

    def __init__(self, s, i, width):
        self.s, self.i, self.width = s, i, width


def _int(n, c):
    op, s = n[0], c.s
    if op == "const":
        return n[1]
    if op == "x":
        return s.x
    if op == "m_i":
        return s.m[c.i]
    if op == "m_0":
        return s.m[0]
    if op == "card_w":
        return s.w.card()
    if op == "card_t":
        return s.t.card()
    if op == "len_q":
        return s.q.len()
    if op == "head_q":
        return If(s.q.is_empty(), 0, s.q.head())
    if op == "ite":
        return If(_bool(n[1], c), _int(n[2], c), _int(n[3], c))
    a, b = _int(n[1], c), _int(n[2], c)
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "min":
        return Min(a, b)
    if op == "max":
        return Max(a, b)
    return a % (b * b + 1)  # a divisor that is never 0


def _set(n, c):
    op, s = n[0], c.s
    if op == "w":
        return s.w
    if op == "wconst":
        return lift(frozenset(e % c.width for e in n[1]), s.w.dom)  # a constant term
    if op == "wadd":
        return s.w.add(_wrap(_int(n[1], c), c.width))
    if op == "wremove":
        return s.w.remove(_wrap(_int(n[1], c), c.width))
    if op == "wite":
        return If(_bool(n[1], c), _set(n[2], c), _set(n[3], c))
    a, b = _set(n[1], c), _set(n[2], c)
    return {"union": a.union, "inter": a.inter, "diff": a.diff}[op](b)


def _wrap(v, n):
    """v reduced into 0..n-1."""
    return v % n


def _bool(n, c):
    op, s = n[0], c.s
    if op == "true":
        return True
    if op == "b":
        return s.b
    if op == "tcontains":
        return s.t.contains(n[1])
    if op == "lt":
        return _int(n[1], c) < _int(n[2], c)
    if op == "eq":
        return _int(n[1], c) == _int(n[2], c)
    if op == "wcontains":
        return s.w.contains(_wrap(_int(n[1], c), c.width))
    if op == "weq":
        return _set(n[1], c) == _set(n[2], c)
    if op == "not":
        return Not(_bool(n[1], c))
    a, b = _bool(n[1], c), _bool(n[2], c)
    return And(a, b) if op == "and" else Or(a, b)


def _apply(u, c, hi):
    s = c.s
    if u[0] == "x":
        s.x = _wrap(_int(u[1], c), hi + 1)
    elif u[0] == "m_i":
        s.m[c.i] = _wrap(_int(u[1], c), hi + 1)
    elif u[0] == "w":
        s.w = _set(u[1], c)
    elif u[0] == "t":
        s.t = s.t.add(_wrap(_int(u[1], c), 5))
    elif u[0] == "b":
        s.b = _bool(u[1], c)
    elif u[0] == "q_push":
        s.q = If(s.q.len() < 3, s.q.append(_wrap(_int(u[1], c), 3)), s.q)
    elif u[0] == "q_pop":
        s.q = If(s.q.is_empty(), s.q, s.q.tail())
    else:
        i = _wrap(_int(u[1], c), 3)
        s.q = If(i < s.q.len(), s.q.remove_at(i), s.q)


def _action(guard, updates, width: int, hi: int, key):
    """An action function: over the map's keys if `key` is given, else without parameters."""
    def body(s, i):
        c = Ctx(s, i, width)
        require(_bool(guard, c))
        for u in updates:
            _apply(u, c, hi)

    if key is None:
        return lambda s: body(s, 0)

    def fn(s, i):
        body(s, i)
    fn.__annotations__ = {"i": key}
    return fn


def _tick(s):
    s.x = (s.x + 1) % (s.x.hi + 1)


def _toggle(s):
    s.b = Not(s.b)


def _grow(s, j: Int(0, 2)):
    width = s.w.dom.elem.size
    s.w = s.w.add((s.x * 17 + j * 31 + 40) % width)


DRIVERS = {"tick": action(_tick), "toggle": action(_toggle), "grow": action(_grow)}
"""Fixed actions that make every generated spec reach a few hundred states."""


def make_spec(shape, actions) -> type:
    """A Spec class with a wide set w, a small set t, a map m, an int x, a Bool b and a sequence q."""
    width, keys, hi = shape
    Key = Range(keys)
    ns = {"w": Set(Range(width)), "t": Set(Range(5)), "m": Map(Key, Int(0, hi), init=0),
          "x": Var(Int(0, hi), init=0), "b": Var(Bool, init=False), "q": Seq(Int(0, 2), 3)}
    ns.update(DRIVERS)
    for k, (with_key, guard, updates) in enumerate(actions):
        ns[f"act{k}"] = action(_action(guard, updates, width, hi, Key if with_key else None))
    return type("Generated", (Spec,), ns)


def model_of(shape, actions) -> TypedModel:
    cls = make_spec(shape, actions)
    return TypedModel(build_program(cls, {}), "generated")


def outcome(res) -> tuple:
    v = res.violation
    trace = None if v is None else (v.kind, v.name, v.message, [s.state for s in v.trace.steps])
    return res.verdict, res.distinct, res.generated, res.depth, res.queued, trace


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(SHAPES, ACTIONS)
def test_vector_and_scalar_agree_on_generated_specs(shape, actions):
    model = model_of(shape, actions)
    opts = Options(deadlock=False, max_states=STATES)
    assert outcome(check_vector(model, opts)) == outcome(check(model, opts))


def symbolic_agrees(shape, actions, limit: int) -> None:
    rep = compare(model_of(shape, actions), DEFAULT, limit=limit)
    assert not rep.disagreements, "\n".join(map(str, rep.disagreements))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(SHAPES, ACTIONS)
def test_symbolic_and_scalar_agree_on_generated_specs(shape, actions):
    symbolic_agrees(shape, actions, limit=10)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(SHAPES, ACTIONS)
def test_symbolic_and_scalar_agree_on_more_generated_specs(shape, actions):
    symbolic_agrees(shape, actions, limit=30)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(SHAPES, ACTIONS)
def test_vector_and_scalar_agree_on_more_generated_specs(shape, actions):
    model = model_of(shape, actions)
    opts = Options(deadlock=False, max_states=2000)
    assert outcome(check_vector(model, opts)) == outcome(check(model, opts))
