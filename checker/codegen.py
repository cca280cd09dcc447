"""Compile a `Program` to Python functions over state tuples: the concrete interpreter.

Each transition becomes a few lines of straight-line Python (no call, object or exception
per action). The breadth-first engine uses `expand`, which fuses successor generation with
the visited-set test for a whole level; the other functions serve traces, replay, DFS and
simulation. The generated code follows `lockstep.specs.lang.terms.OPS`; where it raises, the engine
re-runs the state through `interpret` to name the failing spec line.

Fingerprints are Zobrist hashes: the XOR of one random 64-bit key per (slot, value). Two
distinct states collide with probability 2^-64 for random keys, and a successor's
fingerprint is its parent's with the keys of the changed slots swapped, so a duplicate
successor — most of them — costs a few XORs and one dict lookup, and no tuple.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lockstep.specs.lang.program import Predicate, Program, Transition
from lockstep.specs.lang.terms import Term, _in, _within

MAX_UNPACK = 48  # states with more slots are read by index instead of unpacked into locals
TABLE_LIMIT = 4096  # slots with at most this many values get a key table; wider sets get a key per element
ZOBRIST_SEED = 0x10C5_7E9


class TransitionFailed(Exception):
    """Raised by generated code when an enabled transition fails; the engine diagnoses it."""


def _single(i: int, size: int) -> int:
    if not 0 <= i < size:
        raise IndexError(f"element index {i} outside the set's type")
    return 1 << i


def _select(k: int, items: tuple) -> Any:
    if not 0 <= k < len(items):
        raise IndexError(f"index {k} outside 0..{len(items) - 1}")
    return items[k]


# ------------------------------------------------------------------------------ expressions


class _Expr:
    """Python source for terms; `names(i)` is the code that reads slot i of the pre-state."""

    def __init__(self, names: Callable[[int], str]):
        self.names = names
        self.used: set[int] = set()
        self.temps: dict[int, str] = {}  # id of a shared subterm -> the local holding its value
        self._ntemps = 0

    def __call__(self, t: Term | bool) -> str:
        if not isinstance(t, Term):
            return repr(bool(t))
        hit = self.temps.get(id(t))
        if hit is not None:
            return hit
        op, a = t.op, t.args
        if op == "const":
            return _literal(a[0])
        if op == "slot":
            self.used.add(a[0])
            return self.names(a[0])
        if op == "not":
            return f"(not {self(a[0])})"
        if op in ("and", "or"):
            return "(" + f" {op} ".join(self(x) for x in a) + ")"
        if op == "ite":
            return f"({self(a[1])} if {self(a[0])} else {self(a[2])})"
        binary = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "add": "+", "sub": "-", "mul": "*",
                  "floordiv": "//", "mod": "%", "union": "|", "inter": "&"}
        if op in binary:
            return f"({self(a[0])} {binary[op]} {self(a[1])})"
        if op == "neg":
            return f"(-{self(a[0])})"
        if op in ("min", "max"):
            return f"{op}({self(a[0])}, {self(a[1])})"
        if op == "diff":
            return f"({self(a[0])} & ~{self(a[1])})"
        if op == "card":
            return f"{self(a[0])}.bit_count()"
        if op == "in":
            s, i = a
            if isinstance(i, Term) and i.op == "const":
                return f"({self(s)} & {_literal(1 << i.args[0])} != 0)"
            if i.lo < 0:
                return f"_in({self(s)}, {self(i)})"
            return f"({self(s)} >> {self(i)} & 1 == 1)"
        if op == "single":
            (i,) = a
            size = t.dom.elem.size
            return f"_single({self(i)}, {size})" if i.lo < 0 or i.hi >= size else f"(1 << {self(i)})"
        if op == "within":
            return f"_within({self(a[0])}, {a[1].args[0]})"
        if op == "select":
            k, items = a[0], a[1:]
            if 0 <= k.lo and k.hi < len(items):
                return "(" + ", ".join(self(x) for x in items) + f",)[{self(k)}]"
            return "_select(" + self(k) + ", (" + ", ".join(self(x) for x in items) + ",))"
        raise AssertionError(f"no code for term op {op!r}")


    def share(self, roots: list[Any], indent: str) -> list[str]:
        """Bind every subterm of `roots` that the code would repeat, and that cannot fail, to a local
        (children first); later uses of it read the local. Returns the binding lines."""
        lines = []
        for t in repeated_subterms(roots, self.temps):
            code = self(t)
            self._ntemps += 1
            name = f"e{self._ntemps}"
            lines.append(f"{indent}{name} = {code}")
            self.temps[id(t)] = name
        return lines

    def forget(self) -> None:
        """Drop the shared locals (they belong to one transition or predicate)."""
        self.temps.clear()


def repeated_subterms(roots: list[Any], bound: dict[int, Any]) -> list[Term]:
    """The subterms of `roots` (a DAG) reached more than once, not yet in `bound` and that cannot fail,
    children before parents: the ones generated code binds to locals."""
    refs: dict[int, int] = {}
    memo: dict[int, bool] = {}  # per call: the terms are alive while it runs, so their ids are theirs
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
    return [t for t in order if refs[id(t)] > 1 and id(t) not in bound and _total(t, memo)]


def _total(t: Term, memo: dict[int, bool]) -> bool:
    """Whether evaluating `t` can never raise (so it may be evaluated before the guards that reach it)."""
    hit = memo.get(id(t))
    if hit is not None:
        return hit
    op, a = t.op, t.args
    if op in ("floordiv", "mod"):
        ok = a[1].lo > 0 or a[1].hi < 0
    elif op == "select":
        ok = 0 <= a[0].lo and a[0].hi < len(a) - 1
    elif op == "in":
        ok = not isinstance(a[1], Term) or a[1].lo >= 0
    elif op == "single":
        ok = a[0].lo >= 0 and a[0].hi < t.dom.elem.size
    elif op == "within":
        ok = 0 <= a[0].lo and a[0].hi < a[1].args[0]
    else:
        ok = True
    ok = ok and all(_total(x, memo) for x in a if isinstance(x, Term))
    memo[id(t)] = ok
    return ok


def _range_check(prog: Program, s: int, t: Term) -> tuple[int, int] | None:
    """Bounds to check at run time when an assigned value may fall outside its field's type."""
    dom = prog.slot_doms[s]
    if dom.kind in ("bool", "set"):
        return None
    if dom.lo <= t.lo and t.hi <= dom.hi:
        return None
    return dom.lo, dom.hi


