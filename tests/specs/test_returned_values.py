"""What a spec function returns is honoured or refused, never ignored.

An `@initial` function may return its condition (as a `require(...)` where it returns): every interpreter — compiled
and interpreted concrete, symbolic (z3), vector with numpy passes and with C kernels, simulation — starts from exactly
the states that satisfy it. A value returned by an action or a handler, a condition missing where one is required
(`@terminated`), and functions a system model does not read (`@initial` in an actor spec) are refused when the spec
loads, with the line and the fix."""

from __future__ import annotations

import inspect
from itertools import product

import pytest
import z3

from lockstep.checker import interpret
from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.simulation.walk import simulate
from lockstep.checker.smt.bmc import bmc
from lockstep.checker.smt.encode import Symbolic
from lockstep.checker.typed_model import TypedModel
from lockstep.checker.vector import VectorOptions, check_vector
from lockstep.checker.witnesses import search_witnesses
from lockstep.specs.lang import (
    And,
    Bool,
    Int,
    Not,
    Range,
    Record,
    Spec,
    SpecError,
    Var,
    action,
    build_program,
    eventually,
    initial,
    temporal,
    witness,
)
from lockstep.specs.lang.actors import ActorSpec, on_message, on_start, send
from lockstep.specs.lang.actors import Local as ActorLocal
from lockstep.specs.lang.rounds import Local, RoundsSpec, broadcast, on_receive, on_transmit, terminated
from lockstep.specs.lang.rounds import on_start as rounds_start
from tests.conftest import model_path

MODELS = model_path("initial_conditions.py")

# spec -> (its initial states, how many states are reachable, the invariants that hold)
EXPECTED = {
    "SumThree": ({(0, 3), (1, 2), (2, 1), (3, 0)}, 4, ["sums_to_three"]),
    "AssignedThenReturned": ({(0, 3, False), (1, 2, False)}, 4, ["y_large"]),
    "RequiredAndReturned": ({(2,), (4,)}, 2, None),
}


def model(name: str, **kw):
    return load_model(f"{MODELS}:{name}", {}, **kw)


def interpreted_initial_states(prog) -> set:
    """The initial states as the concrete interpreter (replay on processes, validation) computes them."""
    choices = [prog.init_choices.get(i, [v]) for i, v in enumerate(prog.init_defaults)]
    return {after for pre in product(*choices) for t in prog.init_transitions
            if (after := interpret.run_transition(prog, t, pre)) is not None}


def symbolic_initial_states(prog) -> set:
    """Every model of the symbolic engine's initial-state formula."""
    sym = Symbolic(prog)
    st = sym.state("s0")
    solver = z3.Solver()
    solver.add(*(z3.BoolVal(c) if isinstance(c, bool) else c for c in (sym.typed(st), sym.init(st))))
    found: set = set()
    while solver.check() == z3.sat:
        state = sym.concrete(solver.model(), st)
        found.add(state)
        solver.add(z3.Not(sym.pin(st, state)))
        assert len(found) <= 64
    return found


@pytest.mark.parametrize("name", EXPECTED)
def test_a_returned_initial_condition_gives_the_same_initial_states_on_every_interpreter(name):
    initial, reachable, invariants = EXPECTED[name]
    m = model(name, invariants=invariants)
    assert set(m.initial_states()) == initial  # compiled concrete code
    assert interpreted_initial_states(m.prog) == initial
    assert symbolic_initial_states(m.prog) == initial
    assert check(m, Options()).distinct == reachable
    for native in ("never", "always"):  # numpy passes; the C loops and fused kernel
        res = check_vector(m, Options(), vopts=VectorOptions(native=native))
        assert (res.verdict, res.distinct) == ("holds", reachable), native


def test_the_initial_condition_excludes_states_on_every_engine():
    """`sums_to_three` holds only if no state outside the condition is initial; `not_two_one` fails at once,
    because (2, 1) is one of the initial states."""
    holds, fails = model("SumThree", invariants=["sums_to_three"]), model("SumThree", invariants=["not_two_one"])
    results = {"scalar": (check(holds, Options()), check(fails, Options())),
               "numpy": tuple(check_vector(m, Options(), vopts=VectorOptions(native="never")) for m in (holds, fails)),
               "C": tuple(check_vector(m, Options(), vopts=VectorOptions(native="always")) for m in (holds, fails)),
               "bmc": (bmc(holds, 4), bmc(fails, 4)),
               "simulation": (simulate(holds, 50, 10), simulate(fails, 50, 10, seed=2))}  # seed 2: walk 1 starts at (2, 1)
    for engine, (ok, bad) in results.items():
        assert ok.violation is None, engine
        v = bad.violation
        assert v is not None and v.name == "not_two_one" and len(v.trace.steps) == 1, engine
        assert v.trace.steps[0].shown == {"x": "2", "y": "1"}, engine


