"""Finite types of state fields, action parameters and messages.

A `Type` is a declaration; it may mention parameters (`Range("n", default=3)`). Bound to a
spec instance's parameters it becomes a `Domain`: a finite, ordered set of values, each with
a *representation* (what a state slot holds: a bool, an int, or a bitmask for sets) and an
*index* (its position, 0..size-1). Engines see representations; users see Python values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import product
from typing import Any

from .errors import SpecError, user_location
from .limits import check_enumeration, check_map, check_set
from .params import Binding, Param, ParamLike, current_binding, resolve

ANY = type("AnyValue", (), {"__repr__": lambda self: "ANY"})()


class DomainError(ValueError):
    """An integer outside a Range or Int: an error of behaviour (it depends on values), not of the spec's form."""
"""`init=ANY`: every value of the field's type is an initial value."""


class Type:
    """A declared finite type. `dom()` is its domain under the current parameters."""

    def dom(self, binding: Binding | None = None) -> Domain:
        binding = binding or current_binding()
        cached = binding.domains.get(id(self))
        if cached is None:
            cached = binding.domains[id(self)] = self._bind(binding)
        return cached

    def _bind(self, binding: Binding) -> Domain:
        raise NotImplementedError

    def params(self) -> list[Param]:
        """Parameters this type's size depends on (declared by the spec that uses it)."""
        return []

    def __iter__(self):
        """Iterating a type (while a spec is built) yields its values."""
        return iter(self.dom().values())

    def __len__(self) -> int:
        return self.dom().size


class Domain:
    """A finite, ordered set of values under one parameter binding."""

    kind = "?"
    size: int
    lo = 0  # bounds of the representation, for scalar domains
    hi = 0
    symmetric = False

    def __init__(self, type_: Type):
        self.type = type_

    def values(self) -> list:
        return [self.value(i) for i in range(self.size)]

    # value <-> index
    def index(self, v: Any) -> int:
        raise NotImplementedError

    def value(self, i: int) -> Any:
        raise NotImplementedError

    # value <-> representation (what a slot holds); identity on indices unless overridden
    def rep(self, v: Any) -> Any:
        return self.index(v)

    def unrep(self, r: Any) -> Any:
        return self.value(r)

    def rep_of_index(self, i: int) -> Any:
        return i

    def index_offset(self) -> int:
        """index = representation - index_offset() for integer-represented domains."""
        return 0

    def default(self) -> Any:
        return self.value(0)

    def describe(self) -> str:
        return repr(self.type)

    def mentions(self, dom: Domain) -> bool:
        """Whether values of this domain contain values of `dom` (for symmetry)."""
        return self is dom

    def bad_value(self, v: Any) -> SpecError:
        return SpecError(f"{v!r} is not a value of {self.describe()}", user_location())


# ---------------------------------------------------------------------------- scalars


class _BoolType(Type):
    def _bind(self, binding):
        return BoolDomain(self)

    def __repr__(self):
        return "Bool"


class BoolDomain(Domain):
    kind = "bool"
    size = 2
    lo, hi = 0, 1

    def index(self, v):
        if isinstance(v, bool):
            return int(v)
        raise self.bad_value(v)

    def value(self, i):
        return bool(i)

    def rep(self, v):
        return bool(self.index(v))

    def unrep(self, r):
        return bool(r)

    def rep_of_index(self, i):
        return bool(i)


Bool = _BoolType()
"""The booleans."""


class Int(Type):
    """Integers lo..hi inclusive; bounds may be parameter expressions."""

    def __init__(self, lo: int | ParamLike, hi: int | ParamLike):
        self.lo, self.hi = lo, hi

    def _bind(self, binding):
        lo, hi = resolve(self.lo, binding), resolve(self.hi, binding)
        if lo > hi:
            raise SpecError(f"Int({lo}, {hi}) is empty", user_location())
        return IntDomain(self, lo, hi)

    def params(self):
        return [p for p in (self.lo, self.hi) if isinstance(p, ParamLike)]

    def __repr__(self):
        return f"Int({self.lo!r}, {self.hi!r})"


class IntDomain(Domain):
    kind = "int"

    def __init__(self, type_, lo, hi):
        super().__init__(type_)
        self.lo, self.hi = lo, hi
        self.size = hi - lo + 1

    def index(self, v):
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.bad_value(v)
        if not self.lo <= v <= self.hi:
            raise DomainError(f"{v} is not a value of {self.describe()}")
        return v - self.lo

    def value(self, i):
        return self.lo + i

    def rep(self, v):
        self.index(v)
        return v

    def unrep(self, r):
        return r

    def rep_of_index(self, i):
        return self.lo + i

    def index_offset(self):
        return self.lo

    def default(self):
        return 0 if self.lo <= 0 <= self.hi else self.lo

    def describe(self):
        return f"Int({self.lo}, {self.hi})"


