"""The modelling language: types, parameters, tracing, and the errors a misuse produces."""

from __future__ import annotations

import pytest

from lockstep.checker import interpret
from lockstep.checker.explicit import Options, check
from lockstep.checker.typed_model import TypedModel
from lockstep.specs.lang import (
    ANY,
    And,
    Bool,
    Enum,
    Exists,
    ForAll,
    If,
    Int,
    Map,
    Not,
    Option,
    Or,
    Param,
    Range,
    Record,
    Set,
    Spec,
    SpecError,
    Union,
    Var,
    action,
    build_program,
    initial,
    invariant,
    require,
)

HERE = __file__


def line(marker: str) -> int:
    with open(HERE) as f:
        return next(i for i, text in enumerate(f, 1) if marker in text and "def line" not in text and "line(" not in text)


def successors(prog, state):
    return [(t.label, s) for t in prog.transitions if (s := interpret.run_transition(prog, t, state)) is not None]


# -------------------------------------------------------------------------------- types


P = Range("p", default=3)
Ping = Record("Ping", src=P, hops=Int(0, 2))
Ack = Record("Ack", src=P)
Msg = Union(Ping, Ack)


class Network(Spec):
    """Exercises records, unions, options, sets of messages, nested and dynamic maps."""

    net = Set(Msg)
    leader = Var(Option(P), init=None)
    seen = Map(P, Map(P, Bool, init=False))
    last = Var(Msg, init=Ack(0))
    color = Map(P, Enum("red", "blue"), init=lambda p: "red" if p == 0 else "blue")

    @action
    def send(s, p: P):
        require(Not(s.net.contains(Ping(p, 0))))
        s.net = s.net.add(Ping(p, 0))

    @action
    def forward(s, m: Ping):
        require(s.net.contains(m), m.hops < 2)
        s.net = s.net.remove(m).add(Ping(m.src, m.hops + 1))
        s.last = m
        s.seen[m.src][m.src] = True

    @action
    def elect(s):
        require(s.leader.is_none(), s.last.tag == "Ping")
        s.leader = s.last.src
        s.color[s.last.src] = If(s.color[s.last.src] == "red", "blue", "red")

    @invariant
    def leader_sent(s):
        return Or(s.leader.is_none(), s.net.exists(lambda m: m.src == s.leader.get()))


def test_values_round_trip_through_slots():
    prog = build_program(Network, {"p": 2})
    value = {
        "net": frozenset({Ping(1, 2), Ack(0)}), "leader": 1,
        "seen": {0: {0: True, 1: False}, 1: {0: False, 1: True}}, "last": Ping(0, 1),
        "color": {0: "blue", 1: "red"},
    }
    assert prog.decode(prog.encode(value)) == value
    init = prog.decode(tuple(prog.init_defaults))
    assert init["leader"] is None and init["color"] == {0: "red", 1: "blue"} and init["net"] == frozenset()


def test_records_unions_options_and_dynamic_indices():
    res = check(TypedModel(build_program(Network, {"p": 2}), "Network"), Options(deadlock=False))
    assert res.verdict == "holds" and res.distinct > 10
    prog = build_program(Network, {"p": 2})
    state = prog.encode({"net": frozenset({Ping(1, 0)}), "leader": None, "seen": {0: {0: False, 1: False},
                         1: {0: False, 1: False}}, "last": Ping(1, 1), "color": {0: "red", 1: "blue"}})
    after = dict(successors(prog, state))["elect"]
    decoded = prog.decode(after)
    assert decoded["leader"] == 1 and decoded["color"] == {0: "red", 1: "red"}
    fwd = prog.decode(dict(successors(prog, state))["forward(m=Ping(src=1, hops=0))"])
    assert fwd["net"] == frozenset({Ping(1, 1)}) and fwd["seen"][1][1] is True and fwd["last"] == Ping(1, 0)


def test_any_initial_values_and_initial_functions():
    class Start(Spec):
        x = Var(Int(0, 2), init=ANY)
        y = Var(Int(0, 5), init=0)

        @initial
        def pick(s, d: Int(1, 2)):
            require(s.x != 1)
            s.y = s.x + d

        @action
        def idle(s):
            pass

    model = TypedModel(build_program(Start), "Start")
    states = sorted(model.initial_states())
    assert states == [(0, 1), (0, 2), (2, 3), (2, 4)]


def test_parameters_and_their_errors():
    N = Param("n", default=2, lo=1, hi=5)

    class Params(Spec):
        x = Var(Int(0, N), init=0)

        @action
        def inc(s):
            require(s.x < s.n)
            s.x = s.x + 1

    assert build_program(Params).params == {"n": 2}
    assert build_program(Params, {"n": 4}).slot_doms[0].hi == 4
    with pytest.raises(SpecError, match="no parameter 'm'"):
        build_program(Params, {"m": 3})
    with pytest.raises(SpecError, match="above its maximum 5"):
        build_program(Params, {"n": 9})


