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

    location = None  # where it was declared (set by the types whose binding can fail)

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

    # structural identity: two declarations of the same type are one type
    def _shape(self) -> tuple:
        raise NotImplementedError

    @property
    def shape(self) -> tuple:
        """What the domain is, independent of where it was declared (hashable)."""
        s = self.__dict__.get("_shape_cache")
        if s is None:
            s = self.__dict__["_shape_cache"] = self._shape()
        return s

    @property
    def shape_id(self) -> int:
        """A small integer naming `shape` (equal for structurally equal domains)."""
        i = self.__dict__.get("_shape_id")
        if i is None:
            i = self.__dict__["_shape_id"] = _SHAPE_IDS.setdefault(self.shape, len(_SHAPE_IDS) + 1)
        return i


_SHAPE_IDS: dict[tuple, int] = {}


def same_domain(a: Domain | None, b: Domain | None) -> bool:
    """Whether two domains are the same type: the same object, or structurally equal declarations."""
    if a is b:
        return True
    if a is None or b is None:
        return False
    return a.shape_id == b.shape_id


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

    def _shape(self):
        return ("bool",)


Bool = _BoolType()
"""The booleans."""


class Int(Type):
    """Integers lo..hi inclusive; bounds may be parameter expressions."""

    def __init__(self, lo: int | ParamLike, hi: int | ParamLike):
        self.location = user_location()
        for b in (lo, hi):
            if isinstance(b, bool) or not isinstance(b, (int, ParamLike)):
                raise SpecError(f"Int({lo!r}, {hi!r}): the bounds must be integers or parameters", self.location)
        if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
            raise SpecError(f"Int({lo}, {hi}) is empty", self.location, f"write the bounds low first: Int({hi}, {lo})")
        self.lo, self.hi = lo, hi

    def _bind(self, binding):
        lo, hi = resolve(self.lo, binding), resolve(self.hi, binding)
        if lo > hi:
            raise SpecError(f"Int({lo}, {hi}) is empty (with {self!r} under the spec's parameters)", self.location,
                            "choose parameter values that make the range non-empty, or give the parameter a minimum")
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

    def _shape(self):
        return ("int", self.lo, self.hi)


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

    def _shape(self):
        return ("enum", self.names)


class Range(Type):
    """Process ids (or any anonymous values) 0..n-1.

    `Range("n", default=3)` also declares the parameter `n`; `Range(4)` or `Range(some_param)`
    uses a fixed size or an existing parameter. `symmetric=True` declares that the spec treats
    the values interchangeably, which allows symmetry reduction (`--symmetry`); `fixed=(0, N - 1)`
    names ids with a role of their own (a sender, a coordinator), which permutations leave in place,
    so that only the other ids are interchangeable. Fixed ids may be parameter expressions.
    """

    def __init__(self, size: str | int | ParamLike, default: int | None = None, symmetric: bool = False,
                 fixed: Iterable[int | ParamLike] = ()):
        self.location = user_location()
        if isinstance(size, Range):
            raise SpecError("Range(N): N is already a Range", self.location,
                            "use N itself as the type; for another range of the same size write Range(N.size)")
        if isinstance(size, bool) or not isinstance(size, (str, int, ParamLike)):
            raise SpecError(f"Range({size!r}): the size must be an integer, a parameter or a parameter name",
                            self.location, 'e.g. Range(3), Range(n) or Range("n", default=3)')
        if isinstance(size, int) and size < 1:
            raise SpecError(f"Range({size}) is empty", self.location, "a Range has at least one value")
        if isinstance(size, str):
            if default is None:
                raise SpecError(f"Range({size!r}) declares a parameter and needs a default", user_location())
            size = Param(size, default, lo=1)
        elif default is not None:
            raise SpecError("Range(size, default=...) takes a default only with a parameter name", user_location())
        self.size = size
        self.symmetric = symmetric
        self.fixed = self._check_fixed(fixed)

    def _check_fixed(self, fixed: Any) -> tuple:
        """The declared fixed ids, checked as far as they are known before parameters are bound."""
        if isinstance(fixed, (int, ParamLike)) and not isinstance(fixed, bool):
            fixed = (fixed,)
        try:
            ids = tuple(fixed)
        except TypeError:
            raise SpecError(f"Range(..., fixed={fixed!r}): fixed takes a tuple of ids", self.location,
                            "e.g. fixed=(0,) or fixed=(SENDER, N - 1)") from None
        if ids and not self.symmetric:
            raise SpecError("Range(..., fixed=...) without symmetric=True: fixed ids are the ones symmetry "
                            "reduction leaves in place", self.location, "add symmetric=True, or drop fixed=")
        for x in ids:
            if isinstance(x, bool) or not isinstance(x, (int, ParamLike)):
                raise SpecError(f"Range(..., fixed=...): {x!r} is not an id (an integer or a parameter expression)",
                                self.location)
        literal = [x for x in ids if isinstance(x, int)]
        for x in literal:
            if x < 0 or (isinstance(self.size, int) and x >= self.size):
                raise SpecError(f"Range({self.size!r}, fixed=...): {x} is not one of its ids "
                                f"(0..{self.size - 1 if isinstance(self.size, int) else 'n-1'})", self.location)
        dup = sorted({x for x in literal if literal.count(x) > 1})
        if dup:
            raise SpecError(f"Range(..., fixed=...) names id {dup[0]} twice", self.location, "name each fixed id once")
        return ids

    @property
    def name(self) -> str:
        return repr(self.size)

    def _bind(self, binding):
        n = resolve(self.size, binding)
        if n < 1:
            raise SpecError(f"Range of size {n} is empty ({self!r} under the spec's parameters)", self.location,
                            "give the parameter a value of at least 1")
        fixed = [resolve(x, binding) for x in self.fixed]
        for x, decl in zip(fixed, self.fixed):
            if not 0 <= x < n:
                raise SpecError(f"{self!r}: fixed id {decl!r} is {x} under the spec's parameters, which is not one of "
                                f"its ids 0..{n - 1}", self.location, "fix only ids of the range")
        dup = sorted({x for x in fixed if fixed.count(x) > 1})
        if dup:
            raise SpecError(f"{self!r}: fixed names id {dup[0]} twice under the spec's parameters "
                            f"({', '.join(map(repr, self.fixed))})", self.location,
                            "name each fixed id once, or choose parameters that keep them apart")
        return RangeDomain(self, n, tuple(sorted(fixed)))

    def params(self):
        return [p for p in (self.size, *self.fixed) if isinstance(p, ParamLike)]

    def __repr__(self):
        return f"Range({self.size!r})"


