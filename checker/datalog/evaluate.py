"""Semi-naive bottom-up evaluation, vectorised with numpy, with aggregates pushed into the recursion.

Strata are evaluated in dependency order. A non-recursive stratum fires each rule once. A recursive
stratum starts from its exit rules and then, each iteration, fires every recursive rule once per body
atom of the stratum with that atom reading only the last iteration's new facts (δ) and the others the
whole relation so far; the new facts are what improves the relation. For an aggregated predicate the
relation is γ of what was derived — one best value per group for `min`/`max`, the count or sum over
distinct contributions for `count`/`sum` — and δ is the groups whose value improved:

    R0 = γ(exit rules);  δ0 = R0
    Ni+1 = γ(T(δi, Ri));  δi+1 = {t ∈ Ni+1 : t improves Ri on its group};  Ri+1 = γ(Ri ∪ δi+1)

Keeping only γ of each relation inside the recursion is correct only where PreM holds
(γ(T(I)) = γ(T(γ(I)))), so the caller passes a verdict for every `Site` (`lockstep.checker.datalog.prem`
proves them with z3); a recursive aggregate without a verdict, or with a failed one, is refused.
A recursion that has not settled after `max_iterations` rounds (by default one more than the number
of distinct values in the input and the program, the longest chain of improvements a simple
derivation can make, and at least 10,000) raises `Divergence`: a negative cycle does that.

Where the compiled kernels propagate (`Kernels.propagate`), a min/max recursion whose rules only copy a group or
a value across a join with an earlier stratum (label propagation, as in connected components) is instead taken
to the same fixpoint in place by chaotic iteration: sweeps over the groups that changed, each fired with its
latest value (`Evaluator._propagation` states when that is sound); its iterations are the sweeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from lockstep.specs.datalog.analysis import Analysed, Site, Stratum, assignment, is_exit
from lockstep.specs.datalog.semantics import Divergence
from lockstep.specs.datalog.syntax import Atom, BinOp, Compare, Const, DatalogError, Expr, Neg, Rule, Var, Wildcard, variables

from .relations import (
    DENSE_LIMIT,
    EMPTY,
    NUMPY,
    Index,
    Kernels,
    KeySpace,
    Step,
    check_values,
    distinct,
    group_best,
    group_sum,
    merge_new,
    unique_rows,
)

CROSS_LIMIT = 50_000_000  # rows a join without shared variables may produce
MIN_ROUNDS = 10_000  # a recursion may always run this many rounds before divergence is considered


class NotPreM(DatalogError):
    """An aggregate in recursion whose PreM verdict is missing or false: it cannot be pushed into the recursion."""


# ----------------------------------------------------------------------------------- relations


class SetRelation:
    """A plain relation: distinct rows as columns, with a membership table over its key space."""

    def __init__(self, arity: int, kernels: Kernels = NUMPY):
        self.arity = arity
        self.kernels = kernels
        self.cols: list[np.ndarray] = [EMPTY] * arity
        self.space: KeySpace | None = None
        self.table: np.ndarray | None = None  # dense: bool per code
        self.codes = EMPTY  # sparse: sorted codes, but for
        self.run = EMPTY  # ... those the last add brought (sorted), merged in when more come
        self.version = 0

    def __len__(self) -> int:
        return len(self.cols[0]) if self.arity else int(self.table is not None and self.table.any())

    def columns(self) -> list[np.ndarray]:
        return self.cols

    def _reindex(self, extra: list[np.ndarray]) -> None:
        allcols = [np.concatenate([a, b]) for a, b in zip(self.cols, extra)] if len(self.cols[0]) else extra
        self.space = KeySpace.covering(allcols, 0.25)
        codes = self.space.encode(self.cols)
        if self.space.total <= DENSE_LIMIT:
            self.table = np.zeros(self.space.total, dtype=bool)
            self.table[codes] = True
        else:
            self.table = None
            self.codes, self.run = np.sort(codes), EMPTY

    def add(self, cols: list[np.ndarray]) -> list[np.ndarray]:
        """Add rows; return the new ones (distinct, not already present)."""
        if self.arity == 0:
            if len(cols) == 0 and not len(self):
                self.table = np.ones(1, dtype=bool)
                self.version += 1
                return []
            return []
        if len(cols[0]) == 0:
            return [c[:0] for c in cols]
        if self.space is None or not self.space.fits(cols):
            self._reindex(cols)
        space = self.space
        given = space.encode(cols)
        codes = distinct(given, self.kernels)
        if self.table is not None:
            new = codes[~self.table[codes]]
            self.table[new] = True
        else:
            if len(self.run):
                self.codes = merge_new(self.codes, self.run, self.kernels)[0]
            new = self.kernels.fresh_sorted(self.codes, codes) if len(self.codes) else codes
            self.run = new
        held = len(self.cols[0])
        if held and len(new):  # the rows so far, then the new ones decoded in place after them
            grown = [np.empty(held + len(new), dtype=np.int64) for _ in self.cols]
            for g, c in zip(grown, self.cols):
                g[:held] = c
            out = space.decode(new, [g[held:] for g in grown])
            self.cols = grown
        elif not held and len(new) == len(given) and np.array_equal(new, given):
            self.cols, out = list(cols), list(cols)  # the first rows, distinct and in code order already: as given
        else:
            out = space.decode(new)
            if len(new):
                self.cols = out
        if len(new):
            self.version += 1
        return out


WORST = {"min": np.iinfo(np.int64).max, "max": np.iinfo(np.int64).min}


class AggRelation:
    """An aggregated relation: one value per group (the best for min/max, the total for count/sum).

    For count and sum the distinct contributions are kept too, so that a contribution derived twice counts once."""

    def __init__(self, arity: int, func: str, kernels: Kernels = NUMPY):
        self.nkeys, self.func = arity - 1, func
        self.kernels = kernels
        self.space: KeySpace | None = None
        self.codes = EMPTY  # sparse: sorted codes of the groups present, and their values
        self.vals = EMPTY
        self.table: np.ndarray | None = None  # dense (a small key space): the value of every code
        self.has: np.ndarray | None = None  # ... and whether the group is present
        self.contributions = SetRelation(0, kernels)
        self.version = 0
        self._cols: list[np.ndarray] | None = None

    def __len__(self) -> int:
        return int(self.has.sum()) if self.has is not None else len(self.codes)

    def _present(self) -> tuple[np.ndarray, np.ndarray]:
        if self.has is not None:
            c = np.flatnonzero(self.has)
            return c, self.table[c]
        return self.codes, self.vals

    def columns(self) -> list[np.ndarray]:
        """Rows (group columns..., value)."""
        if self._cols is None:
            codes, vals = self._present()
            keys = self.space.decode(codes) if self.space is not None else [EMPTY] * self.nkeys
            self._cols = [*keys, vals]
        return self._cols

    def _fit(self, keys: list[np.ndarray]) -> None:
        """Room in the key space for these groups (those held are packed again: the packing is monotone)."""
        if self.nkeys == 0:
            if self.space is None:
                self.space = KeySpace([], [])
                self._store(EMPTY, EMPTY)
        elif self.space is None or not self.space.fits(keys):
            codes, vals = self._present()
            old = self.space.decode(codes) if self.space is not None else None
            self.space = KeySpace.covering(keys, 0.25) if old is None else self.space.union(keys)
            self._store(self.space.encode(old) if old is not None else EMPTY, vals)

    def _codes(self, keys: list[np.ndarray]) -> np.ndarray:
        self._fit(keys)
        if self.nkeys == 0:
            return np.zeros(len(keys[0]) if keys else 0, dtype=np.int64)
        return self.space.encode(keys)

    def _store(self, codes: np.ndarray, vals: np.ndarray) -> None:
        if self.space.total <= DENSE_LIMIT:  # an absent group's value is the worst there is (read only through `has`)
            self.table = np.full(self.space.total, WORST.get(self.func, 0), dtype=np.int64)
            self.has = np.zeros(self.space.total, dtype=bool)
            self.table[codes] = vals
            self.has[codes] = True
        else:
            self.table = self.has = None
            self.codes, self.vals = codes, vals

    def better(self, new: np.ndarray, old: np.ndarray) -> np.ndarray:
        return new < old if self.func == "min" else new > old

    def merge(self, keys: list[np.ndarray], vals: np.ndarray) -> list[np.ndarray]:
        """Merge candidate (group, value) pairs (for min/max) or group totals to add (count/sum, from
        `add_contributions`); return the rows whose value improved, as (group columns..., value)."""
        if len(vals) == 0:
            return [EMPTY] * self.nkeys + [EMPTY]
        if self.func in ("min", "max") and self.nkeys == 1:  # one group column: its values, from the least, are codes
            self._fit(keys)
            codes, vals = group_best(keys[0], vals, self.func, self.space.total, self.kernels, self.space.los[0])
        elif self.func in ("min", "max"):
            codes, vals = group_best(self._codes(keys), vals, self.func, self.space.total, self.kernels)
        else:
            codes = self._codes(keys)
            codes, vals = group_sum(codes, vals)
        if self.has is not None:  # dense
            present = self.has[codes]
            cur = self.table[codes]
        else:
            pos = np.searchsorted(self.codes, codes)
            safe = np.minimum(pos, max(len(self.codes) - 1, 0))
            present = (pos < len(self.codes)) & (self.codes[safe] == codes) if len(self.codes) else \
                np.zeros(len(codes), dtype=bool)
            cur = self.vals[safe] if len(self.vals) else np.zeros(len(codes), dtype=np.int64)
        if self.func in ("min", "max"):
            improved = ~present | self.better(vals, cur)
            newvals = vals
        else:
            improved = vals != 0
            newvals = vals + np.where(present, cur, 0)
        if not improved.any():
            return [EMPTY] * self.nkeys + [EMPTY]
        out_codes, out_vals = codes[improved], newvals[improved]
        if self.has is not None:
            self.table[out_codes] = out_vals
            self.has[out_codes] = True
        else:
            upd = improved & present
            self.vals = self.vals.copy()
            self.vals[safe[upd]] = newvals[upd]
            ins = improved & ~present
            if ins.any():
                allc = np.concatenate([self.codes, codes[ins]])
                allv = np.concatenate([self.vals, newvals[ins]])
                order = np.argsort(allc, kind="stable")
                self.codes, self.vals = allc[order], allv[order]
        self.version += 1
        self._cols = None
        keys_out = self.space.decode(out_codes) if self.nkeys else []
        return [*keys_out, out_vals]

    def merge_join(self, probe: np.ndarray, klo: int, indptr: np.ndarray, key: tuple[bool, np.ndarray],
                   val: tuple[bool, np.ndarray], bounds: tuple[int, int]) -> list[np.ndarray] | None:
        """`merge` of what a join derives, in one compiled pass (min/max over one group column): the probes meet
        an offset table (`Index.indptr`, keys from `klo`); each of `key` and `val` is (read from the probe?,
        column); `bounds` are the least and greatest key a match may give. None where the groups are not held
        in a table (the caller merges the derived rows instead)."""
        if len(key[1]) == 0 or len(probe) == 0:
            return [EMPTY] * self.nkeys + [EMPTY]
        self._fit([np.array(bounds, dtype=np.int64)])
        if self.has is None:
            return None
        mark = np.zeros(len(self.has), dtype=np.uint8)
        changed = self.kernels.join_best(probe, klo, indptr, key, val, self.space.los[0], self.func, self.table,
                                         self.has, mark)
        if len(changed) == 0:
            return [EMPTY] * self.nkeys + [EMPTY]
        self.version += 1
        self._cols = None
        return [*self.space.decode(changed), self.table[changed]]

    def add_contributions(self, cols: list[np.ndarray], vals: np.ndarray) -> list[np.ndarray]:
        """count/sum: contributions are rows (group columns..., distinguishing columns...) with a value each
        (1 for count); the new distinct ones are added to their groups' totals."""
        rows = [*cols, vals] if self.func == "sum" else cols
        if self.contributions.arity == 0:
            self.contributions = SetRelation(len(rows), self.kernels)
        new = self.contributions.add(rows)
        if len(new[0]) == 0:
            return [EMPTY] * self.nkeys + [EMPTY]
        add = new[-1] if self.func == "sum" else np.ones(len(new[0]), dtype=np.int64)
        return self.merge(new[: self.nkeys], add)


