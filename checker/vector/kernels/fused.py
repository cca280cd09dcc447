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
and conditional expressions are lazy (`&&`, `||`, `?:`), and an operation that would raise in the
scalar engine (an index outside its type, a zero divisor) sets `err` and yields a harmless stand-in;
`err` is tested after each transition, and a set flag makes that step a failure, as the scalar
engine's exception does. The kernel stops at the first failing step or (if asked) deadlocked row and
says which in `info`.

A spec is fused when its values fit 64-bit integers (sets of at most 63 elements, constants below
2^63) and its source stays under `MAX_LINES`; otherwise the numpy interpreter runs it.
"""

from __future__ import annotations

import ctypes

import numpy as np

from lockstep.specs.lang.program import Predicate, Program, Transition
from lockstep.specs.lang.terms import Term

from ...codegen import _range_check
from ..layout import Layout
from .cbuild import Library
from .runtime import PRELUDE

MAX_LINES = 200_000  # larger kernels take the C compiler too long
_I64 = 1 << 63

HELPERS = r"""
#define FAIL(t) do { info[0] = 1; info[1] = r; info[2] = (t); info[3] = g; return m; } while (0)
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


class _Expr:
    """C expressions for terms, over int64_t locals `s<slot>`; `used` collects the slots read."""

    BINARY = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "add": "+", "sub": "-", "mul": "*",
              "union": "|", "inter": "&"}

    def __init__(self) -> None:
        self.used: set[int] = set()
        self.memo: dict[int, bool] = {}

    def __call__(self, t: Term | bool) -> str:
        if not isinstance(t, Term):
            return _literal(bool(t))
        op, a = t.op, t.args
        if op == "const":
            return _literal(a[0])
        if op == "slot":
            self.used.add(a[0])
            return f"s{a[0]}"
        if op == "not":
            return f"(!{self(a[0])})"
        if op in ("and", "or"):
            return "(" + (" && " if op == "and" else " || ").join(self(x) for x in a) + ")"
        if op == "ite":
            return f"({self(a[0])} ? {self(a[1])} : {self(a[2])})"
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
        if op == "diff":
            return f"({self(a[0])} & ~{self(a[1])})"
        if op == "card":
            return f"popcount({self(a[0])})"
        if op == "in":
            s, i = a
            if isinstance(i, Term) and i.op == "const":
                k = i.args[0]
                return f"(({self(s)} >> {k}) & 1)" if 0 <= k < 63 else ("0" if k >= 0 else "member(0, -1, &err)")
            return f"member({self(s)}, {self(i)}, &err)"
        if op == "single":
            i = a[0]
            size = t.dom.elem.size
            if i.lo >= 0 and i.hi < size:
                return f"((int64_t)1 << {self(i)})"
            return f"single({self(i)}, {size}, &err)"
        if op == "within":
            i, n = a[0], a[1].args[0]
            return self(i) if 0 <= i.lo and i.hi < n else f"within({self(i)}, {n}, &err)"
        if op == "select":
            k, items = a[0], a[1:]
            body = ", ".join(self(x) for x in items)
            if 0 <= k.lo and k.hi < len(items):
                return f"((const int64_t[]){{{body}}})[{self(k)}]"
            return f"sel({self(k)}, {len(items)}, (const int64_t[]){{{body}}}, &err)"
        raise Unfusable(f"no C for the term operator {op!r}")