# ------------------------------------------------------------------------------- fingerprints


@dataclass
class _ZSlot:
    kind: str  # "table" (key per value), "bits" (key per set element), "mix" (arithmetic)
    offset: int
    keys: tuple


def zobrist(prog: Program) -> list[_ZSlot]:
    """The random keys of each slot (deterministic: the same in every process and run)."""
    rng = random.Random(ZOBRIST_SEED)
    out = []
    for dom in prog.slot_doms:
        if dom.kind == "set":
            universe = dom.elem.size
            if (1 << universe) <= TABLE_LIMIT:
                out.append(_ZSlot("table", 0, tuple(rng.getrandbits(64) for _ in range(1 << universe))))
            else:
                out.append(_ZSlot("bits", 0, tuple(rng.getrandbits(64) for _ in range(universe))))
        elif dom.hi - dom.lo + 1 <= TABLE_LIMIT:
            out.append(_ZSlot("table", dom.lo, tuple(rng.getrandbits(64) for _ in range(dom.hi - dom.lo + 1))))
        else:
            out.append(_ZSlot("mix", 0, (rng.getrandbits(64) | 1, rng.getrandbits(64))))
    return out


def _zbits(keys: tuple, mask: int) -> int:
    h = 0
    while mask:
        low = mask & -mask
        h ^= keys[low.bit_length() - 1]
        mask ^= low
    return h


_M64 = (1 << 64) - 1


