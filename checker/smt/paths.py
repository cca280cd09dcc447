"""Concrete paths from z3 models: labelled with their actions and judged by the explicit model.

A symbolic counterexample is turned into states of the `TypedModel`, each step labelled with
the first transition that produces it (the reference interpreter's order, as the explicit
engine's), so that the trace is the same kind of object the explicit engine writes and
`lockstep replay` re-executes it.
"""

from __future__ import annotations

from typing import Any

import z3

from .. import interpret
from ..result import Violation
from ..trace import Trace
from ..typed_model import TypedModel
from .encode import Symbolic, SymState


class Mismatch(RuntimeError):
    """A symbolic path that the concrete interpreter does not reproduce (a bug in an interpreter)."""


def concrete_path(sym: Symbolic, m: z3.ModelRef, states: list[SymState]) -> list[tuple]:
    return [sym.concrete(m, s) for s in states]


def labelled(model: TypedModel, states: list[tuple]) -> list[tuple[Any, tuple]]:
    """[(None, s0), (transition index, s1), ...] for a path of states."""
    prog = model.prog
    out: list[tuple[Any, tuple]] = [(None, states[0])]
    for a, b in zip(states, states[1:]):
        for i, t in enumerate(prog.transitions):
            try:
                if interpret.run_transition(prog, t, a) == b:
                    out.append((i, b))
                    break
            except interpret.Failure:
                continue
        else:
            raise Mismatch(f"no action of {model.name} leads from {model.show_state(a)} to {model.show_state(b)}")
    return out


def violation(model: TypedModel, path: list[tuple[Any, tuple]], deadlock: bool) -> Violation:
    """What is wrong at the last state of a path, as the explicit engine reports it."""
    last = path[-1][1]
    try:
        i = model.violated(last)
    except Exception:
        f = model.diagnose_predicate(last)
        return _violation(model, path, f.kind, f.action, f.message, f.location, "step")
    if i >= 0:
        name = model.invariant_names[i]
        return _violation(model, path, "invariant", name, f"invariant {name} is violated", None, "invariant")
    try:
        succs = model.successors(last)
    except Exception:
        f = model.diagnose(last)
        return _violation(model, path, f.kind, f.action, f.describe(), f.location, "step")
    if not succs and deadlock:
        return _violation(model, path, "deadlock", "", "deadlock: no action is enabled", None, "deadlock")
    raise Mismatch(f"the symbolic counterexample ends in {model.show_state(last)}, where nothing is wrong")


def _violation(model: TypedModel, path: list, kind: str, name: str, message: str, location: str | None,
               prop_kind: str) -> Violation:
    trace = Trace.from_states(model, path, property={"kind": prop_kind, "name": name}, message=message,
                              location=location)
    return Violation(kind, name, message, location, trace)


def first_false(model: TypedModel, names: list[str], st: tuple) -> str | None:
    """The first of the named invariants that is false (or fails to evaluate) on `st`."""
    preds = {p.name: p for p in model.prog.invariants}
    for n in names:
        try:
            if not interpret.evaluate(preds[n].term, st):
                return n
        except interpret.EvalError:
            return n
    return None