def refused(cls: type) -> SpecError:
    with pytest.raises(SpecError) as e:
        build_program(cls)
    return e.value


def line_of(fn, text: str) -> int:
    """The line of `fn`'s source that holds `text`."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_an_initial_function_returning_something_else_is_refused():
    class Sum(Spec):
        x = Var(Int(0, 3), init=0)

        @initial
        def start(s):
            return s.x + 1

        @action
        def idle(s):
            s.x = s.x

    e = refused(Sum)
    assert e.message == "initial-state function start returns an integer, not a condition"
    assert e.location.line == line_of(Sum.start, "return s.x + 1") and "return a condition" in e.hint


@pytest.mark.parametrize("returned, described", [("s.x < 3", "a Bool"), ("s.x + 1", "an integer"), ("True", "True"),
                                                 ("s", "a TraceState object")])
def test_an_action_returning_a_value_is_refused(returned, described):
    namespace: dict = {}
    exec(compile(f"def inc(s):\n    s.x = s.x + 1\n    return {returned}\n", __file__, "exec"), namespace)

    class Counter(Spec):
        x = Var(Int(0, 9), init=0)
        inc = action(namespace["inc"])

    e = refused(Counter)
    assert e.message == f"action inc returns {described}, which would be ignored"
    assert e.location.line == 3 and "require(cond)" in e.hint


def test_an_early_return_of_nothing_is_fine():
    class Early(Spec):
        x = Var(Int(0, 3), init=0)

        @action
        def inc(s, d: Int(0, 1)):
            if d == 0:
                return
            s.x = (s.x + d) % 4

    assert check(load_model_of(Early), Options()).distinct == 4


def load_model_of(cls: type) -> TypedModel:
    return TypedModel(build_program(cls), cls.__name__)


Ping = Record("Ping")


def test_an_actor_handler_returning_a_value_is_refused():
    class Echo(ActorSpec):
        Process = Range("n", default=2)
        Message = Ping
        got = ActorLocal(Bool, init=False)

        @on_start
        def start(p):
            send((p.id + 1) % 2, Ping())

        @on_message
        def receive(p, src, m):
            p.got = True
            return p.got

    e = refused(Echo)
    assert e.message == "handler receive returns a Bool, which would be ignored"
    assert e.location.line == line_of(Echo.receive, "return p.got")


def test_an_initial_function_in_an_actor_or_rounds_spec_is_refused():
    """Their initial states come from `Local(..., init=...)` and the start handlers: an @initial would be ignored."""
    for base in (ActorSpec, RoundsSpec):
        with pytest.raises(SpecError) as e:
            class Picky(base):
                @initial
                def pick(s):
                    return True

        assert "declares an @initial (pick)" in e.value.message and "Local(type, init=...)" in e.value.hint
        assert e.value.location.line == line_of(test_an_initial_function_in_an_actor_or_rounds_spec_is_refused, "def pick")


def test_a_temporal_property_returns_a_formula():
    class Done(Spec):
        done = Var(Bool, init=False)

        @action
        def finish(s):
            s.done = True

        @temporal
        def finishes(s):
            eventually(s.done)

    e = refused(Done)
    assert e.message == "temporal property finishes returns nothing, not a temporal formula"
    assert e.location.line == line_of(Done.finishes, "def finishes")


Hello = Record("Hello")


def rounds_spec(transmit_returns: bool = False, terminated_returns: bool = True):
    class Shout(RoundsSpec):
        Node = Range("n", default=2)
        Message = Hello
        spoke = Local(Bool, init=False)

        @staticmethod
        def graph(params):
            import networkx as nx

            return nx.path_graph(params["n"])

        @rounds_start
        def start(p, initiator):
            p.spoke = False

        @on_transmit
        def transmit(p):
            broadcast(Hello(), when=Not(p.spoke))
            p.spoke = True
            if transmit_returns:
                return p.spoke

        @on_receive
        def receive(p, m):
            pass

        @terminated
        def done(p):
            if terminated_returns:
                return p.spoke

        @witness
        def everyone_spoke(s):
            return And(s.spoke[0], s.spoke[1])

    return Shout


def test_rounds_handlers_return_what_they_must():
    e = refused(rounds_spec(transmit_returns=True))
    assert e.message == "transmit handler transmit returns a Bool, which would be ignored"
    e = refused(rounds_spec(terminated_returns=False))
    assert e.message == "terminated handler done returns nothing" and "return p.sent" in e.hint
    assert e.location is not None


def test_a_witness_of_a_rounds_spec_is_searched():
    m = load_model_of(rounds_spec())
    assert check(m, Options()).violation is None
    assert [(w.name, w.found) for w in search_witnesses(m, "scalar", Options())] == [("everyone_spoke", True)]
