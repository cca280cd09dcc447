"""`@witness` properties: each must hold in some reachable state. Each is searched for on its own, as
the invariant "not W", so a counterexample to that invariant is the shortest trace reaching W (and
partial-order reduction keeps W's fields visible); a search that finds none proves W unreachable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from lockstep.specs.lang import Not, build_program
from lockstep.specs.lang.program import Predicate

from .explicit import Options
from .model import Model
from .progress import NoProgress
from .result import HOLDS, CheckResult
from .trace import Trace


@dataclass
class WitnessResult:
    """One witness's search: `found` is True (reached; `trace` reaches it), False (no reachable state
    satisfies it) or None (not reached within the bounds, or it failed to evaluate: then `trace` leads there)."""

    name: str
    found: bool | None  # True reached, False unreachable, None not reached within the bounds
    trace: Trace | None
    result: CheckResult

    @property
    def failed(self) -> bool:
        """The witness failed to evaluate (its `trace` leads to the state where it raised)."""
        return self.found is None and self.trace is not None

    @property
    def exit_code(self) -> int:
        """0 reached, 1 unreachable or failing to evaluate, 3 not reached within the bounds."""
        return 0 if self.found else 1 if self.found is False or self.failed else 3


def witness_names(model: Model) -> list[str]:
    return [w.name for w in _witnesses(model)]


def witness_model(model: Model, name: str) -> Model:
    """`model` with the single invariant "not `name`" and no other."""
    from .typed_model import TypedModel

    prog = build_program(model.prog.spec_cls, dict(model.prog.params))  # type: ignore[attr-defined]
    w = next(p for p in prog.witnesses if p.name == name)
    term = None if w.error is not None else (not w.term if isinstance(w.term, bool) else Not(w.term))
    prog.invariants = [Predicate(f"not_{name}", term, w.loc, w.error)]
    prog.witnesses = []
    return TypedModel(prog, model.ref, symmetry=model.symmetry)


def witness_holds(model: Model, name: str, state: Any) -> bool:
    """Whether witness `name` of `model` holds in `state` (False if it fails to evaluate there)."""
    from . import interpret

    w = next((p for p in _witnesses(model) if p.name == name), None)
    if w is None:
        raise ValueError(f"spec {model.name} has no witness {name!r} (its witnesses: "
                         f"{', '.join(witness_names(model)) or 'none'})")
    if w.error is not None:
        return False
    if isinstance(w.term, bool):
        return w.term
    try:
        return bool(interpret.evaluate(w.term, state))
    except interpret.EvalError:
        return False


def _witnesses(model: Model) -> list[Predicate]:
    prog = getattr(model, "prog", None)
    return list(prog.witnesses) if prog is not None else []


def search_witnesses(model: Model, engine: str, opts: Options, shorten: bool = True) -> list[WitnessResult]:
    """Search for every `@witness` of `model` with `engine` ("vector" or "scalar", as `choice.choose` chose
    it) under `opts` (deadlocks are not reported: a witness search looks for a state, not a run's end); a trace
    found with partial-order reduction or depth-first is shortened to a shortest one (within a budget) unless
    `shorten` is False."""
    from .vector import choice

    wopts = replace(opts, deadlock=False)

    def run(wm: Model) -> CheckResult:
        chosen, vm, _ = choice.choose(engine, wm, wopts)
        res = choice.run(chosen, wm, vm, wopts, NoProgress())
        if shorten and res.violation is not None and (wopts.por or wopts.dfs):  # the shortest trace reaching it
            from .counterexample import Budget
            from .counterexample import shorten as shortened

            found_with = "partial-order reduction" if wopts.por else "depth-first search"
            res.violation = shortened(wm, res.violation, found_with, chosen, vm, Budget.within(wopts.max_states)).violation
        return res

    return [search_witness(model, name, run) for name in witness_names(model)]


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