Relation = SetRelation | AggRelation


@dataclass
class JoinBest:
    """A recursive rule's candidates for one δ atom, merged in one pass as they are derived (`AggRelation.merge_join`):
    a rule of two atoms sharing one variable, no comparison, and a min/max head over one group column, whose other
    atom is of an earlier stratum (so deriving at merge time derives the same rows)."""

    rule: Rule
    k: int  # the δ atom
    src: tuple  # its rows and tag
    at: tuple[int, int]  # the shared variable's position in the δ atom and in the other
    key: tuple[bool, int]  # the head's group variable: (in the δ atom?, its position there or in the other)
    val: tuple[bool, int]  # the aggregated variable, the same way


# ------------------------------------------------------------------------------------ results


@dataclass
class Result:
    """The least model: every predicate's rows (for an aggregated one: group columns, then the value)."""

    relations: dict[str, list[np.ndarray]]
    iterations: dict[str, int] = field(default_factory=dict)  # recursive stratum (its first predicate) -> rounds
    seconds: float = 0.0

    def rows(self, pred: str) -> np.ndarray:
        cols = self.relations[pred]
        return np.stack(cols, axis=1) if cols else np.zeros((0, 0), dtype=np.int64)

    def mapping(self, pred: str) -> dict:
        """An aggregated predicate as {group: value} (a one-column group as a plain int)."""
        cols = self.relations[pred]
        keys = list(zip(*(c.tolist() for c in cols[:-1])))
        if len(cols) == 2:
            keys = [k[0] for k in keys]
        return dict(zip(keys, cols[-1].tolist()))

    def set(self, pred: str) -> set:
        cols = self.relations[pred]
        rows = list(zip(*(c.tolist() for c in cols)))
        return {r[0] for r in rows} if len(cols) == 1 else set(rows)