class Enum(Type):
    """A finite set of named values, written as strings in specs: `Enum("init", "done")`."""

    def __init__(self, *names: str):
        if not names or len(set(names)) != len(names) or not all(isinstance(n, str) for n in names):
            raise SpecError(f"Enum needs distinct string names, got {names!r}", user_location())
        self.names = tuple(names)
        self._dom = EnumDomain(self)

    def _bind(self, binding):
        return self._dom

    def __repr__(self):
        return "Enum(" + ", ".join(map(repr, self.names)) + ")"


class EnumDomain(Domain):
    kind = "enum"

    def __init__(self, type_):
        super().__init__(type_)
        self.names = type_.names
        self.size = len(self.names)
        self.hi = self.size - 1
        self._index = {n: i for i, n in enumerate(self.names)}

    def index(self, v):
        try:
            return self._index[v]
        except (KeyError, TypeError):
            raise SpecError(
                f"{v!r} is not a value of {self.describe()}",
                user_location(),
                "use one of " + ", ".join(map(repr, self.names)),
            ) from None

    def value(self, i):
        return self.names[i]


class Range(Type):
    """Process ids (or any anonymous values) 0..n-1.

    `Range("n", default=3)` also declares the parameter `n`; `Range(4)` or `Range(some_param)`
    uses a fixed size or an existing parameter. `symmetric=True` declares that the spec treats
    the values interchangeably, which allows symmetry reduction (`--symmetry`).
    """

    def __init__(self, size: str | int | ParamLike, default: int | None = None, symmetric: bool = False):
        if isinstance(size, str):
            if default is None:
                raise SpecError(f"Range({size!r}) declares a parameter and needs a default", user_location())
            size = Param(size, default, lo=1)
        elif default is not None:
            raise SpecError("Range(size, default=...) takes a default only with a parameter name", user_location())
        self.size = size
        self.symmetric = symmetric

    @property
    def name(self) -> str:
        return repr(self.size)

    def _bind(self, binding):
        n = resolve(self.size, binding)
        if n < 1:
            raise SpecError(f"Range of size {n} is empty", user_location())
        return RangeDomain(self, n)

    def params(self):
        return [self.size] if isinstance(self.size, ParamLike) else []

    def __repr__(self):
        return f"Range({self.size!r})"


class RangeDomain(Domain):
    kind = "range"

    def __init__(self, type_, n):
        super().__init__(type_)
        self.size = n
        self.hi = n - 1
        self.symmetric = type_.symmetric

    def index(self, v):
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.bad_value(v)
        if not 0 <= v < self.size:
            raise DomainError(f"{v} is not a value of {self.describe()}")
        return v

    def value(self, i):
        return i

    def describe(self):
        return f"{self.type!r} (0..{self.size - 1})"


# ---------------------------------------------------------------------------- records


class RecordValue:
    """A value of a record type: immutable, hashable, fields as attributes."""

    __slots__ = ("_rtype", "_vals")

    def __init__(self, rtype: Record, vals: tuple):
        object.__setattr__(self, "_rtype", rtype)
        object.__setattr__(self, "_vals", vals)

    @property
    def tag(self) -> str:
        return self._rtype.name

    def fields(self) -> dict[str, Any]:
        return dict(zip(self._rtype.field_names, self._vals))

    def __getattr__(self, name):
        rtype = object.__getattribute__(self, "_rtype")
        try:
            return self._vals[rtype.field_names.index(name)]
        except ValueError:
            raise AttributeError(f"{rtype.name} has no field {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"{self._rtype.name} values are immutable")

    def __eq__(self, other):
        if isinstance(other, RecordValue):
            return self._rtype is other._rtype and self._vals == other._vals
        return NotImplemented

    def __hash__(self):
        return hash((self._rtype.name, self._vals))

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in zip(self._rtype.field_names, self._vals))
        return f"{self._rtype.name}({inner})"


