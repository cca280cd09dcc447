"""A spec's successor function as one C loop: the vector engine's fused kernel.

The numpy interpreter (`vector.compile`) runs each transition over a whole batch, a pass through
memory per operation, and its candidates then need sorting back into the scalar engine's order.
This module generates, per spec, a C function `gen` that takes each frontier row in turn, unpacks
its slots into locals, runs every transition on them (guards, asserts, updates, range checks: the
semantics of `lockstep.checker.codegen`, over 64-bit integers), and writes each successor that
differs from its row — packed words, fingerprint, serial key `row * (transitions + 1) +
transition` — straight into output arrays. Candidates come out in serial order, so the first
occurrence of a state is simply the first one inserted. `bad` tests the invariants of new states.

Python's semantics are kept: floor division and modulo round towards minus infinity, `and`, `or`
and conditional expressions are lazy (`&&`, `||`, `?:`; in invariants and constraints, an `and` or
`or` of at most `EAGER` operands none of which can fail evaluates them all, with `&` and `|`: the
same value without a branch on each state's data, and one over every pair of a product of such tests, or
of its distinct elements, is tested once per element: `_Expr._product`), and an operation that would raise in the
scalar engine (an index outside its type, a zero divisor) sets `err` and yields a harmless stand-in;
`err` is tested after each transition, and a set flag makes that step a failure, as the scalar
engine's exception does. The kernel stops at the first failing step or (if asked) deadlocked row and
says which in `info`.

A spec is fused when its values fit 64-bit integers (sets of at most 63 elements, constants below
2^63) and its source stays under `MAX_LINES`; otherwise the numpy interpreter runs it.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any

import numpy as np

from lockstep.specs.lang.program import Program, Transition
from lockstep.specs.lang.terms import Term
from lockstep.specs.lang.types import SetDomain

from ...codegen import _range_check, _total
from ...reduction.ample import Reducer
from ..layout import CHUNK, Layout
from ..symmetry import BatchSymmetry
from .canon import CanonSource
from .cbuild import Library
from .choose import ChooseSource
from .runtime import PRELUDE

MAX_LINES = 1_000_000  # larger kernels would take the C compiler too long (Autobahn at its default bounds: 86,000 lines)
PART_LINES = 12_000  # a spec's transitions go into sources of about this many lines, compiled at once
EAGER = 8  # an `and` or `or` of at most this many operands that cannot fail, in an invariant or a constraint, has no branches
WIDE = 4  # states of more words are copied and hashed by loops rather than word by word
_I64 = 1 << 63
_LOCAL = re.compile(r"\bs\d+(?:_\d+)?\b")
_ERR = re.compile(r"\berr\b")  # the step's error flag, in generated code
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|-?[0-9]+|INT64_C\(-?[0-9]+\)")

HELPERS = r"""
typedef struct {
    uint64_t *w; int64_t ld; uint64_t *fp; int64_t *key; int64_t *info;  /* candidates, stop */
    uint8_t *en; uint8_t *un; int32_t *el; int32_t *ne;                 /* the row's enabled, unsafe steps */
} Out;
#define FAIL(t) do { o->info[0] = 1; o->info[1] = r; o->info[2] = (t); o->info[3] = g; *mp = m; *gp = g; return 1; } \
    while (0)
