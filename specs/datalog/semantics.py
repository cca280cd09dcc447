"""The reference semantics of a program: its least model, computed tuple at a time in plain Python.

This defines what a program means; `lockstep.checker.datalog.evaluate` is the fast path, and a differential
test holds the two to the same least model on every shipped program. Strata are evaluated in dependency
order. A non-recursive stratum fires each rule once over the strata below and aggregates what it derives:
min/max keep the best value per group, count counts the distinct values of its variable per group, sum adds
the values of the distinct bindings of the body. A recursive stratum is evaluated naively with γ (min or
max, one best value per group) pushed into the recursion, which gives the least model where PreM holds
(`lockstep datalog prem` proves it):

    R0 = ∅;  Ri+1 = γ(Ri ∪ T(Ri)),  until Ri+1 = Ri

Round i holds the best value of every derivation of depth at most i. Without an improving cycle a best
derivation repeats no group along a branch, so it is at most as deep as the number of groups the stratum
can hold over the active domain; a recursion still improving one round later diverges (`Divergence`). A
count or sum inside a recursion has no meaning here (the evaluator runs it where PreM is proved).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .analysis import Analysed, Stratum, assignment
from .syntax import Atom, BinOp, Compare, Const, DatalogError, Expr, Neg, Rule, Var, variables

Row = tuple[int, ...]
Relations = dict[str, set[Row]]  # an aggregated predicate's rows end with the value: (group..., value)


class Divergence(DatalogError):
    """The recursion does not settle (for example a negative cycle under min): the message says where."""


def least_model(prog: Analysed, inputs: Mapping[str, Iterable[Iterable[int]]]) -> Relations:
    """Every predicate's rows in the least model of an analysed program on these input relations."""
    rels = edb(prog, inputs)
    for st in prog.strata:
        evaluate_stratum(prog, st, rels)
    return rels


def edb(prog: Analysed, inputs: Mapping[str, Iterable[Iterable[int]]]) -> Relations:
    """The input relations and the program's facts, as sets of rows."""
    unknown = sorted(set(inputs) - set(prog.inputs))
    if unknown:
        raise DatalogError(f"the program declares no input {unknown[0]!r}", None, prog.program.source)
    rels: Relations = {}
    for pred in prog.edb:
        if pred in prog.inputs and pred not in inputs:
            raise DatalogError(f"no data for input relation {pred}", None, prog.program.source)
        rows = {tuple(int(x) for x in row) for row in inputs.get(pred, ())} | set(prog.facts.get(pred, []))
        if any(len(r) != prog.arity[pred] for r in rows):
            raise DatalogError(f"input {pred}: every row has {prog.arity[pred]} columns", None, prog.program.source)
        rels[pred] = rows
    return rels


def evaluate_stratum(prog: Analysed, st: Stratum, rels: Relations) -> None:
    """Add the stratum's predicates to `rels`, which holds every stratum below it."""
    rules = [prog.rules[i] for i in st.rules]
    if not st.recursive:
        (pred,) = st.preds
        rels[pred] = aggregate(prog.aggregate.get(pred), [(r, b) for r in rules for b in bindings(r, rels)])
        return
    for p in st.preds:
        if prog.aggregate.get(p) not in (None, "min", "max"):
            raise DatalogError(f"{prog.aggregate[p]}<...> of {p} inside its recursion: the reference semantics "
                               "pushes only min and max into a recursion", None, prog.program.source)
        rels[p] = set()
    rounds = 0
    while True:
        derived: Relations = {p: set(rels[p]) for p in st.preds}
        for r in rules:
            derived[r.head.pred] |= {head_row(r, b) for b in bindings(r, rels)}
        new = {p: best(rows, prog.aggregate.get(p)) for p, rows in derived.items()}
        if all(new[p] == rels[p] for p in st.preds):
            return
        rels.update(new)
        rounds += 1
        if rounds > _groups(prog, st, rels) + 1:
            raise Divergence(f"the recursion of {', '.join(st.preds)} still improves after {rounds} rounds, more "
                             "than it has groups: an improving cycle (e.g. a negative cycle) makes it diverge", None,
                             prog.program.source)


