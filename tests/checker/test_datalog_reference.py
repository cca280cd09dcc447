"""The evaluator and the workers' planner against the language's reference semantics: the same least model on every
shipped program over the SSP specs' graphs, and the same plans as the specs bind with the reference."""

from __future__ import annotations

import numpy as np
import pytest

from lockstep.checker.datalog.evaluation import evaluate_program
from lockstep.checker.datalog.plan import linear_plan, pair_plan
from lockstep.checker.datalog.prem import prove
from lockstep.specs.datalog import semantics
from lockstep.specs.datalog.analysis import Analysed, analyse
from lockstep.specs.datalog.catalog import PROGRAMS, load
from lockstep.specs.datalog.hybrid import pair_plan_for
from lockstep.specs.datalog.parser import parse
from lockstep.specs.datalog.plan import LinearPlan, PairPlan
from lockstep.specs.datalog.semantics import Divergence
from lockstep.specs.datalog.ssp import GRAPHS, RANDOM_BASE, graph_edges, plan_for
from lockstep.specs.datalog.syntax import DatalogError

SPEC_GRAPHS = list(range(len(GRAPHS))) + [RANDOM_BASE + i for i in range(4)]
SOURCES = (0, 1, 2)
SETTLED = 100  # rounds: every catalogue graph without a negative cycle settles in far fewer


def inputs(prog: Analysed, graph: int) -> dict[str, np.ndarray]:
    (pred,) = prog.inputs
    return {pred: graph_edges(graph)[:, :prog.arity[pred]]}


def engine_model(prog: Analysed, given: dict[str, np.ndarray]) -> dict[str, set[tuple[int, ...]]]:
    """The evaluator's least model (PreM proved first, as `lockstep datalog eval` does), as sets of rows."""
    res = evaluate_program(prog, prove(prog), given, max_iterations=SETTLED)
    return {p: set(zip(*(c.tolist() for c in cols))) for p, cols in res.relations.items()}


def outcome(fn, *args):
    """The least model, or the kind of refusal: "diverges" (divergence, or an overflow on the way) or "refused"."""
    try:
        return fn(*args)
    except Divergence:
        return "diverges"
    except DatalogError as e:
        return "diverges" if "overflow" in str(e) else "refused"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_shipped_program_has_the_reference_least_model_on_the_spec_graphs(name):
    programs = [analyse(load(name), {"source": s}) for s in SOURCES] if "source" in {
        d.name for d in load(name).params} else [analyse(load(name))]
    seen = set()
    for prog in programs:
        for g in SPEC_GRAPHS:
            given = inputs(prog, g)
            ref = outcome(semantics.least_model, prog, {p: rows.tolist() for p, rows in given.items()})
            assert outcome(engine_model, prog, given) == ref, (name, prog.params, g)
            seen.add(ref if isinstance(ref, str) else "model")
    # the comparison covers least models, and the refusals where the shipped programs make them
    expect = {"quiet": {"refused"}, "cc": {"model"}, "reach": {"model"}}.get(name, {"model", "diverges"})
    assert seen == expect


def test_the_reference_semantics_on_stratified_count_and_sum():
    prog = analyse(parse(".input e(a, b, w).\nindeg(Y, count<X>) <- e(X, Y, _).\nload(Y, sum<W>) <- e(X, Y, W).\n"
                         "busy(Y) <- indeg(Y, N), N >= 2."))
    rows = [[0, 2, 5], [1, 2, 5], [0, 1, 3], [0, 2, 7]]
    ref = semantics.least_model(prog, {"e": rows})
    assert ref["indeg"] == {(1, 1), (2, 2)} and ref["load"] == {(1, 3), (2, 17)} and ref["busy"] == {(2,)}
    assert engine_model(prog, {"e": np.array(rows)}) == ref


def linear_shape(pl: LinearPlan) -> dict:
    steps = sorted((s.src, s.dst, sorted(s.env.items()), s.value_var, [str(x) for x in s.literals], str(s.head))
                   for s in pl.steps)
    return {"pred": pl.pred, "func": pl.func, "plain": pl.plain, "keys": pl.keys.tolist(), "init": pl.init,
            "steps": steps, "fixpoint": pl.fixpoint, "bounds": pl.bounds()}


@pytest.mark.parametrize("name", ["sssp", "cc", "reach"])
def test_the_specs_linear_plans_are_the_engines(name):
    """`plan_for` binds the plan with the reference semantics; the workers' planner binds it with the evaluator."""
    for g in SPEC_GRAPHS:
        for source in SOURCES:
            spec = plan_for(name, g, source)
            prog = analyse(load(name), {"source": source} if name != "cc" else {})
            assert linear_shape(spec) == linear_shape(linear_plan(prog, inputs(prog, g), max_iterations=SETTLED)), \
                (name, g, source)


def pair_shape(pl: PairPlan) -> dict:
    return {"pred": pl.pred, "func": pl.func, "nodes": pl.nodes.tolist(), "init": pl.init, "left": pl.left,
            "right": pl.right, "literals": [str(x) for x in pl.literals], "head": pl.head, "fixpoint": pl.fixpoint,
            "bounds": pl.bounds()}


def test_the_specs_pair_plans_are_the_engines():
    for g in SPEC_GRAPHS:
        prog = analyse(load("apsp"))
        assert pair_shape(pair_plan_for("apsp", g)) == pair_shape(pair_plan(prog, inputs(prog, g), SETTLED)), g


def test_known_plans():
    """The default graph of the linear specs, and the diamond of the hybrid one, with their least models."""
    pl = plan_for("sssp", 0, 0)
    assert pl.keys.tolist() == [0, 1, 2, 3, 4, 6]
    assert {int(pl.keys[k]): v for k, v in pl.fixpoint.items()} == {0: 0, 1: 1, 2: 1, 3: 2, 4: 3, 6: 4}
    neg = next(i for i, (n, _) in enumerate(GRAPHS) if n == "negative cycle")
    assert plan_for("sssp", neg, 0).fixpoint is None and pair_plan_for("apsp", neg).fixpoint is None
    assert pair_plan_for("apsp", 1).fixpoint == {1: 1, 2: 3, 3: 4, 6: 2, 7: 3, 11: 1}
