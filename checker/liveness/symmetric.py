"""Temporal properties under symmetry reduction: the state graph is built over canonical representatives
(`lockstep.checker.symmetry`), and a lasso found there is lifted to a lasso of concrete states.

The quotient keeps the fair violating lassos when

1. every permutation of the symmetric ranges maps each fairness constraint to itself: for every transition t
   and generator π, the constraint of π(t) is that of t. True of a fairness family, of an action whose
   parameters name no movable id, of an action without fairness; false of fairness per instance (WF of each
   delivery, of each process's action), which π maps to another instance's constraint;
2. each condition of the properties checked has the same value on a state and on its representative.

Under (1) a state and its images enable the same constraints, and the concrete step π(t) takes the constraint
t takes; under (2) they satisfy the same conditions. So a lasso of the quotient lifts: its stem step by step
(from a concrete state, the step whose successor has the next representative), then its loop again and again
until the concrete state at the loop's start recurs, which it does within as many passes as the orbit has
states. The lifted loop enables and takes the constraints the quotient's loop does, so it is fair and violates
the property. (1) is checked on the program's transitions before the search (`Quotient`), (2) on every step
the search generates (by `Quotient.canonical` on the scalar engine; on the vector engine, by its compiled
conditions on each batch of successors and their representatives).
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from lockstep.specs.lang.errors import SpecError

from ..errors import UsageError
from ..temporal import Fairness, Property
from .graph import StateGraph
from .lasso import Lasso


class Quotient:
    """The canonical representatives of a symmetric typed model for the temporal `props` under `fair`; a
    UsageError where a permutation moves a fairness constraint (condition 1 of the module docstring)."""

    def __init__(self, model: Any, props: list[Property], fair: Fairness):
        self.model, self.props, self.fair = model, props, fair
        self.sym = model.sym
        check_fairness(model, fair)

    def canonical(self, st: tuple) -> tuple:
        """The representative of `st`; a SpecError if a property's condition tells them apart (condition 2)."""
        rep = self.sym.canonical(st)
        if rep != st:
            for prop in self.props:
                for k, cond in enumerate(prop.conditions):
                    try:
                        here, there = bool(cond(st)), bool(cond(rep))
                    except Exception:
                        continue  # the graph's evaluation of the conditions reports it
                    if here != there:
                        raise SpecError(
                            f"temporal property {prop.name} is not symmetric: its condition {'PQ'[k]} is {here} on "
                            f"state [{self._shown(st)}] and {there} on its representative, a permutation of it, "
                            f"[{self._shown(rep)}], so symmetry reduction would check it on one state of each orbit "
                            "only", None,
                            "state the property alike for every process (ForAll/Exists over the symmetric Range), "
                            "or check without symmetry reduction")
        return rep

    def _shown(self, st: tuple) -> str:
        return ", ".join(f"{k} = {v}" for k, v in self.model.show_state(st).items())

    def step(self, cur: tuple, rep: tuple, constraint: int, prefer: Container[tuple] = ()) -> tuple[Any, tuple]:
        """A step (label, successor) from concrete state `cur` that changes it into a state of representative `rep`,
        taking fairness constraint `constraint` where one does, and leading to a state of `prefer` where one does."""
        best: dict[tuple[bool, bool], tuple[Any, tuple]] = {}
        for lid, t in self.model.successors(cur):
            if t != cur and self.sym.canonical(t) == rep:
                best.setdefault((self.fair.of(lid) == constraint, t in prefer), (lid, t))
        for key in ((True, True), (True, False), (False, True), (False, False)):
            if key in best:
                return best[key]
        raise RuntimeError("a step of the reduced graph has no concrete counterpart")

    def lift_path(self, steps: list[tuple[Any, tuple]]) -> list[tuple[Any, tuple]]:
        """The concrete path [(None, s0), (label, s1), ...] whose states have the representatives of `steps`,
        taking the same fairness constraints."""
        first = steps[0][1]
        inits = self.model.initial_states()
        cur = first if first in inits else next((s for s in inits if self.sym.canonical(s) == first), None)
        if cur is None:
            raise RuntimeError("no initial state has the reduced path's first representative")
        out: list[tuple[Any, tuple]] = [(None, cur)]
        for label, rep in steps[1:]:
            out.append(self.step(out[-1][1], rep, self.fair.of(label)))
        return out

    def lift_stop(self, steps: list[tuple[Any, tuple]], kind: str, name: str, message: str,
                  location: str | None) -> tuple[list[tuple[Any, tuple]], str, str, str, str | None]:
        """The concrete path to a safety violation found on representatives, with the violation (kind, name, message,
        location) said of its last state: a failing step is diagnosed there again (on the representative, another
        instance of the action fails)."""
        path = self.lift_path(steps)
        m = self.model
        if kind not in ("invariant", "deadlock") and name not in m.invariant_names and name not in m.constraint_names:
            f = m.diagnose(path[-1][1])
            kind, name, message, location = f.kind, f.action, f.describe(), f.location
        return path, kind, name, message, location

    def lift_lasso(self, g: StateGraph, lasso: Lasso) -> tuple[list[tuple[Any, tuple]], int]:
        """(the concrete path, its loop index) of the quotient's `lasso`: the stem, then the loop repeated until
        the concrete state at its start recurs (each pass closing onto an earlier start where a step does)."""
        ids = [i for _lid, i in lasso.path]
        reps = g.path_states(lasso.path) if g.path_states is not None else [g.state_of(i) for i in ids]
        steps = [(None if lid is None else g.label_of(lid), st) for (lid, _i), st in zip(lasso.path, reps)]
        k, last = lasso.loop, len(ids) - 1
        path = self.lift_path(steps[:k + 1])
        if k == last and not g.enabled(ids[k]):
            return path, k  # stuttering in a state that enables no fairness constraint
        loop = steps[k + 1:] + [(g.label_of(_closing_label(g, ids[last], ids[k])), steps[k][1])]
        starts = {path[-1][1]: len(path) - 1}
        while True:
            for n, (label, rep) in enumerate(loop, 1):
                path.append(self.step(path[-1][1], rep, self.fair.of(label), starts if n == len(loop) else ()))
            back = starts.get(path[-1][1])
            if back is not None:
                path.pop()  # its last step returns to the state at index `back`
                return path, back
            starts[path[-1][1]] = len(path) - 1