def test_fixed_ids_of_a_symmetric_range():
    F = Param("f", default=1, lo=0)
    N = 3 * F + 1
    Proc = Range(N, symmetric=True, fixed=(0, N - 1))

    class Fixed(Spec):
        up = Map(Proc, Bool, init=False)

        @action
        def wake(s):
            s.up[0] = True

    proc = build_program(Fixed, {"f": 2}).symmetric[0]
    assert (proc.fixed, proc.movable) == ((0, 6), (1, 2, 3, 4, 5))
    with pytest.raises(SpecError, match="fixed names id 0 twice under the spec's parameters") as e:
        build_program(Fixed, {"f": 0})  # N - 1 = 0 = the other fixed id
    assert e.value.location.line == line("fixed=(0, N - 1))")
    Late = Range(3, symmetric=True, fixed=(N,))

    class TooFar(Spec):
        up = Map(Late, Bool, init=False)

        @action
        def wake(s):
            s.up[0] = True

    with pytest.raises(SpecError, match=r"fixed id \(\(3 \* f\) \+ 1\) is 4 under the spec's parameters, which is not one"):
        build_program(TooFar, {"f": 1})


@pytest.mark.parametrize("args, message", [
    ({"fixed": (0,)}, "without symmetric=True"),
    ({"symmetric": True, "fixed": (3,)}, r"3 is not one of its ids \(0..2\)"),
    ({"symmetric": True, "fixed": (-1,)}, "-1 is not one of its ids"),
    ({"symmetric": True, "fixed": (1, 1)}, "names id 1 twice"),
    ({"symmetric": True, "fixed": ("0",)}, "'0' is not an id"),
    ({"symmetric": True, "fixed": 0.5}, "fixed takes a tuple of ids"),
])
def test_bad_fixed_ids_name_the_line(args, message):
    with pytest.raises(SpecError, match=message) as e:
        Range(3, **args)  # marker:bad-fixed
    assert e.value.location.line == line("marker:bad-fixed")


def test_forall_exists_over_products():
    class Grid(Spec):
        cell = Map(P, Map(P, Bool, init=False))

        @action
        def mark(s, i: P, j: P):
            require(i <= j)
            s.cell[i][j] = True

        @invariant
        def upper(s):
            return ForAll(P, P, lambda i, j: Not(And(s.cell[i][j], i > j)))

        @invariant
        def some_free(s):
            return Exists(P, lambda i: Not(s.cell[i][i]))

    res = check(TypedModel(build_program(Grid, {"p": 2}), "Grid"), Options(deadlock=False))
    assert res.verdict == "violation" and res.violation.name == "some_free"
    assert len(res.violation.trace.steps) - 1 == 2


# -------------------------------------------------------------------------------- misuse


def build(cls):
    return build_program(cls)


def test_python_and_on_state_values_is_explained():
    class Bad(Spec):
        x = Var(Bool, init=False)

        @action
        def a(s):
            require(s.x and s.x)  # marker:and

    with pytest.raises(SpecError) as e:
        build(Bad)
    assert "`and`" in str(e.value) and "And(a, b)" in str(e.value)
    assert e.value.location.line == line("marker:and")


def test_python_if_on_state_values_is_explained():
    class Bad(Spec):
        x = Var(Int(0, 3), init=0)

        @action
        def a(s):
            if s.x > 1:  # marker:if
                s.x = 0

    with pytest.raises(SpecError) as e:
        build(Bad)
    assert "`if`" in str(e.value) and "require(cond)" in str(e.value)
    assert e.value.location.line == line("marker:if")


def test_python_not_or_and_in_are_explained():
    class BadNot(Spec):
        x = Var(Bool, init=False)

        @action
        def a(s):
            require(not s.x)  # marker:not

    class BadOr(Spec):
        x = Var(Bool, init=False)

        @invariant
        def i(s):
            return s.x or True  # marker:or

        @action
        def a(s):
            pass

    class BadIn(Spec):
        xs = Set(P)

        @action
        def a(s, p: P):
            require(p in s.xs)  # marker:in

    for cls, construct, fix, marker in ((BadNot, "`not`", "Not(x)", "marker:not"), (BadOr, "`or`", "Or(a, b)", "marker:or"),
                                        (BadIn, "`in`", "contains", "marker:in")):
        with pytest.raises(SpecError) as e:
            build(cls)
        assert construct in str(e.value) and fix in str(e.value), str(e.value)
        assert e.value.location.line == line(marker)