class RangeDomain(Domain):
    kind = "range"

    def __init__(self, type_, n, fixed: tuple[int, ...] = ()):
        super().__init__(type_)
        self.size = n
        self.hi = n - 1
        self.symmetric = type_.symmetric
        self.fixed = fixed

    @property
    def movable(self) -> tuple[int, ...]:
        """The ids that symmetry reduction permutes (all but the fixed ones)."""
        fixed = set(self.fixed)
        return tuple(i for i in range(self.size) if i not in fixed)

    def fix(self, ids: Iterable[int]) -> None:
        """Fix more ids (a system model's processes with a role of their own, e.g. Byzantine ones)."""
        self.fixed = tuple(sorted(set(self.fixed) | set(ids)))

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

    def _shape(self):
        # a symmetric range is its own type: two process-id sets of one size are not interchangeable
        return ("range", self.size, id(self.type)) if self.symmetric else ("range", self.size)


class OneOf(Type):
    """A declared finite set of Python values (hashable, distinct): the quorums of a protocol, a table of
    configurations. `OneOf(values)` or `OneOf(lambda: values)`; the function runs with the spec's parameters
    bound, so it may use them (`OneOf(lambda: majorities(range(N)))`). An action parameter of this type
    takes each value in turn, as itself (`def decide(s, q: Quorum)` gets a frozenset), so the action's code
    can iterate over it (`ForAll(q, lambda a: ...)`, `a in q`). As a state field, a value is held as its
    position in the list. The values are opaque to symmetry reduction."""

    def __init__(self, values: Iterable[Any] | Callable[[], Iterable[Any]], name: str | None = None):
        self.values = values
        self.name = name
        self.location = user_location()

    def _bind(self, binding):
        try:
            vals = list(self.values() if callable(self.values) else self.values)
        except SpecError:
            raise
        except Exception as e:
            raise SpecError(f"OneOf: computing its values raised {type(e).__name__}: {e}", self.location) from None
        if not vals:
            raise SpecError("OneOf() has no values", self.location, "give at least one value")
        for v in vals:
            try:
                hash(v)
            except TypeError:
                raise SpecError(f"OneOf: {v!r} is not hashable", self.location,
                                "use tuples and frozensets instead of lists and sets") from None
        if len(set(vals)) != len(vals):
            raise SpecError("OneOf: the values are not distinct", self.location)
        return OneOfDomain(self, vals)

    def __repr__(self):
        return self.name or "OneOf(...)"


