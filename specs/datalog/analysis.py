"""Checks on a parsed program and its strata: parameters bound, arities consistent, every variable bound
(safe), negation refused, aggregates placed where they can be evaluated; the predicate dependency graph
split into strata (strongly connected components in dependency order)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import networkx as nx

from .syntax import (
    Aggregate,
    Atom,
    BinOp,
    Compare,
    Const,
    DatalogError,
    Expr,
    Fact,
    Head,
    Input,
    Neg,
    Negated,
    ParamRef,
    Program,
    Rule,
    Var,
    Wildcard,
    variables,
)


@dataclass(frozen=True)
class Site:
    """A place where an aggregate meets recursion: rule `rule` (its index in `Analysed.rules`) reads, in its
    body atom number `occurrence`, an aggregated predicate of its own stratum; or (`occurrence` None) the
    rule derives a `sum` inside a recursion, which is monotone only over non-negative summands. PreM must
    hold at every site for the aggregates to be pushed into the recursion (a rule that reads no aggregated
    predicate of its stratum is unaffected by γ, so PreM holds for it trivially)."""

    rule: int
    occurrence: int | None


@dataclass
class Stratum:
    """Predicates evaluated together (one strongly connected component), and the rules that define them."""

    preds: list[str]
    rules: list[int]  # indices into Analysed.rules
    recursive: bool
    sites: list[Site] = field(default_factory=list)

    def recursive_atoms(self, rule: Rule) -> list[int]:
        """Positions (among the rule's body atoms) of atoms of this stratum's predicates."""
        return [i for i, a in enumerate(rule.atoms) if a.pred in self.preds]


@dataclass
class Analysed:
    """A program whose parameters are bound and whose rules passed every check, ready to evaluate."""

    program: Program
    params: dict[str, int]
    rules: list[Rule]
    facts: dict[str, list[tuple[int, ...]]]
    inputs: dict[str, Input]
    arity: dict[str, int]
    aggregate: dict[str, str]  # IDB predicate -> its aggregate function (absent: a plain set)
    strata: list[Stratum]

    @property
    def idb(self) -> list[str]:
        return [p for s in self.strata for p in s.preds]

    @property
    def edb(self) -> list[str]:
        return sorted(set(self.facts) | set(self.inputs))

    @property
    def sites(self) -> list[Site]:
        return [site for s in self.strata for site in s.sites]

    def stratum_of(self, pred: str) -> Stratum:
        return next(s for s in self.strata if pred in s.preds)

    def error(self, message: str, pos, hint: str | None = None) -> DatalogError:
        return self.program.error(message, pos, hint)


def analyse(program: Program, params: Mapping[str, int] | None = None) -> Analysed:
    """Bind the parameters (`params` override the declared defaults) and check the program."""
    bound = _bind_params(program, dict(params or {}))
    rules = [_subst_rule(r, bound, program) for r in program.rules]
    facts: dict[str, list[tuple[int, ...]]] = {}
    arity: dict[str, int] = {}
    where: dict[str, object] = {}

    def note_arity(pred: str, n: int, pos) -> None:
        if pred in arity and arity[pred] != n:
            raise program.error(f"{pred} is used with {n} argument(s) here and {arity[pred]} at line "
                                f"{where[pred].line}", pos, "give every use of a predicate the same number of arguments")
        arity.setdefault(pred, n)
        where.setdefault(pred, pos)

    inputs: dict[str, Input] = {}
    for inp in program.inputs:
        if inp.pred in inputs:
            raise program.error(f"input {inp.pred} is declared twice", inp.pos)
        inputs[inp.pred] = inp
        note_arity(inp.pred, len(inp.columns), inp.pos)
    for f in program.facts:
        atom = _subst_atom(f.atom, bound, program)
        vals = []
        for a in atom.args:
            if not isinstance(a, Const):
                raise program.error(f"a fact's arguments must be integers or parameters, not {a}", a.pos,
                                    "write a rule if the fact has variables")
            vals.append(a.value)
        note_arity(atom.pred, len(vals), atom.pos)
        facts.setdefault(atom.pred, []).append(tuple(vals))
    heads: dict[str, Head] = {}
    aggregate: dict[str, str] = {}
    for r in rules:
        h = r.head
        if h.arity == 0:
            raise program.error(f"{h.pred} has no arguments", h.pos, "give every predicate at least one argument")
        note_arity(h.pred, h.arity, h.pos)
        if h.pred in inputs or h.pred in facts:
            what = "an input" if h.pred in inputs else "given by facts"
            raise program.error(f"{h.pred} is {what} and also the head of a rule", h.pos,
                                "derive a new predicate from it instead (e.g. p2(X) <- p(X).)")
        func = h.agg.func if h.agg else None
        if h.pred in heads and (heads[h.pred].agg.func if heads[h.pred].agg else None) != func:
            first = heads[h.pred]
            raise program.error(f"the rules for {h.pred} disagree on its aggregate ({first.agg or 'none'} at line "
                                f"{first.pos.line}, {h.agg or 'none'} here)", h.pos,
                                "every rule of an aggregated predicate uses the same aggregate")
        heads.setdefault(h.pred, h)
        if func:
            aggregate[h.pred] = func
    for r in rules:
        for lit in r.body:
            if isinstance(lit, Negated):
                raise program.error(f"negation ({lit}) is not supported", lit.pos,
                                    "Lockstep evaluates positive programs with aggregates; rewrite without 'not' "
                                    "(stratified negation is not implemented)")
            if isinstance(lit, Atom):
                if lit.pred not in heads and lit.pred not in inputs and lit.pred not in facts:
                    raise program.error(f"unknown predicate {lit.pred}: no rule, fact or input defines it", lit.pos,
                                        f"declare it as an input (.input {lit.pred}(...).) or give it facts or rules")
                note_arity(lit.pred, len(lit.args), lit.pos)
        _check_safe(r, program)
    strata = _strata(rules, heads, aggregate)
    return Analysed(program, bound, rules, facts, inputs, arity, aggregate, strata)


def _bind_params(program: Program, given: dict[str, int]) -> dict[str, int]:
    declared = {}
    for d in program.params:
        if d.name in declared:
            raise program.error(f"parameter {d.name} is declared twice", d.pos)
        declared[d.name] = d.default
    unknown = sorted(set(given) - set(declared))
    if unknown:
        names = ", ".join(sorted(declared)) or "none"
        raise DatalogError(f"the program declares no parameter {unknown[0]!r} (its parameters: {names})",
                           None, program.source, hint="declare it: .param NAME = DEFAULT.")
    out = dict(declared)
    for k, v in given.items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise DatalogError(f"parameter {k}: {v!r} is not an integer", None, program.source)
        out[k] = v
    return out


def _subst(e, params: dict[str, int], program: Program):
    if isinstance(e, ParamRef):
        if e.name not in params:
            raise program.error(f"unknown parameter ${e.name}", e.pos, f"declare it: .param {e.name} = 0.")
        return Const(params[e.name], e.pos)
    if isinstance(e, BinOp):
        return BinOp(e.op, _subst(e.left, params, program), _subst(e.right, params, program), e.pos)
    if isinstance(e, Neg):
        inner = _subst(e.arg, params, program)
        return Const(-inner.value, e.pos) if isinstance(inner, Const) else Neg(inner, e.pos)
    return e


def _subst_atom(a: Atom, params: dict[str, int], program: Program) -> Atom:
    return Atom(a.pred, tuple(_subst(t, params, program) for t in a.args), a.pos)


def _subst_rule(r: Rule, params: dict[str, int], program: Program) -> Rule:
    h = r.head
    head = Head(h.pred, tuple(_subst(t, params, program) for t in h.args), h.agg, h.pos)
    body = []
    for lit in r.body:
        if isinstance(lit, Atom):
            body.append(_subst_atom(lit, params, program))
        elif isinstance(lit, Negated):
            body.append(Negated(_subst_atom(lit.atom, params, program), lit.pos))
        else:
            body.append(Compare(lit.op, _subst(lit.left, params, program), _subst(lit.right, params, program), lit.pos))
    return Rule(head, tuple(body), r.pos)


def assignment(lit: Compare, bound: set[str]) -> tuple[Var, Expr] | None:
    """`V = expr` (or `expr = V`) where V is not yet bound and expr's variables are: the binding it makes."""
    if lit.op != "=":
        return None
    for v, e in ((lit.left, lit.right), (lit.right, lit.left)):
        if isinstance(v, Var) and v.name not in bound and all(x.name in bound for x in variables(e)):
            return v, e
    return None


def _check_safe(r: Rule, program: Program) -> None:
    bound = {t.name for a in r.atoms for t in a.args if isinstance(t, Var)}
    pending = [lit for lit in r.body if isinstance(lit, Compare)]
    progress = True
    while pending and progress:
        progress = False
        for lit in list(pending):
            a = assignment(lit, bound)
            if a is not None:
                bound.add(a[0].name)
                pending.remove(lit)
                progress = True
            elif all(v.name in bound for side in (lit.left, lit.right) for v in variables(side)):
                pending.remove(lit)
                progress = True
    for lit in pending:
        free = [v for side in (lit.left, lit.right) for v in variables(side) if v.name not in bound]
        raise program.error(f"variable {free[0]} in '{lit}' is not bound by any atom of the body", free[0].pos,
                            "bind it in a body atom, or assign it: V = expression of bound variables")
    h = r.head
    for t in h.args:
        if isinstance(t, Wildcard):
            raise program.error("'_' cannot appear in a head", t.pos, "name the value with a bound variable")
        if isinstance(t, Var) and t.name not in bound:
            raise program.error(f"head variable {t} is not bound by the body", t.pos,
                                "every head variable must occur in a body atom or be assigned (V = ...)")
    if h.agg is not None and h.agg.var.name not in bound:
        raise program.error(f"aggregated variable {h.agg.var} is not bound by the body", h.agg.var.pos)


def _strata(rules: list[Rule], heads: dict[str, Head], aggregate: dict[str, str]) -> list[Stratum]:
    g = nx.DiGraph()
    g.add_nodes_from(heads)
    for r in rules:
        for a in r.atoms:
            if a.pred in heads:
                g.add_edge(a.pred, r.head.pred)  # the head depends on the body predicate
    cond = nx.condensation(g)
    out = []
    for c in nx.topological_sort(cond):
        preds = sorted(cond.nodes[c]["members"])
        ids = [i for i, r in enumerate(rules) if r.head.pred in preds]
        recursive = len(preds) > 1 or any(g.has_edge(p, p) for p in preds)
        st = Stratum(preds, ids, recursive)
        if recursive:
            for i in ids:
                r = rules[i]
                if aggregate.get(r.head.pred) == "sum":
                    st.sites.append(Site(i, None))
                for k in st.recursive_atoms(r):
                    if r.atoms[k].pred in aggregate:
                        st.sites.append(Site(i, k))
        out.append(st)
    return out


def is_exit(rule: Rule, stratum: Stratum) -> bool:
    """A rule of a recursive stratum that reads none of the stratum's predicates."""
    return not stratum.recursive_atoms(rule)


__all__ = ["Analysed", "Site", "Stratum", "analyse", "assignment", "is_exit", "Aggregate", "Fact"]
