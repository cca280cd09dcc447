"""A typed spec's steps and invariants evaluated on one state at a time, without compiling the program.

Conformance checking takes few steps from few states; a spec whose terms share much (long sequences handled
element by element, as a Raft log is) compiles to source that grows with the size of its terms written out as
trees, which can take minutes at the bounds a real run needs. Here each term is evaluated once per state, on
its shared structure (a memo per evaluation), as the reference evaluator (`checker.interpret`) defines it."""

from __future__ import annotations

import sys
from itertools import product
from typing import Any

from lockstep.specs.lang.program import Program, Transition
from lockstep.specs.lang.terms import OPS, Term

from ... import interpret
from ...itf import show
from ...model import StepFailure

_ERR = object()


def evaluate(t: Any, st: tuple, memo: dict[int, Any]) -> Any:
    """`interpret.evaluate` with a memo of the values of shared subterms (raises interpret.EvalError)."""
    if not isinstance(t, Term):
        return t
    key = id(t)
    hit = memo.get(key, _ERR)
    if hit is not _ERR:
        return hit
    op = t.op
    if op == "const":
        v = t.args[0]
    elif op == "slot":
        v = st[t.args[0]]
    elif op == "and":
        v = all(evaluate(a, st, memo) for a in t.args)
    elif op == "or":
        v = any(evaluate(a, st, memo) for a in t.args)
    elif op == "ite":
        v = evaluate(t.args[1], st, memo) if evaluate(t.args[0], st, memo) else evaluate(t.args[2], st, memo)
    else:
        vals = [evaluate(a, st, memo) for a in t.args]
        if op == "single" and not 0 <= vals[0] < t.dom.elem.size:
            raise interpret.EvalError(f"element index {vals[0]} outside the set's type {t.dom.elem.describe()}", t.loc,
                                      "type")
        try:
            v = OPS[op](*vals)
        except IndexError as e:
            raise interpret.EvalError(str(e), t.loc, "type") from None
        except Exception as e:
            raise interpret.EvalError(f"{type(e).__name__}: {e}", t.loc) from None
    memo[key] = v
    return v


def run(prog: Program, t: Transition, st: tuple) -> tuple | None:
    """The successor of `st` by `t` (None if disabled); interpret.Failure where it fails."""
    memo: dict[int, Any] = {}
    for c in t.checks:
        try:
            if c.kind == "require":
                if not evaluate(c.term, st, memo):
                    return None
            elif c.kind == "assert":
                if not evaluate(c.term, st, memo):
                    raise interpret.Failure(t, "assertion", c.message or "assertion failed", c.loc)
            else:
                raise interpret.Failure(t, "error", c.message or "error", c.loc)
        except interpret.EvalError as e:
            raise interpret.Failure(t, e.kind, e.message, e.loc) from None
    new = list(st)
    for s, term in t.updates.items():
        try:
            v = evaluate(term, st, memo)
        except interpret.EvalError as e:
            raise interpret.Failure(t, e.kind, e.message, e.loc) from None
        if interpret.out_of_range(prog, s, v):
            raise interpret.Failure(t, "type", f"{prog.slot_names[s]} := {v} is outside {prog.slot_doms[s].describe()}",
                                    term.loc)
        new[s] = v
    return tuple(new)


class InterpretedModel:
    """What conformance checking needs of a model (initial states, steps, invariants, diagnosis, showing a
    state), with every term interpreted."""

    def __init__(self, prog: Program, ref: str):
        self.prog, self.ref, self.name = prog, ref, prog.name
        self.params = dict(prog.params)
        self.invariant_names = [p.name for p in prog.invariants]
        self.vars = [f.name for f in prog.fields]
        if sys.getrecursionlimit() < 20_000:
            sys.setrecursionlimit(20_000)  # terms nest as deep as the spec's chains of If

    def step(self, t: Transition, st: tuple) -> list:
        """As a compiled transition: [(0, successor)] if enabled, [] if not; raises where it fails."""
        nxt = run(self.prog, t, st)
        return [] if nxt is None else [(0, nxt)]

    def initial_states(self) -> list[tuple]:
        prog = self.prog
        slots = [prog.init_choices.get(i, [v]) for i, v in enumerate(prog.init_defaults)]
        out: list[tuple] = []
        for pre in product(*slots):
            if not prog.init_transitions:
                out.append(tuple(pre))
                continue
            for t in prog.init_transitions:
                nxt = run(prog, t, tuple(pre))
                if nxt is not None:
                    out.append(nxt)
        return out

    def compile_invariants(self) -> None:
        """Evaluate the invariants as compiled functions from now on (where they are checked in many states)."""
        from ...codegen import term_function

        fns = [None if p.error is not None else term_function(p.term, f"inv{k}") for k, p in enumerate(self.prog.invariants)]

        def violated(st: tuple) -> int:
            for k, fn in enumerate(fns):
                if fn is None:
                    return k
                try:
                    if not fn(st):
                        return k
                except Exception:
                    return k
            return -1

        self.violated = violated  # type: ignore[method-assign]

    def violated(self, st: tuple) -> int:
        memo: dict[int, Any] = {}
        for k, p in enumerate(self.prog.invariants):
            if p.error is not None:
                return k
            try:
                if not evaluate(p.term, st, memo):
                    return k
            except interpret.EvalError:
                return k
        return -1

    def show_state(self, st: tuple) -> dict[str, str]:
        return {f.name: show(f.decode(st)) for f in self.prog.fields}

    def _diagnose_with(self, transitions: list[Transition], st: tuple) -> StepFailure:
        for t in transitions:
            try:
                run(self.prog, t, st)
            except interpret.Failure as f:
                return StepFailure(t.label, f.kind, f.message, str(f.loc) if f.loc else None)
        return StepFailure("", "error", "a step failed, but it does not fail again when re-evaluated", None)
