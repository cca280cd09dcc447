"""Conformance: the symbolic interpreter against the explicit one, state by state.

For a spec at fixed parameters, the symbolic initial states must be exactly the explicit ones,
and from every reachable state (breadth-first, up to a limit) the symbolic transition relation
must have exactly the explicit labelled successors, and must fail exactly where the explicit
engine fails. Symbolic sets are enumerated from z3 models with blocking clauses.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import z3

from lockstep.specs.lang.errors import SpecError

from .. import interpret
from ..typed_model import TypedModel
from .encode import DEFAULT, Encoding, Symbolic, SymState, _z


@dataclass
class Disagreement:
    """The two interpreters differ: in which spec, at which state, for which action, how."""

    spec: str
    state: dict[str, str] | None  # None: about the initial states
    action: str
    detail: str

    def __str__(self) -> str:
        where = "initial states" if self.state is None else "state " + ", ".join(f"{k}={v}" for k, v in self.state.items())
        return f"{self.spec}: {where}: {self.action}: {self.detail}"


@dataclass
class Report:
    """How much was compared, and every disagreement found (up to a limit)."""

    initial: int = 0
    states: int = 0
    steps: int = 0
    failures: int = 0  # failing (state, transition) pairs compared
    complete: bool = True  # every reachable state was compared
    disagreements: list[Disagreement] = field(default_factory=list)


def compare(model: TypedModel, encoding: Encoding = DEFAULT, limit: int = 1000, max_reports: int = 5) -> Report:
    """Compare initial states and the successors of up to `limit` reachable states."""
    sym = Symbolic(model.prog, encoding)
    rep = Report()
    explicit_init = _explicit_initial(model, sym, rep)
    if rep.disagreements:
        return rep
    rep.initial = len(explicit_init)
    s, t = sym.state("s"), sym.state("t")
    act = sym.action_var("act")
    solver = z3.Solver()
    steps, fails = z3.Bools("steps fails")
    solver.add(_z(sym.typed(s)), z3.Implies(steps, z3.And(_z(sym.step(s, t, act)), _z(sym.typed(t)))),
               z3.Implies(fails, _z(sym.failure(s))))
    seen = set(explicit_init)
    queue = deque(sorted(explicit_init))
    while queue and len(rep.disagreements) < max_reports:
        if rep.states >= limit:
            rep.complete = False
            break
        st = queue.popleft()
        rep.states += 1
        expected, failing = _explicit_step(model, st)
        solver.push()
        solver.add(_z(sym.pin(s, st)))
        failing_sym = _failing_transitions(sym, solver.model(), s) if solver.check(fails) == z3.sat else set()
        got = _symbolic_successors(sym, solver, steps, t, act, len(expected) + 5)
        solver.pop()
        rep.steps += len(expected)
        rep.failures += len(failing)
        _report_differences(model, st, expected, got, rep)
        if failing != failing_sym:
            for i in sorted(failing ^ failing_sym):
                side = "the explicit engine" if i in failing else "the symbolic relation"
                rep.disagreements.append(Disagreement(model.name, model.show_state(st), model.label(i),
                                                      f"only {side} has this step fail"))
        for _, nxt in expected:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return rep


def _explicit_initial(model: TypedModel, sym: Symbolic, rep: Report) -> set[tuple]:
    try:
        explicit = set(model.initial_states())
    except SpecError as e:
        pre, fails = sym.init_failure()
        if z3.Solver().check(_z(fails)) != z3.sat:
            rep.disagreements.append(Disagreement(model.name, None, "init", f"only the explicit engine fails: {e}"))
        return set()
    s0 = sym.state("s0")
    solver = z3.Solver()
    solver.add(_z(sym.typed(s0)), _z(sym.init(s0)))
    symbolic: set[tuple] = set()
    while len(symbolic) <= len(explicit) + 5 and solver.check() == z3.sat:
        st = sym.concrete(solver.model(), s0)
        symbolic.add(st)
        solver.add(z3.Not(_z(sym.pin(s0, st))))
    for st in sorted(symbolic - explicit):
        rep.disagreements.append(Disagreement(model.name, None, "init",
                                              f"only the symbolic encoding has initial state {model.show_state(st)}"))
    for st in sorted(explicit - symbolic):
        rep.disagreements.append(Disagreement(model.name, None, "init",
                                              f"only the explicit engine has initial state {model.show_state(st)}"))
    return explicit


def _explicit_step(model: TypedModel, st: tuple) -> tuple[set[tuple[int, tuple]], set[int]]:
    """(labelled successors, failing transitions) by the compiled engine; per transition where it fails."""
    try:
        return set(model.successors(st)), set()
    except Exception:
        pass
    succ, failing = set(), set()
    for i, t in enumerate(model.prog.transitions):
        try:
            nxt = interpret.run_transition(model.prog, t, st)
        except interpret.Failure:
            failing.add(i)
            continue
        if nxt is not None:
            succ.add((i, nxt))
    return succ, failing


def _symbolic_successors(sym: Symbolic, solver: z3.Solver, steps: z3.BoolRef, t: SymState, act: z3.ExprRef,
                         cap: int) -> set[tuple[int, tuple]]:
    """Every (transition, successor `t`) in the symbolic relation from the pinned state, blocking each model found."""
    out: set[tuple[int, tuple]] = set()
    while len(out) < cap and solver.check(steps) == z3.sat:
        m = solver.model()
        i = m.eval(act, model_completion=True).as_long()
        nxt = sym.concrete(m, t)
        out.add((i, nxt))
        solver.add(z3.Or(act != i, z3.Not(_z(sym.pin(t, nxt)))))
    return out


def _failing_transitions(sym: Symbolic, m: z3.ModelRef, s: SymState) -> set[int]:
    return {i for i, t in enumerate(sym.prog.transitions)
            if z3.is_true(m.eval(_z(sym.effect(t, s).fail), model_completion=True))}


def _report_differences(model: TypedModel, st: tuple, expected: set, got: set, rep: Report) -> None:
    for i, nxt in sorted(got - expected):
        rep.disagreements.append(Disagreement(model.name, model.show_state(st), model.label(i),
                                              f"only the symbolic relation steps to {model.show_state(nxt)}"))
    for i, nxt in sorted(expected - got):
        rep.disagreements.append(Disagreement(model.name, model.show_state(st), model.label(i),
                                              f"only the explicit engine steps to {model.show_state(nxt)}"))
