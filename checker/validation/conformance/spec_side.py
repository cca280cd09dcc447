"""The spec side of conformance: a typed spec's transitions indexed by action and arguments, logged
variables resolved to slots, and events turned into plans of candidate transitions."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lockstep.specs.lang.actors import ActorProgram, ActorSpec
from lockstep.specs.lang.actors.spec import handler_inputs, on_demand_program
from lockstep.specs.lang.errors import SpecError
from lockstep.specs.lang.program import Program, Transition
from lockstep.specs.lang.spec import Spec, build_program
from lockstep.specs.lang.terms import Term
from lockstep.specs.lang.types import Domain, MapDomain

from ...codegen import compile_transitions
from ...errors import TraceError, UsageError
from ...loader import LoadError, resolve
from ...typed_model import TypedModel
from .interpreted import InterpretedModel
from .mapping import _NODE, ANY, Mapping, MappingError, Step, as_value, hashable, load_mapping, parse_path
from .schema import Event

MEMO_LIMIT = 200_000  # entries of each memo table (cleared when full: memory stays bounded)
COMPILE_LIMIT = 30_000  # distinct subterms of a spec's steps above which they are interpreted, not compiled
EAGER_INPUTS = 50_000  # handler inputs of an actor spec above which its steps are traced as a log names them


class StepFails(Exception):
    """A spec step fails (an assertion, a value outside its type) where the implementation went on."""

    def __init__(self, transition: Transition, state: tuple, why: str):
        super().__init__(why)
        self.transition, self.state, self.why = transition, state, why


@dataclass(frozen=True)
class PlanStep:
    """A step of an event's plan: one of `tids`, taken between `lo` and `hi` times."""

    step: Step
    tids: tuple[int, ...]
    lo: int
    hi: int


@dataclass(frozen=True)
class Plan:
    """What an event stands for: its steps, then the logged variables as (slot, representation) checks."""

    steps: tuple[PlanStep, ...]
    checks: tuple[tuple[int, Any], ...]
    shown: tuple[tuple[str, Any], ...]  # (spec variable, value) as the log gives them, for explanations
    single: int = -1  # the one transition of a plan of one step taken exactly once (the common case), else -1


class Unbuildable(TraceError):
    """The spec cannot be built at the parameters a log needs (a limit of the language, or a bad parameter)."""


