"""Terms: the expressions an action, invariant or constraint builds from state values.

Every engine interprets specs through these terms. A spec's functions run once per
parameter value on a tracing view of the state whose fields are terms; what they build is
a small typed expression language over the slots of the pre-state:

    const(v)              a representation: bool, int, or a set bitmask
    slot(i)               the value of state slot i before the step
    not(a) and(a..) or(a..) ite(c, a, b)       boolean logic (and/or short-circuit)
    eq ne lt le (a, b)                          comparisons
    add sub mul floordiv mod (a, b) neg(a) min max (a, b)   integer arithmetic (Python's)
    select(k, e0, .., en-1)                     e_k; k must lie in 0..n-1
    within(i, n)                                i; i must lie in 0..n-1 (a value index checked against its type)
    in(s, i)                                    bit i of set s
    single(i)                                   the set {i}
    union inter diff (a, b) card(a)             set algebra over bitmasks

Integer terms carry bounds (`lo`, `hi`); every term carries the domain of its value (None
for plain arithmetic) and the source line that built it. `OPS` gives each operator's
meaning on concrete representations; compilers must agree with it.
"""

from __future__ import annotations

import dis
import operator
from collections.abc import Callable, Iterable
from typing import Any

from .errors import Location, SpecError, user_frame, user_location
from .params import ParamLike, resolve
from .types import (
    BoolDomain,
    Domain,
    EnumDomain,
    IntDomain,
    MapDomain,
    OptionDomain,
    RangeDomain,
    Record,
    RecordDomain,
    SeqDomain,
    SetDomain,
    Type,
    UnionDomain,
    domain_values,
    same_domain,
)

BOOL = BoolDomain(None)


def _select(k, *items):
    if not 0 <= k < len(items):
        raise IndexError(f"index {k} outside 0..{len(items) - 1}")
    return items[k]


def _in(s, i):
    if i < 0:
        raise IndexError(f"element index {i} is negative")
    return (s >> i) & 1 == 1


def _within(i, n, what=None):
    if not 0 <= i < n:
        raise IndexError(what or f"value index {i} outside its type (0..{n - 1})")
    return i


def _single(i):
    if i < 0:
        raise IndexError(f"element index {i} is negative")
    return 1 << i


OPS: dict[str, Callable[..., Any]] = {
    "not": operator.not_,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "neg": operator.neg,
    "min": min,
    "max": max,
    "select": _select,
    "in": _in,
    "single": _single,
    "within": _within,
    "union": operator.or_,
    "inter": operator.and_,
    "diff": lambda a, b: a & ~b,
    "card": lambda a: a.bit_count(),
}
"""Eager operators on representations; `and`, `or`, `ite` are lazy and handled by callers."""

_RESERVED = frozenset(
    "op args dom lo hi loc key used tag get is_none is_some contains add remove discard union inter diff "
    "card size is_empty issubset forall exists count as_ field len head tail append remove_at at".split()
)


