"""A model's temporal properties and fairness constraints, in the form the liveness checker reads.

Typed specs declare them with `@temporal` and `@action(fairness=..., family=...)`; plain specs
with a `temporal` dict (conditions are functions of the state) and a `fairness` dict keyed by
action name (a step's action is its label, or the label's first element when the label is a
tuple). The command line may override the declared fairness per action or family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lockstep.specs.lang.errors import SpecError
from lockstep.specs.lang.temporal import FAIRNESS, KINDS, Temporal

from .itf import show
from .model import Model

NO_FAIRNESS = "none"


@dataclass(frozen=True)
class Property:
    """A temporal property with its state conditions as tests on model states."""

    name: str
    kind: str
    conditions: tuple[Callable[[Any], bool], ...]

    @property
    def formula(self) -> str:
        return Temporal(self.kind, self.conditions).describe()


@dataclass(frozen=True)
class Constraint:
    """One fairness constraint: WF or SF of one action instance or of one family of actions."""

    kind: str  # "weak" | "strong"
    name: str

    def describe(self) -> str:
        return f"{'WF' if self.kind == 'weak' else 'SF'}({self.name})"


SPELLED_OUT = 6  # constraints listed one by one; beyond, counted per action


@dataclass
class Fairness:
    """The fairness constraints and, per step label, the one it belongs to (-1: none)."""

    constraints: list[Constraint] = field(default_factory=list)
    overrides: dict[str, str] = field(default_factory=dict)
    of: Callable[[Any], int] = lambda _label: -1
    unused: Callable[[], list[str]] = lambda: []

    @property
    def weak_mask(self) -> int:
        return sum(1 << i for i, c in enumerate(self.constraints) if c.kind == "weak")

    @property
    def strong_mask(self) -> int:
        return sum(1 << i for i, c in enumerate(self.constraints) if c.kind == "strong")

    def describe(self) -> str:
        if len(self.constraints) <= SPELLED_OUT:
            return ", ".join(c.describe() for c in self.constraints) or "none"
        groups: dict[tuple[str, str], int] = {}
        for c in self.constraints:  # many instances (an actor spec's deliveries): counted per action
            key = (c.kind, c.name.partition("(")[0])
            groups[key] = groups.get(key, 0) + 1
        return ", ".join(f"{'WF' if kind == 'weak' else 'SF'}({name}) for each of its {n:,} instances"
                         if n > 1 else f"{'WF' if kind == 'weak' else 'SF'}({name})" for (kind, name), n in groups.items())


def parse_overrides(items: list[str]) -> dict[str, str]:
    """`["enter=strong", "tick=none"]` -> {"enter": "strong", "tick": "none"}."""
    out: dict[str, str] = {}
    for item in items or []:
        name, sep, kind = item.partition("=")
        if not sep or not name.strip() or kind not in (*FAIRNESS, NO_FAIRNESS):
            raise SpecError(f"--fairness {item!r}: expected ACTION=weak, ACTION=strong or ACTION=none, "
                            "e.g. --fairness enter=weak")
        out[name.strip()] = kind
    return out


def properties(model: Model) -> dict[str, Property]:
    """The model's temporal properties by name."""
    prog = getattr(model, "prog", None)
    if prog is not None:
        compiled = model.compiled  # type: ignore[attr-defined]
        return {p.name: Property(p.name, p.kind, tuple(compiled.condition(t, p.name) for t in p.operands))
                for p in prog.properties}
    declared = getattr(model.obj, "temporal", None) or {}  # type: ignore[attr-defined]
    if not isinstance(declared, dict):
        raise SpecError(f"plain spec {model.name}: `temporal` must be a dict of name -> eventually(fn), leads_to(fn, fn), ...")
    out = {}
    for name, formula in declared.items():
        if not isinstance(formula, Temporal) or formula.kind not in KINDS \
                or not all(callable(c) for c in formula.operands):
            raise SpecError(f"plain spec {model.name}: temporal property {name!r} is not a formula over functions of "
                            "the state", None, "write e.g. temporal = {'done': eventually(lambda s: s.done)}")
        out[name] = Property(name, formula.kind, formula.operands)
    return out


def select(model: Model, name: str) -> Property:
    """The property called `name`, or a message listing the ones there are."""
    props = properties(model)
    if name not in props:
        known = ", ".join(props) or "none (declare one with @temporal)"
        raise SpecError(f"spec {model.name} has no temporal property {name!r} (its properties: {known})")
    return props[name]


def fairness(model: Model, overrides: dict[str, str] | None = None) -> Fairness:
    """The model's fairness constraints after applying `overrides` (action or family -> kind or "none")."""
    overrides = overrides or {}
    prog = getattr(model, "prog", None)
    if prog is not None:
        return _typed_fairness(model, prog, overrides)
    return _plain_fairness(model, overrides)


def _typed_fairness(model: Model, prog: Any, overrides: dict[str, str]) -> Fairness:
    actions = prog.actions()
    families = {t.meta["family"] for t in prog.transitions if t.meta.get("family")}
    for name in overrides:
        if name not in actions and name not in families:
            raise SpecError(f"--fairness {name}: spec {model.name} has no action or fairness family {name!r} "
                            f"(actions: {', '.join(actions)}; families: {', '.join(sorted(families)) or 'none'})")
    out = Fairness(overrides=dict(overrides))
    index: dict[Any, int] = {}
    by_label: list[int] = []
    for t in prog.transitions:
        kind, family = t.meta.get("fairness"), t.meta.get("family")
        if t.action in overrides:
            kind, family = overrides[t.action], None
        elif family in overrides:
            kind = overrides[family]
        if kind in (None, NO_FAIRNESS):
            by_label.append(-1)
            continue
        key = ("family", family) if family else ("instance", t.label)
        if key not in index:
            index[key] = len(out.constraints)
            out.constraints.append(Constraint(kind, f"family {family}" if family else t.label))
        by_label.append(index[key])
    out.of = by_label.__getitem__
    return out


def plain_action(label: Any) -> str:
    """The action a plain spec's step label belongs to."""
    if isinstance(label, str):
        return label
    if isinstance(label, tuple) and label and isinstance(label[0], str):
        return label[0]
    return show(label)


def _plain_fairness(model: Model, overrides: dict[str, str]) -> Fairness:
    declared = getattr(model.obj, "fairness", None) or {}  # type: ignore[attr-defined]
    if not isinstance(declared, dict) or not all(k in FAIRNESS for k in declared.values()):
        raise SpecError(f"plain spec {model.name}: `fairness` must be a dict of action name -> 'weak' or 'strong'")
    kinds = {**declared, **overrides}
    kinds = {a: k for a, k in kinds.items() if k != NO_FAIRNESS}
    out = Fairness(overrides=dict(overrides))
    index: dict[Any, int] = {}
    seen: set[str] = set()

    def of(label: Any) -> int:
        if label in index:
            return index[label]
        action = plain_action(label)
        seen.add(action)
        kind = kinds.get(action)
        if kind is None:
            index[label] = -1
        else:
            index[label] = len(out.constraints)
            out.constraints.append(Constraint(kind, model.label(label)))
        return index[label]

    out.of = of
    out.unused = lambda: sorted((set(declared) | set(overrides)) - seen)
    return out