class SpecSide:
    """A typed spec for conformance checking, with the mapping that relates a log to it. `ref` names the spec, or is
    the spec class itself (an instance built for a run, `lockstep.specs.psmr.workload`). An actor spec whose handlers
    have more than EAGER_INPUTS inputs has its steps traced as the log names them (`prog.on_demand`): each mapped
    step then gives every argument, and no internal steps are taken."""

    def __init__(self, ref: str | type, params: dict[str, int], mapping: str | None = None):
        try:
            if isinstance(ref, str):
                obj, ref = resolve(ref)
            else:
                obj, ref = ref, getattr(ref, "__name__", repr(ref))
            if not (isinstance(obj, type) and issubclass(obj, Spec)):
                raise TraceError(f"spec {ref!r} is a plain spec (init/next): conformance checking needs a typed spec, "
                                 "whose actions and variables a mapping can name")
            lazy = issubclass(obj, ActorSpec) and handler_inputs(obj, params) > EAGER_INPUTS
            prog = on_demand_program(obj, params) if lazy else build_program(obj, params)
        except (LoadError, SpecError) as e:
            raise Unbuildable(f"spec {ref!r} cannot be built with parameters {params}: {e}") from None
        self.prog: Program = prog
        self.on_demand = getattr(prog, "on_demand", None)
        ts = prog.transitions
        self.transitions = ts
        self.interpreted = self.on_demand is not None or _terms(ts) > COMPILE_LIMIT
        if self.interpreted:  # compiling would take longer than the few steps a log needs
            model: Any = InterpretedModel(prog, ref)
            self.fns: list[Callable[[tuple], list]] = [functools.partial(model.step, t) for t in ts]
            if self.on_demand is not None:  # each step is taken about once; the invariants are checked in every state
                model.compile_invariants()
        else:
            model = TypedModel(prog, ref)
            self.fns = compile_transitions(prog, ts)
        self.model = model
        self.actors = isinstance(self.prog, ActorProgram)
        self.mapping: Mapping = load_mapping(mapping, self.actors)
        self.by_action: dict[str, list[int]] = {}
        self.by_args: dict[tuple, int] = {}
        for i, t in enumerate(ts):
            self.by_action.setdefault(t.action, []).append(i)
            self.by_args[(t.action, tuple(t.args))] = i
        self.fields = {f.name: f for f in self.prog.fields}
        names = self.mapping.internal
        if names is not None:
            unknown = [a for a in names if a not in self.by_action]
            if unknown:
                raise MappingError(f"the mapping's INTERNAL names {unknown[0]!r}, which is not an action of "
                                   f"{self.prog.name} (its actions: {', '.join(self.by_action)})")
            self.internal = [i for a in names for i in self.by_action[a]]
        else:
            self.internal = list(range(len(ts)))
        self._succ: dict[tuple[int, tuple], tuple | None] = {}
        self._tids: dict[tuple, tuple[int, ...]] = {}
        self._vars: dict[Any, tuple] = {}
        self._plans: dict[Any, Plan] = {}
        self._bad: dict[tuple, int] = {}

    def restart_mapping(self) -> None:
        """Load the mapping anew (its module's state starts over) for a search that maps the events again."""
        if self.mapping.module is not None:
            self.mapping = load_mapping(self.mapping.name, self.actors)
        self._plans.clear()

    # -- transitions ------------------------------------------------------------------------------
    def successor(self, tid: int, st: tuple) -> tuple | None:
        """The state after transition `tid` from `st` (None where it is not enabled); StepFails where it fails."""
        key = (tid, st)
        memo = self._succ
        if key in memo:
            return memo[key]
        try:
            out = self.fns[tid](st)
        except Exception:
            t = self.transitions[tid]
            why = self.model._diagnose_with([t], st).describe()
            raise StepFails(t, st, why) from None
        nxt = out[0][1] if out else None
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[key] = nxt
        return nxt

    def violated(self, st: tuple) -> int:
        """The index of an invariant `st` violates, or -1."""
        bad = self._bad.get(st)
        if bad is None:
            if len(self._bad) >= MEMO_LIMIT:
                self._bad.clear()
            bad = self._bad[st] = self.model.violated(st)
        return bad

    def tids(self, s: Step, where: str) -> tuple[int, ...]:
        """The transitions a mapped step may be (several where an argument is ANY)."""
        try:
            key = (s.action, tuple((k, hashable(v)) for k, v in s.args))
        except TypeError:
            key = None
        if key is not None:
            hit = self._tids.get(key)
            if hit is not None:
                return hit
        out = self._resolve(s, where)
        if key is not None:
            if len(self._tids) >= MEMO_LIMIT:
                self._tids.clear()
            self._tids[key] = out
        return out

    def _resolve(self, s: Step, where: str) -> tuple[int, ...]:
        if self.on_demand is not None:
            given = dict(s.args)
            pid = given.get("dst" if s.action == "deliver" else "p")
            sig = self.on_demand.signature(s.action, pid if isinstance(pid, int) and not isinstance(pid, bool) else None)
            if sig is not None:
                return self._traced(s, sig, given, where)
        tids = self.by_action.get(s.action)
        if tids is None:
            raise MappingError(f"{where}: the event stands for {s.action!r}, which is not an action of "
                               f"{self.prog.name} (its actions: {', '.join(self.by_action)}); map it to one in a "
                               f"mapping (--map MAPPING.py, with `def {s.action}(e): return step(...)`)")
        given = dict(s.args)
        shapes: dict[tuple[str, ...], list[int]] = {}  # the action's parameter lists (an actor spec's Byzantine
        for i in tids:                                   # handlers may take other choices than the honest ones)
            shapes.setdefault(tuple(n for n, _ in self.transitions[i].args), []).append(i)
        fits = [names for names in shapes if set(given) <= set(names)]
        if not fits:
            names = next(iter(shapes))
            extra = next(k for k in given if k not in names)
            raise MappingError(f"{where}: {s.action} has no parameter {extra!r} (its parameters: "
                               f"{', '.join(names) or 'none'})")
        out: list[int] = []
        for names in fits:
            t0 = self.transitions[shapes[names][0]]
            want: list[Any] = []
            for name, dom in zip(names, t0.arg_doms):
                if name not in given or given[name] is ANY:
                    want.append(ANY)
                    continue
                try:
                    want.append(as_value(dom, given[name], f"{s.action}({name})"))
                except ValueError as e:
                    raise TraceError(f"{where}: the mapped step {s.label()}: {e}") from None
            if all(w is not ANY for w in want):
                hit = self.by_args.get((s.action, tuple(zip(names, want))))
                out.extend(() if hit is None else (hit,))
            else:
                out.extend(i for i in shapes[names]
                           if all(w is ANY or w == v for w, (_, v) in zip(want, self.transitions[i].args)))
        return tuple(out)

    def _traced(self, s: Step, sig: list[tuple[str, Domain]], given: dict[str, Any], where: str) -> tuple[int, ...]:
        """The transition of a step of an on-demand program, traced the first time it is named."""
        names = [n for n, _ in sig]
        extra = [k for k in given if k not in names]
        if extra:
            raise MappingError(f"{where}: {s.action} has no parameter {extra[0]!r} (its parameters: {', '.join(names)})")
        missing = [n for n in names if n not in given or given[n] is ANY]
        if missing:
            raise MappingError(f"{where}: the mapped step {s.label()} leaves {', '.join(missing)} open; {self.prog.name} "
                               "has too many steps to enumerate them (its handlers' inputs are traced as the log names "
                               "them), so a mapped step gives every argument")
        try:
            args = tuple((n, as_value(dom, given[n], f"{s.action}({n})")) for n, dom in sig)
        except ValueError as e:
            raise TraceError(f"{where}: the mapped step {s.label()}: {e}") from None
        hit = self.by_args.get((s.action, args))
        if hit is not None:
            return (hit,)
        try:
            t = self.on_demand.step(s.action, args)  # type: ignore[union-attr]
        except SpecError as e:
            raise TraceError(f"{where}: the spec's step {s.label()} cannot be built: {e}") from None
        if t is None:
            return ()
        tid = len(self.transitions)
        self.transitions.append(t)
        self.fns.append(functools.partial(self.model.step, t))
        self.by_action.setdefault(t.action, []).append(tid)
        self.by_args[(t.action, tuple(t.args))] = tid
        return (tid,)

    # -- variables --------------------------------------------------------------------------------
    def slots_of(self, path: tuple, where: str) -> list[tuple[int, Domain, tuple]]:
        """(slot, leaf domain, key path below the given one) of every slot a variable path covers."""
        name, keys = path[0], path[1:]
        f = self.fields.get(name) if isinstance(name, str) else None
        if f is None:
            raise MappingError(f"{where}: {name!r} is not a variable of {self.prog.name} (its variables: "
                               f"{', '.join(self.fields)}); map the logged variables in the mapping's variables()")
        leaves = f.leaves()
        dom = f.dom
        for k in keys:
            if not isinstance(dom, MapDomain):
                raise MappingError(f"{where}: {name} has no key {k!r}: it is not a map at that point")
            vals = dom.key.values()
            if k not in vals:
                raise MappingError(f"{where}: {k!r} is not a key of {name} (keys: {', '.join(map(repr, vals[:8]))})")
            dom = dom.val
        out = []
        for i, (kp, d) in enumerate(leaves):
            if kp[:len(keys)] == tuple(keys):
                out.append((f.base + i, d, kp[len(keys):]))
        return out

    def checks(self, e: Event) -> tuple[tuple[tuple[int, Any], ...], tuple[tuple[str, Any], ...]]:
        """The (slot, representation) pairs the event's logged variables fix, and how to show them."""
        vs = self.mapping.variables(e)
        out: list[tuple[int, Any]] = []
        shown: list[tuple[str, Any]] = []
        node = None
        for key, value in vs.items():
            path = parse_path(key, e.where) if not (isinstance(key, tuple) and key[1:] == (_NODE,)) else key
            if len(path) == 2 and path[1] is _NODE:
                f = self.fields.get(path[0])
                if f is None:
                    self.slots_of(path[:1], e.where)  # raises: not a variable
                if node is None:
                    node = self.mapping.node(e)
                keyed = isinstance(f.dom, MapDomain) and node in f.dom.key.values()  # type: ignore[union-attr]
                path = (path[0], node) if keyed else path[:1]
            leaves = self.slots_of(path, e.where)
            text = path[0] + "".join(f"[{k!r}]" for k in path[1:])
            shown.append((text, value))
            for slot, dom, below in leaves:
                v = value
                for k in below:
                    v = v.get(str(k)) if isinstance(v, dict) else None
                try:
                    rep = dom.rep(as_value(dom, v, text))
                except (ValueError, SpecError) as x:
                    raise TraceError(f"{e.where}: logged variable {text}: {x}") from None
                out.append((slot, rep))
        return tuple(out), tuple(shown)

    def plan(self, e: Event) -> Plan:
        """The event's plan: the candidate transitions of each step it stands for, and its variable checks."""
        cache_key = None
        if self.mapping.actors:  # the default mapping is a function of the event's node, action, args and vars
            cache_key = (e.node, e.action, tuple([(k, _key(v)) for k, v in e.args.items()]),
                         tuple([(k, _key(v)) for k, v in e.vars.items()]))
            hit = self._plans.get(cache_key)
            if hit is not None:
                return hit
        steps = []
        for s in self.mapping.steps(e):
            tids = tuple(t for c in s.choices for t in self.tids(c, e.where)) if s.choices else self.tids(s, e.where)
            steps.append(PlanStep(s, tids, 0 if s.optional else 1, s.repeat))
        checks, shown = self.checks(e) if (e.vars or self.mapping.variables_fn) else ((), ())
        one = steps[0] if len(steps) == 1 else None
        single = one.tids[0] if one is not None and len(one.tids) == 1 and one.lo == one.hi == 1 else -1
        p = Plan(tuple(steps), checks, shown, single)
        if cache_key is not None:
            if len(self._plans) >= MEMO_LIMIT:
                self._plans.clear()
            self._plans[cache_key] = p
        return p

    # -- applying ---------------------------------------------------------------------------------
    def internal_closure(self, st: tuple, k: int) -> list[tuple]:
        """`st` and every state within `k` internal steps of it."""
        if k and self.on_demand is not None:
            raise UsageError(f"--max-internal {k}: {self.prog.name} has too many steps to take unlogged ones (its "
                             "handlers' inputs are traced as the log names them); validate with --max-internal 0")
        seen = {st: None}
        layer = [st]
        for _ in range(k):
            nxt = []
            for s in layer:
                for tid in self.internal:
                    try:
                        s2 = self.successor(tid, s)
                    except StepFails:
                        continue
                    if s2 is not None and s2 not in seen:
                        seen[s2] = None
                        nxt.append(s2)
            if not nxt:
                break
            layer = nxt
        return list(seen)

    def apply(self, plan: Plan, st: tuple) -> list[tuple]:
        """The states the plan's steps reach from `st` that agree with its logged variables."""
        if plan.single >= 0:
            s2 = self.successor(plan.single, st)
            if s2 is None:
                return []
            for slot, rep in plan.checks:
                if s2[slot] != rep:
                    return []
            return [s2]
        states = [st]
        for ps in plan.steps:
            out: dict[tuple, None] = {}
            layer = states
            if ps.lo == 0:
                out.update(dict.fromkeys(states))
            for n in range(1, ps.hi + 1):
                nxt: dict[tuple, None] = {}
                for s in layer:
                    for tid in ps.tids:
                        s2 = self.successor(tid, s)
                        if s2 is not None:
                            nxt[s2] = None
                if n >= ps.lo:
                    out.update(nxt)
                layer = list(nxt)
                if not layer:
                    break
            states = list(out)
            if not states:
                return []
        checks = plan.checks
        if not checks:
            return states
        return [s for s in states if all(s[slot] == rep for slot, rep in checks)]


def _key(v: Any) -> Any:
    """A hashable key of a JSON value (a flat object as its items, in order; others by `hashable`)."""
    t = type(v)
    if t is dict:
        items = tuple(v.items())
        try:
            hash(items)
            return items
        except TypeError:
            return hashable(v)
    if t is list:
        return hashable(v)
    return v


def _terms(ts: list[Transition]) -> int:
    """The distinct subterms of the transitions' guards and updates."""
    seen: set[int] = set()
    stack: list[Any] = [c.term for t in ts for c in t.checks] + [u for t in ts for u in t.updates.values()]
    while stack:
        x = stack.pop()
        if isinstance(x, Term) and id(x) not in seen:
            seen.add(id(x))
            stack.extend(x.args)
    return len(seen)