def _literal(v: object) -> str:
    """Python source for a constant; a large int (a bitmask over a big universe, past Python's limit
    on decimal digits) in hex."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
        return hex(v)
    return repr(v)


def _zmix(keys: tuple, v: int) -> int:
    x = ((v * keys[0]) ^ keys[1]) & _M64
    x ^= x >> 31
    return (x * 0x9E3779B97F4A7C15) & _M64


def _zcode(z: list[_ZSlot], i: int, value: str) -> str:
    zs = z[i]
    if zs.kind == "table":
        return f"Z{i}[{value} - {zs.offset}]" if zs.offset else f"Z{i}[{value}]"
    if zs.kind == "bits":
        return f"_zbits(Z{i}, {value})"
    return f"_zmix(Z{i}, {value})"


def _zdelta(z: list[_ZSlot], i: int, old: str, new: str) -> str:
    """Code XOR-ing a fingerprint from slot i's old value to its new one (for a wide set: only the changed bits)."""
    if z[i].kind == "bits":
        return f" ^ _zbits(Z{i}, {old} ^ {new})"
    return f" ^ {_zcode(z, i, old)} ^ {_zcode(z, i, new)}"


def fingerprint_source(prog: Program, z: list[_ZSlot]) -> str:
    """`def fingerprint(st)`: the XOR of the keys of the state's slot values."""
    n = prog.nslots
    parts = " ^ ".join(_zcode(z, i, f"st[{i}]") for i in range(n))
    return f"def fingerprint(st):\n    return {parts}\n"


# ------------------------------------------------------------------------------- transitions


def _slot_name(unpacked: bool) -> Callable[[int], str]:
    return (lambda i: f"s{i}") if unpacked else (lambda i: f"st[{i}]")


def _transition_lines(prog: Program, transitions: list[Transition], ex: _Expr, indent0: str,
                      emit: Callable[[str, int, dict[int, str]], list[str]], temps: bool, first: int = 0) -> list[str]:
    """Straight-line code for each transition; `emit(indent, tid, new values)` handles an enabled one.

    With `temps`, every updated slot's new value is first bound to a local `v<slot>`. Transitions are
    numbered from `first`.
    """
    body: list[str] = []
    for tid, t in enumerate(transitions, start=first):
        body.append(f"{indent0}# {t.label}")
        indent = indent0
        pending: list[str] = []  # requires not yet emitted, joined into one `if`
        checks = list(t.checks)
        if checks and checks[0].kind == "require":  # the first guard (a message in flight, say) goes first,
            body.append(f"{indent}if {ex(checks.pop(0).term)}:")  # then what the rest shares, once
            indent += "    "
        body.extend(ex.share([c.term for c in checks] + list(t.updates.values()), indent))
        for c in checks:
            if c.kind == "require":
                pending.append(ex(c.term))
                continue
            if pending:
                body.append(f"{indent}if {' and '.join(pending)}:")
                indent += "    "
                pending = []
            if c.kind == "assert":
                body.append(f"{indent}if not {ex(c.term)}: raise _Failed({tid})")
            else:
                body.append(f"{indent}raise _Failed({tid})")
                break
        else:
            if pending:
                body.append(f"{indent}if {' and '.join(pending)}:")
                indent += "    "
            values = {}
            for s, term in sorted(t.updates.items()):
                code = ex(term)
                bounds = _range_check(prog, s, term)
                if bounds is not None or temps:
                    body.append(f"{indent}v{s} = {code}")
                    code = f"v{s}"
                if bounds is not None:
                    body.append(f"{indent}if not {bounds[0]} <= v{s} <= {bounds[1]}: raise _Failed({tid})")
                values[s] = code
            body.extend(emit(indent, tid, values))
        ex.forget()
    return body


def _tuple_code(prog: Program, values: dict[int, str], unpacked: bool) -> str:
    n = prog.nslots
    if unpacked:
        return "(" + ", ".join(values.get(i, f"s{i}") for i in range(n)) + ",)"
    parts, start = [], 0
    for s in sorted(values):
        if s > start:
            parts.append(f"st[{start}:{s}]")
        parts.append(f"({values[s]},)")
        start = s + 1
    if start < n:
        parts.append(f"st[{start}:]")
    return " + ".join(parts) if parts else "st"


def _unpack(prog: Program, unpacked: bool, indent: str) -> list[str]:
    """Bind every slot of `st` to a local `s<i>` (when states are narrow enough)."""
    if unpacked and prog.nslots:
        return [indent + ", ".join(f"s{i}" for i in range(prog.nslots)) + ", = st"]
    return []


