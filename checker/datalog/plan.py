"""A program's plan bound to its input by the evaluator: what the workers run, on graphs of any size.

The plan itself (its shape, its steps, their interpretation) is the language's, `lockstep.specs.datalog.plan`;
here the joins that bind it (the strata below the recursion, the steps' bindings, the sequential least model)
run on numpy columns, instead of the reference semantics' rows.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from lockstep.specs.datalog import plan as plans
from lockstep.specs.datalog.analysis import Analysed, Stratum, analyse
from lockstep.specs.datalog.plan import LinearPlan, PairPlan
from lockstep.specs.datalog.syntax import Program, Rule

from .evaluate import Evaluator


class Engine:
    """A `Binder` (`lockstep.specs.datalog.plan`) by the evaluator, with every PreM site taken as proved: the plans
    run min, max and plain recursions only, which are PreM."""

    def __init__(self, prog: Analysed, inputs: Mapping[str, np.ndarray], max_iterations: int | None = None):
        self.prog, self.inputs, self.max_iterations = prog, inputs, max_iterations
        self.ev = self._evaluator()

    def _evaluator(self) -> Evaluator:
        return Evaluator(self.prog, self.inputs, {s: True for s in self.prog.sites}, self.max_iterations)

    def lower(self, st: Stratum) -> None:
        ev = self.ev
        for below in self.prog.strata[: self.prog.strata.index(st)]:
            for p in below.preds:
                ev.rels[p] = ev._new_relation(p)
            for i in below.rules:
                r = self.prog.rules[i]
                ev._merge(r.head.pred, ev.derive(r, {}))

    def derive(self, rule: Rule) -> list[np.ndarray]:
        return self.ev.derive(rule, {})

    def fire(self, rule: Rule) -> tuple[dict[str, np.ndarray], int]:
        return self.ev.fire(rule, {})

    def least_model(self, pred: str) -> list[np.ndarray]:
        return self._evaluator().run().relations[pred]


def linear_plan(program: Program | Analysed, inputs: Mapping[str, np.ndarray], params: Mapping[str, int] | None = None,
                max_iterations: int | None = None, with_fixpoint: bool = True) -> LinearPlan:
    """The plan of a decomposable program on these inputs (DatalogError saying why if it is not one)."""
    prog = program if isinstance(program, Analysed) else analyse(program, params)
    return plans.linear_plan(prog, Engine(prog, inputs, max_iterations), with_fixpoint)


def pair_plan(prog: Analysed, inputs: Mapping[str, np.ndarray], max_iterations: int | None = None,
              with_fixpoint: bool = True) -> PairPlan:
    """The plan of a path-composition program on these inputs (see `PairPlan`; DatalogError saying why if it is not
    one)."""
    return plans.pair_plan(prog, Engine(prog, inputs, max_iterations), with_fixpoint)


__all__ = ["Engine", "linear_plan", "pair_plan"]