# ---------------------------------------------------------------------------------- evaluation


Bindings = dict[str, np.ndarray]


def eval_expr(e: Expr, b: Bindings, n: int) -> np.ndarray:
    """An expression over the bindings, as a column (checked against overflow)."""
    if isinstance(e, Const):
        return np.full(n, e.value, dtype=np.int64)
    if isinstance(e, Var):
        return b[e.name]
    if isinstance(e, Neg):
        return -eval_expr(e.arg, b, n)
    assert isinstance(e, BinOp)
    x, y = eval_expr(e.left, b, n), eval_expr(e.right, b, n)
    if e.op == "+":
        out = x + y
    elif e.op == "-":
        out = x - y
    else:
        if len(x) and np.abs(x.astype(np.float64) * y.astype(np.float64)).max(initial=0) > 2.0 ** 62:
            raise DatalogError(f"arithmetic overflow in {e}", None)
        out = x * y
    return check_values(out, str(e))


COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
}


class Evaluator:
    """Evaluates an analysed program on input relations (numpy int64 columns); `kernels` are the innermost passes
    (numpy's, or the same compiled: `lockstep.checker.datalog.kernels`)."""

    def __init__(self, prog: Analysed, inputs: Mapping[str, np.ndarray], prem: Mapping[Site, bool] | None = None,
                 max_iterations: int | None = None, progress: Callable[[str, int, int], None] | None = None,
                 kernels: Kernels = NUMPY):
        self.prog = prog
        self.kernels = kernels
        self.prem = dict(prem or {})
        self.progress = progress
        self.rels: dict[str, Relation] = {}
        self.edb_cols: dict[str, list[np.ndarray]] = {}
        for pred in prog.edb:
            rows = [np.asarray(r, dtype=np.int64) for r in prog.facts.get(pred, [])]
            arity = prog.arity[pred]
            given = inputs.get(pred)
            if pred in prog.inputs and given is None:
                raise DatalogError(f"no data for input relation {pred}", prog.inputs[pred].pos and None,
                                   prog.program.source, hint="give an edge-list file or a graph")
            parts = []
            if rows:
                parts.append(np.stack(rows).reshape(len(rows), arity))
            if given is not None:
                g = np.asarray(given, dtype=np.int64)
                if g.ndim != 2 or g.shape[1] != arity:
                    raise DatalogError(f"input {pred} has {g.shape[1] if g.ndim == 2 else '?'} columns; the program "
                                       f"uses it with {arity}", None, prog.program.source)
                parts.append(g)
            allrows = np.concatenate(parts) if parts else np.zeros((0, arity), dtype=np.int64)
            self.edb_cols[pred] = unique_rows([np.ascontiguousarray(allrows[:, i]) for i in range(arity)], kernels) \
                if arity else []
        unknown = sorted(set(inputs) - set(prog.inputs))
        if unknown:
            raise DatalogError(f"the program declares no input {unknown[0]!r}", None, prog.program.source,
                               hint=f"declare it: .input {unknown[0]}(...).")
        self.max_iterations = max_iterations  # None: decided when a recursion passes MIN_ROUNDS (see the docstring)
        self._index_cache: dict[tuple, Index] = {}

    def _active_domain(self) -> int:
        vals = [c for cols in self.edb_cols.values() for c in cols]
        consts = [np.asarray([t.value], dtype=np.int64) for r in self.prog.rules for lit in r.body
                  for t in (lit.args if isinstance(lit, Atom) else variables(lit.left) + variables(lit.right))
                  if isinstance(t, Const)]
        allv = np.concatenate(vals + consts) if vals or consts else EMPTY
        return len(distinct(allv, self.kernels))

    # -- relations ---------------------------------------------------------------------------
    def _new_relation(self, pred: str) -> Relation:
        func = self.prog.aggregate.get(pred)
        k = self.kernels
        return AggRelation(self.prog.arity[pred], func, k) if func else SetRelation(self.prog.arity[pred], k)

    def _columns(self, pred: str) -> tuple[list[np.ndarray], tuple]:
        """A predicate's rows and a version tag (for index caching)."""
        if pred in self.edb_cols:
            return self.edb_cols[pred], ("edb", pred)
        rel = self.rels[pred]
        return rel.columns(), ("idb", pred, rel.version)

    def _index(self, tag: tuple, cols: list[np.ndarray], positions: tuple[int, ...]) -> Index:
        key = (tag, positions)
        hit = self._index_cache.get(key)
        if hit is None:
            if tag[0] == "idb":  # drop stale versions of the same relation
                for k in [k for k in self._index_cache if k[0][:2] == tag[:2]]:
                    del self._index_cache[k]
            hit = self._index_cache[key] = Index([cols[p] for p in positions], self.kernels)
        return hit

    # -- firing one rule ---------------------------------------------------------------------
    def fire(self, rule: Rule, sources: dict[int, tuple[list[np.ndarray], tuple]], for_head: bool = False
             ) -> tuple[Bindings, int]:
        """All bindings of the rule's body; `sources[i]` overrides the rows body atom i reads. With `for_head`
        only the variables the head needs are kept to the end (joins carry no column nothing reads again)."""
        atoms = rule.atoms
        comps = [lit for lit in rule.body if isinstance(lit, Compare)]
        order = self._order(rule, sources)
        b: Bindings = {}
        n = 1
        first = True
        head = {t.name for t in rule.head.args if isinstance(t, Var)} | ({rule.head.agg.var.name} if rule.head.agg
                                                                        else set())
        # sum tells contributions apart by every binding: nothing is dropped
        prune = for_head and (rule.head.agg is None or rule.head.agg.func != "sum")
        for j, i in enumerate(order):
            cols, tag = sources.get(i) or self._columns(atoms[i].pred)
            needed = None
            if prune:  # the variables read after this join: by the head, later atoms and pending comparisons
                needed = head | {v.name for k in order[j + 1:] for v in _vars(atoms[k])} | \
                    {v.name for c in comps for v in _vars(c)}
            b, n = self._join(b, n, first, atoms[i], cols, tag, i in sources, needed)
            first = False
            b, n, comps = self._apply_comparisons(b, n, comps)
            if n == 0:
                break
        if n and comps:
            b, n, comps = self._apply_comparisons(b, n, comps)
        return b, n

    def _order(self, rule: Rule, sources: dict[int, tuple]) -> list[int]:
        """Join order: the δ atom first, then atoms sharing variables with what is bound (smallest first)."""
        atoms = rule.atoms
        remaining = list(range(len(atoms)))
        size = {i: len((sources.get(i) or self._columns(atoms[i].pred))[0][0]) if atoms[i].args else 1
                for i in remaining}
        start = min(sources) if sources else min(remaining, key=lambda i: size[i])
        order = [start]
        remaining.remove(start)
        bound = {t.name for t in atoms[start].args if isinstance(t, Var)}
        while remaining:
            sharing = [i for i in remaining if any(isinstance(t, Var) and t.name in bound for t in atoms[i].args)]
            nxt = min(sharing or remaining, key=lambda i: size[i])
            order.append(nxt)
            remaining.remove(nxt)
            bound |= {t.name for t in atoms[nxt].args if isinstance(t, Var)}
        return order

    def _join(self, b: Bindings, n: int, first: bool, atom: Atom, cols: list[np.ndarray], tag: tuple,
              is_delta: bool, needed: set[str] | None = None) -> tuple[Bindings, int]:
        """The bindings extended by the matching rows of `atom`; of the variables bound before, only those in
        `needed` (all, if None) are carried on."""
        m = len(cols[0]) if cols else 1
        keep = None
        for pos, t in enumerate(atom.args):
            if isinstance(t, Const):
                mask = cols[pos] == t.value
                keep = mask if keep is None else keep & mask
        seen: dict[str, int] = {}
        for pos, t in enumerate(atom.args):
            if isinstance(t, Var) and t.name not in b:
                if t.name in seen:
                    mask = cols[pos] == cols[seen[t.name]]
                    keep = mask if keep is None else keep & mask
                else:
                    seen[t.name] = pos
        filtered = keep is not None
        if filtered:
            cols = [c[keep] for c in cols]
            m = len(cols[0]) if cols else 0
        shared = [(pos, t.name) for pos, t in enumerate(atom.args) if isinstance(t, Var) and t.name in b]
        # one key position per shared variable (repeats become filters below)
        keypos: dict[str, int] = {}
        for pos, name in shared:
            keypos.setdefault(name, pos)
        if first:
            out = {name: cols[pos] for name, pos in seen.items()}
            return out, m
        column: Callable[[int], np.ndarray]
        if not keypos:
            if n * m > CROSS_LIMIT:
                raise DatalogError(f"{atom} shares no variable with the atoms before it: the join would produce "
                                   f"{n * m:,} rows", atom.pos, "reorder the body or add a shared variable")
            left = np.repeat(np.arange(n), m)
            rows = np.tile(np.arange(m), n)

            def column(pos: int) -> np.ndarray:
                return cols[pos][rows]
        else:
            names = list(keypos)
            positions = tuple(keypos[x] for x in names)
            fresh = filtered or is_delta
            index = Index([cols[p] for p in positions], self.kernels) if fresh else self._index(tag, cols, positions)
            left, at = index.probe_sorted([b[x] for x in names])
            if fresh:
                rows = index.order[at]

                def column(pos: int) -> np.ndarray:
                    return cols[pos][rows]
            else:  # a cached index keeps its relation's columns in its own order: one gather per column

                def column(pos: int) -> np.ndarray:
                    return index.take(cols[pos], pos, at)
        out = {name: col[left] for name, col in b.items() if needed is None or name in needed}
        for name, pos in seen.items():
            out[name] = column(pos)
        ok = None
        for pos, name in shared:
            if keypos[name] != pos:
                mask = column(pos) == b[name][left]
                ok = mask if ok is None else ok & mask
        nout = len(left)
        if ok is not None:
            out = {k: v[ok] for k, v in out.items()}
            nout = int(ok.sum())
        return out, nout

    def _apply_comparisons(self, b: Bindings, n: int, comps: list[Compare]) -> tuple[Bindings, int, list[Compare]]:
        progress = True
        comps = list(comps)
        while progress and comps:
            progress = False
            for c in list(comps):
                a = assignment(c, set(b))
                if a is not None:
                    var, e = a
                    b = dict(b)
                    b[var.name] = eval_expr(e, b, n)
                elif all(v.name in b for side in (c.left, c.right) for v in variables(side)):
                    mask = COMPARE[c.op](eval_expr(c.left, b, n), eval_expr(c.right, b, n))
                    if not mask.all():
                        b = {k: v[mask] for k, v in b.items()}
                        n = int(mask.sum())
                else:
                    continue
                comps.remove(c)
                progress = True
        return b, n, comps

    def derive(self, rule: Rule, sources: dict[int, tuple]) -> list[np.ndarray] | tuple[list[np.ndarray], np.ndarray]:
        """The head rows a rule derives (for count/sum: contribution rows and values)."""
        b, n = self.fire(rule, sources, for_head=True)
        if n == 0:  # the join stopped early: not every variable is bound
            b = {name: EMPTY for name in {v.name for lit in rule.body for v in _vars(lit)}}
        h = rule.head
        cols = [np.full(n, t.value, dtype=np.int64) if isinstance(t, Const) else b[t.name][:n] for t in h.args]
        if h.agg is None:
            return cols
        v = b[h.agg.var.name][:n]
        if h.agg.func in ("min", "max"):
            return cols + [v]
        # count: distinct values of the counted variable per group; sum: per group and body binding
        if h.agg.func == "count":
            return cols + [v], v
        extra = [b[name][:n] for name in sorted(b)]
        return cols + extra, v

    def _join_best(self, rule: Rule, k: int, st: Stratum) -> tuple | None:
        """(at, key, val) of `JoinBest` where the rule has its shape and the kernels join into groups, else None."""
        h = rule.head
        if not self.kernels.joins_into_groups or len(rule.atoms) != 2 or len(rule.body) != 2 or h.agg is None or \
                h.agg.func not in ("min", "max") or len(h.args) != 1 or not isinstance(h.args[0], Var):
            return None
        d, o = rule.atoms[k], rule.atoms[1 - k]
        if o.pred in st.preds:
            return None
        names = []
        for a in (d, o):
            if not all(isinstance(t, (Var, Wildcard)) for t in a.args):
                return None
            vs = [t.name for t in a.args if isinstance(t, Var)]
            if len(set(vs)) != len(vs):
                return None
            names.append({t.name: i for i, t in enumerate(a.args) if isinstance(t, Var)})
        shared = set(names[0]) & set(names[1])
        if len(shared) != 1:
            return None
        x = shared.pop()

        def where(name: str) -> tuple[bool, int] | None:
            return (True, names[0][name]) if name in names[0] else (False, names[1][name]) if name in names[1] else None

        key, val = where(h.args[0].name), where(h.agg.var.name)
        return None if key is None or val is None else ((names[0][x], names[1][x]), key, val)

    def _merge_join(self, pred: str, job: JoinBest) -> list[np.ndarray]:
        rel = self.rels[pred]
        assert isinstance(rel, AggRelation)
        dcols = job.src[0]
        ocols, tag = self._columns(job.rule.atoms[1 - job.k].pred)
        index = self._index(tag, ocols, (job.at[1],)) if len(ocols[0]) else None
        if index is not None and index.dense:
            def column(where: tuple[bool, int]) -> tuple[bool, np.ndarray]:
                return (True, dcols[where[1]]) if where[0] else (False, index.column(ocols[where[1]], where[1]))

            key = column(job.key)
            bounds = index.bounds(key[1], job.key[1]) if not key[0] else \
                (int(key[1].min()), int(key[1].max())) if len(key[1]) else (0, 0)
            out = rel.merge_join(dcols[job.at[0]], index.space.los[0], index.indptr, key, column(job.val), bounds)
            if out is not None:
                return out
        return self._merge(pred, self.derive(job.rule, {job.k: job.src}))

    def _merge(self, pred: str, derived) -> list[np.ndarray]:
        if isinstance(derived, JoinBest):
            return self._merge_join(pred, derived)
        rel = self.rels[pred]
        if isinstance(rel, SetRelation):
            return rel.add(derived)
        if rel.func in ("min", "max"):
            return rel.merge(derived[:-1], derived[-1])
        cols, vals = derived
        return rel.add_contributions(cols, vals)

    # -- strata ------------------------------------------------------------------------------
    def run(self) -> Result:
        t0 = time.perf_counter()
        iterations = {}
        for st in self.prog.strata:
            for p in st.preds:
                self.rels[p] = self._new_relation(p)
            if st.recursive:
                self._check_prem(st)
                iterations[st.preds[0]] = self._recursive(st)
            else:
                for i in st.rules:
                    r = self.prog.rules[i]
                    self._merge(r.head.pred, self.derive(r, {}))
        out = {p: list(rel.columns()) for p, rel in self.rels.items()}
        for p, cols in self.edb_cols.items():
            out[p] = list(cols)
        return Result(out, iterations, time.perf_counter() - t0)

    def _check_prem(self, st: Stratum) -> None:
        for site in st.sites:
            rule = self.prog.rules[site.rule]
            atom = rule.atoms[site.occurrence] if site.occurrence is not None else rule.head
            verdict = self.prem.get(site)
            func = self.prog.aggregate[atom.pred]
            if verdict is None:
                raise NotPreM(f"{func}<...> of {atom.pred} is read inside its own recursion here; pushing it into "
                              "the recursion needs a PreM proof", atom.pos, self.prog.program.source,
                              self.prog.program.text, "evaluate through `lockstep datalog`, which proves PreM with z3 "
                                                      "(lockstep.checker.datalog.evaluation.evaluate_program in Python)")
            if not verdict:
                raise NotPreM(f"{func}<...> of {atom.pred} is not PreM in the rule at line {rule.pos.line}: γ cannot "
                              "be pushed into the recursion, and an aggregate inside a recursion has no stratified "
                              "meaning, so the program is refused", atom.pos, self.prog.program.source,
                              self.prog.program.text, "see `lockstep datalog prem` for the counterexample")

    def _recursive(self, st: Stratum) -> int:
        rules = [self.prog.rules[i] for i in st.rules]
        delta: dict[str, list[np.ndarray]] = {}
        for r in rules:
            if is_exit(r, st):
                new = self._merge(r.head.pred, self.derive(r, {}))
                delta[r.head.pred] = _concat(delta.get(r.head.pred), new)
        steps = self._propagation(st)
        if steps is not None:
            return self._propagate(st, steps)
        rounds = 0
        while any(len(d[0]) if d else 0 for d in delta.values()):
            rounds += 1
            if self.max_iterations is None and rounds > MIN_ROUNDS:
                self.max_iterations = max(self._active_domain() + 1, MIN_ROUNDS)
            if self.max_iterations is not None and rounds > self.max_iterations:
                big = max(delta, key=lambda p: len(delta[p][0]) if delta[p] else 0)
                raise Divergence(f"the recursion of {', '.join(st.preds)} has not settled after "
                                 f"{self.max_iterations:,} iterations ({len(delta[big][0]):,} facts of {big} still "
                                 "improving): it diverges, e.g. along a negative cycle", None, self.prog.program.source,
                                 hint="check the input for negative cycles, or raise max_iterations")
            if self.progress is not None:
                self.progress(st.preds[0], rounds, sum(len(d[0]) for d in delta.values() if d))
            frozen = {p: (d, ("delta", p, rounds)) for p, d in delta.items()}
            cands: dict[str, list] = {}
            for r in rules:
                for k in st.recursive_atoms(r):
                    src = frozen.get(r.atoms[k].pred)
                    if src is None or not src[0] or len(src[0][0]) == 0:
                        continue
                    plan = self._join_best(r, k, st)
                    cands.setdefault(r.head.pred, []).append(
                        JoinBest(r, k, src, *plan) if plan is not None else self.derive(r, {k: src}))
            delta = {}
            for pred, parts in cands.items():
                new = None
                for part in parts:
                    new = _concat(new, self._merge(pred, part))
                delta[pred] = new
        return rounds

    def _propagation(self, st: Stratum) -> list[Step] | None:
        """The rules of a recursion that the kernels take to its fixpoint in place (`Kernels.propagate`), else None.

        Taken only where sound: the stratum has one predicate p, aggregated by min or max (PreM proved), and each
        recursive rule is the shape of `JoinBest` with p(X, _) joined on its group X (an offset table's key): its
        other atom is of an earlier stratum, fixed during the recursion, and the head's group and value are copied,
        without arithmetic, from X, p's value or the matched row (p's value never becomes a group). Then every value
        proposed is derived from facts already held, so each group stays no better than in the least model; when no
        rule improves any group the relation is closed under the rules, and, the head being monotone in p's value
        (PreM), at least as good as the least model: it is the least model, reached in any order. Values are copied
        from a finite set, so it settles; and a sweep is at least as good as a semi-naive round, so it takes at
        most as many sweeps as the semi-naive evaluation rounds (`max_iterations` bounds them alike)."""
        if not self.kernels.propagates or len(st.preds) != 1:
            return None
        rel = self.rels[st.preds[0]]
        if not isinstance(rel, AggRelation) or rel.func not in ("min", "max"):
            return None
        steps, bounds = [], []
        for i in st.rules:
            r = self.prog.rules[i]
            ks = st.recursive_atoms(r)
            if not ks:
                continue
            plan = self._join_best(r, ks[0], st) if len(ks) == 1 else None
            if plan is None:
                return None
            (at, at_other), key, val = plan
            if at != 0 or key == (True, 1):
                return None
            ocols, _ = self._columns(r.atoms[1 - ks[0]].pred)
            if len(ocols[0]) == 0:  # the rule derives nothing
                continue
            x = ocols[at_other]
            lo, hi = int(x.min()), int(x.max())
            if hi - lo >= max(DENSE_LIMIT, 4 * len(x)):  # an offset table only over a dense key space (as `Index`)
                return None
            given = [None if key[0] else ocols[key[1]], None if val[0] else ocols[val[1]]]
            indptr, (keycol, valcol) = self.kernels.group_rows(x, hi - lo + 1, lo, given)
            if keycol is not None:
                bounds.append((int(given[0].min()), int(given[0].max())))
            steps.append(Step(lo, indptr, keycol, val[1] if val[0] else 2, valcol))
        for lo, hi in bounds:  # room in p's table for every group a rule may propose
            rel._fit([np.array([lo, hi], dtype=np.int64)])
        return steps if rel.has is not None else None

    def _propagate(self, st: Stratum, steps: list[Step]) -> int:
        """A recursion taken to its fixpoint by `Kernels.propagate`, every group held after its exit rules pending
        (the first δ); how many sweeps it took."""
        pred = st.preds[0]
        rel = self.rels[pred]
        assert isinstance(rel, AggRelation) and rel.has is not None and rel.table is not None
        pending = rel.has.view(np.uint8).copy()
        if self.progress is not None and pending.any():
            self.progress(pred, 1, int(np.count_nonzero(pending)))
        sweeps = self.kernels.propagate(steps, rel.space.los[0], rel.func, rel.table, rel.has, pending,
                                        self.max_iterations)
        rel.version += 1
        rel._cols = None
        if pending.any():
            raise Divergence(f"the recursion of {pred} has not settled after {self.max_iterations:,} iterations "
                             f"({np.count_nonzero(pending):,} groups of {pred} still improving)", None,
                             self.prog.program.source, hint="its rules only copy values, so it settles with more "
                                                            "iterations: raise max_iterations")
        return sweeps


def _vars(lit) -> list[Var]:
    if isinstance(lit, Atom):
        return [t for t in lit.args if isinstance(t, Var)]
    return variables(lit.left) + variables(lit.right)


def _concat(a: list[np.ndarray] | None, b: list[np.ndarray]) -> list[np.ndarray]:
    if a is None:
        return b
    return [np.concatenate([x, y]) for x, y in zip(a, b)]


def evaluate(prog: Analysed, inputs: Mapping[str, np.ndarray] | None = None, prem: Mapping[Site, bool] | None = None,
             max_iterations: int | None = None, progress: Callable[[str, int, int], None] | None = None,
             kernels: Kernels = NUMPY) -> Result:
    """The least model of an analysed program on these inputs (see the module docstring)."""
    return Evaluator(prog, inputs or {}, prem, max_iterations, progress, kernels).run()


__all__ = ["AggRelation", "Divergence", "Evaluator", "NotPreM", "Result", "SetRelation", "evaluate", "eval_expr"]
