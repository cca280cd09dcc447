"""The decomposable plan of a linear recursive program: what a partitioned worker runs.

A program is decomposable here when its recursion is one predicate `r(K, agg<V>)` (or a plain `r(K)`)
with a single key column, every recursive rule reads `r` once, and the rest of each rule's body
(non-recursive atoms and the comparisons that do not depend on `r`'s value) binds the key `X` read
from `r` and the head's key. Evaluating that rest once gives the *steps* of the plan: for each binding,
the key read (`src`), the key derived (`dst`) and a function of the value read, `f(v) -> (value,
enabled)`, made of the remaining comparisons and assignments (`C = C1 + W`). A plain `r(K)` is the
aggregate min over the constant 0 (0: present). Exit rules give the initial values.

`Step.apply` interprets the remaining literals with Python operators, so the same step runs on ints,
numpy columns and the spec language's terms (`logic` supplies the conjunction for each).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from .analysis import Analysed, Stratum, analyse, assignment, is_exit
from .evaluate import Divergence, Evaluator
from .relations import distinct, group_best
from .syntax import Atom, BinOp, Compare, Const, DatalogError, Expr, Neg, Program, Rule, Var, Wildcard, variables


@dataclass
class Step:
    """One derivation of the recursive rule: from key `src` (index) to key `dst` (index)."""

    src: int
    dst: int
    env: dict[str, int]  # the other variables' values
    value_var: str | None  # the variable bound to r's value (None: '_' or a plain relation)
    literals: tuple[Compare, ...]  # what remains to evaluate once the value is known
    head: Expr | None  # the head's value expression (None: a plain relation, value 0)

    def apply(self, v: Any, logic: Callable[[list[Any]], Any] = lambda cs: all(cs)) -> tuple[Any, Any]:
        """(derived value, condition under which it is derived) for the value `v` read at `src`."""
        env: dict[str, Any] = dict(self.env)
        if self.value_var is not None:
            env[self.value_var] = v
        conds = []
        for lit in self.literals:
            a = assignment(lit, set(env))
            if a is not None:
                env[a[0].name] = _eval(a[1], env)
            else:
                conds.append(_compare(lit.op, _eval(lit.left, env), _eval(lit.right, env)))
        value = _eval(self.head, env) if self.head is not None else 0
        return value, logic(conds) if conds else True


def _eval(e: Expr, env: Mapping[str, Any]) -> Any:
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Neg):
        return -_eval(e.arg, env)
    assert isinstance(e, BinOp)
    a, b = _eval(e.left, env), _eval(e.right, env)
    return a + b if e.op == "+" else a - b if e.op == "-" else a * b


def _compare(op: str, a: Any, b: Any) -> Any:
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    return a > b if op == ">" else a >= b


@dataclass
class StepGroup:
    """The steps of one recursive rule, as columns: `src[i]` and `dst[i]` are key indices, `env` the other
    variables' columns; `apply(v, rows)` evaluates the rule's remaining literals on numpy columns."""

    src: np.ndarray
    dst: np.ndarray
    env: dict[str, np.ndarray]
    value_var: str | None
    literals: tuple[Compare, ...]
    head: Expr | None

    def __len__(self) -> int:
        return len(self.src)

    def apply(self, v: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(derived values, enabled mask) for the values `v` read at `src[rows]`."""
        env: dict[str, Any] = {k: c[rows] for k, c in self.env.items()}
        if self.value_var is not None:
            env[self.value_var] = v
        ok = np.ones(len(rows), dtype=bool)
        for lit in self.literals:
            a = assignment(lit, set(env))
            if a is not None:
                env[a[0].name] = _eval(a[1], env)
            else:
                ok &= _compare(lit.op, _eval(lit.left, env), _eval(lit.right, env))
        value = _eval(self.head, env) if self.head is not None else np.zeros(len(rows), dtype=np.int64)
        if not isinstance(value, np.ndarray):
            value = np.full(len(rows), value, dtype=np.int64)
        return value, ok