class _Source:
    """The generated C of one program and packing."""

    def __init__(self, prog: Program, layout: Layout):
        self.prog, self.layout = prog, layout
        for i, dom in enumerate(prog.slot_doms):
            if len(layout.slot_columns[i]) > 1:
                raise Unfusable(f"{prog.slot_names[i]} is a set of more than 63 elements")
            if dom.kind not in ("bool", "set") and not (-_I64 < dom.lo and dom.hi < _I64):
                raise Unfusable(f"{prog.slot_names[i]} does not fit a 64-bit integer")
        self.T1 = len(prog.transitions) + 1
        self.text = "\n".join([PRELUDE, HELPERS, self._gen(), self._bad(), ""])
        lines = self.text.count("\n")
        if lines > MAX_LINES:
            raise Unfusable(f"its kernel has {lines:,} lines (the limit is {MAX_LINES:,})")

    # -- slots ---------------------------------------------------------------------------------
    def _unpack(self, slots: set[int], ind: str) -> list[str]:
        out = []
        for s in sorted(slots):
            c = self.layout.slot_columns[s][0]
            raw = f"(w{c.word} >> {c.shift})" if c.shift else f"w{c.word}"
            if c.shift + c.bits < 64:
                raw = f"({raw} & UINT64_C({c.mask}))"
            lo = f" + {_literal(c.lo)}" if c.lo else ""
            out.append(f"{ind}const int64_t s{s} = (int64_t){raw}{lo};")
        return out

    def _words(self, ind: str) -> list[str]:
        return [f"{ind}const uint64_t w{w} = W[{w} * ld + r];" for w in range(self.layout.words)]

    def _pack(self, values: dict[int, str], ind: str) -> list[str]:
        lay = self.layout
        lines = [f"{ind}uint64_t " + ", ".join(f"n{w} = w{w}" for w in range(lay.words)) + ";"]
        for s, code in sorted(values.items()):
            c = lay.slot_columns[s][0]
            if c.bits == 0:
                continue
            keep = ~(c.mask << c.shift) & ((1 << 64) - 1)
            if self.prog.slot_doms[s].kind == "bool":
                val = f"(uint64_t)({code} != 0)"
            else:
                val = f"(uint64_t)({code} - {_literal(c.lo)})" if c.lo else f"(uint64_t){code}"
            if c.shift:
                val = f"({val} << {c.shift})"
            lines.append(f"{ind}n{c.word} = (n{c.word} & UINT64_C({keep})) | {val};")
        return lines

    # -- gen -------------------------------------------------------------------------------------
    def _emit(self, tid: int, values: dict[int, str], ind: str) -> list[str]:
        lay = self.layout
        lines = [f"{ind}if (err) FAIL({tid});", f"{ind}g++;"]
        lines += self._pack(values, ind)
        moved = " || ".join(f"n{w} != w{w}" for w in range(lay.words))
        lines.append(f"{ind}if ({moved}) {{")
        i2 = ind + "    "
        lines += [f"{i2}out_w[{w} * ldo + m] = n{w};" for w in range(lay.words)]
        lines.append(f"{i2}uint64_t h = mix(n0 ^ UINT64_C({lay.seed}));")
        lines += [f"{i2}h = mix(h ^ n{w});" for w in range(1, lay.words)]
        if not lay.exact:
            lines.append(f"{i2}if (!h) h = 1;")
        lines += [f"{i2}out_fp[m] = h;", f"{i2}out_key[m] = r * {self.T1} + {tid};", f"{i2}m++;", f"{ind}}}"]
        return lines

    def _transition(self, ex: _Expr, tid: int, t: Transition, ind0: str) -> list[str]:
        label = t.label.replace("*/", "* /")
        lines = [f"{ind0}{{ /* {label} */"]
        ind = ind0 + "    "
        depth = 0
        pending: list[str] = []
        for c in t.checks:
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
                lines.append(f"{ind}const int64_t v{s} = {ex(term)};")
                bounds = _range_check(self.prog, s, term)
                if bounds is not None:
                    lo, hi = (_literal(b) for b in bounds)
                    lines.append(f"{ind}if (!({lo} <= v{s} && v{s} <= {hi})) FAIL({tid});")
                values[s] = f"v{s}"
            lines += self._emit(tid, values, ind)
        for _ in range(depth):
            ind = ind[:-4]
            lines.append(f"{ind}}}")
        lines += [f"{ind0}    if (err) FAIL({tid});", f"{ind0}}}"]
        return lines

    def _gen(self) -> str:
        ex = _Expr()
        ind = "        "
        body: list[str] = []
        for tid, t in enumerate(self.prog.transitions):
            body += self._transition(ex, tid, t, ind)
        head = ["int64_t gen(const uint64_t *W, int64_t ld, int64_t start, int64_t stop, int deadlock, uint64_t *out_w,",
                "            int64_t ldo, uint64_t *out_fp, int64_t *out_key, int64_t *info) {",
                "    int64_t m = 0, g = 0;",
                "    int err = 0;",
                "    for (int64_t r = start; r < stop; r++) {"]
        head += self._words(ind) + self._unpack(ex.used, ind) + [f"{ind}const int64_t g0 = g;"]
        tail = [f"{ind}if (deadlock && g == g0) {{ info[0] = 2; info[1] = r; info[3] = g; return m; }}",
                "    }", "    info[3] = g;", "    return m;", "}"]
        return "\n".join(head + body + tail)

    # -- bad -------------------------------------------------------------------------------------
    def _bad(self) -> str:
        ex = _Expr()
        ind = "        "
        body: list[str] = []
        for p in self.prog.invariants:
            body += self._predicate(p, ex, ind)
        head = ["int64_t bad(const uint64_t *W, int64_t ld, int64_t start, int64_t stop) {",
                "    for (int64_t r = start; r < stop; r++) {",
                f"{ind}int err = 0;"]
        head += self._words(ind) + self._unpack(ex.used, ind)
        return "\n".join(head + body + [f"{ind}(void)err;", "    }", "    return -1;", "}"])

    @staticmethod
    def _predicate(p: Predicate, ex: _Expr, ind: str) -> list[str]:
        if p.error is not None or p.term is False:
            return [f"{ind}return r;"]
        if p.term is True:
            return []
        return [f"{ind}if (!{ex(p.term)} || err) return r;"]