def _closing_label(g: StateGraph, u: int, v: int) -> int:
    """The label id of a step of the quotient from u to v, one with a fairness constraint where there is one
    (a loop of one step onto its own state is told from stuttering by the constraint it takes)."""
    labels = [lid for t, lid in g.steps(u) if t == v]
    fair = [lid for lid in labels if g.constraint(lid) >= 0]
    if not labels:
        raise RuntimeError("the quotient's loop does not close")
    return (fair or labels)[0]


def check_fairness(model: Any, fair: Fairness) -> None:
    """A UsageError naming the first fairness constraint that a generator of the symmetry group maps to another
    one (or a transition it maps to none)."""
    prog, sym = model.prog, model.sym
    by_args = {_args_key(t, None, sym, {}): lid for lid, t in enumerate(prog.transitions)}
    for sigma in sym.generators():
        memo: dict = {}
        for lid, t in enumerate(prog.transitions):
            c = fair.of(lid)
            if c < 0:
                continue
            image = by_args.get(_args_key(t, sigma, sym, memo))
            if image is not None and fair.of(image) == c:
                continue
            cons = fair.constraints[c]
            what = (f"{'WF' if cons.kind == 'weak' else 'SF'}({t.action}) of each instance" if cons.name == t.label
                    else cons.describe())
            where = ("which is no step of the spec" if image is None
                     else f"{prog.transitions[image].label}, whose fairness constraint is "
                          f"{'none' if fair.of(image) < 0 else fair.constraints[fair.of(image)].describe()}")
            family = t.meta.get("family")
            how = "" if t.action not in fair.overrides else (
                f" (--fairness {t.action}={cons.kind} makes each instance fair"
                + (f"; override the family {family} instead)" if family else ")"))
            raise UsageError(f"{what}: {_describe(sym, sigma)} maps {t.label} to {where}; fairness per instance is "
                             f"not kept by symmetry reduction{how}; declare a fairness family "
                             f"(@action(fairness=..., family=...)) or check without symmetry reduction")


def _args_key(t: Any, sigma: dict | None, sym: Any, memo: dict) -> tuple:
    """(action, each argument's value index) of transition t, its arguments permuted by `sigma` if given."""
    key = [t.action]
    for (_name, v), dom in zip(t.args, t.arg_doms):
        i = dom.index(v)
        table = None if sigma is None else sym.maps.index_map(dom, sigma, memo)
        key.append(table[i] if table else i)
    return tuple(key)


def _describe(sym: Any, sigma: dict[int, tuple]) -> str:
    """A generator in words: 'the swap of ids 0 and 1 of Range(n) (0..2)' or 'the cycle 0 -> 1 -> 2 -> 0 of ...'."""
    r = next(r for r in sym.syms if id(r) in sigma)
    perm = sigma[id(r)]
    moved = [i for i in range(len(perm)) if perm[i] != i]
    if len(moved) == 2:
        return f"the swap of ids {moved[0]} and {moved[1]} of {r.describe()}"
    chain, i = [moved[0]], perm[moved[0]]
    while i != moved[0]:
        chain.append(i)
        i = perm[i]
    return f"the cycle {' -> '.join(map(str, chain + [moved[0]]))} of {r.describe()}"
