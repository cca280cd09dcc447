"""A direct evaluator of terms on one state: the reference meaning of the term language.

The explicit engine runs compiled code (`codegen`); this evaluator is what that code must
agree with, and it is used where speed does not matter and precision does: pinpointing the
guard or expression that failed, with its source line.
"""

from __future__ import annotations

from typing import Any

from lockstep.specs.lang.errors import Location
from lockstep.specs.lang.program import Program, Transition
from lockstep.specs.lang.terms import OPS, Term


class EvalError(Exception):
    """An expression failed on a state; `loc` is the spec line that built it. `kind` is "type" for a value
    outside its type (an index, element, key or sequence position), "error" for an operation with no value
    (a division by zero)."""

    def __init__(self, message: str, loc: Location | None, kind: str = "error"):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.kind = kind


def evaluate(t: Term | bool, st: tuple) -> Any:
    """The value of a term on state `st` (raises EvalError with the failing term's line)."""
    if not isinstance(t, Term):
        return t
    op = t.op
    if op == "const":
        return t.args[0]
    if op == "slot":
        return st[t.args[0]]
    if op == "and":
        return all(evaluate(a, st) for a in t.args)
    if op == "or":
        return any(evaluate(a, st) for a in t.args)
    if op == "ite":
        return evaluate(t.args[1], st) if evaluate(t.args[0], st) else evaluate(t.args[2], st)
    vals = [evaluate(a, st) for a in t.args]
    if op == "single" and not 0 <= vals[0] < t.dom.elem.size:
        raise EvalError(f"element index {vals[0]} outside the set's type {t.dom.elem.describe()}", t.loc, "type")
    try:
        return OPS[op](*vals)
    except IndexError as e:  # the language's checks of values against their types
        raise EvalError(str(e), t.loc, "type") from None
    except Exception as e:
        raise EvalError(f"{type(e).__name__}: {e}", t.loc) from None


def out_of_range(prog: Program, slot: int, value: Any) -> bool:
    """Whether an integer-represented slot (Int, Range, Enum, record, union, option) is given a value outside its type."""
    dom = prog.slot_doms[slot]
    if dom.kind in ("bool", "set"):
        return False
    return not dom.lo <= value <= dom.hi


class Failure(Exception):
    """A transition is enabled on a state and fails there: an assertion or a value outside its type (violations
    of the protocol), or an error (the spec's code raised while tracing, or an operation with no value)."""

    def __init__(self, transition: Transition, kind: str, message: str, loc: Location | None):
        super().__init__(message)
        self.transition = transition
        self.kind = kind
        self.message = message
        self.loc = loc


def run_transition(prog: Program, t: Transition, st: tuple) -> tuple | None:
    """The successor of `st` by `t`, None if disabled; raises Failure where it fails."""
    for c in t.checks:
        try:
            if c.kind == "require":
                if not evaluate(c.term, st):
                    return None
            elif c.kind == "assert":
                if not evaluate(c.term, st):
                    raise Failure(t, "assertion", c.message or "assertion failed", c.loc)
            else:
                raise Failure(t, "error", c.message or "error", c.loc)
        except EvalError as e:
            raise Failure(t, e.kind, e.message, e.loc) from None
    new = list(st)
    for s, term in t.updates.items():
        try:
            v = evaluate(term, st)
        except EvalError as e:
            raise Failure(t, e.kind, e.message, e.loc) from None
        if out_of_range(prog, s, v):
            raise Failure(t, "type", f"{prog.slot_names[s]} := {v} is outside {prog.slot_doms[s].describe()}", term.loc)
        new[s] = v
    return tuple(new)


def first_false_guard(t: Transition, st: tuple) -> Term | None:
    """The first `require` of `t` that fails on `st` (None if all hold)."""
    for c in t.checks:
        if c.kind == "require":
            try:
                if not evaluate(c.term, st):
                    return c.term
            except EvalError:
                return c.term
    return None