static inline int64_t pdiv(int64_t a, int64_t b, int *err) {
    if (!b) { *err = 1; return 0; }
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
static inline int64_t pmod(int64_t a, int64_t b, int *err) {
    if (!b) { *err = 1; return 0; }
    int64_t x = a % b;
    if (x != 0 && ((x < 0) != (b < 0))) x += b;
    return x;
}
static inline uint64_t hash_col(const uint64_t *col, int64_t ld, int64_t nw, uint64_t seed) {
    uint64_t h = mix(col[0] ^ seed);
    for (int64_t k = 1; k < nw; k++) h = mix(h ^ col[k * ld]);
    return h;
}
static inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t popcount(int64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_popcountll((unsigned long long)x);
#else
    uint64_t u = (uint64_t)x; int64_t c = 0;
    while (u) { u &= u - 1; c++; }
    return c;
#endif
}
static inline int64_t member(int64_t s, int64_t i, int *err) {
    if (i < 0) { *err = 1; return 0; }
    return i < 63 ? (s >> i) & 1 : 0;
}
static inline int64_t single(int64_t i, int64_t size, int *err) {
    if (i < 0 || i >= size) { *err = 1; return 0; }
    return (int64_t)1 << i;
}
static inline int64_t memberk(const int64_t *chunks, int64_t first, int64_t k, int64_t i, int *err) {
    /* element i of a set whose chunks first..first+k-1 are given (i's bounds keep it out of the others) */
    if (i < 0) { *err = 1; return 0; }
    const int64_t c = i / 63 - first;
    return c >= 0 && c < k ? (chunks[c] >> (i % 63)) & 1 : 0;
}
static inline int64_t singlek(int64_t i, int64_t size, int64_t c, int *err) {
    if (i < 0 || i >= size) { *err = 1; return 0; }
    return i / 63 == c ? (int64_t)1 << (i % 63) : 0;
}
static inline int64_t within(int64_t i, int64_t n, int *err) {
    if (i < 0 || i >= n) { *err = 1; return 0; }
    return i;
}
static inline int64_t sel(int64_t k, int64_t n, const int64_t *items, int *err) {
    if (k < 0 || k >= n) { *err = 1; return items[0]; }
    return items[k];
}
"""


class Unfusable(Exception):
    """The spec's values or size do not suit the fused kernel (said why); the numpy interpreter runs it."""


def _literal(v: object) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        if not -_I64 < v < _I64:
            raise Unfusable(f"a constant ({v}) does not fit a 64-bit integer")
        return str(v) if -(1 << 31) < v < (1 << 31) else f"INT64_C({v})"
    raise Unfusable(f"a constant of type {type(v).__name__}")


def _chunk_op(op: str, x: str, y: str) -> str:
    """One chunk of a set operation, folding the cases whose result is an operand or empty (an update that
    touches a few elements of a large set then leaves the other chunks as they are, without code)."""
    if op == "union":
        return x if x == y or y == "0" else y if x == "0" else f"({x} | {y})"
    if op == "inter":
        return x if x == y else "0" if "0" in (x, y) else f"({x} & {y})"
    return "0" if x == y or x == "0" else x if y == "0" else f"({x} & ~{y})"


def _nchunks(t: Term) -> int:
    """How many 63-element chunks a set-valued term takes (1 for every other value)."""
    return max(1, -(-t.dom.elem.size // CHUNK)) if isinstance(t.dom, SetDomain) else 1


class _Expr:
    """C expressions for terms, over int64_t locals `s<slot>` (`s<slot>_<chunk>` for a set of more than 63
    elements, whose value is a tuple of chunk expressions); `used` collects the slots read. Subterms that
    the code would repeat and that cannot fail are bound once to locals (`share`), as the scalar code
    generator does, so the C grows with the terms' DAG, not their trees."""

    BINARY = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "add": "+", "sub": "-", "mul": "*"}

    def __init__(self, chunks: dict[int, int], eager: bool = False):
        self.chunks = chunks  # slot -> chunk count, for the sets of more than one chunk
        self.eager = eager  # `and` and `or` of operands that cannot fail evaluate all of them, without branches
        self.used: set[int] = set()
        self.temps: dict[int, str | tuple] = {}
        self._ntemps = 0

    def __call__(self, t: Term | bool) -> str:
        """A scalar term's value."""
        v = self.value(t)
        assert isinstance(v, str), "a set of several chunks used as a scalar"
        return v

    def sets(self, t: Term) -> tuple:
        """A set term's chunks (one for a small set)."""
        v = self.value(t)
        return v if isinstance(v, tuple) else (v,)

    def value(self, t: Term | bool) -> str | tuple:
        if not isinstance(t, Term):
            return _literal(bool(t))
        hit = self.temps.get(id(t))
        if hit is not None:
            return hit
        op, a = t.op, t.args
        k = _nchunks(t)
        if op == "const":
            if k > 1:
                return tuple(_literal((a[0] >> (CHUNK * c)) & ((1 << CHUNK) - 1)) for c in range(k))
            return _literal(a[0])
        if op == "slot":
            self.used.add(a[0])
            n = self.chunks.get(a[0])
            return tuple(f"s{a[0]}_{c}" for c in range(n)) if n else f"s{a[0]}"
        if op == "not":
            return f"(!{self(a[0])})"
        if op in ("and", "or"):
            product = self._product(op, a) if self.eager else None
            if product is not None:
                return product
            parts = [self(x) for x in a]
            eager = self.eager and len(parts) <= EAGER and not any(_ERR.search(x) for x in parts)
            return "(" + ((" & " if eager else " && ") if op == "and" else (" | " if eager else " || ")).join(parts) + ")"
        if op == "ite":
            c = self(a[0])
            if k > 1:
                return tuple(x if x == y else f"({c} ? {x} : {y})" for x, y in zip(self.sets(a[1]), self.sets(a[2])))
            return f"({c} ? {self(a[1])} : {self(a[2])})"
        if op in ("eq", "ne") and (_nchunks(a[0]) > 1 or _nchunks(a[1]) > 1):
            pairs = [f"({x} == {y})" for x, y in zip(self.sets(a[0]), self.sets(a[1]))]
            both = "(" + " && ".join(pairs) + ")"
            return both if op == "eq" else f"(!{both})"
        if op in self.BINARY:
            return f"({self(a[0])} {self.BINARY[op]} {self(a[1])})"
        if op in ("floordiv", "mod"):
            x, y = a
            if x.lo >= 0 and y.lo > 0:  # C's truncating division is Python's floor division here
                return f"({self(x)} {'/' if op == 'floordiv' else '%'} {self(y)})"
            return f"{'pdiv' if op == 'floordiv' else 'pmod'}({self(x)}, {self(y)}, &err)"
        if op == "neg":
            return f"(-{self(a[0])})"
        if op in ("min", "max"):
            return f"i{op}({self(a[0])}, {self(a[1])})"
        if op in ("union", "inter", "diff"):
            out = tuple(_chunk_op(op, x, y) for x, y in zip(self.sets(a[0]), self.sets(a[1])))
            return out if k > 1 else out[0]
        if op == "card":
            return "(" + " + ".join(f"popcount({x})" for x in self.sets(a[0])) + ")"
        if op == "in":
            return self._member(a[0], a[1])
        if op == "single":
            return self._single(t, a[0], k)
        if op == "within":
            i, n = a[0], a[1].args[0]
            return self(i) if 0 <= i.lo and i.hi < n else f"within({self(i)}, {n}, &err)"
        if op == "select":
            key, items = a[0], a[1:]
            kc = self(key)
            safe = 0 <= key.lo and key.hi < len(items)
            cols = [self.sets(x) if k > 1 else (self(x),) for x in items]
            out = []
            for c in range(k):
                body = ", ".join(col[c] for col in cols)
                out.append(f"((const int64_t[]){{{body}}})[{kc}]" if safe else
                           f"sel({kc}, {len(items)}, (const int64_t[]){{{body}}}, &err)")
            return tuple(out) if k > 1 else out[0]
        raise Unfusable(f"no C for the term operator {op!r}")

    def _product(self, op: str, args: tuple) -> str | None:
        """An `and` of `not (x and y)` (or an `or` of `x and y`) over every pair of a product X × Y of operands
        that cannot fail, as one test of each side: `not (any X and any Y)` (or `any X and any Y`); over every
        pair of distinct elements of one set X, as a count: at most one of X holds (or at least two do). A
        quantifier over two variables (`ForAll(R, R, lambda a, b: Not(And(p(a), q(b))))`, or mutual exclusion
        over pairs a != b) unrolls into about |X| · |Y| tests; this is |X| + |Y|. None where the operands are not
        of one of these shapes."""
        if len(args) < 4:
            return None
        pairs = []
        for t in args:
            if op == "and":
                if not (isinstance(t, Term) and t.op == "not" and isinstance(t.args[0], Term)):
                    return None
                t = t.args[0]
            if not (isinstance(t, Term) and t.op == "and" and len(t.args) == 2):
                return None
            pairs.append((self(t.args[0]), self(t.args[1])))
        xs, ys = list(dict.fromkeys(x for x, _ in pairs)), list(dict.fromkeys(y for _, y in pairs))
        if len(set(pairs)) != len(pairs) or any(_ERR.search(v) for v in xs + ys):
            return None
        if len(pairs) == len(xs) * len(ys):
            both = f"(({' | '.join(xs)}) & ({' | '.join(ys)}))"
            return f"(!{both})" if op == "and" else both
        if set(xs) == set(ys) and len(pairs) == len(xs) * (len(xs) - 1) and all(x != y for x, y in pairs):
            total = " + ".join(f"(int64_t){x}" for x in xs)  # the pairs of distinct elements: how many hold
            return f"(({total}) <= 1)" if op == "and" else f"(({total}) >= 2)"
        return None

    def _member(self, s: Term, i: Term) -> str:
        chunks = self.sets(s)
        if isinstance(i, Term) and i.op == "const":
            e = i.args[0]
            if e < 0:
                return "member(0, -1, &err)"
            return f"(({chunks[e // CHUNK]} >> {e % CHUNK}) & 1)" if e // CHUNK < len(chunks) else "0"
        if len(chunks) == 1:
            return f"member({chunks[0]}, {self(i)}, &err)"
        lo, hi = max(i.lo, 0) // CHUNK, min(i.hi // CHUNK, len(chunks) - 1)  # the chunks the element can be in
        if hi < lo:  # never a member (or a negative index: the error)
            return f"member(0, {self(i)}, &err)"
        return f"memberk((const int64_t[]){{{', '.join(chunks[lo:hi + 1])}}}, {lo}, {hi - lo + 1}, {self(i)}, &err)"

    def _single(self, t: Term, i: Term, k: int) -> str | tuple:
        size = t.dom.elem.size
        ic = self(i)
        if k == 1:
            return f"((int64_t)1 << {ic})" if i.lo >= 0 and i.hi < size else f"single({ic}, {size}, &err)"
        lo, hi = max(i.lo, 0) // CHUNK, min(i.hi, size - 1) // CHUNK  # the chunks the element can be in
        check = f"singlek({ic}, {size}, {lo}, &err)"  # the index's range is checked once, in its first chunk
        return tuple((check if c == lo else f"singlek({ic}, {size}, {c}, &err)") if lo <= c <= hi else "0"
                     for c in range(k))

    def share(self, roots: list, indent: str) -> list[str]:
        """Bind every subterm of `roots` that the code would repeat to a local (children first); later uses
        read the local. One that may fail is computed at once all the same (every operation yields a harmless
        stand-in where it would raise), but into an error flag of its own, which each use adds to the step's
        (`(err |= eNerr, eN)`): an error counts only where the lazy evaluation reaches the term, and a chain of
        sends into a large set does not repeat each earlier send's code. Returns the binding lines."""
        lines = []
        for t, total in _repeated(roots, self.temps):
            code = self.value(t)
            self._ntemps += 1
            name = f"e{self._ntemps}"
            parts = code if isinstance(code, tuple) else (code,)
            # a chunk that is already a name or a constant is not copied
            names = [x if _IDENT.fullmatch(x) else f"{name}_{c}" if isinstance(code, tuple) else name
                     for c, x in enumerate(parts)]
            flag = f"{name}err"
            if not total:
                lines.append(f"{indent}int {flag} = 0;")
            for n, x in zip(names, parts):
                if n != x:
                    lines.append(f"{indent}const int64_t {n} = {x if total else _ERR.sub(flag, x)};")
            uses = names if total else [f"({flag} ? (err = 1, {n}) : {n})" for n in names]
            self.temps[id(t)] = tuple(uses) if isinstance(code, tuple) else uses[0]
        return lines

    def forget(self) -> None:
        """Drop the shared locals (they belong to one transition or predicate)."""
        self.temps.clear()


def _repeated(roots: list, bound: dict[int, Any]) -> list[tuple[Term, bool]]:
    """The subterms of `roots` (a DAG) reached more than once and not yet in `bound`, children before
    parents, each with whether it can never fail (`codegen`'s test)."""
    refs: dict[int, int] = {}
    memo: dict[int, bool] = {}
    order: list[Term] = []
    stack = [(r, False) for r in roots if isinstance(r, Term)]
    while stack:  # post-order over the DAG, counting the edges into each node
        t, done = stack.pop()
        if done:
            order.append(t)
            continue
        refs[id(t)] = refs.get(id(t), 0) + 1
        if refs[id(t)] > 1 or t.op in ("const", "slot"):
            continue
        stack.append((t, True))
        stack.extend((x, False) for x in reversed(t.args) if isinstance(x, Term))
    return [(t, _total(t, memo)) for t in order if refs[id(t)] > 1 and id(t) not in bound]


class _Source:
    """The generated C of one program and packing. With a `reduction` (a `Reducer`), its `gen` also marks
    each row's enabled and unsafe steps, chooses the row's reduced set (`kernels.choose`) and flags each
    candidate for the cycle proviso; with a `symmetry` (a `BatchSymmetry`), each candidate is replaced by
    its orbit's representative (`kernels.canon`) before it is fingerprinted. A kernel without them is
    smaller, and faster. With `loops`, every enabled step is a candidate, also one that leaves its row as it is
    (the random walkers choose among them all, and hash only the one they take); `tail` is more C compiled with the
    kernel."""

    def __init__(self, prog: Program, layout: Layout, reduction: Reducer | None = None,
                 symmetry: BatchSymmetry | None = None, loops: bool = False, tail: str = ""):
        self.prog, self.layout = prog, layout
        self.marks = reduction is not None
        self.loops = loops  # every enabled step is a candidate, also one that leaves the row as it is
        self.symmetric = symmetry is not None and bool(symmetry.ranges)
        for i, dom in enumerate(prog.slot_doms):
            if dom.kind not in ("bool", "set") and not (-_I64 < dom.lo and dom.hi < _I64):
                raise Unfusable(f"{prog.slot_names[i]} does not fit a 64-bit integer")
        self.chunks = {s: len(cols) for s, cols in enumerate(layout.slot_columns) if len(cols) > 1}
        self.wide = layout.words > WIDE  # states of many words are copied and hashed by loops
        self.T1 = len(prog.transitions) + 1
        self.vmask = [0] * layout.words  # the visible bits of each word (a reduction's unsafe steps change them)
        parts = [PRELUDE, HELPERS]
        if reduction is not None:
            for slot in reduction.visible:
                for c in layout.slot_columns[slot]:
                    self.vmask[c.word] |= c.mask << c.shift
            parts.append(ChooseSource(reduction, layout, _literal).text)
        if self.symmetric:
            parts.append(CanonSource(symmetry).text)
            parts.append(f"""void canon_batch(uint64_t *W, int64_t ld, int64_t n) {{
    uint64_t w[{layout.words}];
    for (int64_t r = 0; r < n; r++) {{
        for (int64_t k = 0; k < {layout.words}; k++) w[k] = W[k * ld + r];
        canon(w);
        for (int64_t k = 0; k < {layout.words}; k++) W[k * ld + r] = w[k];
    }}
}}""")
        self.parts: list[str] = []  # the sources of the transitions, for a large spec (`_gen`)
        self.text = "\n".join(parts + [self._gen(), self._bad(), self._outside(), tail, ""])
        lines = self.text.count("\n") + sum(p.count("\n") for p in self.parts)
        if lines > MAX_LINES:
            raise Unfusable(f"its kernel has {lines:,} lines (the limit is {MAX_LINES:,})")

    # -- slots ---------------------------------------------------------------------------------
    @staticmethod
    def _word(w: int) -> str:
        return f"w[{w}]"

    def _unpack(self, slots: set[int], ind: str, body: list[str]) -> list[str]:
        """Lines binding the slot locals (`s<slot>`, `s<slot>_<chunk>`) that `body` reads."""
        named = set(_LOCAL.findall("\n".join(body)))
        out = []
        for s in sorted(slots):
            for c in self.layout.slot_columns[s]:
                name = f"s{s}_{c.chunk}" if s in self.chunks else f"s{s}"
                if name not in named:
                    continue
                raw = f"({self._word(c.word)} >> {c.shift})" if c.shift else self._word(c.word)
                if c.shift + c.bits < 64:
                    raw = f"({raw} & UINT64_C({c.mask}))"
                lo = f" + {_literal(c.lo)}" if c.lo else ""
                out.append(f"{ind}const int64_t {name} = (int64_t){raw}{lo};")
        return out

    def _words(self, ind: str) -> list[str]:
        return [f"{ind}for (int64_t k = 0; k < {self.layout.words}; k++) w[k] = W[k * ld + r];"]

    def _pack(self, values: dict[int, tuple], ind: str) -> tuple[list[str], list[int]]:
        """Lines computing the successor's changed words n<k> from the row's and the new slot values, and
        which words they are (narrow states: every word)."""
        lay = self.layout
        changed = sorted({c.word for s, codes in values.items() for c, code in zip(lay.slot_columns[s], codes)
                          if c.bits and code is not None})
        words = changed if self.wide else list(range(lay.words))
        lines = [f"{ind}uint64_t " + ", ".join(f"n{w} = {self._word(w)}" for w in words) + ";"] if words else []
        for s, codes in sorted(values.items()):
            for c, code in zip(lay.slot_columns[s], codes):
                if c.bits == 0 or code is None:
                    continue
                keep = ~(c.mask << c.shift) & ((1 << 64) - 1)
                if self.prog.slot_doms[s].kind == "bool":
                    val = f"(uint64_t)({code} != 0)"
                else:
                    val = f"(uint64_t)({code} - {_literal(c.lo)})" if c.lo else f"(uint64_t){code}"
                if c.shift:
                    val = f"({val} << {c.shift})"
                lines.append(f"{ind}n{c.word} = (n{c.word} & UINT64_C({keep})) | {val};")
        return lines, words

    # -- gen -------------------------------------------------------------------------------------
    def _emit(self, tid: int, values: dict[int, tuple], ind: str) -> list[str]:
        """An enabled step: counted; with marks, marked enabled (and unsafe when it loops or writes a visible
        bit); stored with its fingerprint and serial key unless it loops."""
        lay = self.layout
        lines = [f"{ind}if (err) FAIL({tid});", f"{ind}g++;"]
        packed, words = self._pack(values, ind)
        lines += packed
        moved = " || ".join(f"n{w} != w[{w}]" for w in words) or "0"
        visible = "".join(f" || ((n{w} ^ w[{w}]) & UINT64_C({self.vmask[w]}))" for w in words if self.vmask[w])
        lines.append(f"{ind}const int mv = {moved};")
        if self.marks:
            lines.append(f"{ind}o->en[{tid}] = 1; o->un[{tid}] = !mv{visible}; o->el[(*o->ne)++] = {tid};")
        if not words and not self.loops:
            return lines
        lines.append(f"{ind}if ({'1' if self.loops else 'mv'}) {{")
        i2 = ind + "    "
        # with symmetry, the row's successors are replaced by their representatives, and hashed, after the row; a
        # random walk hashes only the step it takes
        if self.symmetric or self.loops:
            if self.wide:
                lines.append(f"{i2}for (int64_t k = 0; k < {lay.words}; k++) o->w[k * o->ld + m] = w[k];")
                lines += [f"{i2}o->w[{w} * o->ld + m] = n{w};" for w in words]
            else:
                lines += [f"{i2}o->w[{w} * o->ld + m] = n{w};" for w in range(lay.words)]
            lines += [f"{i2}o->key[m] = r * {self.T1} + {tid};", f"{i2}m++;", f"{ind}}}"]
            return lines
        if self.wide:
            lines.append(f"{i2}for (int64_t k = 0; k < {lay.words}; k++) o->w[k * o->ld + m] = w[k];")
            lines += [f"{i2}o->w[{w} * o->ld + m] = n{w};" for w in words]
            lines.append(f"{i2}uint64_t h = hash_col(o->w + m, o->ld, {lay.words}, UINT64_C({lay.seed}));")
        else:
            lines += [f"{i2}o->w[{w} * o->ld + m] = n{w};" for w in range(lay.words)]
            lines.append(f"{i2}uint64_t h = mix(n0 ^ UINT64_C({lay.seed}));")
            lines += [f"{i2}h = mix(h ^ n{w});" for w in range(1, lay.words)]
        if not lay.exact:
            lines.append(f"{i2}if (!h) h = 1;")
        lines += [f"{i2}o->fp[m] = h;", f"{i2}o->key[m] = r * {self.T1} + {tid};", f"{i2}m++;", f"{ind}}}"]
        return lines

    def _transition(self, ex: _Expr, tid: int, t: Transition, ind0: str) -> list[str]:
        """A transition's block: its first guard, the subterms the rest shares, the other checks in order,
        then the new values, their range checks and the successor (the scalar code generator's order)."""
        label = t.label.replace("*/", "* /")
        lines = [f"{ind0}{{ /* {label} */"]
        ind = ind0 + "    "
        depth = 0
        checks = list(t.checks)
        if checks and checks[0].kind == "require":
            lines.append(f"{ind}if ({ex(checks.pop(0).term)}) {{")
            ind, depth = ind + "    ", depth + 1
        lines += ex.share([c.term for c in checks] + list(t.updates.values()), ind)
        pending: list[str] = []
        for c in checks:
            if c.kind == "require":
                pending.append(ex(c.term))
                continue
            if pending:
                lines.append(f"{ind}if ({' && '.join(pending)}) {{")
                ind, depth, pending = ind + "    ", depth + 1, []
            if c.kind == "assert":
                lines.append(f"{ind}if (!{ex(c.term)}) FAIL({tid});")
                continue
            lines.append(f"{ind}FAIL({tid});")
            break
        else:
            if pending:
                lines.append(f"{ind}if ({' && '.join(pending)}) {{")
                ind, depth = ind + "    ", depth + 1
            values = {}
            for s, term in sorted(t.updates.items()):
                codes = ex.sets(term) if s in self.chunks else (ex(term),)
                names = tuple(f"v{s}_{c}" for c in range(len(codes))) if s in self.chunks else (f"v{s}",)
                if s in self.chunks:  # a chunk that keeps its own value takes no code, one that is a name no copy
                    names = tuple(None if x == f"s{s}_{c}" else x if _IDENT.fullmatch(x) else n
                                  for c, (n, x) in enumerate(zip(names, codes)))
                lines += [f"{ind}const int64_t {n} = {x};" for n, x in zip(names, codes) if n not in (None, x)]
                bounds = _range_check(self.prog, s, term)
                if bounds is not None:
                    lo, hi = (_literal(b) for b in bounds)
                    lines.append(f"{ind}if (!({lo} <= v{s} && v{s} <= {hi})) FAIL({tid});")
                values[s] = names
            lines += self._emit(tid, values, ind)
        ex.forget()
        for _ in range(depth):
            ind = ind[:-4]
            lines.append(f"{ind}}}")
        lines += [f"{ind0}    if (err) FAIL({tid});", f"{ind0}}}"]
        return lines

    def _gen(self) -> str:
        """One static function per transition (small functions keep the compiler fast on large specs; it
        inlines them where that pays), and `gen`, the row loop that calls them in order. A spec whose
        transitions take more than `PART_LINES` lines has them in several sources (`parts`), each compiled
        on its own (at once, on as many cores) and exporting `part`, which runs its transitions on a row;
        `gen` calls the parts through pointers that `set_parts` gives it. With a reduction, after a row's
        steps `gen` chooses its reduced set: `ramp[r]` is how many steps it explores (-1: all of them),
        `ren[r]` how many are enabled, and each candidate's flag says 0: explore, 1: in the reduced set (its
        state decides the cycle proviso), 2: explore only if the proviso expands the row fully. With
        symmetry, the row's candidates are then replaced by their representatives and fingerprinted, those
        flagged 2 only by `settle_pruned`, once the proviso has expanded their row (most rows it does not)."""
        funcs: list[list[str]] = []
        for tid, t in enumerate(self.prog.transitions):
            ex = _Expr(self.chunks)
            body = self._transition(ex, tid, t, "    ")
            fn = [f"static int t{tid}(const uint64_t *w, int64_t r, int64_t *mp, int64_t *gp, const Out *o) {{",
                  "    int err = 0;", "    int64_t m = *mp, g = *gp;"]
            funcs.append(fn + self._unpack(ex.used, "    ", body) + body + ["    *mp = m;", "    *gp = g;", "    return 0;",
                                                                           "}"])
        groups: list[list[int]] = [[]]
        size = 0
        for tid, fn in enumerate(funcs):
            if groups[-1] and size + len(fn) > PART_LINES:
                groups.append([])
                size = 0
            groups[-1].append(tid)
            size += len(fn)
        out: list[str] = []
        args = "w, r, &m, &g, &o"
        if len(groups) == 1:
            out += [x for fn in funcs for x in fn]
            calls = [f"        if (t{tid}({args})) goto done;" for tid in range(len(funcs))]
        else:
            sig = "const uint64_t *w, int64_t r, int64_t *mp, int64_t *gp, const Out *o"
            for tids in groups:
                body = [x for tid in tids for x in funcs[tid]]
                body += [f"int part({sig}) {{", *[f"    if (t{tid}(w, r, mp, gp, o)) return 1;" for tid in tids],
                         "    return 0;", "}"]
                self.parts.append("\n".join([PRELUDE, HELPERS, *body, ""]))
            out += [f"static int (*PART[{len(groups)}])({sig});",
                    f"void set_parts(void **p) {{ for (int k = 0; k < {len(groups)}; k++) PART[k] = (int (*)({sig}))p[k]; }}"]
            calls = [f"        if (PART[{k}]({args})) goto done;" for k in range(len(groups))]
        ind = "        "
        marks, T, lay = self.marks, self.T1 - 1, self.layout
        if self.symmetric:
            out += ["static void settle_row(uint64_t *out_w, int64_t ldo, uint64_t *out_fp, int64_t m0, int64_t m,",
                    "                       const uint8_t *flag) {",
                    "    /* the row's candidates m0..m-1: each replaced by its orbit's representative, and hashed; with",
                    "       `flag`, one left out of the reduced set (2) only once the proviso expands its row (fingerprint 0",
                    "       till then: `settle_pruned`) */",
                    f"    uint64_t c[{lay.words}];",
                    "    for (int64_t j = m0; j < m; j++) {",
                    "        if (flag && flag[j] == 2) { out_fp[j] = 0; continue; }",
                    f"        for (int64_t k = 0; k < {lay.words}; k++) c[k] = out_w[k * ldo + j];",
                    "        canon(c);",
                    f"        for (int64_t k = 0; k < {lay.words}; k++) out_w[k * ldo + j] = c[k];",
                    f"        uint64_t h = mix(c[0] ^ UINT64_C({lay.seed}));",
                    f"        for (int64_t k = 1; k < {lay.words}; k++) h = mix(h ^ c[k]);",
                    *([] if lay.exact else ["        if (!h) h = 1;"]),
                    "        out_fp[j] = h;",
                    "    }",
                    "}"]
            if marks:
                out += ["int64_t settle_pruned(uint64_t *out_w, int64_t ldo, uint64_t *out_fp, const uint8_t *flag,",
                        "                      const int64_t *out_key, const uint8_t *back0, const uint8_t *back1,",
                        "                      int64_t lo, int64_t hi) {",
                        "    /* the candidates lo..hi-1 left out of their row's reduced set whose row the cycle proviso",
                        "       expands, settled as `settle_row` does; how many */",
                        "    int64_t n = 0;",
                        "    for (int64_t j = lo; j < hi; j++) {",
                        f"        const int64_t r = out_key[j] / {self.T1};",
                        "        if (flag[j] != 2 || !(back0[r] | back1[r])) continue;",
                        "        settle_row(out_w, ldo, out_fp, j, j + 1, NULL);",
                        "        n++;",
                        "    }",
                        "    return n;",
                        "}"]
        out += ["int64_t gen(const uint64_t *W, int64_t ld, int64_t start, int64_t stop, int deadlock, uint64_t *out_w,",
                "            int64_t ldo, uint64_t *out_fp, int64_t *out_key, int64_t *info, uint8_t *flag, int32_t *ren,",
                "            int32_t *ramp) {",
                f"    uint8_t E[{T + 1}], U[{T + 1}]; int32_t EL[{T + 1}], NE = 0;" if marks else
                "    uint8_t *E = NULL, *U = NULL; int32_t *EL = NULL, NE = 0;",
                "    const Out o = {out_w, ldo, out_fp, out_key, info, E, U, EL, &NE};",
                "    int64_t m = 0, g = 0, m0 = 0;",
                f"    uint64_t w[{lay.words}];"]
        if marks:
            out += [f"    uint8_t A[{T + 1}];", "    PorScratch *S = calloc(1, sizeof *S);",
                    "    if (!S) { info[0] = 3; return 0; }"]
        else:
            out += ["    (void)flag; (void)ren; (void)ramp; (void)NE;"]
        out += ["    for (int64_t r = start; r < stop; r++) {"]
        out += self._words(ind) + [f"{ind}const int64_t g0 = g;", f"{ind}m0 = m;"]
        if marks:
            out += [f"{ind}memset(E, 0, {T}); memset(U, 0, {T}); NE = 0;"]
        out += calls
        out += [f"{ind}if (deadlock && g == g0) {{ info[0] = 2; info[1] = r; info[3] = g; goto done; }}"]
        if marks:
            out += [f"{ind}const int32_t amp = choose(w, E, U, EL, NE, A, S);",
                    f"{ind}ramp[r] = amp; ren[r] = (int32_t)(g - g0);",
                    f"{ind}for (int64_t j = m0; j < m; j++) flag[j] = amp < 0 ? 0 : A[out_key[j] % {self.T1}] ? 1 : 2;"]
        if self.symmetric:
            out += [f"{ind}settle_row(out_w, ldo, out_fp, m0, m, {'flag' if marks else 'NULL'});", f"{ind}m0 = m;"]
        out += ["    }", "    info[3] = g;", "done:"]
        if self.symmetric:  # a step that failed inside a row: the candidates before it
            out += ["    settle_row(out_w, ldo, out_fp, m0, m, NULL);"]
        if marks:
            out += ["    free(S);"]
        out += ["    (void)m0;", "    return m;", "}"]
        return "\n".join(out)

    # -- bad -------------------------------------------------------------------------------------
    def _bad(self) -> str:
        """One static function per invariant (true where it is violated or fails to evaluate), and `bad`."""
        out: list[str] = []
        tests = []
        for i, p in enumerate(self.prog.invariants):
            if p.error is not None or p.term is False:
                tests.append("1")
                break
            if p.term is True:
                continue
            out += self._predicate(f"inv{i}", p.term, lambda v: [f"    return !{v} || err;"])
            tests.append(f"inv{i}(w)")
        out += ["int64_t bad(const uint64_t *W, int64_t ld, int64_t start, int64_t stop) {",
                f"    uint64_t w[{self.layout.words}];",
                "    for (int64_t r = start; r < stop; r++) {"]
        out += self._words("        ")
        out += [f"        if ({' | '.join(tests)}) return r;" if tests else "        (void)w;",
                "    }", "    return -1;", "}"]
        return "\n".join(out)

    def _predicate(self, name: str, term: Term, tail) -> list[str]:
        """A static function `name(w)` of one state's words: evaluates `term` (sharing its repeated subterms)
        and ends with the lines `tail` makes of the value's C expression."""
        ex = _Expr(self.chunks, eager=True)
        body = ex.share([term], "    ")
        body += tail(ex(term)) + ["}"]
        return [f"static int {name}(const uint64_t *w) {{", "    int err = 0;"] + self._unpack(ex.used, "    ", body) + body

    def _outside(self) -> str:
        """`outside(W, ld, start, stop, out)`: out[r] = 1 where state r violates a state constraint, as the
        scalar engine decides it: constraints in order, the first false one puts the state outside, and one
        that fails to evaluate (or an error raised while it was built) keeps it inside."""
        out: list[str] = []
        tests = []
        for i, p in enumerate(self.prog.constraints):
            if p.error is not None:
                break
            if p.term is False:
                tests.append("1")
                break
            if p.term is True:
                continue
            tail = lambda v: [f"    const int v = {v};", "    if (err) return 2;", "    return !v;"]  # noqa: E731
            out += self._predicate(f"con{i}", p.term, tail)
            tests.append(f"con{i}(w)")
        out += ["void outside(const uint64_t *W, int64_t ld, int64_t start, int64_t stop, uint8_t *out) {",
                f"    uint64_t w[{self.layout.words}];",
                "    for (int64_t r = start; r < stop; r++) {"]
        out += self._words("        ") + ["        int o = 0;"]
        for t in tests:  # 1: outside; 2: failed to evaluate, so inside, and no later constraint is asked
            out += [f"        if (!o) o = {t};"]
        out += ["        out[r] = o == 1;", "        (void)w;", "    }", "}"]
        return "\n".join(out)


_P, _I = ctypes.c_void_p, ctypes.c_int64


class Fused:
    """A spec's kernel: its C source, built on demand (`library`), and its functions once loaded."""

    def __init__(self, prog: Program, layout: Layout, reduction: Reducer | None = None,
                 symmetry: BatchSymmetry | None = None, loops: bool = False, tail: str = ""):
        self.source = _Source(prog, layout, reduction, symmetry, loops, tail)
        self.marks = self.source.marks
        self.symmetric = self.source.symmetric
        self.T1 = self.source.T1
        self.words = layout.words
        self.library = Library(self.source.text, "lockstep_kernel")
        self.parts = [Library(text, "lockstep_kernel_part") for text in self.source.parts]
        self.lib: ctypes.CDLL | None = None
        self._part_libs: list[ctypes.CDLL] = []

    @property
    def lazy(self) -> bool:
        """Whether candidates left out of a reduced set are canonicalized on demand (`settle_pruned`)."""
        return self.symmetric and self.marks

    @property
    def libraries(self) -> list[Library]:
        """The kernel's libraries: the main one, then its parts (a large spec's transitions)."""
        return [self.library, *self.parts]

    def bind(self, lib: ctypes.CDLL, parts: list[ctypes.CDLL] | None = None) -> None:
        """Use the loaded library (and the loaded parts, in order)."""
        parts = parts or []
        assert len(parts) == len(self.parts)
        if parts:
            ptrs = (ctypes.c_void_p * len(parts))(*[ctypes.cast(p.part, ctypes.c_void_p).value for p in parts])
            lib.set_parts.argtypes = [ctypes.c_void_p]
            lib.set_parts(ptrs)
            self._part_libs = parts  # kept loaded while the kernel calls them
        lib.gen.argtypes = [_P, _I, _I, _I, ctypes.c_int, _P, _I, _P, _P, _P, _P, _P, _P]
        lib.gen.restype = _I
        lib.bad.argtypes = [_P, _I, _I, _I]
        lib.bad.restype = _I
        lib.outside.argtypes = [_P, _I, _I, _I, _P]
        lib.outside.restype = None
        if self.symmetric:
            lib.canon_batch.argtypes = [_P, _I, _I]
            lib.canon_batch.restype = None
            lib.canon_init.restype = ctypes.c_int
            if lib.canon_init():
                raise MemoryError("the fused kernel could not allocate its symmetry tables")
        if self.lazy:
            lib.settle_pruned.argtypes = [_P, _I, _P, _P, _P, _P, _P, _I, _I]
            lib.settle_pruned.restype = _I
        self.lib = lib

    def gen(self, words: np.ndarray, start: int, stop: int, deadlock: bool, out_w: np.ndarray, out_fp: np.ndarray,
            out_key: np.ndarray, info: np.ndarray, offset: int = 0, por: tuple | None = None) -> int:
        """Candidates of rows start..stop-1 of `words` into the outputs from entry `offset` (room for
        (stop - start) * transitions of them is the caller's to ensure); how many. `por`, required by a kernel
        built for a reduction (and refused by one without), is (flags, ren, ramp): a uint8 array for the
        candidates' proviso flags (written from `offset`) and two int32 arrays indexed by row, the row's
        enabled steps and the size of its reduced set (-1: explored fully)."""
        assert self.lib is not None and words.flags.c_contiguous and out_w.flags.c_contiguous
        assert offset + (stop - start) * (self.T1 - 1) <= out_fp.size and (por is not None) == self.marks
        flag = ren = ramp = None
        if por is not None:
            f, e, a = por
            assert f.dtype == np.uint8 and e.dtype == a.dtype == np.int32 and min(e.size, a.size) >= stop
            assert offset + (stop - start) * (self.T1 - 1) <= f.size
            flag, ren, ramp = f.ctypes.data + offset, e.ctypes.data, a.ctypes.data
        m = int(self.lib.gen(words.ctypes.data, words.shape[1], start, stop, int(deadlock),
                             out_w.ctypes.data + 8 * offset, out_w.shape[1], out_fp.ctypes.data + 8 * offset,
                             out_key.ctypes.data + 8 * offset, info.ctypes.data, flag, ren, ramp))
        if info[0] == 3:
            raise MemoryError("the fused kernel could not allocate its reduction's scratch space")
        return m

    def settle_pruned(self, out_w: np.ndarray, out_fp: np.ndarray, flags: np.ndarray, keys: np.ndarray,
                      back: np.ndarray, lo: int, hi: int) -> int:
        """Candidates lo..hi-1 that `gen` left out of their row's reduced set (flag 2), unsettled (fingerprint 0),
        where `back` (the cycle proviso's marks per row, one line per visited table) expands the row: each
        replaced by its orbit's representative and fingerprinted; how many (a `lazy` kernel)."""
        assert self.lib is not None and self.lazy and out_w.flags.c_contiguous and back.flags.c_contiguous
        assert back.dtype == flags.dtype == np.uint8 and back.shape[0] == 2 and hi <= min(out_fp.size, flags.size)
        return int(self.lib.settle_pruned(out_w.ctypes.data, out_w.shape[1], out_fp.ctypes.data, flags.ctypes.data,
                                          keys.ctypes.data, back[0].ctypes.data, back[1].ctypes.data, lo, hi))

    def canonical(self, words: np.ndarray) -> np.ndarray:
        """The packed canonical forms of a batch's rows, by the kernel's `canon` (a kernel built for symmetry)."""
        assert self.lib is not None and self.symmetric
        out = np.array(words, dtype=np.uint64, order="C", copy=True)
        self.lib.canon_batch(out.ctypes.data, out.shape[1], out.shape[1])
        return out

    def outside(self, words: np.ndarray, start: int, stop: int, out: np.ndarray) -> None:
        """Mark in `out[start:stop]` (uint8) the states start..stop-1 of `words` outside the constraints."""
        assert self.lib is not None and words.flags.c_contiguous and out.dtype == np.uint8 and out.size >= stop
        self.lib.outside(words.ctypes.data, words.shape[1], start, stop, out.ctypes.data)

    def bad(self, words: np.ndarray, start: int, stop: int) -> int:
        """The first of states start..stop-1 of `words` that violates an invariant, or -1."""
        assert self.lib is not None and words.flags.c_contiguous and 0 <= start <= stop <= words.shape[1]
        return int(self.lib.bad(words.ctypes.data, words.shape[1], start, stop))


def fuse(prog: Program, layout: Layout, reduction: Reducer | None = None,
         symmetry: BatchSymmetry | None = None) -> Fused:
    """The fused kernel of a program, not yet built (raises `Unfusable` when the program does not suit one):
    with a partial-order `reduction`, and with a `symmetry` reduction (see `_Source`)."""
    return Fused(prog, layout, reduction, symmetry)