class Term:
    """An expression over the pre-state's slots (see the module docstring)."""

    __slots__ = ("op", "args", "dom", "lo", "hi", "loc", "used", "_key")

    def __init__(self, op: str, args: tuple, dom: Domain | None, lo: int = 0, hi: int = 0,
                 loc: Location | None = None):
        self.op = op
        self.args = args
        self.dom = dom
        self.lo = lo
        self.hi = hi
        self.loc = loc if loc is not None else user_location()
        self.used = False
        self._key = None
        for a in args:
            if isinstance(a, Term):
                a.used = True

    @staticmethod
    def _build_record(rtype: Record, vals: tuple) -> Term:
        """`Record(...)` called with a term among its field values builds a record term (`specs.lang.types`
        finds this on the values' class, so that module need not import this one)."""
        return record_term(rtype, vals)

    # -- identity ---------------------------------------------------------------------
    @property
    def key(self) -> tuple:
        """A structural key: equal keys mean equal expressions — the same operator on the same arguments,
        giving a value of the same type (a set bitmask and an integer may share a bit pattern) with the same
        bounds (compilers decide range checks from them)."""
        if self._key is None:
            dom = 0 if self.dom is None else self.dom.shape_id
            self._key = (self.op, dom, self.lo, self.hi, tuple(a.key if isinstance(a, Term) else a for a in self.args))
        return self._key

    @property
    def is_const(self) -> bool:
        return self.op == "const"

    @property
    def is_bool(self) -> bool:
        return isinstance(self.dom, BoolDomain)

    def __repr__(self) -> str:
        if self.op == "const":
            return repr(self.args[0])
        if self.op == "slot":
            return f"s[{self.args[0]}]"
        return f"{self.op}(" + ", ".join(map(repr, self.args)) + ")"

    __hash__ = None  # type: ignore[assignment]

    # -- misuse -----------------------------------------------------------------------
    def __bool__(self):
        raise misuse_error()

    def __iter__(self):
        if isinstance(self.dom, SetDomain):
            raise SpecError("a set that depends on the state cannot be iterated with `for`", user_location(),
                            "use s.field.forall(fn), .exists(fn), .count(fn), or ForAll over the element type")
        raise SpecError(f"{self!r} is not iterable", user_location())

    def __len__(self):
        if isinstance(self.dom, SeqDomain):
            raise SpecError("len() of a state-dependent sequence", user_location(), "use q.len()")
        raise SpecError("len() of a state-dependent value", user_location(), "use Card(x) or x.card()")

    def __getitem__(self, i: Any) -> Term:
        """The element at position i (0 = the head) of a sequence; i must be below its length."""
        if not isinstance(self.dom, SeqDomain):
            raise SpecError(f"{describe(self)} cannot be indexed", user_location(),
                            "index maps through the state (s.m[k]); sequences with q[i]")
        return seq_at(self, i)

    def __contains__(self, item):
        raise SpecError("`in` on a state-dependent set: Python needs a concrete bool here", user_location(),
                        "write s.field.contains(x)")

    def __index__(self):
        raise SpecError("a state-dependent value used as a Python index or range bound", user_location(),
                        "index maps directly (s.m[x]); use ForAll/Exists over a type instead of range(x)")

    # -- comparisons --------------------------------------------------------------------
    def __eq__(self, other):  # type: ignore[override]
        return compare("eq", self, other)

    def __ne__(self, other):  # type: ignore[override]
        return compare("ne", self, other)

    def __lt__(self, other):
        if isinstance(self.dom, SetDomain):
            return And(self.issubset(other), self != other)
        return compare("lt", self, other)

    def __le__(self, other):
        if isinstance(self.dom, SetDomain):
            return self.issubset(other)
        return compare("le", self, other)

    def __gt__(self, other):
        return compare("lt", lift_like(other, self), self)

    def __ge__(self, other):
        return compare("le", lift_like(other, self), self)

    # -- arithmetic ---------------------------------------------------------------------
    def __add__(self, o):
        if isinstance(self.dom, SetDomain):
            raise SpecError("`+` on sets", user_location(), "use a | b (union) or s.add(x)")
        return arith("add", self, o)

    def __radd__(self, o):
        return arith("add", o, self)

    def __sub__(self, o):
        if isinstance(self.dom, SetDomain):
            return set_op("diff", self, o)
        return arith("sub", self, o)

    def __rsub__(self, o):
        return arith("sub", o, self)

    def __mul__(self, o):
        return arith("mul", self, o)

    def __rmul__(self, o):
        return arith("mul", o, self)

    def __floordiv__(self, o):
        return arith("floordiv", self, o)

    def __rfloordiv__(self, o):
        return arith("floordiv", o, self)

    def __mod__(self, o):
        return arith("mod", self, o)

    def __rmod__(self, o):
        return arith("mod", o, self)

    def __neg__(self):
        return arith("neg", self)

    def __truediv__(self, o):
        raise SpecError("`/` gives a float", user_location(), "use // (floor division)")

    __rtruediv__ = __truediv__

    # `&`, `|`, `~` are And/Or/Not on booleans and intersection/union on sets.
    def __and__(self, o):
        return set_op("inter", self, o) if isinstance(self.dom, SetDomain) else And(self, o)

    def __rand__(self, o):
        return And(o, self)

    def __or__(self, o):
        return set_op("union", self, o) if isinstance(self.dom, SetDomain) else Or(self, o)

    def __ror__(self, o):
        return Or(o, self)

    def __invert__(self):
        return Not(self)

    # -- sets -----------------------------------------------------------------------------
    def _set_dom(self, what: str) -> SetDomain:
        if not isinstance(self.dom, SetDomain):
            raise SpecError(f".{what}() needs a set, got {describe(self)}", user_location())
        return self.dom

    def contains(self, x: Any) -> Term | bool:
        """Membership: `s.msgs.contains(Prepared(r))` (False for a value outside the element type); for a
        sequence, whether x is one of its elements."""
        if isinstance(self.dom, SeqDomain):
            return seq_contains(self, x)
        d = self._set_dom("contains")
        i = elem_index(x, d.elem)
        if 0 <= i.lo and i.hi < d.elem.size:
            return mk("in", (self, i), BOOL)
        return And(compare("le", 0, i), compare("lt", i, d.elem.size),
                   mk("in", (self, _retype(i, None, (max(i.lo, 0), min(i.hi, d.elem.size - 1)))), BOOL))

    def add(self, x: Any) -> Term:
        """The set with `x` added (a new value: assign it, `s.f = s.f.add(x)`)."""
        d = self._set_dom("add")
        i = within(elem_index(x, d.elem), d.elem.size)
        return _pending(set_op("union", self, mk("single", (i,), d, 0, d.hi)), "add")

    def remove(self, x: Any) -> Term:
        """The set without `x` (a new value; no error if `x` is absent)."""
        d = self._set_dom("remove")
        i = within(elem_index(x, d.elem), d.elem.size)
        return _pending(set_op("diff", self, mk("single", (i,), d, 0, d.hi)), "remove")

    discard = remove

    def union(self, o: Any) -> Term:
        return set_op("union", self, o)

    def inter(self, o: Any) -> Term:
        return set_op("inter", self, o)

    def diff(self, o: Any) -> Term:
        return set_op("diff", self, o)

    def card(self) -> Term:
        d = self._set_dom("card")
        return mk("card", (self,), None, 0, d.elem.size)

    size = card

    def is_empty(self) -> Term | bool:
        if isinstance(self.dom, SeqDomain):
            return compare("eq", self, lift((), self.dom))
        self._set_dom("is_empty")
        return compare("eq", self, lift(frozenset(), self.dom))

    def issubset(self, o: Any) -> Term | bool:
        self._set_dom("issubset")
        return compare("eq", set_op("diff", self, o), lift(frozenset(), self.dom))

    def forall(self, fn: Callable[[Any], Any]) -> Term | bool:
        """fn(x) holds for every member x (expanded over the element type)."""
        d = self._set_dom("forall")
        return And(*(Implies(self.contains(v), fn(v)) for v in d.elem.values()))

    def exists(self, fn: Callable[[Any], Any]) -> Term | bool:
        d = self._set_dom("exists")
        return Or(*(And(self.contains(v), fn(v)) for v in d.elem.values()))

    def count(self, fn: Callable[[Any], Any] | None = None) -> Term | int:
        """How many members satisfy fn (all members if fn is None)."""
        d = self._set_dom("count")
        if fn is None:
            return self.card()
        return Sum(If(And(self.contains(v), fn(v)), 1, 0) for v in d.elem.values())

    # -- records, unions, options --------------------------------------------------------------
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self.field(name)

    def field(self, name: str) -> Term:
        """A field of a record (or of every member of a union) value."""
        d = self.dom
        if isinstance(d, RecordDomain):
            return record_field(self, d, name, 0)
        if isinstance(d, UnionDomain):
            members = [m for m in d.member_doms if name in m.type.field_names]
            if len(members) != len(d.member_doms):
                raise SpecError(f"field {name!r} is not in every member of {d.type!r}", user_location(),
                                f"use x.as_(Member).{name} after testing x.tag")
            fdoms = {m.field_doms[m.type.field_names.index(name)].shape_id for m in members}
            if len(fdoms) != 1:
                raise SpecError(f"field {name!r} has different types in the members of {d.type!r}", user_location(),
                                f"use x.as_(Member).{name}")
            parts = [record_field(self, m, name, d.offsets[m.type.name]) for m in members]
            out = parts[-1]
            for m, part in zip(reversed(members[:-1]), reversed(parts[:-1])):
                out = If(self.tag == m.type.name, part, out)
            return out
        raise SpecError(f"{describe(self)} has no field {name!r}", user_location())

    @property
    def tag(self) -> Term:
        """The member name of a union value, comparable with strings: `m.tag == "Echo"`."""
        d = self.dom
        if not isinstance(d, UnionDomain):
            raise SpecError(f".tag needs a union value, got {describe(self)}", user_location())
        tags = _tag_domain(d)
        out: Any = const(0, tags)
        raw = _retype(self, None)
        for i, m in enumerate(d.member_doms[1:], start=1):
            out = If(compare("le", d.offsets[m.type.name], raw), const(i, tags), out)
        return out

    def as_(self, member: Record) -> Term:
        """View a union value as one of its members (meaningful when `x.tag` names it)."""
        d = self.dom
        if not isinstance(d, UnionDomain) or member.name not in d.by_name:
            raise SpecError(f".as_({member!r}) needs a union containing it, got {describe(self)}", user_location())
        m = d.by_name[member.name]
        off = d.offsets[member.name]
        return _retype(arith("sub", _retype(self, None), off), m) if off else _retype(self, m)

    def in_union(self, d: UnionDomain) -> Term:
        """A record value as a value of a union that has its record type as a member (the inverse of `as_`)."""
        if not isinstance(self.dom, RecordDomain) or self.dom.type.name not in getattr(d, "by_name", {}):
            raise SpecError(f"{describe(self)} is not a member of {d.describe()}", user_location())
        off = d.offsets[self.dom.type.name]
        return _retype(arith("add", _retype(self, None), off), d) if off else _retype(self, d)

    def is_none(self) -> Term | bool:
        if not isinstance(self.dom, OptionDomain):
            raise SpecError(f".is_none() needs an Option value, got {describe(self)}", user_location())
        return compare("eq", self, lift(None, self.dom))

    def is_some(self) -> Term | bool:
        return Not(self.is_none())

    def get(self) -> Term:
        """The value inside an Option (meaningful when it is not None)."""
        d = self.dom
        if not isinstance(d, OptionDomain):
            raise SpecError(f".get() needs an Option value, got {describe(self)}", user_location())
        inner = d.inner
        t = arith("sub", _retype(self, None), 1)
        off = inner.index_offset()
        if off:
            t = arith("add", t, off)
        if isinstance(inner, BoolDomain):
            return compare("eq", t, lift(1, None))
        return _retype(t, inner)


    # -- sequences ----------------------------------------------------------------------------------
    def _seq_dom(self, what: str) -> SeqDomain:
        if not isinstance(self.dom, SeqDomain):
            raise SpecError(f".{what}() needs a sequence, got {describe(self)}", user_location())
        return self.dom

    def len(self) -> Term:
        """The length of a sequence."""
        return seq_len(self, self._seq_dom("len"))

    def head(self) -> Term:
        """The first element of a sequence (a failing step if it is empty)."""
        return seq_at(self, 0, "head of an empty sequence")

    def tail(self) -> Term:
        """The sequence without its first element (a failing step if it is empty)."""
        return seq_remove_at(self, 0, "tail of an empty sequence")

    def append(self, x: Any) -> Term:
        """The sequence with `x` added at the end (a failing step if it is full: a value outside its type)."""
        return seq_append(self, x)

    def remove_at(self, i: Any) -> Term:
        """The sequence without its element at position i (TLA+'s idiom for a lossy channel)."""
        return seq_remove_at(self, i)


