"""Actors: asynchronous message-passing processes, compiled to a spec (after Stateright's actor model).

A process has typed local state (`Local` fields) and handlers written in the spec language:

    class Ping(ActorSpec):
        Process = Range("n", default=3)
        Message = Union(Ping, Pong)
        count = Local(Int(0, 3), init=0)

        @on_start
        def start(p):
            send((p.id + 1) % p.n, Ping())

        @on_message
        def receive(p, src, m):
            require(p.count < 3)
            p.count = p.count + 1
            send(src, Pong(), when=(m.tag == "Ping"))

`p` reads and assigns the process's own fields; `p.id` is its id. A handler may call
`send(dst, m)`, `broadcast(m)`, `set_timer(t)` and `cancel_timer(t)`, each with an optional
`when=` condition on the local state; `observe(op)` records a client-visible operation (a value
of the spec's `Observation` type) in the global `history`, the set of operations so far. Each
handler is traced once per process and input (sender and message value, or timer), so ids,
messages and timers are plain Python values inside it (`if m.tag == "Echo":` is fine) and only
the local state is symbolic. Extra annotated parameters
(`def receive(p, src, m, vote: Bool)`) are nondeterministic choices: the checker tries every
value, an executor picks one. A `require` that fails leaves the message in flight.

The traced handlers are *local steps* (`ActorSystem.steps`): local state before -> local state
after, messages sent, timers set. The spec composes them with a network (`Network`: unordered by
default; ordered per channel; lossy; duplicating — chosen per check with `--param ordered=1`,
`lossy=1`, `duplicating=1`, `capacity=k`), crash-stop faults (`max_crashes`, `--param crashes=F`)
and Byzantine processes (`byzantine = (ids...)`, which run the handlers marked
`byzantine=True`, and with `forge = True` may also send any well-typed message once). The
global state has one map per local field (`s.state[p]`), `s.timers[p][t]`, `s.network`,
`s.crashed` and `s.history`; invariants read it as in any spec. Executors run the same local steps on real
processes.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from ..errors import Location, SpecError, user_location
from ..jsonvalues import from_json, to_json
from ..limits import check_enumeration
from ..params import Param, ParamLike, bound, resolve
from ..program import Check, Field, Program, Transition
from ..spec import (
    Spec,
    _Builder,
    _def_location,
    _Stop,
    _symmetric_domains,
    bind_params,
    require,
    returned,
    trace_body,
)
from ..temporal import check_fairness_meta
from ..terms import If, Not, Term, as_bool, const
from ..tracing import Disabled, TraceState, coerce, tracing
from ..types import (
    Bool,
    Domain,
    Enum,
    Int,
    Map,
    Option,
    Range,
    Record,
    RecordDomain,
    RecordValue,
    Set,
    Type,
    UnionDomain,
    domain_values,
)
from .networks import FifoNetwork, NetworkKind, choose

RESERVED = frozenset({"id", "timers", "network", "crashed", "forged", "history"})
DEFAULT_TIMEOUT_MS = 100


class Local:
    """A per-process state field: `state = Local(Enum("working", "done"), init="working")`.

    `init` is a value of the type, a dict (for a Map), or a function of the process id giving one.
    """

    def __init__(self, type_: Type, init: Any = None):
        if not isinstance(type_, Type):
            raise SpecError(f"Local({type_!r}): not a Lockstep type", user_location(),
                            "use Bool, Int(lo, hi), Enum(...), Range(...), Option(...), Set(...), Map(...)")
        self.type = type_
        self.init = init
        self.location = user_location()


@dataclass(frozen=True)
class Network:
    """Default network semantics of an actor spec; each can be changed per check with --param."""

    ordered: bool = False
    lossy: bool = False
    duplicating: bool = False
    capacity: int = 1


def _handler(kind: str) -> Callable:
    def decorate(fn: Callable | None = None, *, byzantine: bool = False) -> Any:
        def mark(f: Callable) -> Callable:
            f._actor_handler = (kind, byzantine)  # type: ignore[attr-defined]
            return f

        return mark(fn) if fn is not None else mark

    decorate.__name__ = f"on_{kind}"
    decorate.__doc__ = f"Mark the {kind} handler (`byzantine=True`: the one Byzantine processes run)."
    return decorate


on_start = _handler("start")
on_message = _handler("message")
on_timeout = _handler("timeout")


# ------------------------------------------------------------------------------- handler effects


class _Effects:
    """What the handler being traced sends and which timers it (re)starts."""

    def __init__(self, system: _SystemTypes, view: ProcessView, pid: int):
        self.system = system
        self.view = view
        self.pid = pid
        self.sends: list[tuple[Any, Any, Any]] = []  # (when, dst, msg)
        self.observed: list[tuple[Any, Any]] = []  # (when, operation)
        self.restart: dict[str, Any] = {}


_effects: ContextVar[_Effects | None] = ContextVar("lockstep_actor_effects", default=None)


def _current(what: str) -> _Effects:
    e = _effects.get()
    if e is None:
        raise SpecError(f"{what} is used outside of an actor handler", user_location(),
                        "call it inside a function marked @on_start, @on_message or @on_timeout")
    return e


def _condition(when: Any) -> Any:
    try:
        return as_bool(when)
    except SpecError as e:
        raise SpecError(f"when=: {e.message}", e.location, e.hint) from None


def send(dst: Any, msg: Any, when: Any = True) -> None:
    """Send `msg` to process `dst` (where `when` holds)."""
    fx = _current("send()")
    w = _condition(when)
    if w is False:
        return
    fx.sends.append((w, fx.system.check_dst(dst), fx.system.check_msg(msg)))


def observe(op: Any, when: Any = True) -> None:
    """Record a client-visible operation (a value of the spec's `Observation` type) in the history."""
    fx = _current("observe()")
    w = _condition(when)
    if w is False:
        return
    fx.observed.append((w, fx.system.check_observation(op)))


def broadcast(msg: Any, when: Any = True, include_self: bool = True) -> None:
    """Send `msg` to every process (`include_self=False`: to every other one)."""
    fx = _current("broadcast()")
    for d in fx.system.proc.dom().values():
        if include_self or d != fx.pid:
            send(d, msg, when)


def set_timer(timer: str, when: Any = True) -> None:
    """Arm (or restart) the named timer; it may fire any time later (`on_timeout`)."""
    fx = _current("set_timer()")
    w = _condition(when)
    t = fx.system.check_timer(timer)
    fx.view.timers[t] = If(w, True, fx.view.timers[t])
    fx.restart[t] = If(w, True, fx.restart.get(t, False))


def cancel_timer(timer: str, when: Any = True) -> None:
    """Disarm the named timer."""
    fx = _current("cancel_timer()")
    w = _condition(when)
    t = fx.system.check_timer(timer)
    fx.view.timers[t] = If(w, False, fx.view.timers[t])
    fx.restart[t] = If(w, False, fx.restart.get(t, False))


class ProcessView(TraceState):
    """`p` inside a handler: the process's own fields, its id (`p.id`), the spec class (`p.spec`,
    so subclasses can override helper methods) and the spec's parameters."""

    def __init__(self, prog: Program, binding: Any, pid: int, spec: type):
        super().__init__(prog, binding, writable=True)
        object.__setattr__(self, "id", pid)
        object.__setattr__(self, "spec", spec)


class GlobalView(TraceState):
    """`s` inside invariants of an actor spec: global fields, plus `s.spec`, `s.honest` (the ids of
    processes that are not Byzantine) and `s.byzantine`."""

    def __init__(self, prog: Program, binding: Any, writable: bool, spec: type, nproc: int, byzantine: frozenset[int]):
        super().__init__(prog, binding, writable)
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "byzantine", byzantine)
        object.__setattr__(self, "honest", [p for p in range(nproc) if p not in byzantine])


