"""`Program`: a spec bound to parameter values and traced into terms — what engines read.

The state is a flat tuple of *slots*. Each scalar field takes one slot; a `Map` takes one
slot per key (nested maps: per key path, row-major). A slot holds a representation: a bool,
an int (Int, Range, Enum index, record/union/option index) or a bitmask (Set).

A `Transition` is one action at one choice of its parameters: an ordered list of checks
(`require` guards, `assert`s, and `error`s: exceptions the spec's code raised while tracing) and
the slot updates, each a term over the pre-state. It is enabled when every `require` holds; if an
`assert` fails in an enabled run, that is a violation; if an `error` is reached, a spec error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import Location
from .terms import Term
from .types import Domain, MapDomain, slot_count


@dataclass
class Field:
    """A state field and the slots it occupies."""

    name: str
    dom: Domain
    base: int
    init: Any
    location: Location | None

    @property
    def count(self) -> int:
        return slot_count(self.dom)

    def leaves(self) -> list[tuple[tuple, Domain]]:
        """(key path, scalar domain) for each slot of the field, in slot order."""
        out: list[tuple[tuple, Domain]] = []

        def walk(dom: Domain, path: tuple) -> None:
            if isinstance(dom, MapDomain):
                for k in dom.key.values():
                    walk(dom.val, path + (k,))
            else:
                out.append((path, dom))

        walk(self.dom, ())
        return out

    def decode(self, state: tuple) -> Any:
        """The field's Python value in a state."""
        it = iter(state[self.base:self.base + self.count])

        def build(dom: Domain) -> Any:
            if isinstance(dom, MapDomain):
                return {k: build(dom.val) for k in dom.key.values()}
            return dom.unrep(next(it))

        return build(self.dom)

    def encode(self, value: Any) -> list:
        """Slot representations of a Python value of the field."""
        out: list = []

        def walk(dom: Domain, v: Any) -> None:
            if isinstance(dom, MapDomain):
                if not isinstance(v, dict):
                    raise ValueError(f"field {self.name}: expected a map, got {v!r}")
                for k in dom.key.values():
                    if k not in v:
                        raise ValueError(f"field {self.name}: no value for key {k!r}")
                    walk(dom.val, v[k])
            else:
                out.append(dom.rep(v))

        walk(self.dom, value)
        return out


@dataclass
class Check:
    """One step of an action's checks, in program order."""

    kind: str  # "require" | "assert" | "error" (the spec's code raised: a spec error where reached)
    term: Term | None  # the condition (None for "error")
    message: str | None
    loc: Location | None


@dataclass
class Transition:
    """One action at one choice of parameter values."""

    action: str
    args: tuple[tuple[str, Any], ...]
    checks: list[Check]
    updates: dict[int, Term]
    loc: Location | None
    meta: dict = field(default_factory=dict)
    arg_doms: tuple[Domain, ...] = ()

    @property
    def guards(self) -> list[Term]:
        return [c.term for c in self.checks if c.kind == "require"]

    @property
    def label(self) -> str:
        if not self.args:
            return self.action
        return f"{self.action}(" + ", ".join(f"{k}={v!r}" for k, v in self.args) + ")"


@dataclass
class Predicate:
    """An invariant or constraint: a Bool term, or an error raised while building it."""

    name: str
    term: Term | bool | None
    loc: Location | None
    error: tuple[str, Location | None] | None = None
    meta: dict = field(default_factory=dict)


@dataclass
class TemporalProperty:
    """A `@temporal` property: its shape (`lockstep.specs.lang.temporal.KINDS`) and its state conditions as Bool terms."""

    name: str
    kind: str
    operands: tuple[Term | bool, ...]
    loc: Location | None
    meta: dict = field(default_factory=dict)


class Program:
    """A spec class bound to parameter values: slots, initial states, transitions, predicates."""

    def __init__(self, spec_cls: type, params: dict[str, int], fields: list[Field]):
        self.spec_cls = spec_cls
        self.params = params
        self.fields = fields
        self.nslots = sum(f.count for f in fields)
        self.slot_doms: list[Domain] = []
        self.slot_names: list[str] = []
        for f in fields:
            for key, dom in f.leaves():
                self.slot_doms.append(dom)
                self.slot_names.append(f.name + "".join(f"[{k!r}]" for k in key))
        self.init_defaults: list[Any] = []
        self.init_choices: dict[int, list] = {}
        self.init_transitions: list[Transition] = []
        self.transitions: list[Transition] = []
        self.invariants: list[Predicate] = []
        self.constraints: list[Predicate] = []
        self.witnesses: list[Predicate] = []  # conditions some reachable state must satisfy
        self.properties: list[TemporalProperty] = []
        self.symmetric: list[Domain] = []

    @property
    def name(self) -> str:
        return self.spec_cls.__name__

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def decode(self, state: tuple) -> dict[str, Any]:
        """A state as a dict of field name to Python value."""
        return {f.name: f.decode(state) for f in self.fields}

    def encode(self, values: dict[str, Any]) -> tuple:
        """A dict of field values as a state tuple."""
        out: list = []
        for f in self.fields:
            if f.name not in values:
                raise ValueError(f"no value for field {f.name!r}")
            out.extend(f.encode(values[f.name]))
        return tuple(out)

    def actions(self) -> list[str]:
        seen: dict[str, None] = {}
        for t in self.transitions:
            seen.setdefault(t.action)
        return list(seen)

    def iter_fields(self) -> Iterator[tuple[str, Any]]:
        for f in self.fields:
            yield f.name, f