# ------------------------------------------------------------------------------ sequences
# A sequence is the integer offset(len) + sum idx(e_i) * n^i (`types.SeqDomain`); its operations are integer
# arithmetic on that index, with `select` over constant tables of offsets and powers for the length-dependent
# parts, so every interpreter runs them unchanged. Checks that can fail are `within` terms with a message.


def _table(k: Term, values: list[int]) -> Term:
    """values[k] for an index term k known to lie in 0..len(values)-1."""
    if k.op == "const":
        return const(values[k.args[0]], None)
    items = [const(v, None) for v in values]
    return mk("select", (k, *items), None, min(values), max(values))


def _seq_raw(t: Term) -> Term:
    return _retype(t, None)


def seq_len(t: Term, d: SeqDomain) -> Term:
    raw = _seq_raw(t)
    out: Any = 0
    for k in range(1, d.max_len + 1):
        out = If(compare("le", d.offsets[k], raw), k, out)
    return lift(out, None)


def _seq_position(t: Term, i: Any, what: str | None) -> tuple[SeqDomain, Term, Term]:
    """(domain, i, checked length) for position i of t: a failing step unless 0 <= i < length."""
    d = t._seq_dom("at")
    if isinstance(i, ParamLike):
        i = i.value()
    if not isinstance(i, Term) and (isinstance(i, bool) or not isinstance(i, int)):
        raise SpecError(f"a sequence position must be an integer, got {i!r}", user_location())
    if not isinstance(i, Term) and not 0 <= i < max(d.max_len, 1):
        raise SpecError(f"position {i} is outside {d.describe()} (0..{d.max_len - 1})", user_location())
    if d.max_len == 0:
        raise SpecError(f"{d.describe()} has no elements", user_location())
    pos = within(lift(i, None), d.max_len)
    # k = length - 1 - i lies in 0..max_len-1 exactly when i is below the length
    what = what or "position outside the sequence"
    k = mk("within", (arith("sub", arith("sub", seq_len(t, d), pos), 1), const(d.max_len, None), what), None,
           0, d.max_len - 1)
    length = arith("add", arith("add", k, pos), 1)
    return d, pos, length


