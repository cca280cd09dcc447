"""Compile a `Program`'s terms to numpy code that runs over a batch of packed states.

The third interpreter of the term language (after `lockstep.checker.interpret` and `lockstep.checker.codegen`),
following `lockstep.specs.lang.terms.OPS` column-wise: a Bool term is a bool array, an integer term an
int64 array, a Set term an int64 bitmask array (a tuple of them when its universe exceeds 63
elements), `ite` is `np.where`, `select` a gather, `card` a popcount. Every term is computed on
every row of the batch, with safe stand-ins where the operation would fail (a zero divisor, an
index out of range); a parallel *error mask* records the rows where the scalar engine would
really evaluate the failing operation, honouring the laziness of `and`, `or` and `ite`. Shared
subterms are computed once per batch, across transitions.

`transitions` yields, per transition, the enabled rows, the XOR deltas of their packed words,
and the rows where the step fails; `predicate` yields a row mask for invariants or constraints.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from lockstep.specs.lang.program import Predicate, Program, Transition
from lockstep.specs.lang.terms import Term
from lockstep.specs.lang.types import SetDomain

from .layout import CHUNK, Layout, VectorUnsupported

LIMIT = 1 << 62  # integer terms must stay within +-LIMIT, so int64 arithmetic never overflows
_TEMP = re.compile(r"\bt\d+\b")


def _chunks(dom: Any) -> int:
    """How many int64 columns a set value of `dom` takes (1 for every non-set value)."""
    if isinstance(dom, SetDomain):
        return max(1, -(-dom.elem.size // CHUNK))
    return 1


def _select(k: np.ndarray, items: tuple, n: int) -> np.ndarray:
    """items[k] row by row (k already clipped to 0..len-1)."""
    rows = np.stack([np.broadcast_to(x, (n,)) for x in items])
    return rows[k, np.arange(n)]


def _bit(chunks: tuple, i: np.ndarray, n: int) -> np.ndarray:
    """Whether element i is in a chunked set, row by row (i >= 0; beyond the universe: False)."""
    ci, bit = np.divmod(i, CHUNK)
    inside = ci < len(chunks)
    word = _select(np.minimum(ci, len(chunks) - 1), chunks, n)
    return inside & ((word >> bit) & 1 != 0)


def _rows(mask: np.ndarray | bool, n: int) -> np.ndarray:
    """The indices of the true rows of a mask (a scalar mask means every row or none)."""
    if isinstance(mask, np.ndarray) and mask.shape == (n,):
        return mask.nonzero()[0]
    return np.broadcast_to(mask, (n,)).nonzero()[0]


def _u(x: np.ndarray) -> np.ndarray:
    """An int64 array's bits as uint64 (no copy)."""
    return x.view(np.uint64) if x.dtype == np.int64 else x.astype(np.uint64)


HELPERS: dict[str, Any] = {"np": np, "_select": _select, "_bit": _bit, "_u": _u, "_rows": _rows}


