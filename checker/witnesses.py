"""`@witness` properties: each must hold in some reachable state. Each is searched for on its own, as
the invariant "not W", so a counterexample to that invariant is the shortest trace reaching W (and
partial-order reduction keeps W's fields visible); a search that finds none proves W unreachable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lockstep.specs.lang import Not, build_program
from lockstep.specs.lang.program import Predicate

from .model import Model
from .result import HOLDS, CheckResult
from .trace import Trace


@dataclass
class WitnessResult:
    name: str
    found: bool | None  # True reached, False unreachable, None not reached within the bounds
    trace: Trace | None
    result: CheckResult


def witness_names(model: Model) -> list[str]:
    prog = getattr(model, "prog", None)
    return [w.name for w in prog.witnesses] if prog is not None else []


def witness_model(model: Model, name: str) -> Model:
    """`model` with the single invariant "not `name`" and no other."""
    from .typed_model import TypedModel

    prog = build_program(model.prog.spec_cls, dict(model.prog.params))  # type: ignore[attr-defined]
    w = next(p for p in prog.witnesses if p.name == name)
    term = None if w.error is not None else (not w.term if isinstance(w.term, bool) else Not(w.term))
    prog.invariants = [Predicate(f"not_{name}", term, w.loc, w.error)]
    prog.witnesses = []
    return TypedModel(prog, model.ref, symmetry=model.symmetry)


def search_witness(model: Model, name: str, run: Callable[[Model], CheckResult]) -> WitnessResult:
    """Search for a reachable state satisfying witness `name`, with `run` (an engine and its options)."""
    res = run(witness_model(model, name))
    v = res.violation
    if v is not None and v.kind == "invariant":
        v.trace.property = {"kind": "witness", "name": name}
        v.trace.message = f"witness {name} holds in the last state"
        return WitnessResult(name, True, v.trace, res)
    if v is not None:  # the witness failed to evaluate: report it as what it is
        return WitnessResult(name, None, v.trace, res)
    return WitnessResult(name, False if res.verdict == HOLDS else None, None, res)