class Record(Type):
    """A record (message) type: `Prepared = Record("Prepared", rm=RM)`; `Prepared(rm=0)` builds one."""

    def __init__(self, name: str, **fields: Type):
        if not name.isidentifier():
            raise SpecError(f"record name {name!r} is not an identifier", user_location())
        for fname, ftype in fields.items():
            if not isinstance(ftype, Type):
                raise SpecError(f"field {name}.{fname}: {ftype!r} is not a Lockstep type", user_location(),
                                "use Bool, Int(lo, hi), Enum(...), Range(...), a Record, Union or Set")
        self.name = name
        self.field_names = tuple(fields)
        self.field_types = tuple(fields.values())

    def _bind(self, binding):
        return RecordDomain(self, [t.dom(binding) for t in self.field_types])

    def params(self):
        return [p for t in self.field_types for p in t.params()]

    def __call__(self, *args: Any, **kwargs: Any):
        vals = self._arguments(args, kwargs)
        for v in vals:
            build = getattr(type(v), "_build_record", None)  # a term: the record is a term too
            if build is not None:
                return build(self, vals)
        return RecordValue(self, tuple(resolve(v) for v in vals))

    def _arguments(self, args, kwargs) -> tuple:
        if len(args) > len(self.field_names):
            raise SpecError(f"{self.name} takes {len(self.field_names)} fields, got {len(args)}", user_location())
        vals = dict(zip(self.field_names, args))
        for k, v in kwargs.items():
            if k not in self.field_names:
                raise SpecError(f"{self.name} has no field {k!r}", user_location(),
                                "fields are " + ", ".join(self.field_names))
            if k in vals:
                raise SpecError(f"{self.name}: field {k!r} given twice", user_location())
            vals[k] = v
        missing = [f for f in self.field_names if f not in vals]
        if missing:
            raise SpecError(f"{self.name}: missing field(s) {', '.join(missing)}", user_location())
        return tuple(vals[f] for f in self.field_names)

    def __repr__(self):
        return self.name