def _seq_body(t: Term, d: SeqDomain, length: Term) -> Term:
    """The digits of t (its index minus the offset of its length)."""
    return arith("sub", _seq_raw(t), _table(length, d.offsets[:d.max_len + 1]))


def _as_elem(idx: Term, elem: Domain) -> Term:
    """An element index as a value of the element type."""
    if isinstance(elem, BoolDomain):
        return compare("eq", idx, 1)
    off = elem.index_offset()
    x = arith("add", idx, off) if off else idx
    return _retype(x, elem)


def seq_at(t: Term, i: Any, what: str | None = None) -> Term:
    d, pos, length = _seq_position(t, i, what)
    n = d.elem.size
    digits = arith("floordiv", _seq_body(t, d, length), _table(pos, d.powers[:d.max_len]))
    return _as_elem(arith("mod", digits, n) if n > 1 else arith("mul", digits, 0), d.elem)


def seq_remove_at(t: Term, i: Any, what: str | None = None) -> Term:
    d, pos, length = _seq_position(t, i, what)
    body = _seq_body(t, d, length)
    p_i, p_next = _table(pos, d.powers[:d.max_len]), _table(pos, d.powers[1:d.max_len + 1])
    rest = arith("add", arith("mod", body, p_i), arith("mul", arith("floordiv", body, p_next), p_i))
    shorter = arith("sub", length, 1)
    return _retype(arith("add", _table(shorter, d.offsets[:d.max_len]), rest), d)


def seq_append(t: Term, x: Any) -> Term:
    d = t._seq_dom("append")
    if d.max_len == 0:
        raise SpecError(f"{d.describe()} has no room for elements", user_location())
    i = within(elem_index(x, d.elem), d.elem.size)
    full = f"append to a full sequence: {d.describe()} holds at most {d.max_len} elements"
    k = mk("within", (seq_len(t, d), const(d.max_len, None), full), None, 0, d.max_len - 1)
    step = arith("mul", arith("add", i, 1), _table(k, d.powers[:d.max_len]))
    return _retype(arith("add", _seq_raw(t), step), d)


def seq_contains(t: Term, x: Any) -> Term | bool:
    d = t._seq_dom("contains")
    if not isinstance(x, Term) and not isinstance(x, PendingIf):
        try:
            d.elem.index(resolve(x))
        except (SpecError, ValueError):
            return False
    i = elem_index(x, d.elem)
    length = seq_len(t, d)
    body = _seq_body(t, d, length)
    n = d.elem.size
    return Or(*(And(compare("lt", j, length), compare("eq", arith("mod", arith("floordiv", body, d.powers[j]), n), i))
                for j in range(d.max_len)))


# ------------------------------------------------------------------------------ construction


