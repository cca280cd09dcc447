"""The tracing view of a state: fields read as terms, assignments recorded as updates."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from .errors import SpecError, user_location
from .params import Binding
from .terms import (
    And,
    PendingIf,
    Term,
    _int_like,
    compare,
    convert,
    describe,
    elem_index,
    lift,
    mk,
    slot,
    type_hint,
)
from .types import BoolDomain, Domain, MapDomain, SetDomain, same_domain, slot_count

if TYPE_CHECKING:
    from .program import Check, Program


class Disabled(Exception):
    """Raised by `require(False)`: this parameter choice never enables the action."""


class Tracer:
    """What one traced function produced besides state updates."""

    def __init__(self) -> None:
        self.checks: list[Check] = []


_tracer: ContextVar[Tracer | None] = ContextVar("lockstep_tracer", default=None)


@contextmanager
def tracing(view: TraceState) -> Iterator[Tracer]:
    t = Tracer()
    token = _tracer.set(t)
    try:
        yield t
    finally:
        _tracer.reset(token)


def current_tracer(what: str) -> Tracer:
    t = _tracer.get()
    if t is None:
        raise SpecError(f"{what} is used outside of an action", user_location(),
                        "call it inside a function marked @action or @initial")
    return t


def coerce(value: Any, dom: Domain, what: str) -> Term:
    """A value assigned to a slot of domain `dom`, as a term of that domain."""
    if isinstance(value, PendingIf):
        return value.typed(dom)
    if isinstance(value, Term):
        widened = convert(value, dom)
        if widened is None:
            raise SpecError(f"{what}: cannot assign {describe(value)} to a field of type {dom.describe()}",
                            user_location(), type_hint(value, lift(dom.default(), dom)) if not _int_like(dom) else None)
        return widened
    try:
        return lift(value, dom)
    except SpecError as e:
        raise SpecError(f"{what}: {e.message}", e.location, e.hint) from None


class TraceState:
    """`s` inside actions and invariants: fields read as terms; parameters read as ints."""

    def __init__(self, prog: Program, binding: Binding, writable: bool):
        object.__setattr__(self, "_prog", prog)
        object.__setattr__(self, "_binding", binding)
        object.__setattr__(self, "_writable", writable)
        object.__setattr__(self, "_fields", {f.name: f for f in prog.fields})
        object.__setattr__(self, "writes", {})
        object.__setattr__(self, "_slot_terms", {})

    @property
    def _slots(self) -> list[Term]:
        """A term for every slot of the pre-state."""
        return [self._slot(i) for i in range(self._prog.nslots)]

    def _slot(self, i: int) -> Term:
        t = self._slot_terms.get(i)
        if t is None:  # made on first read: a large state costs only the slots a function reads
            t = self._slot_terms[i] = slot(i, self._prog.slot_doms[i])
        return t

    # current value of a slot (after this function's earlier writes)
    def _read(self, i: int) -> Term:
        t = self.writes.get(i)
        return t if t is not None else self._slot(i)

    def _write(self, i: int, value: Term) -> None:
        if not self._writable:
            raise SpecError("invariants and constraints cannot assign state fields", user_location())
        value.used = True
        self.writes[i] = value

    def __getattr__(self, name: str) -> Any:
        f = self._fields.get(name)
        if f is not None:
            if isinstance(f.dom, MapDomain):
                return MapView(self, f.dom, f.base, f.name)
            return self._read(f.base)
        if name in self._binding.values:
            return self._binding.values[name]
        helper = helper_error(self._prog.spec_cls, name)
        if helper is not None:
            raise helper
        raise SpecError(
            f"spec {self._prog.name} has no field or parameter {name!r}", user_location(),
            "fields: " + ", ".join(self._fields) + "; parameters: " + (", ".join(self._binding.values) or "none"))

    def __setattr__(self, name: str, value: Any) -> None:
        f = self._fields.get(name)
        if f is None:
            if name in self._binding.values:
                raise SpecError(f"{name!r} is a parameter; parameters are read-only", user_location())
            raise SpecError(f"spec {self._prog.name} has no field {name!r}", user_location(),
                            "fields: " + ", ".join(self._fields))
        if isinstance(f.dom, MapDomain):
            MapView(self, f.dom, f.base, f.name).assign(value)
        else:
            self._write(f.base, coerce(value, f.dom, f"field {name}"))

    def __bool__(self):
        raise SpecError("the state itself was used as a bool", user_location())


def helper_error(cls: type, name: str) -> SpecError | None:
    """`s.name(...)` where `name` is a plain function of the spec class: say how to call a helper."""
    fn = inspect.getattr_static(cls, name, None)
    if isinstance(fn, staticmethod):
        fn = fn.__func__
    if not inspect.isfunction(fn):
        return None
    params = list(inspect.signature(fn).parameters)
    call = f"{cls.__name__}.{name}({', '.join(params)})"
    return SpecError(f"{name} is a helper function of {cls.__name__}, not a state field: `s.{name}` reads a field",
                     user_location(), f"call it with the state as its first argument: {call}")


class MapView:
    """A map field (or a row of a nested map) read or written through `s.m[k]`."""

    def __init__(self, state: TraceState, dom: MapDomain, base: int, name: str):
        self._state = state
        self.dom = dom
        self._base = base
        self._name = name
        self._stride = slot_count(dom.val)

    def _key_index(self, key: Any) -> int | Term:
        if isinstance(key, Term) or isinstance(key, PendingIf):
            return elem_index(key, self.dom.key)
        try:
            return self.dom.key.index(key)
        except SpecError as e:
            raise SpecError(f"{self._name}[{key!r}]: {e.message}", user_location(), e.hint) from None

    def _child(self, i: int) -> Any:
        base = self._base + i * self._stride
        name = f"{self._name}[{self.dom.key.value(i)!r}]"
        if isinstance(self.dom.val, MapDomain):
            return MapView(self._state, self.dom.val, base, name)
        return self._state._read(base)

    def __getitem__(self, key: Any) -> Any:
        k = self._key_index(key)
        if isinstance(k, Term):
            if k.op == "const":
                return self._child(k.args[0])
            children = [self._child(i) for i in range(self.dom.key.size)]
            if isinstance(self.dom.val, MapDomain):
                return _DynamicRow(k, children)
            return _select(k, children, self.dom.val)
        return self._child(k)

    def __setitem__(self, key: Any, value: Any) -> None:
        k = self._key_index(key)
        if isinstance(k, Term) and k.op == "const":
            k = k.args[0]
        if isinstance(k, int):
            self._set_child(k, value)
            return
        for i in range(self.dom.key.size):  # dynamic key: each entry changes where the key matches
            hit = compare("eq", k, i)
            if isinstance(self.dom.val, MapDomain):
                row = self._child(i)
                row.assign_where(hit, value)
            else:
                new = coerce(value, self.dom.val, f"{self._name}[...]")
                self._state._write(self._base + i * self._stride, _ite_term(hit, new, self._child(i)))

    def _set_child(self, i: int, value: Any) -> None:
        if isinstance(self.dom.val, MapDomain):
            self._child(i).assign(value)
        else:
            self._state._write(self._base + i * self._stride,
                               coerce(value, self.dom.val, f"field {self._name}[{self.dom.key.value(i)!r}]"))

    def _row_values(self, value: Any) -> list[Any]:
        if isinstance(value, MapView):
            if not same_domain(value.dom.key, self.dom.key):
                raise SpecError(f"cannot assign a map with other keys to {self._name}", user_location())
            return [value._child(i) for i in range(self.dom.key.size)]
        if isinstance(value, dict):
            missing = [k for k in self.dom.key.values() if k not in value]
            if missing:
                raise SpecError(f"assignment to {self._name} has no value for key(s) {missing!r}", user_location())
            return [value[k] for k in self.dom.key.values()]
        raise SpecError(f"cannot assign {value!r} to the map {self._name}", user_location(),
                        "assign a dict with every key, another map, or index it: s.m[k] = v")

    def assign(self, value: Any) -> None:
        for i, v in enumerate(self._row_values(value)):
            self._set_child(i, v)

    def assign_where(self, cond: Any, value: Any) -> None:
        for i, v in enumerate(self._row_values(value)):
            if isinstance(self.dom.val, MapDomain):
                self._child(i).assign_where(cond, v)
            else:
                new = coerce(v, self.dom.val, f"{self._name}[...]")
                self._state._write(self._base + i * self._stride, _ite_term(cond, new, self._child(i)))

    def keys(self) -> list:
        return self.dom.key.values()

    def values(self) -> list:
        return [self._child(i) for i in range(self.dom.key.size)]

    def items(self) -> list:
        return list(zip(self.keys(), self.values()))

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return self.dom.key.size

    def __eq__(self, other: Any):  # type: ignore[override]
        mine = self.values()
        theirs = self._row_values(other)
        return And(*(_eq_any(a, b) for a, b in zip(mine, theirs)))

    def __ne__(self, other: Any):  # type: ignore[override]
        from .terms import Not

        return Not(self == other)

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self):
        raise SpecError(f"the map {self._name} was used as a bool", user_location())


def _eq_any(a: Any, b: Any) -> Any:
    if isinstance(a, MapView):
        return a == b
    return compare("eq", a, b)


def _ite_term(c: Any, a: Term, b: Term) -> Term:
    from .terms import If

    out = If(c, a, b)
    return out if isinstance(out, Term) else lift(out, a.dom if a.dom is not None else b.dom)


def _select(k: Term, children: list[Term], dom: Domain) -> Term:
    if all(c.key == children[0].key for c in children):
        return children[0]
    lo = min(c.lo for c in children)
    hi = max(c.hi for c in children)
    if isinstance(dom, (BoolDomain,)):
        lo, hi = 0, 1
    out = mk("select", (k, *children), dom if not isinstance(dom, SetDomain) else dom, lo, hi)
    return out


class _DynamicRow:
    """`s.m[x]` for a state-dependent `x` when the values are themselves maps."""

    def __init__(self, k: Term, rows: list[MapView]):
        self._k, self._rows = k, rows

    def __getitem__(self, key: Any) -> Any:
        items = [r[key] for r in self._rows]
        if isinstance(items[0], MapView) or isinstance(items[0], _DynamicRow):
            return _DynamicRow(self._k, items)
        return _select(self._k, items, self._rows[0].dom.val)

    def __setitem__(self, key: Any, value: Any) -> None:
        for i, r in enumerate(self._rows):
            hit = compare("eq", self._k, i)
            old = r[key]
            if isinstance(old, MapView):
                old.assign_where(hit, value)
            else:
                new = coerce(value, r.dom.val, "map entry")
                ki = r._key_index(key)
                if isinstance(ki, Term) and ki.op != "const":
                    r[key] = _ite_term(hit, new, old)
                else:
                    idx = ki.args[0] if isinstance(ki, Term) else ki
                    r._state._write(r._base + idx * r._stride, _ite_term(hit, new, old))