class RecordDomain(Domain):
    kind = "record"

    def __init__(self, type_: Record, field_doms: list[Domain]):
        super().__init__(type_)
        self.field_doms = field_doms
        self.strides = []
        size = 1
        for d in field_doms:
            self.strides.append(size)
            size *= d.size
        self.size = size
        self.hi = size - 1

    def index(self, v):
        if not isinstance(v, RecordValue) or v._rtype is not self.type:
            raise self.bad_value(v)
        return sum(d.index(x) * s for d, x, s in zip(self.field_doms, v._vals, self.strides))

    def value(self, i):
        vals = tuple(d.value((i // s) % d.size) for d, s in zip(self.field_doms, self.strides))
        return RecordValue(self.type, vals)

    def mentions(self, dom):
        return self is dom or any(d.mentions(dom) for d in self.field_doms)

    def describe(self):
        return self.type.name


class Union(Type):
    """A tagged union of record types: `Message = Union(Prepared, Commit, Abort)`."""

    def __init__(self, *members: Record):
        if not members or not all(isinstance(m, Record) for m in members):
            raise SpecError("Union takes record types", user_location())
        names = [m.name for m in members]
        if len(set(names)) != len(names):
            raise SpecError(f"Union members must have distinct names, got {names}", user_location())
        self.members = members

    def _bind(self, binding):
        return UnionDomain(self, [m.dom(binding) for m in self.members])

    def params(self):
        return [p for m in self.members for p in m.params()]

    def __repr__(self):
        return " | ".join(m.name for m in self.members)


class UnionDomain(Domain):
    kind = "union"

    def __init__(self, type_: Union, member_doms: list[RecordDomain]):
        super().__init__(type_)
        self.member_doms = member_doms
        self.offsets: dict[str, int] = {}
        off = 0
        for d in member_doms:
            self.offsets[d.type.name] = off
            off += d.size
        self.size = off
        self.hi = off - 1
        self.by_name = {d.type.name: d for d in member_doms}

    def member_of_index(self, i: int) -> RecordDomain:
        for d in self.member_doms:
            off = self.offsets[d.type.name]
            if off <= i < off + d.size:
                return d
        raise IndexError(i)

    def index(self, v):
        if not isinstance(v, RecordValue) or v.tag not in self.by_name or self.by_name[v.tag].type is not v._rtype:
            raise self.bad_value(v)
        return self.offsets[v.tag] + self.by_name[v.tag].index(v)

    def value(self, i):
        d = self.member_of_index(i)
        return d.value(i - self.offsets[d.type.name])

    def mentions(self, dom):
        return self is dom or any(d.mentions(dom) for d in self.member_doms)


class Option(Type):
    """`None` or a value of the inner type."""

    def __init__(self, inner: Type):
        self.inner = inner

    def _bind(self, binding):
        return OptionDomain(self, self.inner.dom(binding))

    def params(self):
        return self.inner.params()

    def __repr__(self):
        return f"Option({self.inner!r})"


class OptionDomain(Domain):
    kind = "option"

    def __init__(self, type_, inner: Domain):
        super().__init__(type_)
        self.inner = inner
        self.size = inner.size + 1
        self.hi = inner.size

    def index(self, v):
        return 0 if v is None else 1 + self.inner.index(v)

    def value(self, i):
        return None if i == 0 else self.inner.value(i - 1)

    def mentions(self, dom):
        return self is dom or self.inner.mentions(dom)


# ---------------------------------------------------------------------------- collections


class Set(Type):
    """A set of values of a finite type, held as a bitmask over the type's values.

    As a class attribute of a spec, `Set(T)` declares a state field (initially empty).
    """

    def __init__(self, elem: Type, init: Any = ()):
        if not isinstance(elem, Type):
            raise SpecError(f"Set({elem!r}): the element type is not a Lockstep type", user_location())
        self.elem = elem
        self.init = init
        self.location = user_location()

    def _bind(self, binding):
        return SetDomain(self, self.elem.dom(binding))

    def params(self):
        return self.elem.params()

    def __repr__(self):
        return f"Set({self.elem!r})"


class SetDomain(Domain):
    kind = "set"

    def __init__(self, type_, elem: Domain):
        super().__init__(type_)
        self.elem = elem
        check_set(elem.size)
        self.size = 1 << elem.size
        self.hi = self.size - 1

    def index(self, v):
        if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
            raise self.bad_value(v)
        mask = 0
        for x in v:
            mask |= 1 << self.elem.index(x)
        return mask

    def value(self, i):
        return frozenset(self.elem.value(b) for b in bits(i))

    def mentions(self, dom):
        return self is dom or self.elem.mentions(dom)

    def default(self):
        return frozenset()


class Map(Type):
    """A total function from a finite key type to values (TLA+'s `[K -> V]`).

    As a class attribute of a spec, `Map(K, V, init=...)` declares a state field; `init` is one
    value for every key, a dict, a function of the key, or `ANY`.
    """

    def __init__(self, key: Type, value: Type, init: Any = None):
        for t, what in ((key, "key"), (value, "value")):
            if not isinstance(t, Type):
                raise SpecError(f"Map {what} type {t!r} is not a Lockstep type", user_location())
        self.key, self.value, self.init = key, value, init
        self.location = user_location()

    def _bind(self, binding):
        return MapDomain(self, self.key.dom(binding), self.value.dom(binding))

    def params(self):
        return self.key.params() + self.value.params()

    def __repr__(self):
        return f"Map({self.key!r}, {self.value!r})"


class MapDomain(Domain):
    kind = "map"

    def __init__(self, type_, key: Domain, val: Domain):
        super().__init__(type_)
        if isinstance(key, MapDomain):
            raise SpecError("a Map cannot be a map key", user_location())
        self.key, self.val = key, val
        check_map(key.size, slot_count(val), val.size)
        self.size = val.size ** key.size

    def mentions(self, dom):
        return self.key.mentions(dom) or self.val.mentions(dom)

    def default(self):
        return {k: self.val.default() for k in self.key.values()}

    def index(self, v):
        raise SpecError("a Map cannot be an element of a set or record", user_location())


def slot_count(dom: Domain) -> int:
    """How many state slots a value of `dom` occupies."""
    if isinstance(dom, MapDomain):
        return dom.key.size * slot_count(dom.val)
    return 1


class Var:
    """A scalar state field: `tm_state = Var(Enum("init", "done"), init="init")`."""

    def __init__(self, type_: Type, init: Any = None):
        if not isinstance(type_, Type):
            raise SpecError(f"Var({type_!r}): not a Lockstep type", user_location(),
                            "use Bool, Int(lo, hi), Enum(...), Range(...), Option(...), a Record or Union")
        self.type = type_
        self.init = init
        self.location = user_location()


def bits(mask: int) -> list[int]:
    """Indices of the set bits of a non-negative int, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def domain_values(types: Iterable[Any]) -> Iterable[tuple]:
    """All combinations of values of the given types (or Python iterables)."""
    doms = [t.dom() if isinstance(t, Type) else t if isinstance(t, Domain) else list(t) for t in types]
    check_enumeration([d.size if isinstance(d, Domain) else len(d) for d in doms])
    return product(*(d.values() if isinstance(d, Domain) else d for d in doms))


def initial_value_fn(init: Any) -> Callable[[Any], Any]:
    """Turn a Map's `init` (value, dict or function of the key) into a function of the key."""
    if callable(init) and not isinstance(init, (Type, RecordValue)):
        return init
    if isinstance(init, dict):
        return init.__getitem__
    return lambda _k: init


def is_scalar(dom: Domain) -> bool:
    return not isinstance(dom, MapDomain)


def as_domain(t: Any) -> Domain:
    if isinstance(t, Domain):
        return t
    if isinstance(t, Type):
        return t.dom()
    raise SpecError(f"{t!r} is not a Lockstep type", user_location())


__all__ = [
    "ANY", "Bool", "Int", "Enum", "Range", "Record", "RecordValue", "Union", "Option", "Set", "Map", "Var",
    "Type", "Domain", "bits",
]
