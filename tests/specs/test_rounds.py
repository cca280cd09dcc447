"""The rounds system model: one broadcast or listen per node per round, collisions and conflicts as events."""

from __future__ import annotations

import networkx as nx
import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.typed_model import TypedModel
from lockstep.specs.lang import Range, Set, Spec, SpecError, action, build_program, invariant
from lockstep.specs.lang.rounds import rounds_system
from tests.models.rounds_flood import Flood

FLOOD = "tests/models/rounds_flood.py:Flood"
SHOUT = "tests/models/rounds_flood.py:Shout"


def run_from(model, state):
    """The states of the (deterministic) run from `state` until only `halt` is enabled."""
    out = [state]
    while True:
        moves = [s for lid, s in model.successors(state) if model.label(lid) != "halt"]
        if not moves:
            return out
        assert len(moves) == 1
        state = moves[0]
        out.append(state)


def test_flood_from_an_end_of_a_path_reaches_everyone_one_hop_per_round():
    model = TypedModel(build_program(Flood, {"n": 5}), FLOOD)
    first = model.initial_states()[0]  # node 0 initiates
    states = [model.prog.decode(s) for s in run_from(model, first)]
    last = states[-1]
    assert last["round"] == 5 and last["hops"] == {0: 0, 1: 1, 2: 2, 3: 3, 4: 4}
    assert all(not s["collisions"] and not s["conflicts"] for s in states)
    assert [sorted(s["broadcasters"]) for s in states if s["phase"] == "receive"] == [[0], [1], [2], [3], [4]]


def test_two_neighbours_broadcasting_collide_and_the_listener_hears_nothing():
    res = check(load_model(FLOOD, {"n": 4}), Options())
    v = res.violation
    assert v is not None and v.name == "no_collision" and len(v.trace.steps) == 4
    model = load_model(FLOOD, {"n": 4})
    last = model.prog.decode(model.decode_state(v.trace.steps[-1].state))
    assert last["broadcasters"] == frozenset({0, 2}) and last["collisions"] == frozenset({1})
    assert last["inbox"][1] is None and last["inbox"][3] is not None  # 3 hears only 2


def test_conflict_when_a_node_and_its_neighbour_broadcast_together():
    model = load_model(SHOUT, {"n": 4})
    assert len(model.initial_states()) == 15  # every non-empty set of starters
    res = check(model, Options())
    v = res.violation
    assert v is not None and v.name == "no_conflict" and len(v.trace.steps) == 2
    last = model.prog.decode(model.decode_state(v.trace.steps[-1].state))
    assert last["conflicts"] == last["broadcasters"] and 0 in last["broadcasters"]


def test_choices_multiply_the_round_transitions_and_counts_are_exact():
    only = load_model(SHOUT, {"n": 3}, invariants=["no_collision"])
    prog = only.prog
    assert sum(1 for t in prog.transitions if t.action == "transmit") == 8  # 2 choices at each of 3 nodes
    res = check(only, Options())
    assert res.violation is not None and res.violation.name == "no_collision"


def test_any_networkx_graph_through_on():
    ring = Flood.on(nx.cycle_graph(6), "FloodRing")
    model = TypedModel(build_program(ring, {"n": 6}), "ring")
    res = check(model, Options())
    assert res.violation is not None and res.violation.name == "no_collision"  # the two waves meet opposite


def test_the_local_steps_alone_for_one_node():
    sysm = rounds_system(Flood, {"n": 5}, [2])
    assert set(sysm.steps) == {("start", 2), ("transmit", 2), ("receive", 2)}
    assert sorted(sysm.graph.neighbors(2)) == [1, 3]


def test_a_graph_with_other_nodes_is_refused():
    bad = Flood.on(nx.relabel_nodes(nx.path_graph(4), {0: 9}), "Relabelled")
    with pytest.raises(SpecError, match=r"nodes must be 0\.\.3"):
        build_program(bad, {"n": 4})


def test_a_spec_without_a_receive_handler_is_refused():
    from lockstep.specs.lang.rounds import RoundsSpec

    class Mute(RoundsSpec):
        Node = Flood.Node
        Message = Flood.Message
        has = Flood.has
        start = Flood.start
        transmit = Flood.transmit
        done = Flood.done

        @staticmethod
        def graph(params):
            return nx.path_graph(params["n"])

    with pytest.raises(SpecError, match="no receive handler"):
        build_program(Mute, {})


Elem = Range("p", default=2)


class Grow(Spec):
    seen = Set(Elem)

    @action
    def add(s, x: Elem):
        s.seen = s.seen.add(x)

    @invariant
    def empty(s):
        return s.seen.is_empty()


def test_set_is_empty_is_a_condition_on_the_set():
    """`s.f.is_empty()` compares with the empty set (the rounds invariants rely on it)."""
    res = check(TypedModel(build_program(Grow, {}), "grow"), Options())
    assert res.violation is not None and res.violation.name == "empty" and len(res.violation.trace.steps) == 2