def test_enum_typo_is_caught_at_load_time():
    class Bad(Spec):
        st = Var(Enum("idle", "busy"), init="idle")

        @action
        def a(s):
            require(s.st == "bussy")  # marker:typo

    with pytest.raises(SpecError) as e:
        build(Bad)
    assert "'bussy' is not a value of Enum('idle', 'busy')" in str(e.value)
    assert e.value.location.line == line("marker:typo")


def test_unknown_field_lists_the_fields():
    class Bad(Spec):
        count = Var(Int(0, 3), init=0)

        @action
        def a(s):
            s.cuont = 1

    with pytest.raises(SpecError) as e:
        build(Bad)
    assert "no field 'cuont'" in str(e.value) and "fields: count" in str(e.value)


def test_subset_of_a_set_field_is_a_condition():
    """`a.issubset(b)` and `a <= b` on set terms: each element is in neither set, in ys only, or in both."""
    class Sub(Spec):
        xs = Set(P)
        ys = Set(P)

        @action
        def add_y(s, p: P):
            require(Not(s.ys.contains(p)))
            s.ys = s.ys.add(p)

        @action
        def add_x(s, p: P):
            require(s.xs.add(p).issubset(s.ys), Not(s.xs.contains(p)))
            s.xs = s.xs.add(p)

        @invariant
        def below(s):
            return s.xs <= s.ys

    res = check(TypedModel(build_program(Sub, {"p": 2}), "Sub"), Options(deadlock=False))
    assert (res.verdict, res.distinct) == ("holds", 9)


def test_set_add_used_as_a_statement_is_caught():
    class Bad(Spec):
        xs = Set(P)

        @action
        def a(s, p: P):
            s.xs.add(p)  # marker:add

    with pytest.raises(SpecError) as e:
        build(Bad)
    assert "never used" in str(e.value) and "s.field = s.field.add(x)" in str(e.value)
    assert e.value.location.line == line("marker:add")


def test_a_set_add_folded_into_a_constant_comparison_counts_as_used():
    """`s.xs == s.xs.add(p)` on a field just set to a constant folds to a constant Bool: the .add() was
    used by the comparison, not dropped."""
    class Good(Spec):
        xs = Set(P)
        same = Var(Bool, init=True)

        @action
        def a(s):
            s.xs = frozenset()
            s.same = s.xs == s.xs.add(0)

    prog = build(Good)
    assert len(prog.transitions) == 1


def test_unbounded_action_parameter_is_refused():
    class Bad(Spec):
        x = Var(Int(0, 3), init=0)

        @action
        def a(s, k: int):  # marker:unbounded
            s.x = k

    with pytest.raises(SpecError) as e:
        build(Bad)
    assert "not a finite domain" in str(e.value) and e.value.location.line == line("marker:unbounded")


def test_exceptions_while_tracing_become_step_failures():
    """An error that depends on parameters is raised exactly where the action would run."""

    class Indexing(Spec):
        xs = Map(P, Int(0, 3), init=0)

        @action
        def shift(s, p: P):
            require(s.xs[p] < 3)
            s.xs[p] = s.xs[p + 1] + 1  # p + 1 is out of range for the last process

    model = TypedModel(build_program(Indexing, {"p": 2}), "Indexing")
    res = check(model, Options(deadlock=False))
    v = res.violation
    assert v.kind == "error" and v.name == "shift(p=1)" and "2 is not a value of Range(p)" in v.message
    assert v.location.endswith(f"test_lang.py:{line('p + 1 is out of range')}")


def test_values_outside_their_type_fail_the_step():
    """An Int element outside a set's type, or a record field outside its type, is a step failure;
    membership of such a value is simply false."""
    Small = Int(0, 2)
    Tag = Record("Tag", v=Small)

    class Outside(Spec):
        x = Var(Int(0, 4), init=0)
        xs = Set(Small)
        last = Var(Tag, init=Tag(0))

        @action
        def inc(s):
            require(s.x < 4)
            s.x = s.x + 1

        @action
        def store(s):
            require(Not(s.xs.contains(s.x)), s.x >= 1)
            s.xs = s.xs.add(s.x)  # marker:store

        @action
        def tag(s):
            require(s.x == 4)
            s.last = Tag(s.x)  # marker:tag

    res = check(TypedModel(build_program(Outside), "Outside"), Options(deadlock=False))
    v = res.violation
    assert v.kind == "type" and v.name == "store" and "outside its type" in v.message
    assert v.location.endswith(f":{line('marker:store')}") and v.trace.steps[-1].shown["x"] == "3"

    class TagOnly(Outside):
        store = None

    res = check(TypedModel(build_program(TagOnly), "TagOnly"), Options(deadlock=False))
    v = res.violation
    assert v.kind == "type" and v.name == "tag" and v.location.endswith(f":{line('marker:tag')}")