# ----------------------------------------------------------------------------------- the spec


class _SystemTypes:
    """The declared types of an actor spec class, and checks of handler arguments against them."""

    def __init__(self, cls: type):
        self.cls = cls
        self.proc: Range = cls.Process
        self.message: Type = cls.Message
        self.timer: Enum | None = getattr(cls, "Timer", None)
        self.envelope = Record("Envelope", src=self.proc, dst=self.proc, msg=self.message)
        self.send_record = Record("Send", dst=self.proc, msg=self.message)
        self.send_option = Option(self.send_record)
        self.observation: Type | None = getattr(cls, "Observation", None)
        self.observation_option = Option(self.observation) if self.observation is not None else None
        self.globals: dict[str, Map] = {}
        for name, loc in cls._locals.items():
            self.globals[name] = Map(self.proc, loc.type, init=_global_init(loc.init))
        if self.timer is not None:
            self.globals["timers"] = Map(self.proc, Map(self.timer, Bool), init=False)

    def check_dst(self, dst: Any) -> Any:
        if isinstance(dst, ParamLike):
            dst = resolve(dst)
        if isinstance(dst, Term):
            return coerce(dst, self.proc.dom(), "send() destination")
        n = self.proc.dom().size
        if isinstance(dst, bool) or not isinstance(dst, int) or not 0 <= dst < n:
            raise SpecError(f"send() to {dst!r}, which is not a process id (0..{n - 1})", user_location())
        return dst

    def check_msg(self, msg: Any) -> Any:
        dom = self.message.dom()
        if isinstance(msg, RecordValue):
            dom.index(msg)  # a SpecError if it is not a declared message
            return msg
        if isinstance(msg, Term) and isinstance(dom, UnionDomain) and isinstance(msg.dom, RecordDomain):
            msg = msg.in_union(dom)  # a member record built from terms (`Tick(p.clock, ...)`)
        return coerce(msg, dom, "sent message")

    def check_observation(self, op: Any) -> Any:
        if self.observation is None:
            raise SpecError(f"spec {self.cls.__name__} declares no Observation type", user_location(),
                            'declare the operations clients see: Observation = Record("Delivered", v=Value)')
        dom = self.observation.dom()
        if isinstance(op, RecordValue):
            dom.index(op)
            return op
        return coerce(op, dom, "observed operation")

    def check_timer(self, timer: Any) -> str:
        if self.timer is None:
            raise SpecError(f"spec {self.cls.__name__} declares no timers", user_location(),
                            'declare them: Timer = Enum("timeout", ...)')
        if timer not in self.timer.names:
            raise SpecError(f"{timer!r} is not a timer of {self.cls.__name__}", user_location(),
                            "timers: " + ", ".join(self.timer.names))
        return timer


def _global_init(init: Any) -> Any:
    if isinstance(init, dict):
        return lambda _p: init
    return init


