"""Why an event does not match from a spec state: the guard conjunct that fails (its source and the values
it reads), or the logged variables that differ from the spec's, in the spec's own notation."""

from __future__ import annotations

import ast
import functools
import linecache
import os
from typing import Any

from lockstep.specs.lang.program import Transition
from lockstep.specs.lang.terms import Term

from ... import interpret
from ...itf import show
from .interpreted import evaluate
from .spec_side import Plan, SpecSide, StepFails

MAX_SHOWN = 4  # transitions (for an ANY argument) and states explained per step


def why_not(side: SpecSide, plan: Plan, st: tuple, k: int) -> list[str]:
    """Reasons the event with `plan` cannot be taken from `st` (with up to `k` internal steps before it)."""
    if not plan.steps and not plan.checks:
        return ["(the event stands for no step and logs no variable: it matches any state)"]
    states = [st]
    for ps in plan.steps:
        if not ps.tids:
            return [f"the spec has no step {ps.step.label()}: {ps.step.action} has no such arguments"]
        nxt: list[tuple] = []
        for s in states:
            for tid in ps.tids:
                try:
                    s2 = side.successor(tid, s)
                except StepFails as f:
                    return [f"{f.transition.label} fails: {f.why}"]
                if s2 is not None:
                    nxt.append(s2)
        if ps.lo == 0:
            nxt = states + nxt
        if not nxt:
            out = []
            for s in states[:MAX_SHOWN]:
                for tid in ps.tids[:MAX_SHOWN]:
                    out.append(disabled(side, side.transitions[tid], s))
            if len(ps.tids) > MAX_SHOWN:
                out.append(f"(and {len(ps.tids) - MAX_SHOWN} more choices of the step's ANY arguments, none enabled)")
            if k:
                out.append(f"(nor after up to {k} internal steps)")
            return out
        states = list(dict.fromkeys(nxt))
    out = []
    for s in states[:MAX_SHOWN]:
        diffs = [f"{side.prog.slot_names[slot]} = {_value(side, slot, s[slot])} in the spec, "
                 f"{_value(side, slot, rep)} in the log" for slot, rep in plan.checks if s[slot] != rep]
        steps = ", ".join(p.step.label() for p in plan.steps) or "no step"
        out.append(f"after {steps} the logged variables differ: " + "; ".join(diffs))
    return out


def disabled(side: SpecSide, t: Transition, st: tuple) -> str:
    """Which conjunct of `t`'s guard is false on `st`, with its source line and the values it reads."""
    guard = _first_false_guard(t, st)
    if guard is None:
        return f"{t.label} is enabled"
    text = _conjunct_text(t, guard)
    guard = _false_conjunct(guard, st)
    reads = _reads(side, guard, st)
    names = {side.prog.slot_names[slot].split("[")[0] for slot in _slots(guard)}
    if t.action == "deliver" and names == {"network"}:  # an actor spec's delivery of a message nobody sent
        return (f"{t.label} is not enabled: its message is not in flight (no step of the spec so far sent it, or it "
                f"was taken already), where {reads}")
    where = f" ({_short(guard.loc.file)}:{guard.loc.line})" if guard.loc else ""
    if guard.op == "and" or text is None:
        text = _source(guard)
    return f"{t.label} is not enabled: the guard conjunct {text}{where} is false" + (f", where {reads}" if reads else "")


def _first_false_guard(t: Transition, st: tuple) -> Term | None:
    """The first `require` of `t` that is false (or fails) on `st`."""
    memo: dict[int, Any] = {}
    for c in t.checks:
        if c.kind == "require":
            try:
                if not evaluate(c.term, st, memo):
                    return c.term
            except interpret.EvalError:
                return c.term
    return None


def _false_conjunct(t: Term, st: tuple) -> Term:
    """The innermost first false argument of a conjunction (the term itself otherwise)."""
    memo: dict[int, Any] = {}
    while t.op == "and":
        for a in t.args:
            if isinstance(a, Term):
                try:
                    ok = evaluate(a, st, memo)
                except interpret.EvalError:
                    ok = False
                if not ok:
                    t = a
                    break
        else:
            break
    return t


def _conjunct_text(t: Transition, guard: Term) -> str | None:
    """The source text of the `require(...)` argument that built `guard`: the call on its line whose symbolic
    arguments are, in order, the transition's checks from that line (None where that cannot be told)."""
    loc = guard.loc
    if loc is None:
        return None
    same = [c.term for c in t.checks if c.kind == "require" and c.loc == loc]
    calls = [c for c in _calls(loc.file) if c.lineno <= loc.line <= (c.end_lineno or c.lineno)]
    if len(calls) != 1 or len(calls[0].args) != len(same):
        return None
    arg = calls[0].args[[id(x) for x in same].index(id(guard))]
    text = ast.get_source_segment(_text(loc.file), arg)
    return f"`{' '.join(text.split())}`" if text else None


@functools.lru_cache(maxsize=32)
def _text(path: str) -> str:
    return "".join(linecache.getlines(path))


@functools.lru_cache(maxsize=32)
def _calls(path: str) -> tuple[ast.Call, ...]:
    """The `require(...)` calls of a source file."""
    try:
        tree = ast.parse(_text(path))
    except (SyntaxError, ValueError):
        return ()
    return tuple(n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id == "require")


def _source(t: Term) -> str:
    if t.loc is None:
        return "(a condition the spec builds itself)"
    line = linecache.getline(t.loc.file, t.loc.line).strip()
    return f"`{line}`" if line else "(source not available)"


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def _slots(t: Term) -> set[int]:
    """The state slots a term reads."""
    slots: set[int] = set()
    stack, seen = [t], set()
    while stack:
        x = stack.pop()
        if not isinstance(x, Term) or id(x) in seen:
            continue
        seen.add(id(x))
        if x.op == "slot":
            slots.add(x.args[0])
        else:
            stack.extend(a for a in x.args if isinstance(a, Term))
    return slots


def _reads(side: SpecSide, t: Term, st: tuple) -> str:
    slots = _slots(t)
    shown = [f"{side.prog.slot_names[s]} = {_value(side, s, st[s])}" for s in sorted(slots)[:6]]
    return ", ".join(shown) + (", ..." if len(slots) > 6 else "")


def _value(side: SpecSide, slot: int, rep: Any) -> str:
    try:
        text = show(side.prog.slot_doms[slot].unrep(rep))
    except Exception:
        text = repr(rep)
    return text if len(text) <= 160 else text[:157] + "..."
