"""Rough edges of the language met while writing classic models: each case is accepted, or refused with a message
that says what to write instead."""

from __future__ import annotations

import os

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.typed_model import TypedModel
from lockstep.specs.lang import (
    Bool,
    Enum,
    If,
    Int,
    Map,
    Option,
    Range,
    Record,
    Set,
    Spec,
    SpecError,
    Union,
    Var,
    action,
    build_program,
    invariant,
    require,
)

HERE = __file__


def line(marker: str) -> int:
    with open(HERE) as f:
        return next(i for i, text in enumerate(f, 1) if marker in text and "line(" not in text)


def explore(cls, **opts):
    return check(TypedModel(build_program(cls), "test"), Options(**opts))


# ------------------------------------------------------------------- records into unions

Ballot = Int(0, 1)
M1a = Record("M1a", bal=Ballot)
M1b = Record("M1b", bal=Ballot, acc=Range(2))
Msgs = Union(M1a, M1b)


class Promise(Spec):
    """A record built from state values goes into a set of the union type, as in Paxos' Phase1b."""

    bal = Map(Range(2), Int(0, 1), init=0)
    msgs = Set(Msgs)
    last = Var(Option(Msgs))

    @action
    def phase1a(s, b: Ballot):
        s.msgs = s.msgs.add(M1a(bal=b))

    @action
    def phase1b(s, a: Range(2)):
        require(s.msgs.contains(M1a(bal=1)), s.bal[a] == 0)
        s.bal[a] = 1
        s.msgs = s.msgs.add(M1b(bal=s.bal[a], acc=a))
        s.last = M1b(bal=s.bal[a], acc=a)

    @invariant
    def promised(s):
        return s.msgs.contains(M1b(bal=s.bal[0], acc=0)) | (s.bal[0] == 0)


def test_a_record_of_state_values_is_an_element_of_a_set_of_its_union():
    res = explore(Promise, deadlock=False)
    # before M1a(1): msgs is {} or {M1a(0)}; after it, with or without M1a(0): neither acceptor promised, one of
    # two, or both (in either order, which `last` records): 2 + 2 * 5
    assert res.verdict == "holds" and res.distinct == 12


# ------------------------------------------------------------------------ If and Option

Req = Record("Req", n=Int(0, 2))


class Queue(Spec):
    """`If(c, Req(...), q[k])` where q holds Option(Req): the record is wrapped, as assignment does."""

    q = Map(Range(2), Option(Req), init=None)
    n = Var(Int(0, 2), init=0)

    @action
    def put(s, k: Range(2)):
        require(s.n < 2)
        s.q[k] = If(s.q[k].is_none(), Req(n=s.n), s.q[k])
        s.n = s.n + 1

    @action
    def take(s, k: Range(2)):
        require(s.q[k].is_some())
        s.q[k] = If(s.n > 0, None, s.q[k])


def test_if_wraps_a_value_into_an_option_branch():
    res = explore(Queue, deadlock=False)
    assert res.verdict == "holds" and res.distinct > 1


# ---------------------------------------------------------------- structurally equal types

def _value():
    """A fresh declaration of the same enumeration each time."""
    return Enum("v1", "v2")


class Twice(Spec):
    """`Option(Value)` declared in two places is one type."""

    chosen = Var(Option(_value()))
    proposed = Var(Option(_value()), init="v2")
    seen = Set(Record("Vote", v=Option(_value())))

    @action
    def choose(s):
        require(s.chosen.is_none())
        s.chosen = s.proposed
        s.seen = s.seen.add(Record("Vote", v=Option(_value()))(v=s.proposed))

    @invariant
    def agree(s):
        return (s.chosen == s.proposed) | s.chosen.is_none()


def test_structurally_equal_types_are_one_type():
    res = explore(Twice, deadlock=False)
    assert res.verdict == "holds" and res.distinct == 2


def test_different_types_are_still_told_apart_with_their_declarations():
    A = Record("A", x=Bool)
    B = Record("B", x=Bool)

    class Mixed(Spec):
        a = Var(Option(A))
        b = Var(Option(B))

        @action
        def copy(s):
            s.a = s.b  # marker: copy-b

    with pytest.raises(SpecError, match=r"cannot assign a value of Option\(B\) to a field of type Option\(A\)") as e:
        build_program(Mixed)
    assert e.value.location.line == line("marker: copy-b")


# ------------------------------------------------------------------------------ helpers


class Helper(Spec):
    x = Var(Int(0, 3), init=0)

    def ready(s, p):
        return s.x < 3

    @action
    def go(s, p: Range(2)):
        require(s.ready(p))  # marker: helper-call
        s.x = s.x + 1


