"""Distance-2 colouring of trees: known runs, the round bound, identities, and the seeded bug."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.checker.cli import main
from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.specs.d2_coloring import D2Coloring, labels, round_bound
from lockstep.specs.lang import SpecError
from lockstep.specs.lang.rounds.trees import distance2_violations, parse_tree, tree_code, tree_from_code, tree_params


def final_colours(model, initiator):
    """The colouring at the end of the run started by `initiator` (initial states are in node order); every
    state on the way satisfies the invariants."""
    s = model.initial_states()[initiator]
    while True:
        assert model.violated(s) == -1, model.invariant_names[model.violated(s)]
        moves = [t for lid, t in model.successors(s) if model.label(lid) != "halt"]
        if not moves:
            break
        assert len(moves) == 1
        s = moves[0]
    d = model.prog.decode(s)
    return d["color"], d["round"], d


def test_default_tree_holds_with_known_counts():
    res = check(load_model("d2_coloring"), Options())
    assert res.verdict == "holds" and (res.distinct, res.generated, res.depth) == (63, 70, 9)


def test_path_from_an_end_matches_the_worked_example():
    """r-x-y-z from r: r=0, x=1 (round 1), y=2 (round 2: x's slot is 1), z=0 (round 3: y's slot is 2)."""
    model = load_model("d2_coloring", tree_params(nx.path_graph(4)))
    colours, rounds, _ = final_colours(model, 0)
    assert colours == {0: 0, 1: 1, 2: 2, 3: 0} and rounds == 3
    assert round_bound(nx.path_graph(4), 0, 2) == 5


def test_star_from_the_centre_takes_one_round_and_delta_plus_one_colours():
    model = load_model("d2_coloring", tree_params(nx.star_graph(5)))
    colours, rounds, _ = final_colours(model, 0)
    assert rounds == 1 and sorted(colours.values()) == [0, 1, 2, 3, 4, 5]
    colours, rounds, _ = final_colours(model, 3)  # from a leaf: the centre gets 1, then names the rest
    assert rounds == 2 and len(set(colours.values())) == 6 and colours[3] == 0 and colours[0] == 1


def test_the_round_bound_is_met_and_attained():
    """The bound 1 + (e - 1)·Δ is exact on a path of 5 from its centre: the child coloured 2 waits 2 rounds."""
    path = nx.path_graph(5)
    colours, rounds, _ = final_colours(load_model("d2_coloring", tree_params(path)), 2)
    assert rounds == round_bound(path, 2, 2) == 3 and colours == {0: 2, 1: 1, 2: 0, 3: 2, 4: 1}
    g = nx.Graph([(0, 1), (1, 2), (1, 3), (3, 4), (4, 5), (4, 6)])
    model = load_model("d2_coloring", tree_params(g))
    runs = [(final_colours(model, r)[1], round_bound(g, r, 3)) for r in g.nodes]
    assert runs == [(5, 10), (6, 7), (5, 10), (3, 4), (6, 7), (5, 10), (5, 10)]


def test_a_larger_delta_is_an_upper_bound_colours_stay_within_the_true_delta():
    g = nx.star_graph(3)
    model = load_model("d2_coloring", {**tree_params(g), "delta": 6})
    assert model.params["delta"] == 6
    res = check(model, Options())
    assert res.verdict == "holds"
    colours, rounds, _ = final_colours(model, 1)
    assert max(colours.values()) <= 3 and rounds <= round_bound(g, 1, 6)


def test_a_delta_below_the_trees_is_refused():
    with pytest.raises(SpecError, match="below the tree's maximum degree 3"):
        load_model("d2_coloring", {**tree_params(nx.star_graph(3)), "delta": 2})


def test_labels_are_distinct_among_neighbours_and_repeat_elsewhere():
    g = nx.random_labeled_tree(40, seed=5)
    lab = labels(g)
    for v in g.nodes:
        around = [lab[u] for u in g.neighbors(v)]
        assert len(set(around)) == len(around)
    assert len(set(lab.values())) <= max(d for _, d in g.degree) < 40
    assert sum(1 for u in g.nodes for v in g.nodes if u < v and lab[u] == lab[v]) > 40


def test_seeded_bug_siblings_without_coordination_is_caught_with_a_counterexample(tmp_path):
    model = load_model("d2_coloring_uncoordinated")
    res = check(model, Options())
    v = res.violation
    assert v is not None and v.name == "proper_distance2"
    assert [s.label for s in v.trace.steps] == ["init", "transmit", "receive"]
    last = model.prog.decode(model.decode_state(v.trace.steps[-1].state))
    children = [u for u, c in last["pcolor"].items() if c is not None]
    assert len(children) >= 2 and len({last["color"][u] for u in children}) == 1  # siblings share a colour
    path = tmp_path / "cex.json"
    v.trace.save(str(path))
    assert main(["replay", str(path)]) == 0


def test_seeded_bug_collides_once_the_siblings_broadcast():
    """Without proper_distance2, the same siblings broadcast in the same slot and collide at their parent."""
    model = load_model("d2_coloring_uncoordinated", invariants=["no_collision", "no_conflict"])
    v = check(model, Options()).violation
    assert v is not None and v.name in ("no_collision", "no_conflict")


def test_tree_codes_round_trip_and_generators_refuse_non_trees():
    g = nx.random_labeled_tree(12, seed=1)
    assert sorted(tree_from_code(12, tree_code(g)).edges) == sorted(tuple(sorted(e)) for e in g.edges)
    for text, what in [("edges:0-1,1-2,2-0", "not a tree"), ("edges:0-1,2-3", "disconnected"),
                       ("wheel:4", "unknown tree generator"), ("random:x", "not a number")]:
        with pytest.raises(SpecError, match=what):
            parse_tree(text)
    assert distance2_violations(nx.path_graph(3), {0: 0, 1: 1, 2: 0}) == [(0, 2)]


def spider(labels_: dict[int, int]) -> nx.Graph:
    g = nx.Graph([(0, 1), (0, 2), (0, 3), (3, 4)])
    g.graph["d2_labels"] = labels_
    return g


def test_any_labelling_distinct_among_neighbours_works():
    """Identities need only differ among the neighbours of each node; here 0 and 4, 1 and ... repeat freely."""
    from lockstep.checker.typed_model import TypedModel
    from lockstep.specs.lang import build_program

    g = spider({0: 3, 1: 2, 2: 0, 3: 1, 4: 0})
    res = check(TypedModel(build_program(D2Coloring.on(g, "Spider"), {"n": 5}), "spider"), Options())
    assert res.verdict == "holds"


def test_siblings_with_the_same_label_break_it_and_the_checker_says_how():
    from lockstep.checker.typed_model import TypedModel
    from lockstep.specs.lang import build_program

    g = spider({0: 3, 1: 2, 2: 2, 3: 1, 4: 0})  # leaves 1 and 2 of node 0 share a label
    v = check(TypedModel(build_program(D2Coloring.on(g, "SpiderClash"), {"n": 5}), "spider"), Options()).violation
    assert v is not None and v.name == "proper_distance2"


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 14).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.integers(0, n - 1), min_size=n - 2,
                                                                              max_size=n - 2), st.integers(0, n - 1))))
def test_random_labelled_trees_from_any_initiator(case):
    """Any labelled tree (node numbers shuffled, unlike the non-isomorphic sweep), any initiator."""
    n, prufer, root = case
    g = nx.from_prufer_sequence(prufer) if n > 2 else nx.path_graph(2)
    model = load_model("d2_coloring", tree_params(g))
    colours, rounds, final = final_colours(model, root)
    delta = max(d for _, d in g.degree)
    assert distance2_violations(g, colours) == [] and None not in colours.values()
    assert len(set(colours.values())) == delta + 1 and rounds <= round_bound(g, root, delta)


class ManyInitiators(D2Coloring):
    """Any non-empty set of nodes may start: the gap the spec leaves closed (one initiator)."""

    starters = "any"


def test_two_initiators_break_it_which_is_why_the_spec_has_one():
    from lockstep.checker.typed_model import TypedModel
    from lockstep.specs.lang import build_program

    model = TypedModel(build_program(ManyInitiators, tree_params(nx.path_graph(4))), "many")
    assert len(model.initial_states()) == 15
    v = check(model, Options()).violation
    assert v is not None and v.name in ("proper_distance2", "no_collision", "no_conflict")
    assert len(v.trace.steps) == 1  # two adjacent initiators both hold colour 0