def mk(op: str, args: tuple, dom: Domain | None, lo: int = 0, hi: int = 0) -> Term | Any:
    """Build a term, folding it to a constant when every argument is constant."""
    if op in OPS and all(isinstance(a, Term) and a.op == "const" for a in args):
        try:
            v = OPS[op](*(a.args[0] for a in args))
        except Exception:
            pass  # keep the term: the error belongs to the states that reach it
        else:
            for a in args:
                a.used = True  # folded into the constant, not discarded
            return const(v, dom)
    if dom is BOOL or isinstance(dom, BoolDomain):
        lo, hi = 0, 1
    return Term(op, args, dom, lo, hi)


def const(v: Any, dom: Domain | None) -> Term:
    if isinstance(v, bool) or dom is BOOL or isinstance(dom, BoolDomain):
        return Term("const", (bool(v),), BOOL, int(v), int(v))
    if isinstance(v, int):
        return Term("const", (v,), dom, v, v)
    raise TypeError(f"not a representation: {v!r}")


def slot(i: int, dom: Domain) -> Term:
    return Term("slot", (i,), dom, dom.lo, dom.hi)


def describe(x: Any) -> str:
    if isinstance(x, Term):
        return "a Bool" if x.is_bool else ("an integer" if x.dom is None else f"a value of {x.dom.describe()}")
    return repr(x)


def _retype(t: Term, dom: Domain | None, bounds: tuple[int, int] | None = None) -> Term:
    """The same expression, typed as a value of `dom` (None: a plain integer); bounds stay sound."""
    if t.op == "const":
        return const(t.args[0], dom)
    lo, hi = bounds if bounds is not None else (t.lo, t.hi)
    return Term(t.op, t.args, dom, lo, hi, t.loc)


_TAG_DOMAINS: dict[int, EnumDomain] = {}


def _tag_domain(d: UnionDomain) -> EnumDomain:
    from .types import Enum

    dom = _TAG_DOMAINS.get(id(d.type))
    if dom is None:
        dom = _TAG_DOMAINS[id(d.type)] = Enum(*(m.type.name for m in d.member_doms)).dom()
    return dom


# --------------------------------------------------------------------------------- lifting