def _groups(prog: Analysed, st: Stratum, rels: Relations) -> int:
    """How many groups the stratum's predicates can hold over the values seen so far."""
    domain = {x for p, rows in rels.items() for row in rows for x in (row[:-1] if p in prog.aggregate else row)}
    domain |= {t.value for r in prog.rules for a in r.atoms for t in a.args if isinstance(t, Const)}
    return sum(len(domain) ** (prog.arity[p] - (p in prog.aggregate)) for p in st.preds)


def best(rows: set[Row], func: str | None) -> set[Row]:
    """γ: the best (min or max) value per group of an aggregated predicate's rows; a plain relation as it is."""
    if func is None:
        return rows
    top: dict[Row, int] = {}
    for *group, v in rows:
        g = tuple(group)
        if g not in top or (v < top[g] if func == "min" else v > top[g]):
            top[g] = v
    return {(*g, v) for g, v in top.items()}


def aggregate(func: str | None, derived: list[tuple[Rule, dict[str, int]]]) -> set[Row]:
    """The rows of a predicate of a non-recursive stratum, from its rules' bindings, aggregated with `func`."""
    rows = {head_row(r, b) for r, b in derived}
    if func in (None, "min", "max"):
        return best(rows, func)
    parts: dict[Row, set] = {}
    for r, b in derived:
        # count: the distinct values of the counted variable; sum: one summand per distinct binding of the body
        v = b[r.head.agg.var.name]
        parts.setdefault(head_row(r, b)[:-1], set()).add(v if func == "count" else (v, *sorted(b.items())))
    return {(*g, len(vs) if func == "count" else sum(s[0] for s in vs)) for g, vs in parts.items()}


def head_row(rule: Rule, b: Mapping[str, int]) -> Row:
    """The head's row for one binding of the body (an aggregate's variable last, not yet aggregated)."""
    h = rule.head
    row = tuple(t.value if isinstance(t, Const) else b[t.name] for t in h.args)
    return row + (b[h.agg.var.name],) if h.agg is not None else row


def bindings(rule: Rule, rels: Mapping[str, set[Row]]) -> Iterator[dict[str, int]]:
    """Every binding of the rule body's variables: its atoms joined left to right, each comparison applied (or
    assignment made) as soon as its variables are bound."""
    atoms = rule.atoms
    comps = [lit for lit in rule.body if isinstance(lit, Compare)]

    def extend(i: int, b: dict[str, int], pending: list[Compare]) -> Iterator[dict[str, int]]:
        b, pending, ok = _compare_all(b, pending)
        if not ok:
            return
        if i == len(atoms):
            yield b
            return
        for row in sorted(rels[atoms[i].pred]):
            m = match(atoms[i], row, b)
            if m is not None:
                yield from extend(i + 1, m, pending)

    yield from extend(0, {}, comps)


def match(atom: Atom, row: Row, b: dict[str, int]) -> dict[str, int] | None:
    """The binding `b` extended by matching `atom` against `row` (None if they disagree)."""
    out = dict(b)
    for t, x in zip(atom.args, row):
        if isinstance(t, Const) and t.value != x:
            return None
        if isinstance(t, Var) and out.setdefault(t.name, x) != x:
            return None
    return out


def _compare_all(b: dict[str, int], pending: list[Compare]) -> tuple[dict[str, int], list[Compare], bool]:
    """Apply every pending comparison whose variables are bound (an assignment binds its variable, which may let
    others run): (the binding, what is still pending, whether every comparison applied holds)."""
    progress = True
    while progress:
        progress = False
        for c in list(pending):
            a = assignment(c, set(b))
            if a is not None:
                b = {**b, a[0].name: value(a[1], b)}
            elif all(v.name in b for side in (c.left, c.right) for v in variables(side)):
                if not holds(c.op, value(c.left, b), value(c.right, b)):
                    return b, pending, False
            else:
                continue
            pending = [p for p in pending if p is not c]
            progress = True
    return b, pending, True


def value(e: Expr, b: Mapping[str, Any]) -> Any:
    """An arithmetic expression's value under a binding (of ints, or of numpy columns: a plan's steps)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        return b[e.name]
    if isinstance(e, Neg):
        return -value(e.arg, b)
    assert isinstance(e, BinOp)
    x, y = value(e.left, b), value(e.right, b)
    return x + y if e.op == "+" else x - y if e.op == "-" else x * y


def holds(op: str, a: int, b: int) -> bool:
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


__all__ = ["Divergence", "Relations", "aggregate", "best", "bindings", "edb", "evaluate_stratum", "head_row",
           "least_model"]
