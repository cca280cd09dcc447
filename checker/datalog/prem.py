"""PreM (pre-mappability) of aggregates in recursion, proved per rule and aggregate with z3.

A constraint γ is PreM to a rule's immediate-consequence operator T when γ(T(I)) = γ(T(γ(I))) for every
interpretation I (Zaniolo et al., TPLP 2017). Here γ keeps, per group, the best value of each aggregated
predicate (min, max; count and sum are evaluated in recursion as the largest running total, so γ is
max for them) and, on the rule's head, its own aggregate (or nothing for a plain head).

For a `Site` — rule r reading an aggregated predicate p in body atom k — T(γ(I)) ⊆ T(I), and a fact
that only T(I) derives comes from a derivation D' that uses a tuple p(g, b) which γ drops because some
p(g, a) is strictly better. So PreM holds at the site iff for every such pair the derivation D that uses
p(g, a) instead (the other atoms unchanged) satisfies the body's comparisons whenever D' does, and
derives a head fact at least as good in the same group (the same fact, for a plain head or the
contributions of a count or sum). That is one formula over the integers — every interpretation of the
rule's arithmetic — which z3 proves, or refutes with a model. The model is turned into a two-tuple
interpretation I (p(g, a), p(g, b) and the other atoms' facts), on which γ(T(I)) and γ(T(γ(I))) are
computed concretely with the evaluator and printed.

A site where the aggregated value (or a variable computed from it) also appears in another atom is
not handled by this argument and is reported as unproved. A `sum` derived inside a recursion is PreM
only if every summand is non-negative: the body must imply V >= 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import z3

from lockstep.specs.datalog.analysis import Analysed, Site, assignment
from lockstep.specs.datalog.syntax import Atom, BinOp, Compare, Const, Expr, Neg, Rule, Var, Wildcard, variables

from .evaluate import Evaluator

TIMEOUT_MS = 20_000


@dataclass
class Verdict:
    """The outcome at one site: proved, refuted (with a counterexample interpretation) or unknown."""

    site: Site
    rule: Rule
    aggregate: str  # e.g. "min<C> of sp"
    status: str  # "proved" | "refuted" | "unknown"
    reason: str = ""
    counterexample: dict[str, str] = field(default_factory=dict)  # name -> rendered set of facts

    @property
    def holds(self) -> bool:
        return self.status == "proved"


def _better(func: str) -> str:
    """How γ orders values of an aggregate: 'le' if smaller is better (min), 'ge' otherwise."""
    return "le" if func == "min" else "ge"


def _z3(e: Expr, env: dict[str, z3.ArithRef]) -> z3.ArithRef:
    if isinstance(e, Const):
        return z3.IntVal(e.value)
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Neg):
        return -_z3(e.arg, env)
    assert isinstance(e, BinOp)
    a, b = _z3(e.left, env), _z3(e.right, env)
    return a + b if e.op == "+" else a - b if e.op == "-" else a * b


def _cmp(op: str, a: z3.ArithRef, b: z3.ArithRef) -> z3.BoolRef:
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _dependent(rule: Rule, var: str) -> set[str]:
    """`var` and every variable assigned (transitively) from an expression mentioning it."""
    dep = {var}
    bound = {t.name for a in rule.atoms for t in a.args if isinstance(t, Var)}
    comps = [c for c in rule.body if isinstance(c, Compare)]
    changed = True
    while changed:
        changed = False
        for c in comps:
            a = assignment(c, bound)
            if a is None:
                continue
            target, e = a
            bound.add(target.name)
            if target.name not in dep and any(v.name in dep for v in variables(e)):
                dep.add(target.name)
                changed = True
    return dep


def _definitions(rule: Rule) -> set[int]:
    """The comparisons that assign a variable (`V = expr` with V not bound before), by id."""
    bound = {t.name for a in rule.atoms for t in a.args if isinstance(t, Var)}
    comps = [c for c in rule.body if isinstance(c, Compare)]
    out: set[int] = set()
    changed = True
    while changed:
        changed = False
        for c in comps:
            if id(c) in out:
                continue
            a = assignment(c, bound)
            if a is not None:
                bound.add(a[0].name)
                out.add(id(c))
                changed = True
    return out


def prove(prog: Analysed) -> list[Verdict]:
    """A verdict for every site of the program where an aggregate meets recursion."""
    return [prove_site(prog, site) for site in prog.sites]


def prove_site(prog: Analysed, site: Site) -> Verdict:
    rule = prog.rules[site.rule]
    if site.occurrence is None:
        return _sum_site(prog, site, rule)
    atom = rule.atoms[site.occurrence]
    func = prog.aggregate[atom.pred]
    label = f"{func} of {atom.pred} read in the rule for {rule.head.pred}"
    value = atom.args[-1]
    if isinstance(value, Wildcard):
        return Verdict(site, rule, label, "proved", f"the rule ignores the {func} value ('_'): γ changes nothing it reads")
    if not isinstance(value, Var):
        return Verdict(site, rule, label, "unknown", f"the aggregated argument of {atom} is not a variable")
    dep = _dependent(rule, value.name)
    for k, other in enumerate(rule.atoms):
        positions = range(len(other.args)) if k != site.occurrence else range(len(other.args) - 1)
        for i in positions:
            t = other.args[i]
            if isinstance(t, Var) and t.name in dep:
                return Verdict(site, rule, label, "unknown",
                               f"the aggregated value {value} reaches {other} through {t}: the pairwise argument does "
                               "not apply, so PreM is not proved")
    names = sorted({v.name for lit in rule.body for v in _literal_vars(lit)} | {v.name for v in _head_vars(rule)})
    shared = {n: z3.Int(n) for n in names if n not in dep}
    worse = {**shared, **{n: z3.Int(f"{n}'") for n in dep}}  # the derivation D' with the dropped tuple
    best = {**shared, **{n: z3.Int(f"{n}*") for n in dep}}  # D, with the tuple γ keeps
    a, b = best[value.name], worse[value.name]
    order = _better(func if func in ("min", "max") else "max")
    strictly = a < b if order == "le" else a > b
    if func == "count":  # running counts are positive, running sums of non-negative summands too
        strictly = z3.And(strictly, b >= 1)
    elif func == "sum":
        strictly = z3.And(strictly, b >= 0)
    defs = _definitions(rule)
    comps = [c for c in rule.body if isinstance(c, Compare)]
    body_worse = [_cmp(c.op, _z3(c.left, worse), _z3(c.right, worse)) for c in comps]
    # in D, a variable assigned from the kept value is defined by its assignment; the other comparisons must hold
    defined_best = [_cmp(c.op, _z3(c.left, best), _z3(c.right, best)) for c in comps if id(c) in defs]
    filters_best = [_cmp(c.op, _z3(c.left, best), _z3(c.right, best)) for c in comps if id(c) not in defs]
    h = rule.head
    same_group = [_z3(t, best) == _z3(t, worse) for t in h.args if not isinstance(t, Wildcard)]
    hfunc = prog.aggregate.get(h.pred)
    if h.agg is None or hfunc in ("count", "sum"):
        extra = [best[h.agg.var.name] == worse[h.agg.var.name]] if h.agg is not None else []
        if hfunc == "sum":
            extra += [best[n] == worse[n] for n in names]  # the same contribution (binding)
        head_ok = z3.And(*same_group, *extra)
    else:
        hv, hv2 = best[h.agg.var.name], worse[h.agg.var.name]
        head_ok = z3.And(*same_group, hv <= hv2 if _better(hfunc) == "le" else hv >= hv2)
    s = z3.Solver()
    s.set("timeout", TIMEOUT_MS)
    s.add(strictly, *body_worse, *defined_best, z3.Not(z3.And(*filters_best, head_ok)))
    res = s.check()
    if res == z3.unsat:
        return Verdict(site, rule, label, "proved",
                       f"for all integers: a {func} value at least as good satisfies the body whenever a worse one "
                       f"does and derives a head fact at least as good ({hfunc or 'the same fact'})")
    if res == z3.unknown:
        return Verdict(site, rule, label, "unknown", f"z3 could not decide ({s.reason_unknown()})")
    model = s.model()
    return _refuted(prog, site, rule, label, model, shared, best, worse)


def _literal_vars(lit) -> list[Var]:
    if isinstance(lit, Atom):
        return [t for t in lit.args if isinstance(t, Var)]
    if isinstance(lit, Compare):
        return variables(lit.left) + variables(lit.right)
    return []


def _head_vars(rule: Rule) -> list[Var]:
    out = [t for t in rule.head.args if isinstance(t, Var)]
    return out + ([rule.head.agg.var] if rule.head.agg else [])


def _sum_site(prog: Analysed, site: Site, rule: Rule) -> Verdict:
    v = rule.head.agg.var
    label = f"sum<{v}> of {rule.head.pred} derived inside its recursion"
    env = {n: z3.Int(n) for n in {x.name for lit in rule.body for x in _literal_vars(lit)}}
    s = z3.Solver()
    s.set("timeout", TIMEOUT_MS)
    s.add(*[_cmp(c.op, _z3(c.left, env), _z3(c.right, env)) for c in rule.body if isinstance(c, Compare)])
    s.add(env[v.name] < 0)
    res = s.check()
    if res == z3.unsat:
        return Verdict(site, rule, label, "proved", f"the body implies {v} >= 0, so the running sum only grows")
    if res == z3.unknown:
        return Verdict(site, rule, label, "unknown", f"z3 could not decide ({s.reason_unknown()})")
    m = s.model()
    vals = ", ".join(f"{n} = {m.eval(x, model_completion=True)}" for n, x in sorted(env.items()))
    return Verdict(site, rule, label, "refuted",
                   f"a summand can be negative ({vals}), so a later contribution lowers the sum and the largest "
                   f"running total is not the sum; add {v} >= 0 to the body if that cannot happen",
                   {"derivation": vals})


# ----------------------------------------------------------------------------- counterexamples


def _refuted(prog: Analysed, site: Site, rule: Rule, label: str, model: z3.ModelRef, shared: dict,
             best: dict, worse: dict) -> Verdict:
    def val(env: dict, t) -> int:
        if isinstance(t, Const):
            return t.value
        return model.eval(env[t.name], model_completion=True).as_long()

    facts: dict[str, set[tuple[int, ...]]] = {}
    for k, atom in enumerate(rule.atoms):
        envs = (best, worse) if k == site.occurrence else (worse,)
        for env in envs:
            facts.setdefault(atom.pred, set()).add(tuple(val(env, t) if not isinstance(t, Wildcard) else 0
                                                        for t in atom.args))
    p = rule.atoms[site.occurrence].pred
    gamma_I = _gamma(prog, facts)
    t_I = _consequences(prog, rule, facts)
    t_gI = _consequences(prog, rule, gamma_I)
    h = rule.head.pred
    if prog.aggregate.get(h) in ("count", "sum"):  # contributions: γ of the head is their total
        g_t_I, g_t_gI = t_I, t_gI
    else:
        g_t_I = _gamma(prog, {h: t_I}).get(h, set())
        g_t_gI = _gamma(prog, {h: t_gI}).get(h, set())
    assignment_text = ", ".join(f"{n} = {val(shared, Var(n, None))}" for n in sorted(shared)) \
        + "; " + ", ".join(f"{n} = {val(best, Var(n, None))} (kept) / {val(worse, Var(n, None))} (dropped)"
                           for n in sorted(set(best) - set(shared)))
    cex = {
        "z3 model": assignment_text,
        "I": _show(facts),
        "γ(I)": _show(gamma_I),
        "γ(T(I))": _show({h: g_t_I}),
        "γ(T(γ(I)))": _show({h: g_t_gI}),
    }
    if g_t_I == g_t_gI:
        return Verdict(site, rule, label, "unknown",
                       f"the pairwise condition fails for {p} but this two-tuple interpretation does not separate "
                       "γ(T(I)) from γ(T(γ(I))); PreM is not proved", cex)
    return Verdict(site, rule, label, "refuted",
                   f"γ drops a {prog.aggregate[p]} tuple of {p} that derives what the kept tuple does not", cex)


def _gamma(prog: Analysed, facts: dict[str, set[tuple[int, ...]]]) -> dict[str, set[tuple[int, ...]]]:
    """γ on an interpretation: per group the best tuple of each aggregated predicate (max for count/sum)."""
    out = {}
    for pred, rows in facts.items():
        func = prog.aggregate.get(pred)
        if func is None:
            out[pred] = set(rows)
            continue
        best: dict[tuple, int] = {}
        for r in rows:
            g, v = r[:-1], r[-1]
            if g not in best or (v < best[g] if func == "min" else v > best[g]):
                best[g] = v
        out[pred] = {(*g, v) for g, v in best.items()}
    return out


def _consequences(prog: Analysed, rule: Rule, facts: dict[str, set[tuple[int, ...]]]) -> set[tuple[int, ...]]:
    """T for one rule on an interpretation, computed by the evaluator: head tuples (for an aggregated head,
    (group..., value) per derivation; for count and sum, the contributions the evaluator would count)."""
    inputs = {p: np.zeros((0, prog.arity[p]), dtype=np.int64) for p in prog.inputs}
    ev = Evaluator(prog, inputs, {s: True for s in prog.sites})
    sources = {}
    for k, atom in enumerate(rule.atoms):
        rows = sorted(facts.get(atom.pred, set()))
        cols = [np.asarray([r[i] for r in rows], dtype=np.int64) for i in range(prog.arity[atom.pred])]
        sources[k] = (cols, ("cex", k))
    derived = ev.derive(rule, sources)
    if isinstance(derived, tuple):  # count/sum: (contribution columns, values)
        cols, vals = derived
        derived = [*cols, vals] if prog.aggregate[rule.head.pred] == "sum" else cols
    return set(zip(*(c.tolist() for c in derived))) if derived else set()


def _show(facts: dict[str, set[tuple[int, ...]]]) -> str:
    items = [f"{p}({', '.join(map(str, r))})" for p in sorted(facts) for r in sorted(facts[p])]
    return "{" + ", ".join(items) + "}"
