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

Binding a plan to its input needs an evaluation of the strata below the recursion and of the steps' joins
(a `Binder`): `Reference` evaluates them by the reference semantics (`lockstep.specs.datalog.semantics`),
as the SSP specs do on their small graphs; the workers bind the same plan with the evaluator
(`lockstep.checker.datalog.plan`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from . import semantics
from .analysis import Analysed, Stratum, assignment, is_exit
from .semantics import Divergence
from .syntax import Atom, Compare, Const, DatalogError, Expr, Rule, Var, Wildcard, variables


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
        conds = _bind(self.literals, env)
        value = semantics.value(self.head, env) if self.head is not None else 0
        return value, logic(conds) if conds else True


def _bind(literals: tuple[Compare, ...], env: dict[str, Any]) -> list[Any]:
    """Evaluate `literals` in order: an assignment (`C = C1 + W`) binds its variable in `env`; the values of the
    other comparisons are returned, for the caller to conjoin."""
    conds = []
    for lit in literals:
        a = assignment(lit, set(env))
        if a is not None:
            env[a[0].name] = semantics.value(a[1], env)
        else:
            conds.append(_compare(lit.op, semantics.value(lit.left, env), semantics.value(lit.right, env)))
    return conds


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
        for c in _bind(self.literals, env):
            ok &= c
        value = semantics.value(self.head, env) if self.head is not None else np.zeros(len(rows), dtype=np.int64)
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


class Binder(Protocol):
    """An evaluation of a program on its input, as far as binding a plan needs it."""

    def lower(self, st: Stratum) -> None:
        """Evaluate the strata below `st` (the recursion), which `derive` and `fire` read."""

    def derive(self, rule: Rule) -> list[np.ndarray]:
        """The head columns of the rows a rule derives (an aggregate's values last, not yet aggregated)."""

    def fire(self, rule: Rule) -> tuple[dict[str, np.ndarray], int]:
        """Every binding of a rule body's variables, as columns (of at least that length), and how many."""

    def least_model(self, pred: str) -> list[np.ndarray]:
        """The predicate's columns in the least model (Divergence, or another DatalogError, where it has none)."""


class Reference:
    """A `Binder` by the reference semantics, row by row in Python: for the specs' small graphs."""

    def __init__(self, prog: Analysed, inputs: Mapping[str, np.ndarray]):
        self.prog = prog
        self.inputs = {p: [tuple(r) for r in np.asarray(rows).tolist()] for p, rows in inputs.items()}
        self.rels = semantics.edb(prog, self.inputs)

    def lower(self, st: Stratum) -> None:
        for below in self.prog.strata[: self.prog.strata.index(st)]:
            semantics.evaluate_stratum(self.prog, below, self.rels)

    def derive(self, rule: Rule) -> list[np.ndarray]:
        return _columns(sorted({semantics.head_row(rule, b) for b in semantics.bindings(rule, self.rels)}),
                        rule.head.arity)

    def fire(self, rule: Rule) -> tuple[dict[str, np.ndarray], int]:
        envs = list(semantics.bindings(rule, self.rels))
        names = sorted({v.name for lit in rule.body for v in _vars(lit)})
        return {x: np.asarray([b[x] for b in envs], dtype=np.int64) for x in names}, len(envs)

    def least_model(self, pred: str) -> list[np.ndarray]:
        return _columns(sorted(semantics.least_model(self.prog, self.inputs)[pred]), self.prog.arity[pred])


def _vars(lit: Atom | Compare) -> list[Var]:
    if isinstance(lit, Atom):
        return [t for t in lit.args if isinstance(t, Var)]
    return variables(lit.left) + variables(lit.right)


def _columns(rows: list[tuple[int, ...]], arity: int) -> list[np.ndarray]:
    return [np.asarray([r[i] for r in rows], dtype=np.int64) for i in range(arity)]


def _best(codes: np.ndarray, vals: np.ndarray, func: str) -> tuple[np.ndarray, np.ndarray]:
    """One (code, best value) per distinct code, codes ascending; `func` is min or max."""
    order = np.lexsort((vals if func == "min" else -vals, codes))
    c, v = codes[order], vals[order]
    first = np.ones(len(c), dtype=bool)
    first[1:] = c[1:] != c[:-1]
    return c[first], v[first]


def linear_plan(prog: Analysed, binder: Binder, with_fixpoint: bool = True) -> LinearPlan:
    """The plan of a decomposable program, bound to its input by `binder` (DatalogError saying why if it is not
    one)."""
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
            raise DatalogError(f"the rule for {pred} reads it {n} times: a linear plan takes linear recursions (a "
                               "path composition such as apsp has its own plan, `pair_plan`)", r.pos,
                               prog.program.source, prog.program.text)
    if prog.arity[pred] != (1 if plain else 2):
        raise DatalogError(f"{pred} must have one key column (and the value) to be partitioned", None,
                           prog.program.source)
    if st is not prog.strata[-1]:
        later = [p for s in prog.strata[prog.strata.index(st) + 1:] for p in s.preds]
        raise DatalogError(f"the workers compute {pred}; the predicates derived after it ({', '.join(later)}) are "
                           "not supported", None, prog.program.source)
    binder.lower(st)
    init_k: list[np.ndarray] = []
    init_v: list[np.ndarray] = []
    raw: list[tuple[np.ndarray, np.ndarray, dict, str | None, tuple, Expr | None]] = []
    for i in st.rules:
        r = prog.rules[i]
        if is_exit(r, st):
            cols = binder.derive(r)
            init_k.append(cols[0])
            init_v.append(cols[-1] if not plain else np.zeros(len(cols[0]), dtype=np.int64))
        else:
            raw.append(_steps(prog, binder, r, st, plain))
    empty = np.zeros(0, dtype=np.int64)
    ik = np.concatenate(init_k) if init_k else empty
    iv = np.concatenate(init_v) if init_v else empty
    keys = np.unique(np.concatenate([ik] + [g[0] for g in raw] + [g[1] for g in raw]))
    ik_idx, iv = _best(np.searchsorted(keys, ik), iv, "min" if func != "max" else "max")
    groups = [StepGroup(np.searchsorted(keys, a), np.searchsorted(keys, b), env, vv, lits, head)
              for a, b, env, vv, lits, head in raw]
    fk = fv = None
    if with_fixpoint:
        try:
            cols = binder.least_model(pred)
            fk = np.searchsorted(keys, cols[0])
            fv = cols[1] if not plain else np.zeros(len(cols[0]), dtype=np.int64)
        except Divergence:
            fk = fv = None
    return LinearPlan(pred, func or "min", keys, ik_idx, iv, groups, fk, fv, prog, plain)


def _steps(prog: Analysed, binder: Binder, r: Rule, st: Stratum, plain: bool) -> tuple:
    source, text = prog.program.source, prog.program.text
    ks = st.recursive_atoms(r)
    if len(ks) != 1:
        raise DatalogError(f"the rule for {r.head.pred} reads it {len(ks)} times: the workers run linear recursions "
                           "(a path composition such as apsp has its own plan, `pair_plan`)", r.pos, source, text)
    k = ks[0]
    atom = r.atoms[k]
    key = atom.args[0]
    if not isinstance(key, Var):
        raise DatalogError(f"{atom}: the key read from {atom.pred} must be a variable", atom.pos, source, text)
    value_var = None
    if not plain:
        v = atom.args[1]
        if isinstance(v, Var):
            value_var = v.name
        elif not isinstance(v, Wildcard):
            raise DatalogError(f"{atom}: the value read must be a variable or '_'", atom.pos, source)
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
            raise DatalogError(f"{other} reads the recursive value: not decomposable", other.pos, source)
    head = r.head
    if isinstance(head.args[0], Var) and head.args[0].name in dep:
        raise DatalogError(f"the head key {head.args[0]} depends on the value read: not decomposable", head.pos,
                           source)
    body = tuple(a for j, a in enumerate(r.atoms) if j != k) + tuple(kept)
    if not any(isinstance(lit, Atom) for lit in body):
        raise DatalogError(f"the rule for {head.pred} joins {atom.pred} with nothing", r.pos, source)
    b, n = binder.fire(Rule(head, body, r.pos))
    if n and key.name not in b:
        raise DatalogError(f"{key} (the key read from {atom.pred}) is not bound by the rest of the body", atom.pos,
                           source)
    empty = np.zeros(0, dtype=np.int64)
    names = [x for x in b if x != key.name]
    dst = head.args[0]
    srcs = b[key.name][:n] if n else empty
    dsts = np.full(n, dst.value, dtype=np.int64) if isinstance(dst, Const) else (b[dst.name][:n] if n else empty)
    env = {x: b[x][:n] for x in names}
    env[key.name] = srcs
    hv = head.agg.var if head.agg is not None else None
    return srcs, dsts, env, value_var, tuple(rest), hv


@dataclass
class PairPlan:
    """A non-linear path-composition program bound to its input: `r(X, Y, agg<D>)` derived from
    `r(X, Z, D1), r(Z, Y, D2)` and comparisons on the two values (`D = D1 + D2`), besides exit rules.

    Nodes are numbered 0..n-1 (`nodes` holds their values); the pair (x, y) is key x * n + y, so `keys` is
    0..n²-1 and `pair(keys)` gives the nodes back. The workers partition rows: pair (x, y) belongs to the
    worker of node x (its value mod W), as a linear program's keys do."""

    pred: str
    func: str  # "min" or "max"
    nodes: np.ndarray
    init_keys: np.ndarray  # pair keys with a value from the exit rules, and the values
    init_vals: np.ndarray
    left: str  # the variable bound to the first atom's value, and to the second's
    right: str
    literals: tuple[Compare, ...]  # the comparisons and assignments of the composing rule
    head: str  # the head's value variable
    fixpoint_keys: np.ndarray | None
    fixpoint_vals: np.ndarray | None
    program: Analysed

    @property
    def keys(self) -> np.ndarray:
        return np.arange(len(self.nodes) ** 2, dtype=np.int64)

    @cached_property
    def fixpoint(self) -> dict[int, int] | None:
        if self.fixpoint_keys is None:
            return None
        return dict(zip(self.fixpoint_keys.tolist(), self.fixpoint_vals.tolist()))

    def pair(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (X, Y) node values of pair keys."""
        n = len(self.nodes)
        return self.nodes[keys // n], self.nodes[keys % n]

    def owner(self, w: int) -> np.ndarray:
        """The worker of each node (its value mod W): it owns the node's row of pairs."""
        return self.nodes % w

    @cached_property
    def init(self) -> dict[int, int]:
        return dict(zip(self.init_keys.tolist(), self.init_vals.tolist()))

    def compose(self, d1: np.ndarray, d2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(derived values, enabled mask) of the composing rule for the values read by its two atoms."""
        return compose(self.literals, self.left, self.right, self.head, d1, d2)

    def apply(self, d1: Any, d2: Any, logic: Callable[[list[Any]], Any] = lambda cs: all(cs)) -> tuple[Any, Any]:
        """(derived value, condition) of the composing rule for one pair of values read, with Python operators:
        on ints, or on the spec language's terms (`logic` supplies the conjunction), as `Step.apply`."""
        env: dict[str, Any] = {self.left: d1, self.right: d2}
        conds = _bind(self.literals, env)
        return env[self.head], logic(conds) if conds else True

    def better(self, a: Any, b: Any) -> Any:
        return a < b if self.func == "min" else a > b

    def bounds(self) -> tuple[int, int]:
        """(best, worst) values over every derivation along a walk of at most n edges (n nodes).

        Every value derived is that of a walk (the exit values, γ'd per pair, composed along it). With no
        improving cycle the least model's value of a pair is that of a walk of at most n edges (a simple
        path, or a simple cycle for (x, x)), so it lies within these bounds; a better value needs an improving
        cycle (divergence), and a worse candidate can never be a pair's final value."""
        n = len(self.nodes)
        layer = {(k // n, k % n, v) for k, v in self.init.items()}
        seen = set(layer)
        edges = [(k // n, k % n, v) for k, v in self.init.items()]
        for _ in range(n - 1):
            nxt = set()
            for x, z, a in layer:
                for z2, y, b in edges:
                    if z2 == z:
                        v, ok = self.apply(a, b)
                        if ok and (x, y, v) not in seen:
                            nxt.add((x, y, v))
            if not nxt:
                break
            seen |= nxt
            layer = nxt
        vals = {v for _, _, v in seen}
        if not vals:
            return 0, 0
        return (min(vals), max(vals)) if self.func == "min" else (max(vals), min(vals))

    def derivable(self, best: int, worst: int) -> dict[int, set[int]]:
        """Per pair key, every value some derivation gives (any composition of derived pairs), within
        [best, worst] (a finite set)."""
        n = len(self.nodes)
        lo, hi = min(best, worst), max(best, worst)
        out: dict[int, set[int]] = {k: {v} for k, v in self.init.items() if lo <= v <= hi}
        grew = True
        while grew:
            grew = False
            for k1, vs1 in list(out.items()):
                x, z = divmod(k1, n)
                for y in range(n):
                    for a in list(vs1):
                        for b in list(out.get(z * n + y, ())):
                            v, ok = self.apply(a, b)
                            if ok and lo <= v <= hi and v not in out.setdefault(x * n + y, set()):
                                out[x * n + y].add(v)
                                grew = True
        return out


def compose(literals: tuple[Compare, ...], left: str, right: str, head: str, d1: np.ndarray,
            d2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, enabled mask) of a composing rule's head for the values `d1`, `d2` its two atoms read."""
    env: dict[str, Any] = {left: d1, right: d2}
    ok = np.ones(len(d1), dtype=bool)
    for c in _bind(literals, env):
        ok &= c
    value = env[head]
    if not isinstance(value, np.ndarray):
        value = np.full(len(d1), value, dtype=np.int64)
    return value, ok


def is_composition(prog: Analysed) -> bool:
    """Whether the program's recursion reads its predicate twice in some rule (the shape `pair_plan` takes)."""
    return any(len(st.recursive_atoms(prog.rules[i])) > 1 for st in prog.strata if st.recursive for i in st.rules)


def pair_plan(prog: Analysed, binder: Binder, with_fixpoint: bool = True) -> PairPlan:
    """The plan of a path-composition program, bound to its input by `binder` (see `PairPlan`; DatalogError saying
    why if it is not one)."""
    src = prog.program.source
    rec = [s for s in prog.strata if s.recursive]
    if len(rec) != 1 or len(rec[0].preds) != 1 or rec[0] is not prog.strata[-1]:
        raise DatalogError("the workers run a non-linear program with one recursive predicate, derived last", None, src)
    st = rec[0]
    pred = st.preds[0]
    func = prog.aggregate.get(pred)
    if func not in ("min", "max") or prog.arity[pred] != 3:
        raise DatalogError(f"the workers run a non-linear {pred} only as {pred}(X, Y, min<D>) or max<D>: two key "
                           "columns and an aggregated value", None, src)
    binder.lower(st)
    init: list[list[np.ndarray]] = []
    shape = None
    for i in st.rules:
        r = prog.rules[i]
        if is_exit(r, st):
            init.append(binder.derive(r))
            continue
        shape = _composition(r, st, prog, shape)
    if shape is None:
        raise DatalogError(f"{pred} has no rule composing two of its facts", None, src)
    empty = np.zeros(0, dtype=np.int64)
    xs = np.concatenate([c[0] for c in init]) if init else empty
    ys = np.concatenate([c[1] for c in init]) if init else empty
    vs = np.concatenate([c[2] for c in init]) if init else empty
    nodes = np.unique(np.concatenate([xs, ys]))
    n = len(nodes)
    if n * n > 25_000_000:
        raise DatalogError(f"{pred} over {n:,} nodes has {n * n:,} pairs: the workers hold a table of every pair, "
                           "and this one is too large", None, src, hint="use a graph of at most 5,000 nodes")
    codes = np.searchsorted(nodes, xs) * n + np.searchsorted(nodes, ys)
    ik, iv = _best(codes, vs, func)
    fk = fv = None
    if with_fixpoint:
        try:
            cols = binder.least_model(pred)
            fk = np.searchsorted(nodes, cols[0]) * n + np.searchsorted(nodes, cols[1])
            order = np.argsort(fk)
            fk, fv = fk[order], cols[2][order]
        except DatalogError:  # divergence, or values that overflow on the way (a negative cycle doubles them)
            fk = fv = None
    left, right, literals, head = shape
    return PairPlan(pred, func, nodes, ik, iv, left, right, literals, head, fk, fv, prog)


def _composition(r: Rule, st: Stratum, prog: Analysed, seen: tuple | None) -> tuple[str, str, tuple, str]:
    """(left value variable, right value variable, literals, head value variable) of a rule
    `r(X, Y, agg<D>) <- r(X, Z, D1), r(Z, Y, D2), <comparisons on D1, D2>`, or a DatalogError."""
    src, text = prog.program.source, prog.program.text
    atoms = r.atoms
    form = f"{r.head.pred}(X, Y, {prog.aggregate[r.head.pred]}<D>) <- {r.head.pred}(X, Z, D1), " \
           f"{r.head.pred}(Z, Y, D2), D = D1 + D2"
    if len(atoms) != 2 or len(st.recursive_atoms(r)) != 2:
        raise DatalogError(f"the workers run non-linear rules of the form {form}; this rule has other atoms or reads "
                           f"{r.head.pred} once", r.pos, src, text)
    a, b = atoms
    terms = [*a.args, *b.args, *r.head.args]
    if not all(isinstance(t, Var) for t in terms) or r.head.agg is None:
        raise DatalogError(f"the workers run non-linear rules of the form {form}", r.pos, src, text)
    x, z, d1 = (t.name for t in a.args)
    z2, y, d2 = (t.name for t in b.args)
    hx, hy = (t.name for t in r.head.args)
    if z != z2 or (hx, hy) != (x, y) or len({x, y, z, d1, d2}) != 5:
        raise DatalogError(f"the workers run non-linear rules of the form {form} (the first atom's second key is "
                           "the second atom's first, and the head's keys are the outer ones)", r.pos, src, text)
    lits = tuple(lit for lit in r.body if not isinstance(lit, Atom))
    allowed = {d1, d2}
    for lit in lits:
        if not isinstance(lit, Compare):
            raise DatalogError(f"{lit}: the workers run only comparisons besides the two atoms", r.pos, src, text)
        a_ = assignment(lit, allowed)
        names = {v.name for side in (lit.left, lit.right) for v in variables(side)}
        if a_ is not None:
            allowed.add(a_[0].name)
        elif not names <= allowed:
            raise DatalogError(f"{lit} reads a key: the workers run comparisons on the values only", r.pos, src, text)
    shape = (d1, d2, lits, r.head.agg.var.name)
    if seen is not None:
        raise DatalogError(f"{r.head.pred} has more than one composing rule: the workers run one", r.pos, src, text)
    return shape