@dataclass
class LinearPlan:
    """A decomposable program bound to its input: keys, initial values, steps, and the sequential answer."""

    pred: str
    func: str  # "min" or "max" (a plain relation is min over 0)
    keys: np.ndarray  # key values, ascending; a key's index is its position
    init_keys: np.ndarray  # key indices with a value from the exit rules
    init_vals: np.ndarray
    groups: list[StepGroup]
    fixpoint_keys: np.ndarray | None  # the sequential least model (None: it diverges, or was not computed)
    fixpoint_vals: np.ndarray | None
    program: Analysed
    plain: bool = False
    _steps: list[Step] | None = None
    _by_src: dict[int, list[Step]] | None = None

    @cached_property
    def init(self) -> dict[int, int]:
        return dict(zip(self.init_keys.tolist(), self.init_vals.tolist()))

    @cached_property
    def fixpoint(self) -> dict[int, int] | None:
        if self.fixpoint_keys is None:
            return None
        return dict(zip(self.fixpoint_keys.tolist(), self.fixpoint_vals.tolist()))

    @property
    def steps(self) -> list[Step]:
        """One `Step` per row (for small graphs: the spec traces each)."""
        if self._steps is None:
            self._steps = [Step(int(g.src[i]), int(g.dst[i]), {k: int(c[i]) for k, c in g.env.items()}, g.value_var,
                                g.literals, g.head) for g in self.groups for i in range(len(g))]
        return self._steps

    @property
    def by_src(self) -> dict[int, list[Step]]:
        if self._by_src is None:
            self._by_src = {}
            for s in self.steps:
                self._by_src.setdefault(s.src, []).append(s)
        return self._by_src

    def owner(self, w: int) -> np.ndarray:
        """The worker of each key (hash partitioning: key value mod W)."""
        return self.keys % w

    def better(self, a: Any, b: Any) -> Any:
        return a < b if self.func == "min" else a > b

    def bounds(self, rounds: int | None = None) -> tuple[int, int]:
        """(best, worst) values over every derivation of at most `rounds` steps (default: the number of keys).

        With no improving cycle every value a key ever holds comes from a derivation that visits each key
        once (a later value must be better than an earlier one), so it lies within these bounds; a better
        value needs an improving cycle (divergence), and a worse candidate can never improve a key."""
        rounds = len(self.keys) if rounds is None else rounds
        layer = set(self.init.items())
        seen = set(layer)
        for _ in range(rounds):
            nxt = set()
            for k, v in layer:
                for s in self.by_src.get(k, []):
                    w, ok = s.apply(v)
                    if ok and (s.dst, w) not in seen:
                        nxt.add((s.dst, w))
            if not nxt:
                break
            seen |= nxt
            layer = nxt
        vals = {v for _, v in seen}
        if not vals:
            return 0, 0
        return (min(vals), max(vals)) if self.func == "min" else (max(vals), min(vals))

    def derivable(self, best: int, worst: int) -> dict[int, set[int]]:
        """Per key, every value some derivation gives, within [best, worst] (a finite set)."""
        lo, hi = min(best, worst), max(best, worst)
        out: dict[int, set[int]] = {k: {v} for k, v in self.init.items() if lo <= v <= hi}
        frontier = [(k, v) for k, vs in out.items() for v in vs]
        while frontier:
            k, v = frontier.pop()
            for s in self.by_src.get(k, []):
                w, ok = s.apply(v)
                if ok and lo <= w <= hi and w not in out.setdefault(s.dst, set()):
                    out[s.dst].add(w)
                    frontier.append((s.dst, w))
        return out


def linear_plan(program: Program | Analysed, inputs: Mapping[str, np.ndarray], params: Mapping[str, int] | None = None,
                max_iterations: int | None = None, with_fixpoint: bool = True) -> LinearPlan:
    """The plan of a decomposable program on these inputs (DatalogError saying why if it is not one)."""
    prog = program if isinstance(program, Analysed) else analyse(program, params)
    rec = [s for s in prog.strata if s.recursive]
    if len(rec) != 1 or len(rec[0].preds) != 1:
        raise DatalogError("the workers run programs with one recursive predicate; this one has "
                           + (f"{len(rec)} recursive strata" if len(rec) != 1 else f"mutual recursion of "
                              f"{', '.join(rec[0].preds)}"), None, prog.program.source)
    st = rec[0]
    pred = st.preds[0]
    func = prog.aggregate.get(pred)
    plain = func is None
    if func not in (None, "min", "max"):
        raise DatalogError(f"{pred} aggregates with {func}: the workers run min, max or plain recursions", None,
                           prog.program.source)
    for i in st.rules:
        r = prog.rules[i]
        n = len(st.recursive_atoms(r))
        if n > 1:
            raise DatalogError(f"the rule for {pred} reads it {n} times: the workers run linear recursions (non-linear "
                               "programs such as apsp need the hybrid SSP model, which is not implemented)", r.pos,
                               prog.program.source, prog.program.text)
    if prog.arity[pred] != (1 if plain else 2):
        raise DatalogError(f"{pred} must have one key column (and the value) to be partitioned", None,
                           prog.program.source)
    if st is not prog.strata[-1]:
        later = [p for s in prog.strata[prog.strata.index(st) + 1:] for p in s.preds]
        raise DatalogError(f"the workers compute {pred}; the predicates derived after it ({', '.join(later)}) are "
                           "not supported", None, prog.program.source)
    ev = Evaluator(prog, inputs, {s: True for s in prog.sites}, max_iterations)
    for lower in prog.strata[: prog.strata.index(st)]:
        for p in lower.preds:
            ev.rels[p] = ev._new_relation(p)
        for i in lower.rules:
            r = prog.rules[i]
            ev._merge(r.head.pred, ev.derive(r, {}))
    init_k: list[np.ndarray] = []
    init_v: list[np.ndarray] = []
    raw: list[tuple[np.ndarray, np.ndarray, dict, str | None, tuple, Expr | None]] = []
    for i in st.rules:
        r = prog.rules[i]
        if is_exit(r, st):
            cols = ev.derive(r, {})
            init_k.append(cols[0])
            init_v.append(cols[-1] if not plain else np.zeros(len(cols[0]), dtype=np.int64))
        else:
            raw.append(_steps(ev, r, st, plain))
    empty = np.zeros(0, dtype=np.int64)
    ik = np.concatenate(init_k) if init_k else empty
    iv = np.concatenate(init_v) if init_v else empty
    keys = distinct(np.concatenate([ik] + [g[0] for g in raw] + [g[1] for g in raw]))
    ik_idx = np.searchsorted(keys, ik)
    best = "min" if func != "max" else "max"
    ik_idx, iv = group_best(ik_idx, iv, best)
    groups = [StepGroup(np.searchsorted(keys, a), np.searchsorted(keys, b), env, vv, lits, head)
              for a, b, env, vv, lits, head in raw]
    fk = fv = None
    if with_fixpoint:
        try:
            res = Evaluator(prog, inputs, {s: True for s in prog.sites}, max_iterations).run()
            cols = res.relations[pred]
            fk = np.searchsorted(keys, cols[0])
            fv = cols[1] if not plain else np.zeros(len(cols[0]), dtype=np.int64)
        except Divergence:
            fk = fv = None
    return LinearPlan(pred, func or "min", keys, ik_idx, iv, groups, fk, fv, prog, plain)


