"""The `Spec` base class and its decorators: typed state, guarded actions, invariants.

A spec class declares state fields (`Var`, `Map`, `Set`), parameters (`Param`, named
`Range`s), and functions marked `@action`, `@invariant`, `@constraint` or `@initial`. Building
a spec for given parameter values (`build_program`) runs each function once per value of its
parameters on a tracing view of the state, which yields the `Program` that engines read.
"""

from __future__ import annotations

import dis
import inspect
import linecache
import sys
import traceback
from collections.abc import Callable
from typing import Any

from .errors import Location, SpecError, user_location
from .limits import check_slots
from .markers import kind_of, marker, meta_of
from .names import exception_text, suggestion
from .params import Binding, Param, ParamLike, bound
from .program import Check, Field, Predicate, Program, TemporalProperty, Transition
from .temporal import as_temporal, check_fairness_meta
from .terms import (
    BOOL,
    PendingIf,
    Term,
    as_bool,
    check_pending,
    const,
    describe,
    mark_used,
    start_pending,
)
from .tracing import Disabled, TraceState, current_tracer, tracing
from .types import ANY, Map, MapDomain, Range, Seq, Set, Type, Var, domain_values

MAX_DECORATOR_LINES = 200  # lines from a function's first decorator to its `def` that are searched


def action(fn: Callable | None = None, **meta: Any):
    """Mark `def name(s, p: T, ...)` as an action; its parameters range over finite types. It guards with
    `require(...)`, assigns fields and returns nothing (a returned value is refused: it would be ignored).

    Keyword options are kept for engines (for example `fairness="weak"`).
    """
    return marker("action", fn, **meta)


def invariant(fn: Callable | None = None, **meta: Any):
    """Mark `def name(s) -> bool` as a state invariant."""
    return marker("invariant", fn, **meta)


def constraint(fn: Callable | None = None, **meta: Any):
    """Mark `def name(s) -> bool` as a state constraint (TLC's CONSTRAINT): states outside it are
    checked against the invariants but neither stored nor expanded."""
    return marker("constraint", fn, **meta)


def witness(fn: Callable | None = None, **meta: Any):
    """Mark `def name(s) -> bool` as a witness: a condition some reachable state must satisfy (a check fails,
    exit 1, if none does; the trace to the first state that does is shown)."""
    return marker("witness", fn, **meta)


def initial(fn: Callable | None = None, **meta: Any):
    """Mark `def name(s, p: T, ...)` as an initial-state function: it starts from the fields'
    `init` values, may `require(...)` (or return its condition, the same) and assign; each enabled
    parameter choice is an initial state."""
    return marker("initial", fn, **meta)


def require(*conds: Any) -> None:
    """Guard of the action being built: the action is enabled only where every condition holds."""
    tracer = current_tracer("require()")
    for c in conds:
        b = as_bool(c)
        if b is False:
            raise Disabled()
        if b is not True:
            mark_used(b)
            tracer.checks.append(Check("require", b, None, b.loc))


def Assert(cond: Any, message: str = "assertion failed") -> None:
    """An assertion inside an action: where the action runs and `cond` fails, that is a violation."""
    tracer = current_tracer("Assert()")
    b = as_bool(cond)
    if b is True:
        return
    loc = user_location()
    if b is False:  # fails wherever it is reached: still an assertion (a violation), not an error of the spec
        tracer.checks.append(Check("assert", const(False, BOOL), message, loc))
        raise _Stop()
    mark_used(b)
    tracer.checks.append(Check("assert", b, message, loc))


class _Stop(Exception):
    """Tracing of an action stops: what follows an unconditional failure never runs."""


class Spec:
    """Base class of typed specs. Subclass it and declare fields, parameters and actions."""

    _decls: dict[str, Any] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        decls: dict[str, Any] = {}
        for base in reversed(cls.__mro__[1:]):
            decls.update(getattr(base, "_decls", {}) if issubclass(base, Spec) else {})
        for name, value in cls.__dict__.items():
            if name.startswith("__"):
                continue
            if name in decls and not _is_decl(value):
                del decls[name]  # a subclass may remove an inherited declaration
            if _is_decl(value):
                decls[name] = value
        cls._decls = decls

    def __init__(self, **params: Any) -> None:
        self.program = build_program(type(self), params)