def test_a_helper_called_on_the_state_says_how_to_call_it():
    with pytest.raises(SpecError) as e:
        build_program(Helper)
    text = str(e.value)
    assert "ready is a helper function of Helper, not a state field" in text
    assert "Helper.ready(s, p)" in text and e.value.location.line == line("marker: helper-call")


# ------------------------------------------------------------------- variadic parameters


def test_variadic_action_parameters_are_refused():
    class Go(Spec):
        x = Var(Int(0, 3), init=0)

        @action
        def go(s, *ws: Range(2)):  # marker: variadic
            s.x = 1

    with pytest.raises(SpecError, match=r"\*ws") as e:
        build_program(Go)
    assert "one parameter per witness" in str(e.value) and e.value.location.line == line("marker: variadic")

    class Kw(Spec):
        x = Var(Int(0, 3), init=0)

        @action
        def go(s, **ws: Range(2)):
            s.x = 1

    with pytest.raises(SpecError, match=r"\*\*ws"):
        build_program(Kw)


# ----------------------------------------------------------------- parameters over values

QUORUMS = os.path.join(os.path.dirname(HERE), "..", "models", "quorums.py")


def test_an_action_parameter_ranges_over_a_declared_set_of_values():
    from lockstep.checker.loader import load_model

    model = load_model(QUORUMS + ":Vote")
    labels = [t.label for t in model.prog.transitions]
    assert sum(lb.startswith("choose(") for lb in labels) == 3 * 2
    assert "choose(q=frozenset({0, 1}), v='a')" in labels
    assert sum(lb.startswith("promise(") for lb in labels) == 3 * 2  # only the members of each quorum
    res = check(model, Options(deadlock=False))
    # nothing chosen: 27 vote assignments x 8 sets of promised acceptors; one value chosen: the 14 assignments
    # where a quorum agrees (7 per value) x 8 (promises stop once a value is chosen)
    assert (res.verdict, res.distinct) == ("holds", 27 * 8 + 14 * 8)
    bug = check(load_model(QUORUMS + ":VoteTwice"), Options(deadlock=False)).violation
    assert bug.kind == "invariant" and bug.name == "agreement"


def test_a_counterexample_through_a_value_parameter_replays(cli, tmp_path):
    out = tmp_path / "cex.json"
    r = cli("check", QUORUMS + ":VoteTwice", "--no-deadlock", "--out", str(out), "--quiet")
    assert r.code == 1 and "choose(q={0, 1}, v=\"a\")" in r.out  # the value in the spec's notation
    r = cli("replay", str(out), "--spec", QUORUMS + ":VoteTwice")  # a trace never chooses the code that checks it
    assert r.code == 0, r.out + r.err


def test_declared_values_must_be_distinct_and_hashable():
    from lockstep.specs.lang import OneOf

    for values, message in (([], "has no values"), ([[0, 1]], "not hashable"), ([1, 1], "not distinct")):
        class Bad(Spec):
            x = Var(OneOf(values))  # marker: oneof-decl

            @action
            def go(s):
                s.x = s.x

        with pytest.raises(SpecError, match=message) as e:
            build_program(Bad)
        assert e.value.location.line == line("marker: oneof-decl")


# ------------------------------------------------------------------- names a spec cannot see

MISSPELT_DECORATOR = '''
from lockstep.specs.lang.actors import ActorSpec


class Ping(ActorSpec):
    @on_timer
    def tick(s, p):
        pass
'''

CLASS_ATTRIBUTE = '''
from lockstep.specs.lang import Bool, ForAll, Map, Range, Spec, action, invariant


class Procs(Spec):
    Process = Range("n", default=2)
    up = Map(Process, Bool, init=False)

    @action
    def wake(s, p: Process):
        s.up[p] = True

    @invariant
    def each_up_or_not(s):
        return ForAll(Process, lambda p: s.up[p] == s.up[p])  # marker: bare
'''

MISSPELT_HELPERS = '''
from lockstep.specs.lang import Bool, Spec, Var, action


class Flip(Spec):
    b = Var(Bool, init=False)

    @action
    def flip(s):
        requre(s.b == False)
        s.b = True

    @action
    def flop(s):
        s.b = Not(s.b)
'''

MODULE_PARAM = '''
from lockstep.specs.lang import Int, Param, Spec, Var, action, require

LIMIT = Param("limit", default=2)


class Bounded(Spec):
    x = Var(Int(0, 5), init=0)

    @action
    def inc(s):
        require(s.x < LIMIT)
        s.x = s.x + 1

    @action
    def reset(s):
        require(s.x == LIMIT)
        s.x = 0
'''


