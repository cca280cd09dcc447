"""The symbolic interpreter: a `Program`'s terms as z3 formulas over one z3 value per slot.

A state is a `SymState`: Bool slots are z3 Bools, integer-like slots (Int, Range, Enum,
records, unions, options) are signed bit-vectors constrained to their domain, and a Set slot
is one z3 Bool per element. Each `Transition` (one action at one parameter choice) is one
choice of the transition relation: a transition number picks it, its `require` checks are the
guard, each slot's next value is the update of the chosen transition or, for the transitions
that do not update it, its old value (frame), and every slot of every state is constrained to
its type.

Failures follow the reference evaluator (`lockstep.checker.interpret`): every term is encoded as a
value and the condition under which evaluating it raises (an index outside a `select`, a
negative set element, a division by zero), respecting the laziness of `and`, `or` and `ite`.
An enabled transition *fails* where an `assert` is false, an `error` check is reached, an
expression raises, or an Int/Range slot is assigned a value outside its type; such a step has
no successor, and `failure()` is the condition that one happens.

Encodings, chosen by measurement (`python -m bench.smt`, which reruns the comparison):
- steps: a transition number selecting each slot's new value (an if-then-else chain per slot)
  beats one disjunct per transition with a full copy of the frame, 3.5 to 8 times on BMC of
  TwoPhase — the frame is shared instead of repeated for every transition;
- sets: one Bool per element beats a bit-vector bitmask 2 to 5 times — membership, `card` and
  equality become plain Boolean structure instead of extracts and bit sums;
- integers: bit-vectors as wide as the largest value any term can take (from sound interval
  bounds) tie with z3 Ints on TwoPhase to depth 12, whose integers are only enum indices, win
  2 times when the completeness check runs too, and 4 times on BMC of the filter lock, whose
  levels are compared and incremented.
All eight combinations stay selectable through `Encoding` for that comparison and are checked
against the explicit engine by the conformance tests.

A value outside its type — an Int set element or record field computed out of range, an
Enum, record, union or option field assigned an out-of-range index — is a step failure here,
as in the explicit engine (the `within` checks and assignment checks of the term language).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from lockstep.specs.lang.errors import SpecError
from lockstep.specs.lang.program import Predicate, Program, Transition
from lockstep.specs.lang.terms import Term
from lockstep.specs.lang.types import BoolDomain, Domain, SetDomain


@dataclass(frozen=True)
class Encoding:
    """How slots and steps become z3 terms (see the module docstring for what won and why)."""

    ints: str = "bv"  # "bv": signed bit-vectors wide enough for every term; "int": z3 Ints
    sets: str = "bools"  # "bools": one Bool per element; "bv": a bit-vector bitmask
    steps: str = "select"  # "select": a transition number picks each slot's new value; "disjunction"

    def __post_init__(self) -> None:
        if self.ints not in ("int", "bv") or self.sets not in ("bools", "bv") or self.steps not in ("select", "disjunction"):
            raise ValueError(f"unknown encoding {self!r}")

    def __str__(self) -> str:
        return f"ints={self.ints} sets={self.sets} steps={self.steps}"


DEFAULT = Encoding()
ENCODINGS = [Encoding(i, s, t) for t in ("select", "disjunction") for i in ("bv", "int") for s in ("bools", "bv")]

Cond = Any  # a z3 BoolRef, or a Python bool for a condition known statically


def _kind(dom: Domain | None) -> str:
    if isinstance(dom, BoolDomain):
        return "bool"
    if isinstance(dom, SetDomain):
        return "set"
    return "int"


def _z(c: Cond) -> z3.BoolRef:
    return z3.BoolVal(c) if isinstance(c, bool) else c


def any_of(*cs: Cond) -> Cond:
    """Disjunction that folds Python bools away."""
    return _fold(cs, True, z3.Or)


def all_of(*cs: Cond) -> Cond:
    """Conjunction that folds Python bools away."""
    return _fold(cs, False, z3.And)


def _fold(cs: tuple[Cond, ...], absorbing: bool, op: Callable[..., z3.BoolRef]) -> Cond:
    """`op` over the terms of `cs`: `absorbing` if it occurs, the other bool if nothing is left."""
    neutral = not absorbing
    rest = []
    for c in cs:
        if c is absorbing:
            return absorbing
        if c is not neutral:
            rest.append(c)
    if not rest:
        return neutral
    return rest[0] if len(rest) == 1 else op(*rest)


def negate(c: Cond) -> Cond:
    return (not c) if isinstance(c, bool) else z3.Not(c)


class SymState:
    """One state of a symbolic path: a z3 value per slot, and the encodings built over it."""

    def __init__(self, name: str, values: list[Any]):
        self.name = name
        self.values = values
        # caches by identity, each entry holding its key object, so that an id is never reused while cached
        self.memo: dict[int, tuple[Term, tuple[Any, Cond]]] = {}
        self.effects: dict[int, tuple[Transition, Effect]] = {}

    def __getitem__(self, i: int) -> Any:
        return self.values[i]


@dataclass
class Effect:
    """What one transition does from one state: when it succeeds, when it fails, the new values."""

    ok: Cond
    fail: Cond
    updates: dict[int, Any] = field(default_factory=dict)


class Symbolic:
    """A program's initial states, transition relation and predicates as z3 formulas."""

    def __init__(self, prog: Program, encoding: Encoding = DEFAULT):
        self.prog = prog
        self.encoding = encoding
        self.kinds = [_kind(d) for d in prog.slot_doms]
        self._ranges: dict[int, tuple[Term, tuple[int, int]]] = {}  # by identity, holding the term
        for p in prog.constraints:
            if p.error is not None:
                msg, loc = p.error
                raise SpecError(f"constraint {p.name} cannot be built: {msg}", loc,
                                "a state constraint must be a formula over the state")
        self.width = self._bv_width() if encoding.ints == "bv" else 0

    # -- states ---------------------------------------------------------------------------------
    def state(self, name: str) -> SymState:
        """Fresh z3 variables for every slot."""
        vals: list[Any] = []
        for i, (kind, dom) in enumerate(zip(self.kinds, self.prog.slot_doms)):
            label = f"{name}.{self.prog.slot_names[i]}"
            if kind == "bool":
                vals.append(z3.Bool(label))
            elif kind == "int":
                vals.append(z3.Int(label) if self.width == 0 else z3.BitVec(label, self.width))
            elif self.encoding.sets == "bools":
                vals.append(tuple(z3.Bool(f"{label}#{j}") for j in range(dom.elem.size)))
            else:
                vals.append(z3.BitVec(label, dom.elem.size))
        return SymState(name, vals)

    def typed(self, st: SymState) -> Cond:
        """Every slot holds a value of its type."""
        out = []
        for i, (kind, dom) in enumerate(zip(self.kinds, self.prog.slot_doms)):
            if kind == "int":
                out.append(self._in_range(st[i], dom.lo, dom.hi))
        return all_of(*out)

    def equal(self, a: SymState, b: SymState) -> Cond:
        return all_of(*(self._eq(k, x, y) for k, x, y in zip(self.kinds, a.values, b.values)))

    def pin(self, st: SymState, concrete: Sequence[Any]) -> Cond:
        """`st` is the concrete state (a tuple of slot representations)."""
        out: list[Any] = []
        for kind, x, v in zip(self.kinds, st.values, concrete):
            if kind == "int":
                out.append(x == self._int(v))
            elif kind == "bool":
                out.append(x if v else z3.Not(x))
            elif isinstance(x, tuple):
                out.extend(b if v >> j & 1 else z3.Not(b) for j, b in enumerate(x))
            else:
                out.append(x == z3.BitVecVal(v, x.size()))
        return z3.And(out) if out else True

    def concrete(self, model: z3.ModelRef, st: SymState) -> tuple:
        """The state a z3 model assigns to `st`, as slot representations."""
        out: list[Any] = []
        for kind, v in zip(self.kinds, st.values):
            if kind == "bool":
                out.append(z3.is_true(model.eval(v, model_completion=True)))
            elif kind == "int":
                r = model.eval(v, model_completion=True)
                out.append(r.as_long() if self.width == 0 else r.as_signed_long())
            elif isinstance(v, tuple):
                out.append(sum(1 << j for j, b in enumerate(v) if z3.is_true(model.eval(b, model_completion=True))))
            else:
                out.append(model.eval(v, model_completion=True).as_long())
        return tuple(out)

    # -- the spec ---------------------------------------------------------------------------------
    def init(self, st: SymState) -> Cond:
        """`st` is an initial state."""
        prog = self.prog
        if not prog.init_transitions:
            return self._pre_init(st)
        pre = self.state(st.name + ".pre")
        choices = []
        for t in prog.init_transitions:
            e = self.effect(t, pre)
            if e.ok is not False:
                choices.append(all_of(e.ok, self._becomes(pre, st, e)))
        return all_of(self.typed(pre), self._pre_init(pre), any_of(*choices))

    def init_failure(self) -> tuple[SymState, Cond]:
        """A pre-state of the initial-state functions, and the condition that one of them fails on it."""
        pre = self.state("init.pre")
        fails = any_of(*(self.effect(t, pre).fail for t in self.prog.init_transitions))
        return pre, all_of(self.typed(pre), self._pre_init(pre), fails)

    def step(self, st: SymState, nxt: SymState, act: z3.ArithRef | None = None) -> Cond:
        """`nxt` is a successor of `st` by the transition numbered `act` (a fresh variable if not given)."""
        if self.encoding.steps == "disjunction":
            out = []
            for i, t in enumerate(self.prog.transitions):
                e = self.effect(t, st)
                if e.ok is False:
                    continue
                out.append(all_of(e.ok, self._becomes(st, nxt, e), True if act is None else act == i))
            return any_of(*out)
        if act is None:
            act = self.action_var(nxt.name + ".act")
        live = [(i, self.effect(t, st)) for i, t in enumerate(self.prog.transitions)]
        live = [(i, e) for i, e in live if e.ok is not False]
        out: list[Cond] = [any_of(*(act == i for i, _ in live))]
        out += [z3.Implies(act == i, _z(e.ok)) for i, e in live if e.ok is not True]
        for j, kind in enumerate(self.kinds):
            value = st[j]
            for i, e in reversed(live):
                if j in e.updates:
                    value = self._ite(kind, act == i, e.updates[j], value)
            out.append(self._eq(kind, nxt[j], value))
        return all_of(*out)

    def action_var(self, name: str) -> Any:
        """A variable numbering the transitions (for `step`)."""
        return z3.BitVec(name, max(len(self.prog.transitions), 1).bit_length() + 1)

    def failure(self, st: SymState) -> Cond:
        """Some enabled step fails on `st`."""
        return any_of(*(self.effect(t, st).fail for t in self.prog.transitions))

    def deadlock(self, st: SymState) -> Cond:
        """No step is enabled on `st` (neither succeeding nor failing)."""
        return all_of(*(all_of(negate(e.ok), negate(e.fail))
                        for e in (self.effect(t, st) for t in self.prog.transitions)))

    def holds(self, pred: Predicate, st: SymState) -> Cond:
        """`pred` evaluates, without error, to true on `st` (one that failed to build holds nowhere)."""
        if pred.error is not None:
            return False
        if not isinstance(pred.term, Term):
            return bool(pred.term)
        v, undef = self.ev(pred.term, st)
        return all_of(negate(undef), v)

    def invariants(self, st: SymState, names: Sequence[str] | None = None) -> Cond:
        return all_of(*(self.holds(p, st) for p in self.prog.invariants if names is None or p.name in names))

    def constraints(self, st: SymState) -> Cond:
        return all_of(*(self.holds(p, st) for p in self.prog.constraints))

    # -- transitions --------------------------------------------------------------------------------
    def effect(self, t: Transition, st: SymState) -> Effect:
        """When `t` succeeds or fails on `st`, walking its checks in order, and its new values."""
        cached = st.effects.get(id(t))
        if cached is not None:
            return cached[1]
        passed: Cond = True
        fails: list[Cond] = []
        for c in t.checks:
            if c.kind == "error":
                fails.append(passed)
                passed = False
                break
            v, undef = self.ev(c.term, st)
            if c.kind == "require":
                fails.append(all_of(passed, undef))
            else:
                fails.append(all_of(passed, any_of(undef, negate(v))))
            passed = all_of(passed, negate(undef), v)
        updates: dict[int, Any] = {}
        bad: list[Cond] = []
        if passed is not False:
            for s, term in t.updates.items():
                v, undef = self.ev(term, st)
                bad.append(undef)
                dom = self.prog.slot_doms[s]
                if self.kinds[s] == "int":
                    lo, hi = self.range(term)
                    if lo < dom.lo or hi > dom.hi:
                        bad.append(negate(self._in_range(v, dom.lo, dom.hi)))
                updates[s] = v
        broken = any_of(*bad)
        e = Effect(all_of(passed, negate(broken)), any_of(*fails, all_of(passed, broken)), updates)
        st.effects[id(t)] = (t, e)
        return e

    def _becomes(self, st: SymState, nxt: SymState, e: Effect) -> Cond:
        return all_of(*(self._eq(k, nxt[i], e.updates.get(i, st[i])) for i, k in enumerate(self.kinds)))

    def _pre_init(self, st: SymState) -> Cond:
        out = []
        for i, (kind, dom) in enumerate(zip(self.kinds, self.prog.slot_doms)):
            choices = self.prog.init_choices.get(i)
            if choices is None:
                out.append(self._eq(kind, st[i], self._const(kind, self.prog.init_defaults[i], dom)))
            elif len(choices) < dom.size:
                out.append(any_of(*(self._eq(kind, st[i], self._const(kind, c, dom)) for c in choices)))
        return all_of(self.typed(st), *out)

    # -- terms -----------------------------------------------------------------------------------------
    def ev(self, t: Term, st: SymState) -> tuple[Any, Cond]:
        """(value, condition under which evaluating `t` raises) on `st`."""
        hit = st.memo.get(id(t))
        if hit is not None:
            return hit[1]
        out = self._ev(t, st)
        st.memo[id(t)] = (t, out)
        return out

    def _ev(self, t: Term, st: SymState) -> tuple[Any, Cond]:
        op, args = t.op, t.args
        kind = _kind(t.dom)
        if op == "const":
            return self._const(kind, args[0], t.dom), False
        if op == "slot":
            return st[args[0]], False
        if op in ("and", "or"):
            return self._lazy(op, args, st)
        if op == "ite":
            (c, cu), (a, au), (b, bu) = (self.ev(x, st) for x in args)
            return self._ite(kind, c, a, b), any_of(cu, all_of(c, au), all_of(negate(c), bu))
        vals, undefs = zip(*(self.ev(x, st) for x in args if isinstance(x, Term)))  # `within` may carry a message
        undef = any_of(*undefs)
        if op == "not":
            return z3.Not(vals[0]), undef
        if op in ("eq", "ne"):
            eq = self._eq(_kind(args[0].dom), vals[0], vals[1])
            return (_z(eq) if op == "eq" else z3.Not(_z(eq))), undef
        if op == "lt":
            return vals[0] < vals[1], undef
        if op == "le":
            return vals[0] <= vals[1], undef
        if op in ("add", "sub", "mul"):
            a, b = vals
            return (a + b if op == "add" else a - b if op == "sub" else a * b), undef
        if op == "neg":
            return -vals[0], undef
        if op in ("min", "max"):
            a, b = vals
            return z3.If(a <= b, a, b) if op == "min" else z3.If(a >= b, a, b), undef
        if op in ("floordiv", "mod"):
            return self._division(op, vals[0], vals[1], self.range(args[1]), undef)
        if op == "select":
            return self._select(t, kind, vals, undef)
        if op == "in":
            return self._member(args[0].dom, vals[0], args[1], vals[1], undef)
        if op == "single":
            return self._single(t.dom, args[0], vals[0], undef)
        if op == "within":
            n = args[1].args[0]
            lo, hi = self.range(args[0])
            if lo < 0 or hi >= n:
                undef = any_of(undef, negate(self._in_range(vals[0], 0, n - 1)))
            return vals[0], undef
        if op in ("union", "inter", "diff"):
            return self._set_op(op, vals[0], vals[1]), undef
        if op == "card":
            return self._card(vals[0]), undef
        raise AssertionError(f"no encoding for term op {op!r}")

    def _lazy(self, op: str, args: tuple, st: SymState) -> tuple[Any, Cond]:
        """`and`/`or` stop at the first operand that decides them; later operands may not raise."""
        vals, undef, reach = [], [], True
        for x in args:
            v, u = self.ev(x, st)
            undef.append(all_of(reach, u))
            reach = all_of(reach, v if op == "and" else z3.Not(v))
            vals.append(v)
        return (z3.And(*vals) if op == "and" else z3.Or(*vals)), any_of(*undef)

    def _division(self, op: str, a: Any, b: Any, brange: tuple[int, int], undef: Cond) -> tuple[Any, Cond]:
        lo, hi = brange
        zero = lo <= 0 <= hi
        if zero:
            undef = any_of(undef, b == 0)
        if self.width:  # z3's % on bit-vectors (bvsmod) takes the divisor's sign, as Python's does
            m = a % b
            return (m if op == "mod" else (a - m) / b), undef
        # SMT-LIB div/mod are Euclidean: equal to Python's for b > 0; for b < 0 negate both sides.
        q = (a / b) if lo > 0 else z3.If(b > 0, a / b, (-a) / (-b))
        return (q if op == "floordiv" else a - b * q), undef

    def _select(self, t: Term, kind: str, vals: tuple, undef: Cond) -> tuple[Any, Cond]:
        k, items = vals[0], vals[1:]
        lo, hi = self.range(t.args[0])
        n = len(items)
        if lo < 0 or hi >= n:
            undef = any_of(undef, negate(self._in_range(k, 0, n - 1)))
        first, last = max(lo, 0), min(hi, n - 1)
        if first > last:
            return items[0], True
        out = items[last]
        for i in range(last - 1, first - 1, -1):
            out = self._ite(kind, k == self._int(i), items[i], out)
        return out, undef

    # -- integers -------------------------------------------------------------------------------------
    def _int(self, v: int) -> Any:
        return z3.IntVal(v) if self.width == 0 else z3.BitVecVal(v, self.width)

    def _in_range(self, v: Any, lo: int, hi: int) -> Cond:
        return z3.And(v >= self._int(lo), v <= self._int(hi))

    def range(self, t: Term) -> tuple[int, int]:
        """Sound bounds of an integer term's value, from its slots' domains (not the term's own hints)."""
        hit = self._ranges.get(id(t))
        if hit is not None:
            return hit[1]
        out = self._range(t)
        self._ranges[id(t)] = (t, out)
        return out

    def _range(self, t: Term) -> tuple[int, int]:
        op, args = t.op, t.args
        if _kind(t.dom) == "bool":
            return 0, 1
        if op == "const":
            v = args[0]
            return (v, v) if _kind(t.dom) == "int" else (0, 0)
        if op == "slot":
            d = self.prog.slot_doms[args[0]]
            return (d.lo, d.hi) if _kind(d) == "int" else (0, 0)
        if op == "card":
            return 0, args[0].dom.elem.size
        if _kind(t.dom) == "set":
            return 0, 0
        if op == "within":
            lo, hi = self.range(args[0])
            return max(lo, 0), min(hi, args[1].args[0] - 1)
        if op in ("ite", "select"):  # the value is one of args[1:]
            rs = [self.range(x) for x in args[1:]]
            return min(r[0] for r in rs), max(r[1] for r in rs)
        rs = [self.range(x) for x in args if isinstance(x, Term)]
        if op == "neg":
            return -rs[0][1], -rs[0][0]
        (alo, ahi), (blo, bhi) = rs
        if op == "add":
            return alo + blo, ahi + bhi
        if op == "sub":
            return alo - bhi, ahi - blo
        if op == "mul":
            ps = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
            return min(ps), max(ps)
        if op == "min":
            return min(alo, blo), min(ahi, bhi)
        if op == "max":
            return max(alo, blo), max(ahi, bhi)
        m = max(abs(alo), abs(ahi), abs(blo), abs(bhi))
        return -m, m  # floordiv, mod: |a // b| <= |a| and |a % b| < |b| for b != 0

    def _bv_width(self) -> int:
        """Bits of a signed bit-vector that holds every integer any term of the program computes."""
        terms: list[Term] = []
        for t in self.prog.transitions + self.prog.init_transitions:
            terms += [c.term for c in t.checks if c.term is not None] + list(t.updates.values())
        terms += [p.term for p in self.prog.invariants + self.prog.constraints if isinstance(p.term, Term)]
        bound = max([abs(d.lo) + abs(d.hi) for d in self.prog.slot_doms if _kind(d) == "int"] + [1])
        seen: set[int] = set()
        stack = list(terms)
        while stack:
            t = stack.pop()
            if id(t) in seen:
                continue
            seen.add(id(t))
            if _kind(t.dom) == "int":
                lo, hi = self.range(t)
                bound = max(bound, abs(lo), abs(hi))
            stack.extend(a for a in t.args if isinstance(a, Term))
        return bound.bit_length() + 3  # sign, and headroom for a - a % b in floor division

    # -- sets ---------------------------------------------------------------------------------------------
    def _bools(self) -> bool:
        return self.encoding.sets == "bools"

    def _elements(self, s: Any, size: int) -> list[Any]:
        if isinstance(s, tuple):
            return list(s)
        return [z3.Extract(j, j, s) == 1 for j in range(size)]

    def _from_elements(self, elems: list[Any]) -> Any:
        if self._bools():
            return tuple(elems)
        bits = [z3.If(_z(b), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)) for b in reversed(elems)]
        return bits[0] if len(bits) == 1 else z3.Concat(*bits)

    def _member(self, sdom: SetDomain, s: Any, i_term: Term, i: Any, undef: Cond) -> tuple[Any, Cond]:
        size = sdom.elem.size
        lo, hi = self.range(i_term)
        if lo < 0:
            undef = any_of(undef, i < self._int(0))
        if i_term.op == "const":
            j = i_term.args[0]
            return (_z(self._elements(s, size)[j]) if 0 <= j < size else z3.BoolVal(False)), undef
        elems = self._elements(s, size)
        cases = [z3.And(i == self._int(j), elems[j]) for j in range(max(lo, 0), min(hi, size - 1) + 1)]
        return _z(any_of(*cases)), undef

    def _single(self, sdom: SetDomain, i_term: Term, i: Any, undef: Cond) -> tuple[Any, Cond]:
        size = sdom.elem.size
        lo, hi = self.range(i_term)
        if lo < 0 or hi >= size:
            undef = any_of(undef, negate(self._in_range(i, 0, size - 1)))
        if i_term.op == "const":
            return self._const("set", 1 << i_term.args[0] if 0 <= i_term.args[0] < size else 0, sdom), undef
        return self._from_elements([i == self._int(j) if lo <= j <= hi else z3.BoolVal(False) for j in range(size)]), undef

    def _set_op(self, op: str, a: Any, b: Any) -> Any:
        if isinstance(a, tuple):
            if op == "union":
                return tuple(z3.Or(x, y) for x, y in zip(a, b))
            if op == "inter":
                return tuple(z3.And(x, y) for x, y in zip(a, b))
            return tuple(z3.And(x, z3.Not(y)) for x, y in zip(a, b))
        return a | b if op == "union" else a & b if op == "inter" else a & ~b

    def _card(self, s: Any) -> Any:
        if isinstance(s, tuple):
            bits = [z3.If(b, self._int(1), self._int(0)) for b in s]
        elif self.width:
            bits = [z3.ZeroExt(self.width - 1, z3.Extract(j, j, s)) for j in range(s.size())]
        else:
            bits = [z3.If(z3.Extract(j, j, s) == 1, z3.IntVal(1), z3.IntVal(0)) for j in range(s.size())]
        return z3.Sum(*bits) if len(bits) > 1 else bits[0]

    # -- values of any kind ------------------------------------------------------------------------------------
    def _const(self, kind: str, v: Any, dom: Domain | None) -> Any:
        if kind == "bool":
            return z3.BoolVal(bool(v))
        if kind == "int":
            return self._int(v)
        size = dom.elem.size
        if self._bools():
            return tuple(z3.BoolVal(bool(v >> j & 1)) for j in range(size))
        return z3.BitVecVal(v, size)

    def _eq(self, kind: str, a: Any, b: Any) -> Cond:
        if isinstance(a, tuple):
            return all_of(*(x == y for x, y in zip(a, b)))
        return a == b

    def _ite(self, kind: str, c: Any, a: Any, b: Any) -> Any:
        if isinstance(a, tuple):
            return tuple(z3.If(c, x, y) for x, y in zip(a, b))
        return z3.If(c, a, b)