def _is_decl(value: Any) -> bool:
    return isinstance(value, (Var, Map, Set, Seq, Param)) or (isinstance(value, Range) and isinstance(value.size, Param)) \
        or (callable(value) and kind_of(value) is not None)


# ----------------------------------------------------------------------------- parameters


def declared_params(cls: type) -> dict[str, Param]:
    """Every parameter a spec depends on, by name, in declaration order."""
    found: dict[str, Param] = {}

    def add(p: Any) -> None:
        if isinstance(p, Param):
            other = found.get(p.name)
            if other is not None and other is not p and other.default != p.default:
                raise SpecError(f"spec {cls.__name__} declares parameter {p.name!r} twice with different defaults",
                                p.location)
            found.setdefault(p.name, p)
        elif isinstance(p, ParamLike):
            for a in getattr(p, "args", ()):
                add(a)

    for d in cls._decls.values():
        if isinstance(d, Param):
            add(d)
        elif isinstance(d, Range):
            for p in d.params():
                add(p)
        elif isinstance(d, Var):
            for p in d.type.params():
                add(p)
        elif isinstance(d, (Map, Set, Seq)):
            for p in d.params():
                add(p)
        elif callable(d):
            for t in _annotations(cls, d).values():
                if isinstance(t, Type):
                    for p in t.params():
                        add(p)
            for p in _module_params(d):
                add(p)
    return found


def _module_params(fn: Callable) -> list[Any]:
    """The module-level parameters (`LIMIT = Param("limit", ...)` outside the class) a function's body, or a function
    or lambda inside it, names: the spec depends on them as on its own."""
    fn = inspect.unwrap(fn)
    code, names = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    found, stack = [], [code] if code is not None else []
    while stack:
        c = stack.pop()
        found += [names[n] for n in c.co_names if isinstance(names.get(n), (Param, ParamLike))]
        stack += [k for k in c.co_consts if inspect.iscode(k)]
    return found