class OneOfDomain(Domain):
    kind = "oneof"

    def __init__(self, type_, vals: list):
        super().__init__(type_)
        self.vals = vals
        self.size = len(vals)
        self.hi = self.size - 1
        self._index = {v: i for i, v in enumerate(vals)}

    def index(self, v):
        try:
            return self._index[v]
        except (KeyError, TypeError):
            raise SpecError(f"{v!r} is not a value of {self.describe()}", user_location()) from None

    def value(self, i):
        return self.vals[i]

    def describe(self):
        if self.type.name:
            return self.type.name
        shown = ", ".join(map(repr, self.vals[:3]))
        return f"OneOf({shown}{', ...' if self.size > 3 else ''})"

    def _shape(self):
        return ("oneof", tuple(self.vals))


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
            return self._vals == other._vals and self._rtype.same_as(other._rtype)
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

    def same_as(self, other: Record) -> bool:
        """Structurally the same record type: the same name and field names (field values are checked by type)."""
        return self is other or (self.name == other.name and self.field_names == other.field_names)

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
        if not isinstance(v, RecordValue) or not v._rtype.same_as(self.type):
            raise self.bad_value(v)
        return sum(d.index(x) * s for d, x, s in zip(self.field_doms, v._vals, self.strides))

    def value(self, i):
        vals = tuple(d.value((i // s) % d.size) for d, s in zip(self.field_doms, self.strides))
        return RecordValue(self.type, vals)

    def mentions(self, dom):
        return self is dom or any(d.mentions(dom) for d in self.field_doms)

    def describe(self):
        return self.type.name

    def _shape(self):
        return ("record", self.type.name, self.type.field_names, tuple(d.shape for d in self.field_doms))


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
        if not isinstance(v, RecordValue) or v.tag not in self.by_name or not self.by_name[v.tag].type.same_as(v._rtype):
            raise self.bad_value(v)
        return self.offsets[v.tag] + self.by_name[v.tag].index(v)

    def value(self, i):
        d = self.member_of_index(i)
        return d.value(i - self.offsets[d.type.name])

    def mentions(self, dom):
        return self is dom or any(d.mentions(dom) for d in self.member_doms)

    def _shape(self):
        return ("union",) + tuple(d.shape for d in self.member_doms)


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

    def _shape(self):
        return ("option", self.inner.shape)


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

    def _shape(self):
        return ("set", self.elem.shape)


class Seq(Type):
    """A finite sequence of at most `max_len` values of a finite type (TLA+'s `Seq(T)`, bounded): a FIFO
    queue or an ordered channel. Values are Python tuples, the head first.

    As a class attribute of a spec, `Seq(T, n)` declares a state field (initially empty). A sequence is one
    value (an integer index, see `SeqDomain`), so it can be an element of a set, a record field or a map value.
    """

    def __init__(self, elem: Type, max_len: int | ParamLike, init: Any = ()):
        if not isinstance(elem, Type):
            raise SpecError(f"Seq({elem!r}, ...): the element type is not a Lockstep type", user_location())
        if isinstance(max_len, bool) or not isinstance(max_len, (int, ParamLike)):
            raise SpecError(f"Seq(..., {max_len!r}): the maximum length must be an integer or a parameter",
                            user_location())
        self.elem = elem
        self.max_len = max_len
        self.init = init
        self.location = user_location()

    def _bind(self, binding):
        n = resolve(self.max_len, binding)
        if n < 0:
            raise SpecError(f"Seq(..., {n}): the maximum length is negative", self.location)
        elem = self.elem.dom(binding)
        if isinstance(elem, MapDomain):
            raise SpecError("a Map cannot be an element of a Seq", self.location, "use a record or a Seq of values")
        return SeqDomain(self, elem, n)

    def params(self):
        return self.elem.params() + ([self.max_len] if isinstance(self.max_len, ParamLike) else [])

    def __repr__(self):
        return f"Seq({self.elem!r}, {self.max_len!r})"


class SeqDomain(Domain):
    """Sequences of length 0..max_len, numbered by length and then as base-n numerals (n = the element
    type's size, the head the lowest digit): sequence (e0, .., ek-1) has index offset(k) + sum idx(ei)*n^i,
    where offset(k) = n^0 + .. + n^(k-1) counts the shorter sequences. The numbering is a bijection onto
    0..size-1, so a sequence is an integer-represented value like a record, and every interpreter runs
    sequence operations as integer arithmetic (`lockstep.specs.lang.terms`)."""

    kind = "seq"

    def __init__(self, type_, elem: Domain, max_len: int):
        super().__init__(type_)
        self.elem = elem
        self.max_len = max_len
        n = elem.size
        self.powers = [n**k for k in range(max_len + 1)]
        self.offsets = [0]
        for k in range(max_len + 1):
            self.offsets.append(self.offsets[-1] + self.powers[k])
        self.size = self.offsets[max_len + 1]
        self.hi = self.size - 1

    def index(self, v):
        if isinstance(v, (str, bytes)) or not isinstance(v, (tuple, list)):
            raise self.bad_value(v)
        if len(v) > self.max_len:
            raise SpecError(f"{tuple(v)!r} is longer than {self.describe()} allows", user_location())
        return self.offsets[len(v)] + sum(self.elem.index(x) * p for x, p in zip(v, self.powers))

    def value(self, i):
        k = 0
        while self.offsets[k + 1] <= i:
            k += 1
        body, n = i - self.offsets[k], self.elem.size
        out = []
        for _ in range(k):
            out.append(self.elem.value(body % n))
            body //= n
        return tuple(out)

    def default(self):
        return ()

    def mentions(self, dom):
        return self is dom or self.elem.mentions(dom)

    def describe(self):
        return f"Seq({self.elem.describe()}, {self.max_len})"

    def _shape(self):
        return ("seq", self.elem.shape, self.max_len)


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

    def _shape(self):
        return ("map", self.key.shape, self.val.shape)


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
                            "use Bool, Int(lo, hi), Enum(...), Range(...), OneOf(values), Option(...), Seq(T, max_len), "
                            "a Record or Union")
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
    "ANY", "Bool", "Int", "Enum", "OneOf", "Range", "Record", "RecordValue", "Union", "Option", "Set", "Seq", "Map",
    "Var",
    "Type", "Domain", "bits",
]