class _Emitter:
    """Straight-line numpy source for terms, with one variable per distinct subterm."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.prog = layout.prog
        self.lines: list[str] = []
        self.values: dict[int, Any] = {}
        self.errors: dict[int, str | None] = {}
        self.fails: dict[int, bool] = {}
        self.by_object: dict[int, tuple[Term, int]] = {}  # id(term) -> (term, its structural id)
        self.by_shape: dict[tuple, int] = {}  # (op, type, bounds, arguments' ids) -> structural id
        self.raw: dict[tuple[int, int], str] = {}
        self.rows: dict[Any, str] = {}
        self.own: dict[str, tuple[int, int]] = {}  # a state column's value: (slot, chunk)
        self.count = 0

    def ident(self, t: Term) -> int:
        """A small int equal for structurally equal terms (equal `Term.key`s), found in time linear in
        the term's DAG: the nested key tuples are never hashed, so shared subterms cost nothing."""
        hit = self.by_object.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        dom = 0 if t.dom is None else t.dom.shape_id
        args = tuple(("t", self.ident(a)) if isinstance(a, Term) else a for a in t.args)
        n = self.by_shape.setdefault((t.op, dom, t.lo, t.hi, args), len(self.by_shape))
        self.by_object[id(t)] = (t, n)
        return n

    def tmp(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def emit(self, code: str, per_row: bool = True) -> str:
        """A new temporary holding `code`'s value; a per-row value computed from constants alone
        (a column of a set that folded to literals) is still made an array with one entry per row."""
        if per_row and "W[" not in code and not _TEMP.search(code):
            code = f"np.broadcast_to({code}, (n,))"
        name = self.tmp()
        self.lines.append(f"    {name} = {code}")
        return name

    def stacked(self, items: tuple[str, ...]) -> str:
        """The items as the rows of one 2-D array (built once per batch, for `select`)."""
        key = ("stack",) + items
        if key not in self.rows:
            self.rows[key] = self.emit("np.stack([" + ", ".join(f"np.broadcast_to({x}, (n,))" for x in items) + "])",
                                       per_row=False)
        return self.rows[key]

    def all_rows(self) -> str:
        return self.rows_where(None)

    def rows_where(self, mask: str | None) -> str:
        """The indices of the rows where `mask` holds (every row for None), computed once per mask."""
        if mask not in self.rows:
            code = "np.arange(n)" if mask is None else f"_rows({mask}, n)"
            self.rows[mask] = self.emit(code, per_row=False)
        return self.rows[mask]

    # -- state columns ------------------------------------------------------------------------
    def raw_bits(self, slot: int, chunk: int) -> str:
        """The uint64 bits of one column of the batch's states."""
        key = (slot, chunk)
        if key not in self.raw:
            c = self.layout.slot_columns[slot][chunk]
            code = f"W[{c.word}]" if c.shift == 0 else f"(W[{c.word}] >> np.uint64({c.shift}))"
            if c.shift + c.bits < 64:
                code = f"({code} & np.uint64({c.mask}))"
            self.raw[key] = self.emit(code)
        return self.raw[key]

    def slot_value(self, slot: int) -> Any:
        dom = self.prog.slot_doms[slot]
        cols = self.layout.slot_columns[slot]
        if dom.kind == "set":
            out = tuple(self.emit(f"{self.raw_bits(slot, c.chunk)}.view(np.int64)") for c in cols)
            self.own.update({name: (slot, c.chunk) for name, c in zip(out, cols)})
            return out if len(out) > 1 else out[0]
        raw = self.raw_bits(slot, 0)
        if dom.kind == "bool":
            return self.emit(f"({raw} != 0)")
        lo = cols[0].lo
        return self.emit(f"{raw}.view(np.int64)" + (f" + {lo}" if lo else ""))

    # -- values -------------------------------------------------------------------------------
    def value(self, t: Term | bool) -> Any:
        """Code for the value of `t`: a name or literal (a tuple of them for a chunked set)."""
        if not isinstance(t, Term):
            return repr(bool(t))
        key = self.ident(t)
        if key not in self.values:
            if t.dom is not None and not isinstance(t.dom, SetDomain) and (abs(t.lo) >= LIMIT or abs(t.hi) >= LIMIT):
                raise VectorUnsupported(f"an expression at {t.loc} may exceed 64-bit integers")
            self.values[key] = self._value(t)
        return self.values[key]

    def _value(self, t: Term) -> Any:
        op, a = t.op, t.args
        nch = _chunks(t.dom)
        if op == "const":
            v = a[0]
            if isinstance(t.dom, SetDomain) and nch > 1:
                return tuple(repr((v >> (CHUNK * c)) & ((1 << CHUNK) - 1)) for c in range(nch))
            return repr(v)
        if op == "slot":
            return self.slot_value(a[0])
        if op == "not":
            return self.emit(f"np.logical_not({self.value(a[0])})")
        if op in ("and", "or"):
            sym = " & " if op == "and" else " | "
            return self.emit("(" + sym.join(self.value(x) for x in a) + ")")
        if op == "ite":
            c = self.value(a[0])
            if c in ("True", "False"):
                return self.value(a[1] if c == "True" else a[2])
            return self._per_chunk(nch, "ite", a[1], a[2], c)
        if op in ("eq", "ne"):
            pairs = [(x, y) for x, y in zip(self._as_chunks(a[0]), self._as_chunks(a[1])) if x != y]
            sym, join = ("==", " & ") if op == "eq" else ("!=", " | ")
            if not pairs:  # the same code on both sides: equal on every row
                return repr(op == "eq")
            return self.emit("(" + join.join(f"({x} {sym} {y})" for x, y in pairs) + ")")
        binary = {"lt": "<", "le": "<=", "add": "+", "sub": "-", "mul": "*"}
        if op in binary:
            return self.emit(f"({self.value(a[0])} {binary[op]} {self.value(a[1])})")
        if op == "neg":
            return self.emit(f"(-{self.value(a[0])})")
        if op in ("min", "max"):
            fn = "minimum" if op == "min" else "maximum"
            return self.emit(f"np.{fn}({self.value(a[0])}, {self.value(a[1])})")
        if op in ("floordiv", "mod"):
            x, d = self.value(a[0]), self.value(a[1])
            sym = "//" if op == "floordiv" else "%"
            if a[1].lo <= 0 <= a[1].hi:
                d = self.emit(f"np.where({d} == 0, 1, {d})")
            return self.emit(f"({x} {sym} {d})")
        if op == "select":
            k, items = a[0], a[1:]
            kc = self.value(k)
            if k.lo < 0 or k.hi >= len(items):
                kc = self.emit(f"np.clip({kc}, 0, {len(items) - 1})")
            elif k.op == "const":
                return self.value(items[k.args[0]])
            vals = [self._as_chunks(x) for x in items]
            out = tuple(self.emit(f"{self.stacked(tuple(v[c] for v in vals))}[{kc}, {self.all_rows()}]")
                        for c in range(nch))
            return out if nch > 1 else out[0]
        if op == "in":
            return self._member(a[0], a[1])
        if op == "single":
            return self._single(t, a[0])
        if op == "within":
            i, size = a[0], a[1].args[0]
            v = self.value(i)
            return self.emit(f"np.clip({v}, 0, {size - 1})") if i.lo < 0 or i.hi >= size else v
        if op in ("union", "inter", "diff"):
            return self._per_chunk(nch, op, a[0], a[1])
        if op == "card":
            parts = [f"np.bitwise_count({x})" for x in self._as_chunks(a[0])]
            return self.emit("(" + " + ".join(parts) + ").astype(np.int64)")
        raise VectorUnsupported(f"no vector code for term op {op!r}")

    def _as_chunks(self, t: Term) -> tuple:
        v = self.value(t)
        return v if isinstance(v, tuple) else (v,)

    def _per_chunk(self, nch: int, op: str, x: Term, y: Term, cond: str = "") -> Any:
        """A set operation (or `ite` on `cond`) column by column; a column whose result is already
        known (an operand's column, or an empty one) takes no line, so an update that touches a few
        elements of a large set costs a few lines, not one per column."""
        xs, ys = self._as_chunks(x), self._as_chunks(y)
        out = tuple(self._chunk_op(op, a, b, cond) for a, b in zip(xs, ys))
        return out if nch > 1 else out[0]

    def _chunk_op(self, op: str, x: str, y: str, cond: str) -> str:
        if op == "ite":
            return x if x == y else self.emit(f"np.where({cond}, {x}, {y})")
        if op == "union":
            if x == y or y == "0":
                return x
            return y if x == "0" else self.emit(f"({x} | {y})")
        if op == "inter":
            if x == y:
                return x
            return "0" if "0" in (x, y) else self.emit(f"({x} & {y})")
        if x == y or x == "0":  # diff
            return "0"
        return x if y == "0" else self.emit(f"({x} & ~{y})")

    def _member(self, s: Term, i: Term) -> str:
        chunks = self._as_chunks(s)
        if i.op == "const":
            k = i.args[0]
            if k < 0 or k // CHUNK >= len(chunks):
                return "False"
            return self.emit(f"(({chunks[k // CHUNK]} & {1 << (k % CHUNK)}) != 0)")
        ic = self.value(i)
        if i.lo < 0:
            ic = self.emit(f"np.maximum({ic}, 0)")
        if len(chunks) > 1:
            return self.emit(f"_bit(({', '.join(chunks)},), {ic}, n)")
        if i.hi >= CHUNK:
            return self.emit(f"(({ic} < {CHUNK}) & ((({chunks[0]} >> np.minimum({ic}, {CHUNK - 1})) & 1) != 0))")
        return self.emit(f"((({chunks[0]} >> {ic}) & 1) != 0)")

    def _single(self, t: Term, i: Term) -> Any:
        universe = t.dom.elem.size
        ic = self.value(i)
        if i.lo < 0 or i.hi >= universe:
            ic = self.emit(f"np.clip({ic}, 0, {universe - 1})")
        nch = _chunks(t.dom)
        if nch == 1:
            return self.emit(f"np.left_shift(1, {ic})")
        q, r = self.emit(f"({ic} // {CHUNK})"), self.emit(f"({ic} % {CHUNK})")
        lo, hi = max(i.lo, 0) // CHUNK, min(i.hi, universe - 1) // CHUNK  # the columns the element can be in
        return tuple(self.emit(f"np.where({q} == {c}, np.left_shift(1, {r}), 0)") if lo <= c <= hi else "0"
                     for c in range(nch))

    # -- errors -------------------------------------------------------------------------------
    def can_fail(self, t: Term | bool) -> bool:
        if not isinstance(t, Term):
            return False
        key = self.ident(t)
        if key not in self.fails:
            own = self._own_error(t) is not None
            self.fails[key] = own or any(self.can_fail(x) for x in t.args if isinstance(x, Term))
        return self.fails[key]

    def _own_error(self, t: Term) -> str | None:
        """Code (unevaluated) for the rows where t's own operation fails, given its arguments."""
        op, a = t.op, t.args
        if op in ("floordiv", "mod") and a[1].lo <= 0 <= a[1].hi:
            return f"({self.value(a[1])} == 0)"
        if op == "select" and (a[0].lo < 0 or a[0].hi >= len(a) - 1):
            k = self.value(a[0])
            return f"(({k} < 0) | ({k} > {len(a) - 2}))"
        if op == "in" and a[1].lo < 0:
            return f"({self.value(a[1])} < 0)"
        if op == "single" and (a[0].lo < 0 or a[0].hi >= t.dom.elem.size):
            i = self.value(a[0])
            return f"(({i} < 0) | ({i} >= {t.dom.elem.size}))"
        if op == "within" and (a[0].lo < 0 or a[0].hi >= a[1].args[0]):
            i = self.value(a[0])
            return f"(({i} < 0) | ({i} >= {a[1].args[0]}))"
        return None

    def error(self, t: Term | bool) -> str | None:
        """A bool mask of the rows where evaluating t (lazily, as Python does) fails; None: never."""
        if not self.can_fail(t):
            return None
        key = self.ident(t)
        if key in self.errors:
            return self.errors[key]
        op, a = t.op, t.args
        parts: list[str] = []
        if op in ("and", "or"):
            prefix = None
            for x in a:
                e = self.error(x)
                if e is not None:
                    parts.append(e if prefix is None else f"({prefix} & {e})")
                v = self.value(x) if op == "and" else f"np.logical_not({self.value(x)})"
                prefix = v if prefix is None else self.emit(f"({prefix} & {v})")
        elif op == "ite":
            c = self.value(a[0])
            ec, ea, eb = self.error(a[0]), self.error(a[1]), self.error(a[2])
            parts = [p for p in (ec, ea and f"({c} & {ea})", eb and f"(np.logical_not({c}) & {eb})") if p]
        else:
            parts = [e for e in (self.error(x) for x in a if isinstance(x, Term)) if e is not None]
            own = self._own_error(t)
            if own is not None:
                parts.append(own)
        name = self.emit("(" + " | ".join(parts) + ")") if parts else None
        self.errors[key] = name
        return name

    # -- finishing ------------------------------------------------------------------------------
    def source(self, head: str, tail: list[str]) -> str:
        """The function: head, body, tail, with each temporary deleted after its last use."""
        body = self.lines + tail
        last: dict[str, int] = {}
        for i, line in enumerate(body):
            for name in _TEMP.findall(line):
                last[name] = i
        dead_at: dict[int, list[str]] = {}
        for name, j in last.items():
            if j < len(self.lines):
                dead_at.setdefault(j, []).append(name)
        out = [head]
        for i, line in enumerate(body):
            out.append(line)
            dead = dead_at.get(i)
            if dead:
                out.append("    del " + ", ".join(sorted(dead)))
        return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------- transitions


def _transition(em: _Emitter, prog: Program, layout: Layout, t: Transition) -> str:
    """Lines for one transition; returns the expression of its (idx, deltas, fail) entry."""
    em.lines.append(f"    # {t.label}")
    reach: str | None = None  # rows that reach the current check (None: all rows)
    fail: list[str] = []
    stopped = False

    def within(mask: str) -> str:
        return mask if reach is None else f"({reach} & {mask})"

    for c in t.checks:
        if c.kind == "error":
            fail.append("True" if reach is None else reach)
            stopped = True
            break
        v, e = em.value(c.term), em.error(c.term)
        if c.kind == "require":
            if e is not None:
                fail.append(within(e))
                v = em.emit(f"({v} & np.logical_not({e}))")
            reach = v if reach is None else em.emit(f"({reach} & {v})")
        else:  # assert
            bad = f"np.logical_not({v})" if e is None else f"(np.logical_not({v}) | {e})"
            bad = em.emit(within(bad))
            fail.append(bad)
            ok = f"np.logical_not({bad})"
            reach = em.emit(ok if reach is None else f"({reach} & {ok})")
    deltas: dict[int, list[str]] = {}
    news: list[tuple[Any, str]] = []
    if not stopped:
        for s, term in sorted(t.updates.items()):
            dom = prog.slot_doms[s]
            v, e = em.value(term), em.error(term)
            bad = [e] if e is not None else []
            if dom.kind not in ("bool", "set") and (term.lo < dom.lo or term.hi > dom.hi):
                bad.append(f"(({v} < {dom.lo}) | ({v} > {dom.hi}))")
            if bad:
                fail.append(em.emit(within("(" + " | ".join(bad) + ")")))
            news.append((s, v))
    failed = em.emit("(" + " | ".join(fail) + ")") if fail else None
    if stopped:
        return f"(np.empty(0, np.int64), (), {_full(failed)})"
    enabled = reach
    if failed is not None:
        enabled = em.emit(f"np.logical_not({failed})" if enabled is None else f"({enabled} & np.logical_not({failed}))")
    idx = em.rows_where(enabled)
    dense = enabled is None  # every row: no gathers

    def at(x: str) -> str:
        return x if dense else f"{x}[{idx}]"

    for s, v in news:
        dom = prog.slot_doms[s]
        vals = v if isinstance(v, tuple) else (v,)
        for col, val in zip(layout.slot_columns[s], vals):
            if col.bits == 0 or em.own.get(val) == (s, col.chunk):  # unchanged column
                continue
            if _is_literal(val):
                lit = int(val == "True") if val in ("True", "False") else int(val)
                new = f"np.uint64({(lit - col.lo) & ((1 << 64) - 1)})" if lit != col.lo else None
            elif dom.kind == "bool":
                new = f"{at(val)}.astype(np.uint64)"
            else:  # an enabled row's value lies in the field's domain, so it fits the column
                new = f"_u({at(val)} - {col.lo})" if col.lo else f"_u({at(val)})"
            old = at(em.raw_bits(s, col.chunk))
            part = old if new is None else f"({old} ^ {new})"
            if col.shift:
                part = f"({part} << np.uint64({col.shift}))"
            deltas.setdefault(col.word, []).append(part)
    words = []
    for w in range(layout.words):
        words.append(em.emit(" ^ ".join(deltas[w])) if w in deltas else "None")
    return f"({idx}, ({', '.join(words)},), {_full(failed)})"


def _full(mask: str | None) -> str:
    if mask is None:
        return "None"
    return f"np.broadcast_to({mask}, (n,))"


def _is_literal(code: str) -> bool:
    return not _TEMP.fullmatch(code)


def transitions_source(prog: Program, layout: Layout, transitions: list[Transition]) -> str:
    """`def batch(W, n)`: for each transition, (enabled rows, per-word XOR deltas, failing rows or None)."""
    em = _Emitter(layout)
    entries = [_transition(em, prog, layout, t) for t in transitions]
    em.lines.append("    out = []")
    for entry in entries:
        em.lines.append(f"    out.append({entry})")
    return em.source("def batch(W, n):", ["    return out"])


def can_fail(layout: Layout, term: Term | bool) -> bool:
    """Whether evaluating `term` may fail on some state (a division by zero, an index out of range, ...)."""
    return _Emitter(layout).can_fail(term)


def predicate_source(layout: Layout, preds: list[Predicate], kind: str) -> str:
    """`def pred(W, n)`: the rows that are bad (invariants) or outside (constraints), as the scalar
    engine's `safe_predicates` decides: an invariant that fails to evaluate is bad, a constraint
    that fails to evaluate keeps the state inside."""
    em = _Emitter(layout)
    parts: list[str] = []
    undecided: str | None = None
    for p in preds:
        if p.error is not None or p.term is False:
            if kind == "invariant" or p.term is False:
                parts.append("True" if undecided is None else undecided)
            break
        if p.term is True:
            continue
        v, e = em.value(p.term), em.error(p.term)
        if kind == "invariant":
            parts.append(f"np.logical_not({v})" if e is None else f"(np.logical_not({v}) | {e})")
            continue
        false = f"np.logical_not({v})" if e is None else f"(np.logical_not({v}) & np.logical_not({e}))"
        parts.append(false if undecided is None else f"({undecided} & {false})")
        decided = f"np.logical_not({v})" if e is None else f"(np.logical_not({v}) | {e})"
        nd = f"np.logical_not({decided})"
        undecided = em.emit(nd if undecided is None else f"({undecided} & {nd})")
    result = " | ".join(parts) if parts else "False"
    em.lines.append(f"    out = np.broadcast_to({result}, (n,))")
    return em.source("def pred(W, n):", ["    return out"])


class VectorProgram:
    """The compiled batch functions of one program."""

    def __init__(self, prog: Program, layout: Layout):
        self.prog = prog
        self.layout = layout
        self.source = transitions_source(prog, layout, prog.transitions)
        self.batch = _compile(self.source, "batch", prog.name)
        self.inv_source = predicate_source(layout, prog.invariants, "invariant")
        self.bad = _compile(self.inv_source, "pred", prog.name + ":invariants")
        self.out_source = predicate_source(layout, prog.constraints, "constraint")
        self.outside = _compile(self.out_source, "pred", prog.name + ":constraints")


def _compile(src: str, name: str, where: str) -> Callable[..., Any]:
    ns = dict(HELPERS)
    exec(compile(src, f"<lockstep-vector:{where}>", "exec"), ns)  # noqa: S102 - code generated from the spec's own terms
    return ns[name]
