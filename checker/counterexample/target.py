"""What a counterexample shows, as a test on states: the invariant it violates (or whose evaluation fails), a
deadlock, or a failing step. Shortening and minimising keep a counterexample's `Target`: a shorter trace counts
only if its last state shows the same thing, as `lockstep check` would report it there and `lockstep replay`
confirms it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import Model
from ..result import Violation
from ..trace import Trace

STEP_KINDS = ("assertion", "type", "error")


@dataclass(frozen=True)
class Target:
    """The property a counterexample violates: `kind` as a `Violation`'s, `name` the invariant or the action."""

    kind: str  # "invariant" | "deadlock" | "assertion" | "type" | "error"
    name: str
    predicate: bool = False  # an invariant that fails to evaluate (kind "error"), not a failing step

    @classmethod
    def of(cls, model: Model, v: Violation) -> Target:
        predicates = [*model.invariant_names, *model.constraint_names]
        return cls(v.kind, v.name, v.kind == "error" and v.name in predicates and not _is_action(model, v.name))

    @property
    def at_state(self) -> bool:
        """Shown by a state itself (an invariant), rather than by expanding it (a deadlock, a failing step)."""
        return self.kind == "invariant" or self.predicate

    def describe(self) -> str:
        if self.kind == "invariant":
            return f"invariant {self.name}"
        if self.predicate:
            return f"the failing evaluation of {self.name}"
        if self.kind == "deadlock":
            return "a deadlock"
        return f"a failing step of {self.name}" if self.name else "a failing step"

    def matches(self, v: Violation) -> bool:
        return v.kind == self.kind and v.name == self.name

    def shown(self, model: Model, st: Any) -> bool:
        """For a target shown by states: whether `st` shows it (the first invariant it violates is this one)."""
        try:
            i = model.violated(st)
        except Exception:
            return self.predicate and model.diagnose_predicate(st).action == self.name
        return self.kind == "invariant" and i >= 0 and model.invariant_names[i] == self.name

    def expand(self, model: Model, st: Any) -> tuple[bool, list[tuple[Any, Any]]]:
        """(whether expanding `st` shows the target, the steps to follow from it). A step of another action
        that fails is a dead end, the steps that succeed are followed."""
        try:
            succs = model.successors(st)
        except Exception:
            f = model.diagnose(st)
            if not self.at_state and self.kind in STEP_KINDS and (f.kind, f.action) == (self.kind, self.name):
                return True, []
            lenient = getattr(model, "steps_that_succeed", None)
            return False, [] if lenient is None else lenient(st)
        return self.kind == "deadlock" and not succs, succs

    def violation(self, model: Model, path: list[tuple[Any, Any]]) -> Violation:
        """The violation the last state of `path` shows (messages recomputed there), with `path` as its trace."""
        last = path[-1][1]
        kind, name, message, location = self.kind, self.name, "", None
        if self.kind == "invariant":
            message = f"invariant {self.name} is violated"
        elif self.predicate:
            f = model.diagnose_predicate(last)
            kind, name, message, location = f.kind, f.action, f.message, f.location
        elif self.kind == "deadlock":
            message = "deadlock: no action is enabled"
        else:
            f = model.diagnose(last)
            kind, name, message, location = f.kind, f.action, f.describe(), f.location
        prop = {"kind": kind if kind in ("invariant", "deadlock") else "step", "name": name}
        trace = Trace.from_states(model, path, property=prop, message=message, location=location)
        return Violation(kind, name, message, location, trace)


def _is_action(model: Model, name: str) -> bool:
    prog = getattr(model, "prog", None)
    return prog is not None and any(t.label == name for t in prog.transitions)


def steps_of(v: Violation) -> int:
    """The number of steps of a violation's trace."""
    return len(v.trace.steps) - 1


def path_of(model: Model, v: Violation) -> list[tuple[Any, Any]]:
    """The model states of a violation's trace, [(None, s0), (label id, s1), ...], regenerated from its steps."""
    steps = v.trace.steps
    cur = next((s for s in model.initial_states() if model.encode_state(s) == steps[0].state), None)
    if cur is None:
        raise RuntimeError("no initial state matches the counterexample's first state")
    path: list[tuple[Any, Any]] = [(None, cur)]
    follow = Target("invariant", "")  # the steps that succeed from each state
    for step in steps[1:]:
        nxt = next(((lid, t) for lid, t in follow.expand(model, cur)[1]
                    if model.label_json(lid) == step.action and model.encode_state(t) == step.state), None)
        if nxt is None:
            raise RuntimeError("a step of the counterexample could not be regenerated")
        path.append(nxt)
        cur = nxt[1]
    return path