def lift(v: Any, dom: Domain | None) -> Term:
    """A Python value as a constant term of domain `dom` (None: a plain integer)."""
    if isinstance(v, Term):
        return v
    if isinstance(v, PendingIf):
        return v.typed(dom)
    v = resolve(v)
    if dom is None or isinstance(dom, (IntDomain, RangeDomain)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise SpecError(f"{v!r} is not an integer", user_location())
        return const(v, dom)
    if isinstance(dom, BoolDomain):
        if not isinstance(v, bool):
            raise SpecError(f"{v!r} is not a Bool", user_location(), "use True or False")
        return const(v, BOOL)
    if isinstance(dom, MapDomain):
        raise SpecError("a whole map used as a value", user_location(), "index it: s.m[k]")
    return const(dom.rep(v), dom)


def lift_like(v: Any, other: Term) -> Term:
    """`v` as a term of the same kind as `other` (for comparisons and assignments)."""
    if isinstance(v, Term):
        return v
    dom = other.dom
    if isinstance(dom, (IntDomain, RangeDomain)):
        dom = None
    return lift(v, dom)


def as_bool(x: Any) -> Term | bool:
    if isinstance(x, Term):
        if not x.is_bool:
            raise SpecError(f"expected a Bool, got {describe(x)}", user_location())
        if x.op == "const":
            return x.args[0]
        return x
    if isinstance(x, PendingIf):
        return x.typed(BOOL)
    if isinstance(x, bool):
        return x
    raise SpecError(f"expected a Bool, got {x!r}", user_location())


def _int_like(d: Domain | None) -> bool:
    return d is None or isinstance(d, (IntDomain, RangeDomain))


def compatible(a: Term, b: Term) -> bool:
    """Whether two terms are values of one type (structurally equal declarations are one type)."""
    if _int_like(a.dom) and _int_like(b.dom):
        return True
    if isinstance(a.dom, BoolDomain) and isinstance(b.dom, BoolDomain):
        return True
    return same_domain(a.dom, b.dom)


def convert(t: Term, dom: Domain | None) -> Term | None:
    """`t` as a value of `dom`, where the language widens it implicitly: a value of `dom` itself, an
    integer into an integer type, a record into a union that has it as a member, a value into an
    Option of its type (or of a union containing it). None where no such widening exists."""
    if _int_like(dom) and _int_like(t.dom):
        return t
    if isinstance(dom, BoolDomain):
        return t if isinstance(t.dom, BoolDomain) else None
    if same_domain(t.dom, dom):
        return t
    if isinstance(dom, UnionDomain) and isinstance(t.dom, RecordDomain):
        member = dom.by_name.get(t.dom.type.name)
        if member is None or not same_domain(member, t.dom):
            return None
        off = dom.offsets[member.type.name]
        return _retype(arith("add", _retype(t, None), off) if off else t, dom)
    if isinstance(dom, OptionDomain) and not isinstance(t.dom, OptionDomain):
        inner = convert(t, dom.inner)
        return None if inner is None else as_option(inner, dom)
    return None


def unify(a: Term, b: Term, what: str) -> tuple[Term, Term]:
    """Two terms as values of one type (one of them widened, see `convert`), or a SpecError about `what`."""
    if compatible(a, b):
        return a, b
    b2 = convert(b, a.dom)
    if b2 is not None:
        return a, b2
    a2 = convert(a, b.dom)
    if a2 is not None:
        return a2, b
    raise SpecError(f"{what}: {describe(a)} and {describe(b)}", user_location(), type_hint(a, b))


def type_hint(a: Term, b: Term) -> str | None:
    """When two types print alike but differ, say where each was declared."""
    if a.dom is None or b.dom is None or a.dom.describe() != b.dom.describe():
        return None
    return "the two types have the same name but different definitions; declare the type once and use it in both places"


def as_option(t: Term, dom: OptionDomain) -> Term:
    """A value of an Option's inner type, as the Option holding it."""
    return _retype(arith("add", within(elem_index(t, dom.inner), dom.inner.size), 1), dom)


def compare(op: str, a: Any, b: Any) -> Term | bool:
    if not isinstance(a, Term):
        a = lift_like(a, b)
    if not isinstance(b, Term):
        b = lift_like(b, a)
    a, b = unify(a, b, "cannot compare")
    if op in ("lt", "le") and not (_int_like(a.dom) and _int_like(b.dom)):
        raise SpecError(f"ordering needs integers, got {describe(a)} and {describe(b)}", user_location())
    t = mk(op, (a, b), BOOL)
    return t.args[0] if t.op == "const" else t


def arith(op: str, a: Any, b: Any = None) -> Term:
    args = [a] if op == "neg" else [a, b]
    terms = []
    for x in args:
        if isinstance(x, ParamLike):
            x = x.value()
        if isinstance(x, Term):
            if not _int_like(x.dom):
                raise SpecError(f"arithmetic on {describe(x)}", user_location(),
                                "only Int and Range values take part in arithmetic; use If(b, 1, 0) for a Bool")
        elif isinstance(x, PendingIf):
            x = x.typed(None)
        elif isinstance(x, bool) or not isinstance(x, int):
            raise SpecError(f"arithmetic with {x!r}", user_location())
        terms.append(lift(x, None))
    lo, hi = _bounds(op, terms)
    return mk(op, tuple(terms), None, lo, hi)


def _bounds(op: str, ts: list[Term]) -> tuple[int, int]:
    if op == "neg":
        return -ts[0].hi, -ts[0].lo
    (alo, ahi), (blo, bhi) = (ts[0].lo, ts[0].hi), (ts[1].lo, ts[1].hi)
    if op == "add":
        return alo + blo, ahi + bhi
    if op == "sub":
        return alo - bhi, ahi - blo
    if op == "mul":
        ps = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
        return min(ps), max(ps)
    if op == "floordiv":
        if blo > 0 or bhi < 0:
            qs = [alo // blo, alo // bhi, ahi // blo, ahi // bhi]
            return min(qs), max(qs)
        return -max(abs(alo), abs(ahi)), max(abs(alo), abs(ahi))
    if op == "mod":
        if blo > 0:
            if alo >= 0 and ahi < blo:
                return alo, ahi
            return 0, bhi - 1
        if bhi < 0:
            return blo + 1, 0
        return min(blo + 1, 0), max(bhi - 1, 0)
    if op == "min":
        return min(alo, blo), min(ahi, bhi)
    if op == "max":
        return max(alo, blo), max(ahi, bhi)
    raise AssertionError(op)


def within(t: Term, size: int) -> Term:
    """The index term `t`, checked to lie in 0..size-1 where its bounds allow otherwise."""
    if 0 <= t.lo and t.hi < size:
        return t
    return mk("within", (t, const(size, None)), None, max(t.lo, 0), min(t.hi, size - 1))


def elem_index(x: Any, elem: Domain) -> Term:
    """The index (0..size-1) of a set element, as a term."""
    if not isinstance(x, Term):
        if isinstance(x, PendingIf):
            x = x.typed(elem)
        else:
            return const(elem.index(resolve(x)), None)
    if isinstance(elem, BoolDomain):
        return If(as_bool(x), lift(1, None), lift(0, None))
    if not _int_like(elem):
        widened = convert(x, elem)
        if widened is None:
            raise SpecError(f"{describe(x)} cannot be an element of a set of {elem.describe()}", user_location(),
                            type_hint(x, lift(elem.default(), elem)))
        x = widened
    off = elem.index_offset()
    t = arith("sub", x, off) if off else x
    return _retype(t, None) if t.dom is not None else t


def set_op(op: str, a: Term, b: Any) -> Term:
    d = a._set_dom(op)
    if not isinstance(b, Term):
        b = lift(b, d)
    if not isinstance(b.dom, SetDomain) or not compatible(a, b):
        raise SpecError(f"set {op} of {describe(a)} with {describe(b)}", user_location())
    return mk(op, (a, b), d, 0, d.hi)


# ------------------------------------------------------------------------------- records


def record_term(rtype: Record, vals: tuple) -> Term:
    d: RecordDomain = rtype.dom()
    total: Any = 0
    for fname, fdom, stride, v in zip(rtype.field_names, d.field_doms, d.strides, vals):
        if fname in _RESERVED:
            raise SpecError(f"record field name {fname!r} clashes with a term method", user_location(),
                            "rename the field, or read it with x.field(name)")
        idx = within(elem_index(v, fdom), fdom.size)
        total = arith("add", total, arith("mul", idx, stride)) if stride != 1 else arith("add", total, idx)
    t = total if isinstance(total, Term) else lift(total, None)
    return _retype(t, d)


def record_field(t: Term, d: RecordDomain, name: str, offset: int) -> Term:
    if name not in d.type.field_names:
        raise SpecError(f"{d.type.name} has no field {name!r}", user_location(),
                        "fields are " + ", ".join(d.type.field_names))
    i = d.type.field_names.index(name)
    fdom, stride = d.field_doms[i], d.strides[i]
    raw = _retype(t, None)
    x: Any = arith("sub", raw, offset) if offset else raw
    if stride != 1:
        x = arith("floordiv", x, stride)
    if fdom.size != d.size // stride or offset:
        x = arith("mod", x, fdom.size)
    if isinstance(fdom, BoolDomain):
        return compare("eq", x, 1)
    off = fdom.index_offset()
    if off:
        x = arith("add", x, off)
    return _retype(x if isinstance(x, Term) else lift(x, None), fdom)


# ---------------------------------------------------------------------------------- logic


class PendingIf:
    """`If(c, a, b)` over Python values whose type is not yet known (e.g. two enum names)."""

    def __init__(self, cond: Term, a: Any, b: Any, loc: Location | None):
        self.cond, self.a, self.b, self.loc = cond, a, b, loc

    def typed(self, dom: Domain | None) -> Term:
        a, b = lift(self.a, dom), lift(self.b, dom)
        return _ite(self.cond, a, b)

    def __bool__(self):
        raise misuse_error()


def _ite(c: Term, a: Term, b: Term) -> Term:
    if a.key == b.key:
        b.used = True  # folded into `a`, not discarded
        return a
    dom = a.dom if a.dom is not None else b.dom
    if _int_like(a.dom) and _int_like(b.dom) and a.dom is not b.dom:
        dom = None
    return mk("ite", (c, a, b), dom, min(a.lo, b.lo), max(a.hi, b.hi))


def If(cond: Any, a: Any, b: Any) -> Any:
    """`a` if `cond` else `b`; both branches are expressions (no statements)."""
    c = as_bool(cond)
    if isinstance(c, bool):
        mark_used(b if c else a)  # the branch not taken was used by the If: no "result never used" error
        return a if c else b
    if isinstance(a, Term) or isinstance(b, Term):
        ta = a if isinstance(a, Term) else lift_like(a, b)
        tb = b if isinstance(b, Term) else lift_like(b, ta)
        ta, tb = unify(ta, tb, "If branches differ in type")
        return _ite(c, ta, tb)
    if isinstance(a, bool) and isinstance(b, bool):
        return _ite(c, const(a, BOOL), const(b, BOOL))
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool):
        return _ite(c, const(a, None), const(b, None))
    return PendingIf(c, a, b, user_location())


def And(*xs: Any) -> Any:
    """Conjunction, short-circuiting left to right; Python bools fold away."""
    terms = []
    for x in _flatten(xs):
        b = as_bool(x)
        if b is False:
            return False
        if b is True:
            continue
        terms.extend(b.args if b.op == "and" else (b,))
    if not terms:
        return True
    return terms[0] if len(terms) == 1 else mk("and", tuple(terms), BOOL)


def Or(*xs: Any) -> Any:
    """Disjunction, short-circuiting left to right."""
    terms = []
    for x in _flatten(xs):
        b = as_bool(x)
        if b is True:
            return True
        if b is False:
            continue
        terms.extend(b.args if b.op == "or" else (b,))
    if not terms:
        return False
    return terms[0] if len(terms) == 1 else mk("or", tuple(terms), BOOL)


def Not(x: Any) -> Any:
    b = as_bool(x)
    if isinstance(b, bool):
        return not b
    if b.op == "not":
        return b.args[0]
    return mk("not", (b,), BOOL)


def Implies(a: Any, b: Any) -> Any:
    return Or(Not(a), b)


def _flatten(xs: Iterable[Any]) -> Iterable[Any]:
    for x in xs:
        if isinstance(x, (list, tuple)) or (hasattr(x, "__next__") and not isinstance(x, Term)):
            yield from x
        else:
            yield x


def _domains(args: tuple) -> tuple[list, Callable]:
    if not args or not callable(args[-1]) or isinstance(args[-1], Type):
        raise SpecError("ForAll/Exists take one or more domains and then a function", user_location(),
                        "ForAll(RM, lambda r: ...) or ForAll(RM, RM, lambda r1, r2: ...)")
    return list(args[:-1]), args[-1]


def ForAll(*args: Any) -> Any:
    """`ForAll(D1, ..., fn)`: fn holds for every combination of values of the finite domains."""
    doms, fn = _domains(args)
    return And(*(fn(*vs) for vs in domain_values(doms)))


def Exists(*args: Any) -> Any:
    """`Exists(D1, ..., fn)`: fn holds for some combination of values."""
    doms, fn = _domains(args)
    return Or(*(fn(*vs) for vs in domain_values(doms)))


def Sum(xs: Iterable[Any]) -> Any:
    total: Any = 0
    for x in xs:
        total = arith("add", total, x) if isinstance(total, Term) or isinstance(x, Term) else total + x
    return total


def Count(*args: Any) -> Any:
    """`Count(D, pred)`: how many values of D satisfy pred."""
    doms, fn = _domains(args)
    return Sum(If(fn(*vs), 1, 0) for vs in domain_values(doms))


def Card(s: Any) -> Any:
    """The number of elements of a set."""
    return s.card() if isinstance(s, Term) else len(s)


def Min(a: Any, b: Any) -> Any:
    if isinstance(a, Term) or isinstance(b, Term):
        return arith("min", a, b)
    return min(a, b)


def Max(a: Any, b: Any) -> Any:
    if isinstance(a, Term) or isinstance(b, Term):
        return arith("max", a, b)
    return max(a, b)


# ------------------------------------------------------------------------------ misuse


_pending_terms: list[Term] | None = None


def _pending(t: Term, method: str) -> Term:
    """Remember a set built by .add/.remove, to catch `s.f.add(x)` used as a statement."""
    if _pending_terms is not None and isinstance(t, Term):
        t.used = False
        _pending_terms.append(t)
    return t


def start_pending() -> None:
    global _pending_terms
    _pending_terms = []


def check_pending() -> None:
    global _pending_terms
    pending, _pending_terms = _pending_terms or [], None
    for t in pending:
        if not t.used:
            raise SpecError("the result of .add()/.remove() is never used: sets are values, not containers",
                            t.loc, "assign it: s.field = s.field.add(x)")


def mark_used(x: Any) -> None:
    if isinstance(x, Term):
        x.used = True


_CONSTRUCTS = {
    "POP_JUMP_IF_FALSE": ("`if`, `while` or a conditional expression", "require(cond) for a guard, If(c, a, b) for a value"),
    "POP_JUMP_IF_TRUE": ("`if not`/`while` or a conditional expression", "require(Not(cond)) or If(c, a, b)"),
    "POP_JUMP_FORWARD_IF_FALSE": ("`if` or a conditional expression", "require(cond) for a guard, If(c, a, b) for a value"),
    "POP_JUMP_FORWARD_IF_TRUE": ("`if not` or a conditional expression", "require(Not(cond)) or If(c, a, b)"),
    "POP_JUMP_BACKWARD_IF_FALSE": ("`while`", "state-dependent loops are not expressible; use ForAll/Exists"),
    "POP_JUMP_BACKWARD_IF_TRUE": ("`while`", "state-dependent loops are not expressible; use ForAll/Exists"),
    "JUMP_IF_FALSE_OR_POP": ("`and`", "And(a, b)"),
    "JUMP_IF_TRUE_OR_POP": ("`or`", "Or(a, b)"),
    "UNARY_NOT": ("`not`", "Not(x)"),
    "CONTAINS_OP": ("`in`", "s.field.contains(x)"),
    "COMPARE_OP": ("a chained comparison (a < b < c)", "And(a < b, b < c)"),
    "CALL": ("bool()", "use the condition directly, or If(c, a, b)"),
    "PRECALL": ("bool()", "use the condition directly, or If(c, a, b)"),
}


def misuse_error() -> SpecError:
    """A state-dependent condition was used where Python needs a real bool: say where and what."""
    frame = user_frame(2)
    construct, fix = "a Python truth test", "use And/Or/Not, If(c, a, b) or require(cond)"
    loc = None
    if frame is not None:
        loc = Location(frame.f_code.co_filename, frame.f_lineno)
        construct, fix = _construct(frame.f_code, frame.f_lasti) or (construct, fix)
    return SpecError(f"{construct} on a state-dependent value: Python needs a concrete bool here", loc, fix)


_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})