def _annotations(cls: type, fn: Callable) -> dict[str, Any]:
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1:]
    module = sys.modules.get(fn.__module__)
    ns = dict(vars(module)) if module else {}
    ns.update(vars(cls))
    out = {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            star = "*" if p.kind is p.VAR_POSITIONAL else "**"
            raise SpecError(f"parameter {star}{p.name} of {fn.__name__}: a variable number of parameters cannot be "
                            "enumerated", _def_location(fn),
                            f"take one parameter per witness (def {fn.__name__}(s, w1: T, w2: T)), or one parameter "
                            "over a declared set of values (OneOf([...]), e.g. the quorums)")
        ann = p.annotation
        if ann is inspect.Parameter.empty:
            raise SpecError(f"parameter {p.name!r} of {fn.__name__} has no type", _def_location(fn),
                            f"annotate it with a finite type, e.g. `{p.name}: Proc`")
        if isinstance(ann, str):
            try:
                ann = eval(ann, ns)  # noqa: S307 - annotations are the spec author's own code
            except Exception as e:
                raise SpecError(f"cannot resolve the type {ann!r} of parameter {p.name!r}: {e}",
                                _def_location(fn)) from None
        out[p.name] = ann
    return out


def _def_location(fn: Callable) -> Location | None:
    """Where `def fn` is: the first `def` line from the function's first line (its first decorator's) on,
    read from the cached source lines (no tokenizing of the whole block, which every spec load would pay
    for each action and predicate); its first line when the source is not at hand."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    start = code.co_firstlineno
    lines = linecache.getlines(code.co_filename, getattr(fn, "__globals__", None))
    for i in range(start - 1, min(len(lines), start - 1 + MAX_DECORATOR_LINES)):
        if lines[i].lstrip().startswith(("def ", "async def ")):
            return Location(code.co_filename, i + 1)
    return Location(code.co_filename, start)


def bind_params(cls: type, values: dict[str, Any]) -> Binding:
    """Check parameter values against the spec's declarations; fill in defaults."""
    declared = declared_params(cls)
    for name in values:
        if name not in declared:
            known = ", ".join(declared) or "none"
            raise SpecError(f"spec {cls.__name__} has no parameter {name!r} (its parameters: {known})")
    defaults = param_defaults(cls)
    full = {}
    for name, p in declared.items():
        full[name] = p.check(values[name], "value") if name in values else defaults[name]
    return Binding(cls.__name__, full)


def param_defaults(cls: type) -> dict[str, int]:
    """The default of every parameter of a spec: its declaration's, or the class's `defaults` entry
    (a variant of a spec may change a default: `defaults = {"views": 1}`)."""
    declared = declared_params(cls)
    own = getattr(cls, "defaults", None) or {}
    for name in own:
        if name not in declared:
            raise SpecError(f"spec {cls.__name__}: `defaults` names {name!r}, which is not one of its parameters",
                            None, "its parameters: " + (", ".join(declared) or "none"))
    return {name: p.check(own[name], "default") if name in own else p.default for name, p in declared.items()}


# --------------------------------------------------------------------------------- build


def build_program(cls: type, values: dict[str, Any] | None = None) -> Program:
    """Trace a spec class under parameter values into the `Program` engines interpret."""
    if not (isinstance(cls, type) and issubclass(cls, Spec)):
        raise SpecError(f"{cls!r} is not a Spec subclass")
    binding = bind_params(cls, values or {})
    with bound(binding):
        builder = getattr(cls, "_program_builder", None) or _Builder  # system models (actors) trace their own way
        return builder(cls, binding).build()


class _Builder:
    def __init__(self, cls: type, binding: Binding):
        self.cls = cls
        self.binding = binding
        self.decls = cls._decls

    def _properties(self, prog: Program) -> None:
        """Trace the spec's invariants, constraints, witnesses and temporal properties into `prog`."""
        for name, fn in self._functions("invariant"):
            prog.invariants.append(self._predicate(prog, name, fn))
        for name, fn in self._functions("constraint"):
            prog.constraints.append(self._predicate(prog, name, fn))
        for name, fn in self._functions("witness"):
            prog.witnesses.append(self._predicate(prog, name, fn))
        for name, fn in self._functions("temporal"):
            prog.properties.append(self._temporal(prog, name, fn))

    def build(self) -> Program:
        fields = self._fields()
        if not fields:
            raise SpecError(f"spec {self.cls.__name__} declares no state fields", None,
                            "declare fields with Var(...), Map(...) or Set(...) in the class body")
        prog = Program(self.cls, dict(self.binding.values), fields)
        prog.symmetric = _symmetric_domains(fields)
        defaults, choices = self._initial_values(prog)
        prog.init_defaults = defaults
        prog.init_choices = choices
        for name, fn in self._functions("initial"):
            prog.init_transitions.extend(self._trace(prog, name, fn))
        for name, fn in self._functions("action"):
            prog.transitions.extend(self._trace(prog, name, fn))
        self._properties(prog)
        _check_families(self._functions("action"))
        if not self._functions("action"):
            raise SpecError(f"spec {self.cls.__name__} declares no actions", None, "mark functions with @action")
        return prog

    def _view(self, prog: Program, writable: bool) -> TraceState:
        """The state view actions and predicates are traced on (system models add attributes)."""
        return TraceState(prog, self.binding, writable)

    def _functions(self, kind: str) -> list[tuple[str, Callable]]:
        return [(n, f) for n, f in self.decls.items() if callable(f) and kind_of(f) == kind]

    def _fields(self) -> list[Field]:
        fields, base = [], 0
        for name, d in self.decls.items():
            if not isinstance(d, (Var, Map, Set, Seq)):
                continue
            loc = d.location
            try:
                dom, init = (d.type.dom(), d.init) if isinstance(d, Var) else (d.dom(), d.init)
            except SpecError as e:
                if e.location is not None:
                    raise
                raise SpecError(f"field {name}: {e.message}", loc, e.hint) from None  # a size limit
            if self._is_param_name(name):
                raise SpecError(f"{name!r} is both a field and a parameter", loc)
            f = Field(name, dom, base, init, loc)
            fields.append(f)
            base += f.count
            check_slots(base, self.cls.__name__)
        return fields

    def _is_param_name(self, name: str) -> bool:
        return name in self.binding.values

    def _initial_values(self, prog: Program) -> tuple[list, dict[int, list]]:
        defaults: list[Any] = [None] * prog.nslots
        choices: dict[int, list] = {}
        for f in prog.fields:
            for i, (key, dom) in enumerate(f.leaves()):
                s = f.base + i
                init = f.init
                for k in key:  # a Map's init: one value, a dict, or a function of the key
                    if init is ANY or init is None:
                        break
                    if isinstance(init, dict):
                        if k not in init:
                            raise SpecError(f"init of field {f.name!r} has no value for key {k!r}", f.location)
                        init = init[k]
                    elif callable(init) and not isinstance(init, Type):
                        try:
                            init = init(k)
                        except Exception as e:
                            raise SpecError(f"init of field {f.name!r} raised {type(e).__name__}: {e} for key {k!r}",
                                            _exception_location(e) or f.location) from None
                if init is ANY:
                    choices[s] = [dom.rep_of_index(j) for j in range(dom.size)]
                    defaults[s] = choices[s][0]
                    continue
                if init is None:
                    init = dom.default()
                try:
                    defaults[s] = dom.rep(init)
                except SpecError as e:
                    raise SpecError(f"init of field {f.name!r}: {e.message}", f.location, e.hint) from None
                except ValueError as e:  # an integer outside its Int or Range
                    raise SpecError(f"init of field {f.name!r}: {e}", f.location,
                                    f"give an initial value of {dom.describe()}") from None
        return defaults, choices

    def _trace(self, prog: Program, name: str, fn: Callable) -> list[Transition]:
        anns = _annotations(self.cls, fn)
        for pname, t in anns.items():
            if not isinstance(t, Type):
                raise SpecError(
                    f"parameter {pname!r} of {name} has type {getattr(t, '__name__', t)!r}, which is not a finite domain",
                    _def_location(fn),
                    "use a Lockstep type: Range(...), Enum(...), Int(lo, hi), Bool, OneOf(values), a Record or Union")
            if isinstance(t.dom(), MapDomain):
                raise SpecError(f"parameter {pname!r} of {name} is a Map", _def_location(fn), "use a scalar type")
        doms = tuple(t.dom() for t in anns.values())
        out = []
        try:
            combinations = domain_values(doms)
        except SpecError as e:
            raise SpecError(f"action {name}'s parameters: {e.message}", _def_location(fn), e.hint) from None
        for values in combinations:
            t = self._trace_one(prog, name, fn, tuple(zip(anns, values)))
            if t is not None:
                t.arg_doms = doms
                out.append(t)
        return out

    def _trace_one(self, prog: Program, name: str, fn: Callable, args: tuple) -> Transition | None:
        view = self._view(prog, writable=True)
        kind = kind_of(fn)
        what = f"initial-state function {name}" if kind == "initial" else f"{kind} {name}"
        with tracing(view) as tracer:
            if not trace_body(tracer, lambda: returned(fn, what, fn(view, *(v for _, v in args)), kind == "initial")):
                return None
        updates = {s: t for s, t in view.writes.items() if not (isinstance(t, Term) and t.op == "slot" and t.args[0] == s)}
        return Transition(name, args, tracer.checks, updates, _def_location(fn), meta_of(fn))

    def _temporal(self, prog: Program, name: str, fn: Callable) -> TemporalProperty:
        if len(inspect.signature(fn).parameters) != 1:
            raise SpecError(f"temporal property {name} takes exactly one argument (the state)", _def_location(fn))
        view = self._view(prog, writable=False)
        with tracing(view) as tracer:
            start_pending()
            try:
                result = fn(view)
                formula = as_temporal(result, name, _def_location(fn) if result is None else _returned_at(fn, result))
                operands = tuple(as_bool(x) for x in formula.operands)
            except SpecError:
                check_pending_quietly()
                raise
            except Exception as e:
                check_pending_quietly()
                _reraise_internal(e)
                raise SpecError(f"temporal property {name} raised {type(e).__name__}: {e}",
                                _exception_location(e) or _def_location(fn)) from None
            check_pending()
        if tracer.checks:
            raise SpecError(f"temporal property {name} calls require() or Assert()", _def_location(fn),
                            "return a formula such as eventually(P) instead")
        for x in operands:
            if x is not None and not isinstance(x, bool):
                mark_used(x)
        return TemporalProperty(name, formula.kind, operands, _def_location(fn), meta_of(fn))

    def _predicate(self, prog: Program, name: str, fn: Callable) -> Predicate:
        if len(inspect.signature(fn).parameters) != 1:
            raise SpecError(f"{kind_of(fn)} {name} takes exactly one argument (the state)", _def_location(fn))
        view = self._view(prog, writable=False)
        with tracing(view) as tracer:
            start_pending()
            try:
                value = returned_condition(fn, f"{kind_of(fn)} {name}", fn(view), "return s.x != 4")
            except SpecError:
                check_pending_quietly()
                raise
            except Exception as e:
                check_pending_quietly()
                _reraise_internal(e)
                if isinstance(e, NameError) and e.name is not None and hasattr(self.cls, e.name):
                    raise SpecError(f"{kind_of(fn)} {name}: {e}", _exception_location(e) or _def_location(fn),
                                    suggestion(e.name, {}, self.cls)) from None  # fails in every state: refused now
                return Predicate(name, None, _def_location(fn), (exception_text(e), _exception_location(e)),
                                 meta_of(fn))
            check_pending()
        if tracer.checks:
            raise SpecError(f"{kind_of(fn)} {name} calls require() or Assert()", _def_location(fn),
                            "return a condition instead")
        return Predicate(name, value, _def_location(fn), None, meta_of(fn))


def _check_families(actions: list[tuple[str, Callable]]) -> None:
    """Every action's fairness options are well formed, and the members of a family agree on its kind."""
    kinds: dict[str, tuple[str, str]] = {}
    for name, fn in actions:
        meta = meta_of(fn)
        check_fairness_meta(name, meta, _def_location(fn))
        family = meta.get("family")
        if family is None:
            continue
        if family in kinds and kinds[family][0] != meta["fairness"]:
            other, kind = kinds[family][1], kinds[family][0]
            raise SpecError(f"action {name} declares family {family!r} {meta['fairness']}ly fair, but {other} "
                            f"declares it {kind}ly fair", _def_location(fn), "give every member of a family the same fairness")
        kinds.setdefault(family, (meta["fairness"], name))


def trace_body(tracer: Any, body: Callable[[], Any]) -> bool:
    """Run an action's or a handler's body under `tracer`; False if a guard disables it. An exception
    the body raises (where its guards so far hold) becomes an "error" check at the spec's line."""
    start_pending()
    try:
        body()
    except Disabled:
        check_pending_quietly()
        return False
    except _Stop:
        pass
    except SpecError:
        check_pending_quietly()
        raise
    except Exception as e:
        _reraise_internal(e)
        tracer.checks.append(Check("error", None, exception_text(e), _exception_location(e)))
    check_pending()
    return True


def returned(fn: Callable, what: str, result: Any, condition: bool = False) -> None:
    """What the value a traced body returns means. With `condition` (an initial-state function) a returned condition is
    a guard, as if `require(result)` stood where it returns; any other value would be ignored, so it is refused."""
    if result is None:
        return
    if condition and _is_condition(result):
        require(result)
        return
    if condition:
        raise SpecError(f"{what} returns {_what_is(result)}, not a condition", _returned_at(fn, result),
                        "return a condition on the state (e.g. `return s.x + s.y == 3`) or call require(...); "
                        "assign the fields it sets")
    raise SpecError(f"{what} returns {_what_is(result)}, which would be ignored", _returned_at(fn, result),
                    "guard it with require(cond), change the state by assigning fields (s.x = ...), and return nothing")


def returned_condition(fn: Callable, what: str, result: Any, example: str) -> Term | bool:
    """The condition a function must return (an invariant, a rounds spec's `@terminated`), or the error that says what
    it returned instead."""
    if result is None:
        raise SpecError(f"{what} returns nothing", _def_location(fn), f"return the condition, e.g. `{example}`")
    if not _is_condition(result):
        raise SpecError(f"{what} returns {_what_is(result)}, not a condition", _returned_at(fn, result),
                        "return a Bool: a comparison (s.x != 4) or And/Or/Not of them")
    return as_bool(result)


def _is_condition(x: Any) -> bool:
    return isinstance(x, (bool, PendingIf)) or (isinstance(x, Term) and x.is_bool)


def _what_is(x: Any) -> str:
    return describe(x) if isinstance(x, (Term, bool, int, str, float)) else f"a {type(x).__name__} object"


def _returned_at(fn: Callable, result: Any) -> Location | None:
    """Where `fn` returns `result`: the line of its `return` statements (read from its bytecode) that built the term
    (`return s.x < 3`), else its first `return` of a value; its `def` line when it has none."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return _def_location(fn)
    lines, prev = [], None
    for ins in dis.get_instructions(code):
        gives_none = (ins.opname == "RETURN_VALUE" and prev is not None and prev.opname == "LOAD_CONST"
                      and prev.argval is None) or (ins.opname == "RETURN_CONST" and ins.argval is None)
        if ins.opname in ("RETURN_VALUE", "RETURN_CONST") and not gives_none and ins.positions.lineno:
            lines.append(ins.positions.lineno)
        prev = ins
    built = result.loc if isinstance(result, Term) else None
    if built is not None and built.file == code.co_filename and built.line in lines:
        return built
    return Location(code.co_filename, lines[0]) if lines else _def_location(fn)


def check_pending_quietly() -> None:
    try:
        check_pending()
    except SpecError:
        pass


def _reraise_internal(e: Exception) -> None:
    """A programming error inside the language itself is a bug to report, not spec behaviour."""
    import os

    from . import errors

    lang_dir = os.path.dirname(os.path.abspath(errors.__file__))
    frames = traceback.extract_tb(e.__traceback__)
    if frames and os.path.abspath(frames[-1].filename).startswith(lang_dir) \
            and isinstance(e, (AttributeError, TypeError, NameError, AssertionError, KeyError)):
        raise e


def _exception_location(e: BaseException) -> Location | None:
    import os

    from . import errors

    lang_dir = os.path.dirname(os.path.abspath(errors.__file__))
    loc = None
    for fs in traceback.extract_tb(e.__traceback__):
        if not os.path.abspath(fs.filename).startswith(lang_dir):
            loc = Location(fs.filename, fs.lineno or 0)
    return loc


def _symmetric_domains(fields: list[Field]) -> list:
    """The symmetric Range domains that state fields mention (directly or nested)."""
    from .types import RangeDomain

    seen: dict[int, Any] = {}

    def walk(d: Any) -> None:
        if isinstance(d, RangeDomain):
            if d.symmetric:
                seen.setdefault(id(d), d)
            return
        for attr in ("key", "val", "elem", "inner"):
            if hasattr(d, attr):
                walk(getattr(d, attr))
        for sub in getattr(d, "field_doms", []) + getattr(d, "member_doms", []):
            walk(sub)

    for f in fields:
        walk(f.dom)
    return list(seen.values())