def _steps(ev: Evaluator, r: Rule, st: Stratum, plain: bool) -> list[tuple]:
    ks = st.recursive_atoms(r)
    if len(ks) != 1:
        raise DatalogError(f"the rule for {r.head.pred} reads it {len(ks)} times: the workers run linear recursions "
                           "(non-linear programs such as apsp need the hybrid model, not implemented)", r.pos,
                           ev.prog.program.source, ev.prog.program.text)
    k = ks[0]
    atom = r.atoms[k]
    key = atom.args[0]
    if not isinstance(key, Var):
        raise DatalogError(f"{atom}: the key read from {atom.pred} must be a variable", atom.pos,
                           ev.prog.program.source, ev.prog.program.text)
    value_var = None
    if not plain:
        v = atom.args[1]
        if isinstance(v, Var):
            value_var = v.name
        elif not isinstance(v, Wildcard):
            raise DatalogError(f"{atom}: the value read must be a variable or '_'", atom.pos, ev.prog.program.source)
    dep = {value_var} if value_var else set()
    bound = {t.name for a in r.atoms for t in a.args if isinstance(t, Var)}
    kept, rest = [], []
    for lit in r.body:
        if isinstance(lit, Atom):
            continue
        a = assignment(lit, bound) if isinstance(lit, Compare) else None
        names = {x.name for side in (lit.left, lit.right) for x in variables(side)}
        if names & dep:
            rest.append(lit)
            if a is not None:
                dep.add(a[0].name)
        else:
            kept.append(lit)
        if a is not None:
            bound.add(a[0].name)
    for other in r.atoms:
        if other is not atom and any(isinstance(t, Var) and t.name in dep for t in other.args):
            raise DatalogError(f"{other} reads the recursive value: not decomposable", other.pos, ev.prog.program.source)
    head = r.head
    if isinstance(head.args[0], Var) and head.args[0].name in dep:
        raise DatalogError(f"the head key {head.args[0]} depends on the value read: not decomposable", head.pos,
                           ev.prog.program.source)
    body = tuple(a for j, a in enumerate(r.atoms) if j != k) + tuple(kept)
    if not any(isinstance(lit, Atom) for lit in body):
        raise DatalogError(f"the rule for {head.pred} joins {atom.pred} with nothing", r.pos, ev.prog.program.source)
    sub = Rule(head, body, r.pos)
    b, n = ev.fire(sub, {})
    if n and key.name not in b:
        raise DatalogError(f"{key} (the key read from {atom.pred}) is not bound by the rest of the body", atom.pos,
                           ev.prog.program.source)
    empty = np.zeros(0, dtype=np.int64)
    names = [x for x in b if x != key.name]
    dst = head.args[0]
    srcs = b[key.name][:n] if n else empty
    dsts = np.full(n, dst.value, dtype=np.int64) if isinstance(dst, Const) else (b[dst.name][:n] if n else empty)
    env = {x: b[x][:n] for x in names}
    env[key.name] = srcs
    hv = head.agg.var if head.agg is not None else None
    return srcs, dsts, env, value_var, tuple(rest), hv