def test_a_misspelt_decorator_suggests_the_handler_it_meant(cli, tmp_path):
    path = tmp_path / "ping.py"
    path.write_text(MISSPELT_DECORATOR)
    r = cli("check", f"{path}:Ping", "--quiet")
    assert r.code == 2 and f"NameError: name 'on_timer' is not defined at {path}:6; did you mean on_timeout?" in r.err


def test_a_class_attribute_used_bare_in_an_invariant_is_refused_at_load_with_the_fix(cli, tmp_path):
    path = tmp_path / "procs.py"
    path.write_text(CLASS_ATTRIBUTE)
    r = cli("check", f"{path}:Procs", "--quiet")
    at = next(i for i, text in enumerate(CLASS_ATTRIBUTE.splitlines(), 1) if "marker: bare" in text)
    assert r.code == 2 and r.out == "", r.out
    assert f"{path}:{at}: invariant each_up_or_not: name 'Process' is not defined" in r.err
    assert "fix: Process is an attribute of class Procs" in r.err and "write Procs.Process" in r.err
    fixed = tmp_path / "procs_fixed.py"  # (a file is imported once per process)
    fixed.write_text(CLASS_ATTRIBUTE.replace("ForAll(Process,", "ForAll(Procs.Process,"))
    assert cli("check", f"{fixed}:Procs", "--quiet", "--no-deadlock").code == 0


def test_a_misspelt_or_unimported_helper_in_an_action_is_named_with_its_fix(cli, tmp_path):
    path = tmp_path / "flip.py"
    path.write_text(MISSPELT_HELPERS)
    r = cli("check", f"{path}:Flip", "--quiet", "--no-deadlock")
    assert r.code == 5
    assert "NameError: name 'requre' is not defined; did you mean require?" in r.out
    fixed = tmp_path / "flip_fixed.py"  # (a file is imported once per process)
    fixed.write_text(MISSPELT_HELPERS.replace("requre", "require").replace("import Bool,", "import Bool, require,"))
    r = cli("check", f"{fixed}:Flip", "--quiet", "--no-deadlock")
    assert r.code == 5
    assert "NameError: name 'Not' is not defined; Not is not imported: from lockstep.specs.lang import Not" in r.out


def test_a_module_level_param_is_a_parameter_wherever_it_is_used(cli, tmp_path):
    """Named only in guards, outside the class: `--param limit=4` sets it, and its default applies without it."""
    path = tmp_path / "bounded.py"
    path.write_text(MODULE_PARAM)
    r = cli("check", f"{path}:Bounded", "--quiet")
    assert r.code == 0 and "3 distinct states" in r.out, r.out + r.err
    r = cli("check", f"{path}:Bounded", "--param", "limit=4", "--quiet")
    assert r.code == 0 and "5 distinct states" in r.out, r.out + r.err


RING = '''
from lockstep.specs.lang import Bool, Enum, Int, Param, Range, Record
from lockstep.specs.lang.actors import ActorSpec, Local, on_message, on_start, on_timeout, send, set_timer

N = Param("n", default=3, lo=2, hi=6)
Token = Record("Token", hops=Int(0, 6))


class Ring(ActorSpec):
    Process = Range(N)
    Message = Token
    Timer = Enum("t")
    holds = Local(Bool, init=False)

    @on_start
    def start(p):
        p.holds = p.id == 0
        set_timer("t", when=p.id == 0)

    @on_timeout
    def timeout(p, timer):
        p.holds = False
        send((p.id + 1) % N, Token(hops=0))

    @on_message
    def receive(p, src, m):
        p.holds = m.hops < N
        send((p.id + 1) % N, Token(hops=m.hops + 1), when=m.hops < N)
'''


def test_a_module_level_param_works_on_either_side_of_an_operator(cli, tmp_path):
    """`(p.id + 1) % N`, `N - 1`, `2 * N`: a Param is an integer on either side (it was refused on the right of %)."""
    from lockstep.specs.lang import Param
    from lockstep.specs.lang.params import Binding, bound

    n = Param("n", default=5)
    with bound(Binding("probe", {"n": 5})):
        assert [int(x) for x in (7 % n, n % 3, 9 - n, n - 1, 2 * n, 11 // n)] == [2, 2, 4, 4, 10, 2]
    path = tmp_path / "ring.py"
    path.write_text(RING)
    for n_, states in ((3, 6), (4, 7)):  # the token goes round once: n + 1 deliveries
        r = cli("check", f"{path}:Ring", "--param", f"n={n_}", "--no-deadlock", "--quiet")
        assert r.code == 0 and f"{states} distinct states" in r.out, r.out + r.err