def transitions_source(prog: Program, transitions: list[Transition], fname: str) -> str:
    """`def fname(st)`: the list of (transition index, successor) of one state."""
    unpacked = prog.nslots <= MAX_UNPACK
    ex = _Expr(_slot_name(unpacked))
    body = _transition_lines(prog, transitions, ex, "    ",
                             lambda ind, tid, vals: [f"{ind}app(({tid}, {_tuple_code(prog, vals, unpacked)}))"], False)
    head = [f"def {fname}(st):", "    out = []", "    app = out.append"] + _unpack(prog, unpacked, "    ")
    return "\n".join(head + body + ["    return out", ""])


def predicates_source(prog: Program, preds: list[Predicate], fname: str) -> str:
    """`def fname(st)`: index of the first predicate that is false on `st`, or -1."""
    unpacked = prog.nslots <= MAX_UNPACK
    ex = _Expr(_slot_name(unpacked))
    body = []
    for i, p in enumerate(preds):
        if p.error is not None:
            body.append(f"    raise _Failed({i})")
            break
        body.extend(ex.share([p.term], "    "))
        body.append(f"    if not {ex(p.term)}: return {i}")
        ex.forget()
    head = [f"def {fname}(st):"] + _unpack(prog, unpacked, "    ")
    return "\n".join(head + body + ["    return -1", ""])


def expand_source(prog: Program, z: list[_ZSlot], *, partitioned: bool, symmetric: bool, constrained: bool,
                  deadlock: bool, flat: bool = False) -> str:
    """`def expand(frontier, P, N, ...)`: one breadth-first level, fused with the visited-set test.

    For each (fingerprint, state) of `frontier`, every successor is fingerprinted and, if new,
    recorded in `P` (fingerprint -> parent fingerprint) and appended to `N`. Partitioned, a new
    successor owned by another worker goes to `out[owner]` instead and is recorded in `P` with
    the marker `S` (so it is sent once, at the cost of one lookup as for any state); `out[o]` is
    three columns: fingerprints, parents, and states (`flat`: their slots, concatenated). Returns the
    number of successors generated, or (kind, fingerprint, state, generated) when the search
    must stop: "step" (a step failed on state), "deadlock", "invariant" (a new state violates
    an invariant), "invariant-last" (a successor outside the constraints does), "cut" (P is full).
    """
    unpacked = prog.nslots <= MAX_UNPACK
    ex = _Expr(_slot_name(unpacked))
    ind = "            "

    def visit(indent: str, tid: int, vals: dict[int, str]) -> list[str]:
        tup = _tuple_code(prog, vals, unpacked)
        lines = [f"{indent}gen += 1"]
        if symmetric:
            lines += [f"{indent}t = canon({tup})", f"{indent}f = fingerprint(t)"]
        else:
            old = "".join(_zdelta(z, s, ex.names(s), v) for s, v in vals.items())
            ex.used.update(vals)
            lines.append(f"{indent}f = pf{old}")
        lines.append(f"{indent}if f not in P:")
        local = indent + "    "
        if not symmetric:
            lines.append(f"{local}t = {tup}")
        if partitioned:
            lines += [f"{local}o = f % nw", f"{local}if o != me:",
                      f"{local}    P[f] = S", f"{local}    ob = out[o]", f"{local}    ob[0].append(f)",
                      f"{local}    ob[1].append(pf)", f"{local}    ob[2].{'extend' if flat else 'append'}(t)", f"{local}else:"]
            local += "    "
        if constrained:
            lines += [f"{local}if outside(t) >= 0:", f"{local}    if bad(t): return ('invariant-last', pf, t, gen)",
                      f"{local}else:"]
            local += "    "
        lines += [f"{local}if len(P) >= cap: return ('cut', pf, st, gen)", f"{local}P[f] = pf"]
        if prog.invariants:
            lines.append(f"{local}if bad(t): return ('invariant', f, t, gen)")
        lines.append(f"{local}N.append((f, t))")
        return lines

    body = _transition_lines(prog, prog.transitions, ex, ind, visit, temps=not symmetric)
    head = ["def expand(frontier, P, N, bad, canon, outside, cap, tick, S, out, nw, me):",
            "    gen = 0",
            "    for k, (pf, st) in enumerate(frontier):",
            "        if not k & 4095: tick(k, gen)",
            "        g0 = gen",
            "        try:"] + _unpack(prog, unpacked, ind)
    tail = ["        except Exception:", "            return ('step', pf, st, gen)"]
    if deadlock:
        tail.append("        if gen == g0: return ('deadlock', pf, st, gen)")
    return "\n".join(head + body + tail + ["    return gen", ""])