class ActorSpec(Spec):
    """Base class of actor specs: declare `Process` (a Range), `Message` (a Record or Union),
    optionally `Timer` (an Enum), `Local` fields and handlers; see the module docstring."""

    network = Network()
    max_crashes = 0
    crashable: Any = None  # ids that may crash (default: all), or a function of the parameters giving them
    byzantine: tuple = ()  # ids of Byzantine processes
    forge = False  # Byzantine processes may also send any well-typed message, each at most once
    timeouts: dict[str, Any] = {}  # timer name -> milliseconds (an int or a Param), for executors
    fairness: dict[str, str] = {}  # "deliver" / "timeout" -> "weak" or "strong": each correct process's
    # delivery of each envelope (each of its timers) is fair, for @temporal properties; Byzantine steps never are
    _locals: dict[str, Local] = {}
    _handlers: dict[tuple[str, bool], tuple[str, Callable]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        locals_: dict[str, Local] = {}
        handlers: dict[tuple[str, bool], tuple[str, Callable]] = {}
        for klass in reversed(cls.__mro__):  # a subclass's handler replaces its base's handler of that kind
            own: dict[tuple[str, bool], str] = {}
            for name, value in vars(klass).items():
                if isinstance(value, Local):
                    if name in RESERVED:
                        raise SpecError(f"a local field cannot be named {name!r}", value.location,
                                        "reserved names: " + ", ".join(sorted(RESERVED)))
                    locals_[name] = value
                marker = getattr(value, "_actor_handler", None)
                if marker is not None:
                    if marker in own:
                        raise SpecError(f"{klass.__name__} has two {marker[0]} handlers ({own[marker]}, {name})",
                                        _def_location(value), "merge them into one handler")
                    own[marker] = name
                    handlers[marker] = (name, value)
        cls._locals = locals_
        cls._handlers = handlers
        for name, v in cls._decls.items():  # steps and initial states come from the handlers: these would be ignored
            if getattr(v, "_lockstep_kind", None) in ("action", "initial"):
                raise SpecError(f"actor spec {cls.__name__} declares an @{v._lockstep_kind} ({name})", _def_location(v),
                                "processes act only through handlers (@on_start, @on_message, @on_timeout); "
                                "initial values are Local(type, init=...)")
        types = [getattr(cls, "Process", None), getattr(cls, "Message", None), getattr(cls, "Timer", None),
                 getattr(cls, "Observation", None)]
        types += [loc.type for loc in locals_.values()]
        for t in types:
            if isinstance(t, Type):
                for p in t.params():
                    _add_param_args(cls, p)
        for v in (*cls.timeouts.values(), *cls.byzantine, *(() if callable(cls.crashable) else cls.crashable or ())):
            _add_param_args(cls, v)
        net = cls.network
        extra = [Param("ordered", int(net.ordered), 0, 1, "messages on a channel arrive in order"),
                 Param("lossy", int(net.lossy), 0, 1, "the network may lose messages"),
                 Param("duplicating", int(net.duplicating), 0, 1, "the network may deliver a message again"),
                 Param("capacity", net.capacity, 1, None, "copies of a message (or channel length) in flight"),
                 Param("crashes", cls.max_crashes, 0, None, "processes that may crash")]
        for p in extra:
            cls._decls[f"_actor_{p.name}"] = p
        if hasattr(cls, "Process") and hasattr(cls, "Message"):
            cls._types = _SystemTypes(cls)

    _program_builder: Any = None  # set below, once the builder is defined


def _add_param_args(cls: type, v: Any) -> None:
    if isinstance(v, Param):
        cls._decls.setdefault(f"_actor_param_{v.name}", v)
    elif isinstance(v, ParamLike):
        for a in getattr(v, "args", ()):
            _add_param_args(cls, a)


# ------------------------------------------------------------------------------- local steps


@dataclass
class LocalStep:
    """One handler at one input: the local transition an executor runs and the checker composes.

    `transition` is over the local program (state slots, then output slots). `key` identifies the
    input: ("start", pid, choice), ("message", pid, src, msg, choice) or ("timeout", pid, timer, choice).
    """

    kind: str
    pid: int
    src: int | None
    msg: Any
    timer: str | None
    choice: tuple[tuple[str, Any], ...]
    choice_doms: tuple[Domain, ...]
    byzantine: bool
    transition: Transition
    sends: list[tuple[Any, Any, Any]]
    loc: Location | None
    observed: list[tuple[Any, Any]] = field(default_factory=list)

    @property
    def key(self) -> tuple:
        return step_key(self.kind, self.pid, self.src, self.msg, self.timer, tuple(v for _, v in self.choice))


def step_key(kind: str, pid: int, src: int | None, msg: Any, timer: str | None, choice: tuple) -> tuple:
    """The lookup key of a local step (see `LocalStep`)."""
    if kind == "start":
        return ("start", pid, choice)
    if kind == "message":
        return ("message", pid, src, msg, choice)
    return ("timeout", pid, timer, choice)


@dataclass
class ActorSystem:
    """What executors and trace validation need besides the global program."""

    name: str
    params: dict[str, int]
    proc: Domain
    message: Domain
    timer: Domain | None
    local: Program  # local state slots, then output slots
    nstate: int  # local state slots
    send_slots: list[int]
    send_dom: Domain
    restart_slots: dict[str, int]
    steps: list[LocalStep]
    by_key: dict[tuple, LocalStep]
    gslots: dict[int, list[int]]  # pid -> global slot of each local state slot
    init_locals: dict[int, tuple]
    net: NetworkKind
    byzantine: frozenset[int]
    crashable: frozenset[int]
    max_crashes: int
    forge: bool
    timeouts_ms: dict[str, int]
    state_fields: list[Field] = field(default_factory=list)
    observe_slots: list[int] = field(default_factory=list)
    observation: Domain | None = None
    _sends: dict[int, tuple[int, Any]] = field(default_factory=dict, repr=False)  # output slot value -> send

    @property
    def pids(self) -> list[int]:
        return list(range(self.proc.size))

    @property
    def timer_names(self) -> list[str]:
        return list(self.timer.values()) if self.timer is not None else []

    def outputs(self, full: tuple, nsends: int | None = None) -> tuple[list[tuple[int, Any]], dict[str, bool]]:
        """(sends as (dst, msg), timer restarts) from the output slots of a local step's result
        (`nsends`: how many send slots the step uses, if known)."""
        sends = []
        cache = self._sends
        for s in self.send_slots[:nsends]:
            r = full[s]
            if r:  # 0 is None: nothing sent from this slot
                hit = cache.get(r)
                if hit is None:
                    v = self.send_dom.unrep(r)
                    hit = cache[r] = (v.dst, v.msg)
                sends.append(hit)
        return sends, {t: bool(full[s]) for t, s in self.restart_slots.items()}

    def observed(self, full: tuple, n: int | None = None) -> list[Any]:
        """The operations a local step's result recorded in the history, in order."""
        out = []
        for s in self.observe_slots[:n]:
            r = full[s]
            if r:
                out.append(self.observation.value(r - 1))  # type: ignore[union-attr]
        return out

    def pad(self, local: tuple) -> tuple:
        """A local state extended with cleared output slots, ready to run a step on."""
        return local + tuple(self.local.init_defaults[self.nstate:])

    def local_json(self, local: tuple) -> dict[str, Any]:
        """A local state in its plain JSON form, one entry per field."""
        return {f.name: to_json(f.dom, f.decode(local)) for f in self.state_fields}

    def local_from_json(self, j: Any, where: str = "state") -> tuple:
        """A local state read back from its JSON form (ValueError if it does not fit the types)."""
        if not isinstance(j, dict):
            raise ValueError(f"{where}: expected an object of local fields")
        out: list = []
        for f in self.state_fields:
            if f.name not in j:
                raise ValueError(f"{where}: no value for field {f.name!r}")
            out.extend(f.encode(from_json(f.dom, j[f.name], f"{where}.{f.name}")))
        extra = [k for k in j if k not in {f.name for f in self.state_fields}]
        if extra:
            raise ValueError(f"{where}: unknown field {extra[0]!r}")
        return tuple(out)


class ActorProgram(Program):
    """The global program of an actor spec, with the `ActorSystem` its executors run."""

    system: ActorSystem
    on_demand: OnDemand | None = None  # set on a program built without its steps (`on_demand_program`)


class OnDemand:
    """The steps of an actor program built without them, traced one at a time as a caller names them."""

    ACTIONS = ("deliver", "timeout", "drop", "forge")

    def __init__(self, builder: _ActorBuilder, prog: ActorProgram, state_prog: Program, gslots: dict[int, list[int]]):
        self.builder, self.prog, self.state_prog, self.gslots = builder, prog, state_prog, gslots

    def signature(self, action: str, pid: Any) -> list[tuple[str, Domain]] | None:
        """The parameters (name, domain) of `action` at process `pid` (the receiver of a delivery, the process of a
        timeout; None for a drop or a forge), in the order of its steps' arguments; None if the action's steps are
        not traced on demand (they are in `prog.transitions`)."""
        b = self.builder
        if action not in self.ACTIONS or (action in ("drop", "forge") and not (b.lossy or b.cls.forge)):
            return None
        proc, msg = b.proc, b.msg
        if action in ("drop", "forge"):
            return [("src", proc), ("dst", proc), ("msg", msg)]
        kind, fixed = ("message", 2) if action == "deliver" else ("timeout", 1)
        with bound(b.binding):
            timer = b.types.timer.dom() if b.types.timer else proc
        head = [("src", proc), ("dst", proc), ("msg", msg)] if action == "deliver" else [("p", proc), ("timer", timer)]
        fn = b._handler(kind, pid in b.byz) if isinstance(pid, int) else None
        with bound(b.binding):
            return head + ([(n, t.dom()) for n, t in _choice_params(b.cls, fn, fixed)] if fn is not None else [])

    def step(self, action: str, args: tuple[tuple[str, Any], ...]) -> Transition | None:
        """The global step of `action` with these arguments (as `signature` lists them), or None where the spec
        has no such step (a handler that never runs on this input, a drop or forge the spec does not allow)."""
        b, given = self.builder, dict(args)
        with bound(b.binding):
            if action == "drop":
                return b._drop(self.prog, given["src"], given["dst"], given["msg"]) if b.lossy else None
            if action == "forge":
                return b._forge(self.prog, given["src"], given["dst"], given["msg"]) \
                    if b.cls.forge and given["src"] in b.byz else None
            kind = "message" if action == "deliver" else "timeout"
            pid = given["dst"] if kind == "message" else given["p"]
            byz = pid in b.byz
            fn = b._handler(kind, byz)
            if fn is None:
                return None
            inp = (given["src"], given["msg"]) if kind == "message" else (given["timer"],)
            choices = _choice_params(b.cls, fn, 2 if kind == "message" else 1)
            choice = tuple((n, given[n]) for n, _ in choices)
            r = b._trace_handler(self.state_prog, fn, kind, pid, inp, choice)
            if r is None:
                return None
            cdoms = tuple(t.dom() for _, t in choices)
            step = b._local_step(self.state_prog, [], {}, [], (kind, pid, inp, choice, cdoms, byz, fn, *r))
            return b._compose(self.prog, self.gslots, step)


# ------------------------------------------------------------------------------------ builder


def _rename(t: Any, m: list[int], memo: dict[int, Term]) -> Any:
    """A local term over global slots (local slot i -> global slot m[i])."""
    if not isinstance(t, Term) or t.op == "const":
        return t
    hit = memo.get(id(t))
    if hit is not None:
        return hit
    if t.op == "slot":
        out = Term("slot", (m[t.args[0]],), t.dom, t.lo, t.hi, t.loc)
    else:
        out = Term(t.op, tuple(_rename(a, m, memo) for a in t.args), t.dom, t.lo, t.hi, t.loc)
    memo[id(t)] = out
    return out


def _choice_params(cls: type, fn: Callable, fixed: int) -> list[tuple[str, Type]]:
    """The annotated parameters after `p` and the handler's `fixed` inputs: nondeterministic choices."""
    params = list(inspect.signature(fn).parameters.values())
    if len(params) < 1 + fixed:
        raise SpecError(f"handler {fn.__name__} takes {len(params)} parameter(s); it needs the process view"
                        + (f" and {fixed} input(s)" if fixed else ""), _def_location(fn))
    module = sys.modules.get(fn.__module__)
    ns = dict(vars(module)) if module else {}
    ns.update(vars(cls))
    out = []
    for p in params[1 + fixed:]:
        ann = p.annotation
        if isinstance(ann, str):
            try:
                ann = eval(ann, ns)  # noqa: S307 - annotations are the spec author's own code
            except Exception as e:
                raise SpecError(f"cannot resolve the type {ann!r} of parameter {p.name!r}: {e}", _def_location(fn)) from None
        if not isinstance(ann, Type):
            raise SpecError(f"choice parameter {p.name!r} of handler {fn.__name__} needs a finite type",
                            _def_location(fn), f"annotate it, e.g. `{p.name}: Bool`")
        out.append((p.name, ann))
    return out


class _ActorBuilder(_Builder):
    """Traces an actor spec's handlers into local steps and composes them into a global program."""

    def build_on_demand(self) -> ActorProgram:
        """The global program with its fields, initial states, crashes and properties, and its other steps traced
        only when asked (`prog.on_demand`): what following a log needs, where the handlers' inputs are too many to
        trace them all. Its `system` holds the start steps only."""
        self._prepare(enumerate_inputs=False)
        prog, steps, system = self._assemble(self.proc.values(), kinds=("start",))
        prog.init_transitions = self._starts(prog, system.gslots, steps)
        prog.transitions.extend(self._fault_transitions(prog, crashes_only=True))
        self._properties(prog)
        prog.system = system
        prog.on_demand = OnDemand(self, prog, self._local_state_program(), system.gslots)
        return prog

    def build(self) -> ActorProgram:
        self._prepare()
        prog, steps, system = self._assemble(self.proc.values())
        prog.init_transitions = self._starts(prog, system.gslots, steps)
        for s in steps:
            if s.kind != "start":
                t = self._compose(prog, system.gslots, s)
                if t is not None:
                    prog.transitions.append(t)
        prog.transitions.extend(self._fault_transitions(prog))
        self._properties(prog)
        prog.system = system
        return prog

    def system(self, pids: list[int]) -> ActorSystem:
        """Only the local steps of processes `pids`: what one running process needs (no global program)."""
        self._prepare()
        return self._assemble([self._pid(p, "a process to run") for p in pids])[2]

    def _prepare(self, enumerate_inputs: bool = True) -> None:
        cls = self.cls
        for need in ("Process", "Message"):
            if not hasattr(cls, need):
                raise SpecError(f"actor spec {cls.__name__} declares no {need}", None,
                                "declare Process = Range(...) and Message = Union(...) (or a Record)")
        types: _SystemTypes = cls._types
        if not isinstance(types.proc, Range):
            raise SpecError(f"{cls.__name__}.Process must be a Range", None)
        self.types = types
        self.proc = types.proc.dom()
        self.msg = types.message.dom()
        if enumerate_inputs:
            check_enumeration([self.proc.size, self.proc.size, self.msg.size],
                              f"{cls.__name__}'s handler inputs to trace (processes x senders x messages)", here=False)
        v = self.binding.values
        self.net = choose(types.proc, types.message, types.envelope, bool(v["ordered"]), bool(v["duplicating"]),
                          v["capacity"])
        self.lossy = bool(v["lossy"])
        self.crashes = v["crashes"]
        pids = self.proc.values()
        self.byz = frozenset(self._pid(x, "byzantine") for x in cls.byzantine)
        crashable = cls.crashable(dict(v)) if callable(cls.crashable) else cls.crashable
        self.crashable = frozenset(pids if crashable is None else (self._pid(x, "crashable") for x in crashable))
        if self.proc.symmetric:
            self.proc.fix(self._singled_out())

    def _singled_out(self) -> frozenset[int]:
        """Ids a symmetric Process range must also fix: the Byzantine processes (they run other handlers),
        and the crashable ones when only some of the interchangeable processes may crash."""
        movable = set(self.proc.movable) - self.byz
        crash = self.crashable & movable if self.crashes and not movable <= self.crashable else frozenset()
        return self.byz | crash

    def _assemble(self, pids: list[int], kinds: tuple[str, ...] = ("start", "message", "timeout")
                  ) -> tuple[ActorProgram, list[LocalStep], ActorSystem]:
        """The global program's fields, the local steps of `pids` (of the handlers of `kinds`), and the
        `ActorSystem` over them."""
        cls, types, v = self.cls, self.types, self.binding.values
        state_prog = self._local_state_program()
        traced = [s for pid in pids for s in self._trace_process(state_prog, pid, kinds)]
        local, send_slots, restart_slots, observe_slots = self._local_program(state_prog, traced)
        prog = self._global_program()
        gslots = self._global_slots(prog, state_prog)
        steps = [self._local_step(local, send_slots, restart_slots, observe_slots, t) for t in traced]
        init_locals = {p: tuple(prog.init_defaults[i] for i in gslots[p]) for p in self.proc.values()}
        timeouts = {t: int(resolve(cls.timeouts.get(t, DEFAULT_TIMEOUT_MS), self.binding))
                    for t in (types.timer.dom().values() if types.timer else [])}
        system = ActorSystem(
            cls.__name__, dict(v), self.proc, self.msg, types.timer.dom() if types.timer else None, local,
            state_prog.nslots, send_slots, types.send_option.dom(), restart_slots,
            steps, {s.key: s for s in steps}, gslots, init_locals, self.net, self.byz, self.crashable,
            self.crashes, bool(cls.forge and self.byz), timeouts, list(state_prog.fields), observe_slots,
            types.observation.dom() if types.observation is not None else None)
        return prog, steps, system

    def _view(self, prog: Program, writable: bool) -> TraceState:
        return GlobalView(prog, self.binding, writable, self.cls, self.proc.size, self.byz)

    def _pid(self, x: Any, what: str) -> int:
        pid = resolve(x, self.binding)
        if isinstance(pid, bool) or not isinstance(pid, int) or not 0 <= pid < self.proc.size:
            raise SpecError(f"{self.cls.__name__}.{what} names {pid!r}, which is not a process id "
                            f"(0..{self.proc.size - 1})", None)
        return pid

    # -- local programs ------------------------------------------------------------------------
    def _local_state_program(self) -> Program:
        fields, base = [], 0
        for name, loc in self.cls._locals.items():
            f = Field(name, loc.type.dom(), base, loc.init, loc.location)
            fields.append(f)
            base += f.count
        if self.types.timer is not None:
            t = self.types.globals["timers"].value
            fields.append(Field("timers", t.dom(), base, False, None))
        if not fields:
            raise SpecError(f"actor spec {self.cls.__name__} declares no local state", None,
                            "declare fields with Local(type, init=...)")
        return Program(self.cls, dict(self.binding.values), fields)

    def _handler(self, kind: str, byzantine: bool) -> Callable | None:
        hit = self.cls._handlers.get((kind, byzantine))
        return hit[1] if hit else None

    def _trace_process(self, prog: Program, pid: int, kinds: tuple[str, ...] = ("start", "message", "timeout")
                       ) -> list[tuple]:
        byz = pid in self.byz
        out = []
        timers = self.types.timer.dom().values() if self.types.timer else []
        inputs = {"start": lambda: [()], "message": lambda: [(s, m) for s in self.proc.values() for m in self.msg.values()],
                  "timeout": lambda: [(t,) for t in timers]}
        for kind, fixed in (("start", 0), ("message", 2), ("timeout", 1)):
            fn = self._handler(kind, byz)
            if fn is None or kind not in kinds:
                continue
            if kind == "timeout" and not timers:
                raise SpecError(f"actor spec {self.cls.__name__} has a timeout handler but declares no timers",
                                _def_location(fn), 'declare them: Timer = Enum("timeout", ...)')
            choices = _choice_params(self.cls, fn, fixed)
            cdoms = tuple(t.dom() for _, t in choices)
            for inp in inputs[kind]():
                for cv in domain_values(cdoms):
                    choice = tuple((n, x) for (n, _), x in zip(choices, cv))
                    r = self._trace_handler(prog, fn, kind, pid, inp, choice)
                    if r is not None:
                        out.append((kind, pid, inp, choice, cdoms, byz, fn, *r))
        return out

    def _trace_handler(self, prog: Program, fn: Callable, kind: str, pid: int, inp: tuple, choice: tuple):
        view = ProcessView(prog, self.binding, pid, self.cls)
        fx = _Effects(self.types, view, pid)
        token = _effects.set(fx)
        try:
            def body() -> None:
                if kind == "timeout":
                    require(view.timers[inp[0]])  # only an armed timer fires; firing disarms it
                    view.timers[inp[0]] = False
                returned(fn, f"handler {fn.__name__}", fn(view, *inp, *(x for _, x in choice)))

            with tracing(view) as tracer:
                if not trace_body(tracer, body):
                    return None
        finally:
            _effects.reset(token)
        updates = {s: t for s, t in view.writes.items() if not (t.op == "slot" and t.args[0] == s)}
        return tracer.checks, updates, fx.sends, fx.restart, fx.observed

    def _local_program(self, state_prog: Program, traced: list[tuple]) -> tuple[Program, list[int], dict[str, int], list[int]]:
        nsend = max((len(t[9]) for t in traced), default=0)
        nobs = max((len(t[11]) for t in traced), default=0)
        fields = list(state_prog.fields)
        base = state_prog.nslots
        send_slots = list(range(base, base + nsend))
        if nsend:
            outbox = Map(Int(0, nsend - 1), self.types.send_option, init=None)
            fields.append(Field("_sent", outbox.dom(), base, None, None))
            base += nsend
        restart_slots: dict[str, int] = {}
        if self.types.timer is not None:
            names = self.types.timer.dom().values()
            fields.append(Field("_restart", Map(self.types.timer, Bool).dom(), base, False, None))
            restart_slots = {t: base + i for i, t in enumerate(names)}
            base += len(names)
        observe_slots = list(range(base, base + nobs))
        if nobs:
            fields.append(Field("_observed", Map(Int(0, nobs - 1), self.types.observation_option, init=None).dom(),
                                base, None, None))
        local = Program(self.cls, dict(self.binding.values), fields)
        local.init_defaults, local.init_choices = self._initial_values(local)
        return local, send_slots, restart_slots, observe_slots

    def _local_step(self, local: Program, send_slots: list[int], restart_slots: dict[str, int], observe_slots: list[int],
                    t: tuple) -> LocalStep:
        kind, pid, inp, choice, cdoms, byz, fn, checks, updates, sends, restart, observed = t
        opt = self.types.send_option.dom()
        updates = dict(updates)
        for slot, (when, dst, msg) in zip(send_slots, sends):
            rec = coerce(self.types.send_record(dst, msg), opt, "send()")
            updates[slot] = rec if when is True else If(when, rec, const(0, opt))
        if observed:
            oopt = self.types.observation_option.dom()
            for slot, (when, op) in zip(observe_slots, observed):
                o = coerce(op, oopt, "observe()")
                updates[slot] = o if when is True else If(when, o, const(0, oopt))
        for name, slot in restart_slots.items():
            if name in restart:
                r = restart[name]
                updates[slot] = r if isinstance(r, Term) else const(bool(r), None)
        src, msg = (inp[0], inp[1]) if kind == "message" else (None, None)
        timer = inp[0] if kind == "timeout" else None
        args: tuple = (("p", pid),) + ((("src", src), ("msg", msg)) if kind == "message" else ()) \
            + ((("timer", timer),) if kind == "timeout" else ()) + choice
        arg_doms = (self.proc,) + ((self.proc, self.msg) if kind == "message" else ()) \
            + ((self.types.timer.dom(),) if kind == "timeout" else ()) + cdoms
        loc = _def_location(fn)
        tr = Transition(f"on_{kind}", args, checks, updates, loc, {"byzantine": byz}, arg_doms)
        return LocalStep(kind, pid, src, msg, timer, choice, cdoms, byz, tr, sends, loc, observed)

    # -- the global program ---------------------------------------------------------------------
    def _global_program(self) -> ActorProgram:
        decls: list[tuple[str, Type, Any, Location | None]] = []
        for name, t in self.types.globals.items():
            loc = self.cls._locals[name].location if name in self.cls._locals else None
            decls.append((name, t, t.init, loc))
        decls.append(("network", self.net.field_type(), None, None))
        if self.types.observation is not None:
            decls.append(("history", Set(self.types.observation), None, None))
        if self.crashes:
            decls.append(("crashed", Set(self.types.proc), None, None))
        if self.cls.forge and self.byz:
            decls.append(("forged", Set(self.types.envelope), None, None))
        fields, base = [], 0
        for name, t, init, loc in decls:
            f = Field(name, t.dom(), base, init, loc)
            fields.append(f)
            base += f.count
        prog = ActorProgram(self.cls, dict(self.binding.values), fields)
        prog.symmetric = _symmetric_domains(fields)
        prog.init_defaults, prog.init_choices = self._initial_values(prog)
        return prog

    def _global_slots(self, prog: ActorProgram, state_prog: Program) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for pid in self.proc.values():
            slots = []
            for f in state_prog.fields:
                g = prog.field(f.name)
                slots.extend(g.base + pid * f.count + j for j in range(f.count))
            out[pid] = slots
        return out

    def _apply(self, g: TraceState, tracer: Any, gslots: dict[int, list[int]], step: LocalStep) -> None:
        """Add a local step's checks, updates and sends to the global step being built on `g`."""
        m = gslots[step.pid]
        memo: dict[int, Term] = {}
        tracer.checks.extend(Check(c.kind, _rename(c.term, m, memo), c.message, c.loc) for c in step.transition.checks)
        for s, t in step.transition.updates.items():
            if s < len(m):
                g.writes[m[s]] = _rename(t, m, memo)
        for when, dst, msg in step.sends:
            self.net.send(g, step.pid, _rename(dst, m, memo), _rename(msg, m, memo), _rename(when, m, memo))
        for when, op in step.observed:
            w, added = _rename(when, m, memo), g.history.add(_rename(op, m, memo))
            g.history = added if w is True else If(w, added, g.history)

    def _global_step(self, prog: ActorProgram, action: str, args: tuple, arg_doms: tuple, loc: Location | None,
                     body: Callable[[TraceState, Any], None], meta: dict | None = None) -> Transition | None:
        g = TraceState(prog, self.binding, writable=True)
        self.net.loc = loc
        with tracing(g) as tracer:
            try:
                body(g, tracer)
            except Disabled:
                return None
            except _Stop:
                pass
        updates = {s: t for s, t in g.writes.items() if not (isinstance(t, Term) and t.op == "slot" and t.args[0] == s)}
        return Transition(action, args, tracer.checks, updates, loc, meta or {}, arg_doms)

    def _not_crashed(self, g: TraceState, pid: int) -> None:
        if self.crashes:
            require(Not(g.crashed.contains(pid)))

    def _compose(self, prog: ActorProgram, gslots: dict[int, list[int]], step: LocalStep) -> Transition | None:
        def body(g: TraceState, tracer: Any) -> None:
            self._not_crashed(g, step.pid)
            if step.kind == "message":
                require(self.net.deliverable(g, step.src, step.pid, step.msg))
                self.net.consume(g, step.src, step.pid, step.msg)
            self._apply(g, tracer, gslots, step)

        fair = {} if step.byzantine else {k: v for k, v in (("fairness", self._fairness().get(
            "deliver" if step.kind == "message" else "timeout")),) if v}
        if step.kind == "message":
            args = (("src", step.src), ("dst", step.pid), ("msg", step.msg)) + step.choice
            doms = (self.proc, self.proc, self.msg) + step.choice_doms
            return self._global_step(prog, "deliver", args, doms, step.loc, body,
                                     {"byzantine": step.byzantine, "event": ("deliver", step.pid, step.src, step.msg, step.key),
                                      **fair})
        args = (("p", step.pid), ("timer", step.timer)) + step.choice
        doms = (self.proc, self.types.timer.dom()) + step.choice_doms
        return self._global_step(prog, "timeout", args, doms, step.loc, body,
                                 {"byzantine": step.byzantine, "event": ("timeout", step.pid, step.timer, step.key), **fair})

    def _fairness(self) -> dict[str, str]:
        """The spec's `fairness` table, checked: which events are fair, and how."""
        table = self.cls.fairness
        if not isinstance(table, dict):
            raise SpecError(f"{self.cls.__name__}.fairness is {type(table).__name__}, not a dict", None,
                            'write fairness = {"deliver": "weak"}')
        for event, kind in table.items():
            if event not in ("deliver", "timeout"):
                raise SpecError(f"{self.cls.__name__}.fairness names {event!r}, which is not an event kind", None,
                                'the fair events are "deliver" (message deliveries) and "timeout" (timers)')
            check_fairness_meta(f"{self.cls.__name__}.fairness[{event!r}]", {"fairness": kind}, None)
        return table

    def _starts(self, prog: ActorProgram, gslots: dict[int, list[int]], steps: list[LocalStep]) -> list[Transition]:
        """One initial transition per combination of the processes' start choices (all start at once)."""
        per_pid = [[s for s in steps if s.kind == "start" and s.pid == p] for p in self.proc.values()]
        per_pid = [options for options in per_pid if options]
        out = []
        for combo in product(*per_pid):
            def body(g: TraceState, tracer: Any, combo: tuple = combo) -> None:
                for s in combo:
                    self._apply(g, tracer, gslots, s)

            args = tuple((f"{name}@{s.pid}", v) for s in combo for name, v in s.choice)
            doms = tuple(d for s in combo for d in s.choice_doms)
            t = self._global_step(prog, "start", args, doms, None, body)
            if t is not None:
                out.append(t)
        return out

    def _fault_transitions(self, prog: ActorProgram, crashes_only: bool = False) -> list[Transition]:
        out: list[Transition | None] = []
        pids = self.proc.values()
        if self.crashes:
            for p in sorted(self.crashable):
                def crash(g: TraceState, tracer: Any, p: int = p) -> None:
                    require(Not(g.crashed.contains(p)), g.crashed.card() < self.crashes)
                    g.crashed = g.crashed.add(p)

                out.append(self._global_step(prog, "crash", (("p", p),), (self.proc,), None, crash, {"event": ("crash", p)}))
        if crashes_only:
            return [t for t in out if t is not None]
        if self.lossy:
            if isinstance(self.net, FifoNetwork):
                cap = self.net.capacity
                for s, d, i in product(pids, pids, range(cap)):
                    def drop_at(g: TraceState, tracer: Any, s: int = s, d: int = d, i: int = i) -> None:
                        require(g.network[s][d][i].is_some())
                        self.net.remove_at(g, s, d, i)

                    out.append(self._global_step(prog, "drop", (("src", s), ("dst", d), ("pos", i)),
                                                 (self.proc, self.proc, Int(0, cap - 1).dom()), None, drop_at,
                                                 {"event": ("drop_at", d, s, i)}))
            else:
                out.extend(self._drop(prog, s, d, m) for s, d, m in product(pids, pids, self.msg.values()))
        if self.cls.forge:
            out.extend(self._forge(prog, b, d, m) for b, d, m in product(sorted(self.byz), pids, self.msg.values()))
        return [t for t in out if t is not None]

    def _drop(self, prog: ActorProgram, s: int, d: int, m: Any) -> Transition | None:
        """The lossy network's step that loses message m from s to d."""
        def drop(g: TraceState, tracer: Any) -> None:
            require(self.net.deliverable(g, s, d, m))
            self.net.consume(g, s, d, m)
            if self.net.duplicating:
                g.network = g.network.remove(self.types.envelope(s, d, m))

        return self._global_step(prog, "drop", (("src", s), ("dst", d), ("msg", m)), (self.proc, self.proc, self.msg),
                                 None, drop, {"event": ("drop", d, s, m)})

    def _forge(self, prog: ActorProgram, b: int, d: int, m: Any) -> Transition | None:
        """Byzantine process b's step that sends d any message m (once)."""
        def forge(g: TraceState, tracer: Any) -> None:
            env = self.types.envelope(b, d, m)
            require(Not(g.forged.contains(env)), self.net.can_send(g, b, d, m))
            g.forged = g.forged.add(env)
            self.net.send(g, b, d, m, True)

        return self._global_step(prog, "forge", (("src", b), ("dst", d), ("msg", m)), (self.proc, self.proc, self.msg),
                                 None, forge, {"byzantine": True, "event": ("forge", b, d, m)})


ActorSpec._program_builder = _ActorBuilder


def actor_system(cls: type, params: dict[str, Any], pids: list[int]) -> ActorSystem:
    """The local steps of an actor spec's processes `pids` (what one running process needs), without the
    global program the checker explores."""
    binding = bind_params(cls, params)
    with bound(binding):
        return _ActorBuilder(cls, binding).system(pids)


def on_demand_program(cls: type, params: dict[str, Any]) -> ActorProgram:
    """An actor spec's global program with its deliveries, timeouts, drops and forgeries traced only when asked
    (`prog.on_demand.step(...)`): for following a log through a spec whose handlers have too many inputs to trace
    every one."""
    binding = bind_params(cls, params)
    with bound(binding):
        return _ActorBuilder(cls, binding).build_on_demand()


def handler_inputs(cls: type, params: dict[str, Any]) -> int:
    """How many (process, sender, message) inputs building the spec's whole program traces."""
    binding = bind_params(cls, params)
    with bound(binding):
        types: _SystemTypes = cls._types
        n = types.proc.dom().size
        return n * n * types.message.dom().size


def in_flight(prog: ActorProgram, state: tuple) -> list[tuple[int, int, Any]]:
    """The (src, dst, msg) envelopes in flight in a global state (one entry per copy, channel order)."""
    net = prog.system.net
    value = prog.field("network").decode(state)
    if isinstance(net, FifoNetwork):
        return [(s, d, m) for s, row in value.items() for d, q in row.items() for m in q.values() if m is not None]
    if isinstance(value, frozenset):
        return sorted(((e.src, e.dst, e.msg) for e in value), key=lambda e: (e[0], e[1], repr(e[2])))
    return [(e.src, e.dst, e.msg) for e, k in value.items() for _ in range(k)]


__all__ = [
    "ActorProgram", "ActorSpec", "ActorSystem", "Local", "actor_system", "LocalStep", "Network", "ProcessView", "broadcast",
    "cancel_timer", "in_flight", "observe", "on_message", "on_start", "on_timeout", "send", "set_timer", "step_key",
]