_P, _I = ctypes.c_void_p, ctypes.c_int64


class Fused:
    """A spec's kernel: its C source, built on demand (`library`), and its two functions once loaded."""

    def __init__(self, prog: Program, layout: Layout):
        self.source = _Source(prog, layout)
        self.T1 = self.source.T1
        self.words = layout.words
        self.library = Library(self.source.text, "lockstep_kernel")
        self.lib: ctypes.CDLL | None = None

    def bind(self, lib: ctypes.CDLL) -> None:
        """Use the loaded library."""
        lib.gen.argtypes = [_P, _I, _I, _I, ctypes.c_int, _P, _I, _P, _P, _P]
        lib.gen.restype = _I
        lib.bad.argtypes = [_P, _I, _I, _I]
        lib.bad.restype = _I
        self.lib = lib

    def gen(self, words: np.ndarray, start: int, stop: int, deadlock: bool, out_w: np.ndarray, out_fp: np.ndarray,
            out_key: np.ndarray, info: np.ndarray, offset: int = 0) -> int:
        """Candidates of rows start..stop-1 of `words` into the outputs from entry `offset` (room for
        (stop - start) * transitions of them is the caller's to ensure); how many."""
        assert self.lib is not None and words.flags.c_contiguous and out_w.flags.c_contiguous
        assert offset + (stop - start) * (self.T1 - 1) <= out_fp.size
        return int(self.lib.gen(words.ctypes.data, words.shape[1], start, stop, int(deadlock),
                                out_w.ctypes.data + 8 * offset, out_w.shape[1], out_fp.ctypes.data + 8 * offset,
                                out_key.ctypes.data + 8 * offset, info.ctypes.data))

    def bad(self, words: np.ndarray, start: int, stop: int) -> int:
        """The first of states start..stop-1 of `words` that violates an invariant, or -1."""
        assert self.lib is not None and words.flags.c_contiguous and 0 <= start <= stop <= words.shape[1]
        return int(self.lib.bad(words.ctypes.data, words.shape[1], start, stop))


def fuse(prog: Program, layout: Layout) -> Fused:
    """The fused kernel of a program, not yet built (raises `Unfusable` when the program does not suit one)."""
    return Fused(prog, layout)