# ---------------------------------------------------------------------------------- compile


def _namespace(z: list[_ZSlot]) -> dict[str, Any]:
    ns: dict[str, Any] = {"_Failed": TransitionFailed, "_select": _select, "_in": _in, "_single": _single, "_within": _within,
                          "_zbits": _zbits, "_zmix": _zmix}
    for i, zs in enumerate(z):
        ns[f"Z{i}"] = zs.keys
    return ns


def _exec(src: str, ns: dict[str, Any], name: str) -> dict[str, Any]:
    exec(compile(src, name, "exec"), ns)  # noqa: S102 - code generated from the spec's own terms
    return ns


class Compiled:
    """The compiled functions of one program."""

    def __init__(self, prog: Program):
        self.prog = prog
        self.z = zobrist(prog)
        self.source = "\n".join([
            transitions_source(prog, prog.transitions, "successors"),
            transitions_source(prog, prog.init_transitions, "init_successors"),
            predicates_source(prog, prog.invariants, "violated"),
            predicates_source(prog, prog.constraints, "outside"),
            fingerprint_source(prog, self.z),
        ])
        ns = _exec(self.source, _namespace(self.z), f"<lockstep:{prog.name}>")
        self.successors: Callable[[tuple], list] = ns["successors"]
        self.init_successors: Callable[[tuple], list] = ns["init_successors"]
        self.violated: Callable[[tuple], int] = ns["violated"]
        self.outside: Callable[[tuple], int] = ns["outside"]
        self.fingerprint: Callable[[tuple], int] = ns["fingerprint"]

    def condition(self, term: Term | bool, name: str) -> Callable[[tuple], bool]:
        """A Bool term of the program (a temporal property's operand, say) compiled to a test on states."""
        if isinstance(term, bool):
            return (lambda st: True) if term else (lambda st: False)
        src = predicates_source(self.prog, [Predicate(name, term, None)], "cond")
        test = _exec(src, _namespace(self.z), f"<lockstep:{self.prog.name}:{name}>")["cond"]
        return lambda st: test(st) < 0

    def expander(self, **flags: bool) -> Callable[..., Any]:
        """Compile `expand_source` for the given flags (see its docstring)."""
        src = expand_source(self.prog, self.z, **flags)
        ns = _namespace(self.z)
        ns["fingerprint"] = self.fingerprint
        return _exec(src, ns, f"<lockstep:{self.prog.name}:expand>")["expand"]


def compile_program(prog: Program) -> Compiled:
    """Generate and compile the successor, predicate and fingerprint functions of `prog`."""
    return Compiled(prog)


def compile_transitions(prog: Program, transitions: list[Transition]) -> list[Callable[[tuple], list]]:
    """One compiled function per transition: state -> [(0, successor)] if enabled there, else []."""
    src = "\n".join(transitions_source(prog, [t], f"step{i}") for i, t in enumerate(transitions))
    ns = _exec(src, _namespace([]), f"<lockstep:{prog.name}:steps>")
    return [ns[f"step{i}"] for i in range(len(transitions))]


def term_function(term: Term, name: str = "term") -> Callable[[Any], Any]:
    """A term compiled to a function of a state (any sequence indexed by slot) that returns its value; where
    the term may fail, the function raises where `interpret.evaluate` would."""
    ex = _Expr(_slot_name(False))
    src = f"def {name}(st):\n    return {ex(term)}\n"
    return _exec(src, _namespace([]), f"<lockstep:{name}>")[name]