def _construct(code: Any, offset: int) -> tuple[str, str] | None:
    """The Python construct whose bytecode at `offset` asked for a truth value, and what to write instead."""
    ins = list(dis.get_instructions(code))
    at = next((i for i, x in enumerate(ins) if x.offset == offset), None)
    if at is None:
        return None
    name = ins[at].opname
    if "JUMP" in name and "IF" in name:
        before = [x.opname for x in ins[max(at - 2, 0):at]]
        if before == ["COPY", "COMPARE_OP"]:
            return "a chained comparison (a < b < c)", "And(a < b, b < c)"
        if at + 1 < len(ins) and ins[at + 1].opname == "LOAD_ASSERTION_ERROR":
            return "`assert`", 'Assert(cond, "message") inside an action'
        if code.co_name in _COMPREHENSIONS:
            return "an `if` filter in a comprehension", \
                "ForAll/Exists/Count over the type, with Implies/And on each element's condition"
        line = ins[at].positions.lineno if ins[at].positions else None
        if any(x.opname.startswith("POP_JUMP_BACKWARD_IF") and x.positions and x.positions.lineno == line for x in ins):
            return "`while`", "state-dependent loops are not expressible; use ForAll/Exists over a type"
    return _CONSTRUCTS.get(name)


__all__ = [
    "Term", "And", "Or", "Not", "Implies", "If", "ForAll", "Exists", "Count", "Sum", "Card", "Min", "Max",
    "OPS", "BOOL",
]
