"""Rounds: synchronous broadcast/receive networks, compiled to a spec.

Time is a sequence of rounds. In each round every process either broadcasts one message to all
its neighbours in the network graph or listens; a listener receives a message in the same round
iff exactly one neighbour broadcast. Two events are first-class, so properties can forbid them:

- a **collision** at `q`: two or more neighbours of `q` broadcast in the round;
- a **conflict** at `q`: `q` broadcast and so did one of its neighbours.

    class Flood(RoundsSpec):
        Node = Range("n", default=4)
        Message = Record("Token")
        has = Local(Bool, init=False)
        sent = Local(Bool, init=False)

        @staticmethod
        def graph(params):                    # any networkx graph on nodes 0..n-1
            return networkx.path_graph(params["n"])

        @on_start
        def start(p, initiator):              # `initiator`: a plain bool (see `starters`)
            p.has = initiator

        @on_transmit
        def transmit(p):
            broadcast(Token(), when=And(p.has, Not(p.sent)))
            p.sent = p.has

        @on_receive
        def receive(p, m):                    # m: Option(Message), None unless exactly one neighbour spoke
            p.has = Or(p.has, m.is_some())

        @terminated
        def done(p):
            return p.sent

Handlers use the spec language on the local state, as actor handlers do; `p.id`, `p.neighbours`,
`p.degree` and `p.graph` are plain Python values. Extra annotated parameters of `on_transmit`
and `on_receive` are choices the algorithm leaves open (the checker tries every value, an
executor picks one). Which processes start is the initial nondeterminism: `starters = "one"`
(exactly one initiator, any of them) or `"any"` (any non-empty set).

The global state has one map per local field (`s.has[p]`), `s.round` (rounds so far), `s.phase`,
`s.outbox` and `s.inbox` (what each node broadcast and heard), `s.broadcasters`, `s.collisions`
and `s.conflicts` (sets of nodes, for the last round). A round is two steps: `transmit` runs
every node's transmit handler and computes what each node hears, `receive` runs every node's
receive handler on it; once every node has terminated, `halt` stutters. `max_rounds` bounds the
round counter. Executors run the same traced local steps (`RoundsSystem`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import networkx as nx

from ..actors.spec import Local, _add_param_args, _choice_params
from ..errors import SpecError, user_location
from ..jsonvalues import from_json, to_json
from ..params import bound
from ..program import Check, Field, Program, Transition
from ..spec import (
    Spec,
    _Builder,
    _def_location,
    bind_params,
    returned,
    returned_condition,
    trace_body,
)
from ..terms import And, If, Not, Term, as_bool, const, lift
from ..tracing import TraceState, coerce, tracing
from ..types import Domain, Enum, Int, Map, Option, Range, Set, Type, domain_values

RESERVED = frozenset({"id", "round", "phase", "outbox", "inbox", "broadcasters", "collisions", "conflicts"})
STARTERS = ("one", "any")
PHASES = ("transmit", "receive")


def _handler(kind: str) -> Callable[[Callable], Callable]:
    def mark(fn: Callable) -> Callable:
        fn._rounds_handler = kind  # type: ignore[attr-defined]
        return fn

    mark.__name__ = f"on_{kind}"
    mark.__doc__ = f"Mark the {kind} handler of a rounds spec."
    return mark


on_start = _handler("start")
on_transmit = _handler("transmit")
on_receive = _handler("receive")
terminated = _handler("terminated")


class _Broadcast:
    """What the transmit handler being traced broadcasts: (when, message) or nothing."""

    def __init__(self, message: Domain):
        self.message = message
        self.sent: tuple[Any, Term] | None = None


_current: ContextVar[_Broadcast | None] = ContextVar("lockstep_rounds_broadcast", default=None)


def broadcast(msg: Any, when: Any = True) -> None:
    """Broadcast `msg` to every neighbour this round (where `when` holds); otherwise the process listens."""
    fx = _current.get()
    if fx is None:
        raise SpecError("broadcast() is used outside of a transmit handler", user_location(),
                        "call it inside the function marked @on_transmit")
    if fx.sent is not None:
        raise SpecError("a process broadcasts at most one message per round", user_location(),
                        "choose the message with If(...) and call broadcast() once")
    try:
        w = as_bool(when)
    except SpecError as e:
        raise SpecError(f"when=: {e.message}", e.location, e.hint) from None
    fx.sent = (w, coerce(msg, fx.message, "broadcast message"))


class NodeView(TraceState):
    """`p` inside a handler: the node's own fields, `p.id`, `p.neighbours`, `p.degree`, `p.graph`, `p.spec`."""

    def __init__(self, prog: Program, binding: Any, pid: int, spec: type, graph: nx.Graph):
        super().__init__(prog, binding, writable=True)
        for k, v in (("id", pid), ("spec", spec), ("graph", graph), ("neighbours", sorted(graph.neighbors(pid))),
                     ("degree", graph.degree(pid))):
            object.__setattr__(self, k, v)


class NetworkView(TraceState):
    """`s` inside invariants of a rounds spec: the global fields, plus `s.graph`, `s.nodes`, `s.spec`."""

    def __init__(self, prog: Program, binding: Any, writable: bool, spec: type, graph: nx.Graph):
        super().__init__(prog, binding, writable)
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "graph", graph)
        object.__setattr__(self, "nodes", list(range(graph.number_of_nodes())))


class RoundsSpec(Spec):
    """Base class of rounds specs: declare `Node` (a Range), `Message`, `graph(params)`, `Local`
    fields and the handlers; see the module docstring."""

    starters = "one"
    _locals: dict[str, Local] = {}
    _handlers: dict[str, Callable] = {}
    _fixed_graph: nx.Graph | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        locals_: dict[str, Local] = {}
        handlers: dict[str, Callable] = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if isinstance(value, Local):
                    if name in RESERVED or name.startswith("_"):
                        raise SpecError(f"a local field cannot be named {name!r}", value.location,
                                        "reserved names: " + ", ".join(sorted(RESERVED)) + " and names starting with _")
                    locals_[name] = value
                kind = getattr(value, "_rounds_handler", None)
                if kind is not None:
                    handlers[kind] = value
        cls._locals, cls._handlers = locals_, handlers
        for name, v in cls._decls.items():  # steps and initial states come from the handlers: these would be ignored
            if getattr(v, "_lockstep_kind", None) in ("action", "initial"):
                raise SpecError(f"rounds spec {cls.__name__} declares an @{v._lockstep_kind} ({name})", _def_location(v),
                                "processes act only through @on_start, @on_transmit and @on_receive; initial values "
                                "are Local(type, init=...)")
        for t in [getattr(cls, "Node", None), getattr(cls, "Message", None), *(v.type for v in locals_.values())]:
            if isinstance(t, Type):
                for p in t.params():
                    _add_param_args(cls, p)

    @staticmethod
    def graph(params: dict[str, int]) -> nx.Graph:
        """The network for these parameter values (a subclass defines it)."""
        raise NotImplementedError

    @classmethod
    def network(cls, params: dict[str, int]) -> nx.Graph:
        """The network graph the spec runs on for these parameter values."""
        return cls._fixed_graph if cls._fixed_graph is not None else cls.graph(params)

    @classmethod
    def derive(cls, graph: nx.Graph, params: dict[str, int]) -> dict[str, int]:
        """Parameter values that follow from the graph (e.g. its maximum degree), set before types are bound."""
        return {}

    @classmethod
    def max_rounds(cls, graph: nx.Graph, params: dict[str, int]) -> int:
        """The bound of the round counter (a subclass may derive a tighter one from the graph)."""
        return 4 * graph.number_of_nodes() * (max((d for _, d in graph.degree), default=0) + 1)

    @classmethod
    def round_limit(cls, graph: nx.Graph, initial: dict[str, Any], params: dict[str, int]) -> int | None:
        """The rounds within which the algorithm promises to terminate from this initial state (None: no promise)."""
        return None

    @classmethod
    def check_outcome(cls, graph: nx.Graph, final: dict[int, dict[str, Any]]) -> list[str]:
        """Problems with a finished run's final local states (JSON), checked directly on the graph."""
        return []

    @classmethod
    def outcome_summary(cls, graph: nx.Graph, final: dict[int, dict[str, Any]]) -> str:
        """One line describing a finished run's outcome."""
        return f"{len(final)} nodes"

    @classmethod
    def on(cls, graph: nx.Graph, name: str | None = None) -> type:
        """This spec on a fixed graph (nodes 0..n-1), whatever the parameters say about the network."""
        return type(name or cls.__name__, (cls,), {"_fixed_graph": graph, "__module__": cls.__module__})


@dataclass
class LocalRound:
    """One handler of one node at one choice: a transition over the local program of its kind."""

    kind: str  # "start" | "transmit" | "receive"
    pid: int
    choice: tuple[tuple[str, Any], ...]
    choice_doms: tuple[Domain, ...]
    transition: Transition


@dataclass
class RoundsSystem:
    """What executors and trace validation need: the graph and every node's local steps."""

    name: str
    params: dict[str, int]
    graph: nx.Graph
    message: Domain
    state_fields: list[Field]
    nstate: int
    transmit_prog: Program  # local state slots, then the broadcast slot (Option(Message))
    receive_prog: Program  # local state slots, then the received-message slot (Option(Message))
    steps: dict[tuple[str, int], list[LocalRound]]  # (kind, pid) -> one step per choice
    finished: dict[int, Transition]  # pid -> a transition enabled iff the node has terminated
    init_locals: dict[int, tuple]
    gslots: dict[int, list[int]] = field(default_factory=dict)
    max_rounds: int = 0

    @property
    def option(self) -> Domain:
        return self.transmit_prog.slot_doms[self.nstate]

    def local_json(self, local: tuple) -> dict[str, Any]:
        """A local state in its plain JSON form, one entry per field."""
        return {f.name: to_json(f.dom, f.decode(local)) for f in self.state_fields}

    def local_from_json(self, j: Any, where: str = "state") -> tuple:
        """A local state read back from its JSON form (ValueError if it does not fit the types)."""
        if not isinstance(j, dict) or set(j) != {f.name for f in self.state_fields}:
            raise ValueError(f"{where}: expected an object with the fields "
                             + ", ".join(f.name for f in self.state_fields))
        out: list = []
        for f in self.state_fields:
            out.extend(f.encode(from_json(f.dom, j[f.name], f"{where}.{f.name}")))
        return tuple(out)

    def message_json(self, rep: int) -> Any:
        """The JSON form of an Option(Message) representation (None for no message)."""
        return None if rep == 0 else to_json(self.message, self.message.unrep(rep - 1))

    def message_rep(self, j: Any, where: str = "msg") -> int:
        """The Option(Message) representation of a JSON message (ValueError if it is not one)."""
        return 0 if j is None else self.message.rep(from_json(self.message, j, where)) + 1


class RoundsProgram(Program):
    """The global program of a rounds spec, with the `RoundsSystem` its executors run."""

    system: RoundsSystem


def check_graph(graph: Any, n: int, who: str) -> nx.Graph:
    """The graph, if it is a networkx graph on nodes 0..n-1 (SpecError otherwise)."""
    if not isinstance(graph, nx.Graph) or graph.is_directed() or graph.is_multigraph():
        raise SpecError(f"{who}: the network must be an undirected networkx Graph, got {type(graph).__name__}", None)
    if sorted(graph.nodes) != list(range(n)):
        raise SpecError(f"{who}: the network's nodes must be 0..{n - 1} (Node = Range of {n}), "
                        f"got {sorted(graph.nodes)[:10]}", None, "relabel it: networkx.convert_node_labels_to_integers(G)")
    if any(u == v for u, v in graph.edges):
        raise SpecError(f"{who}: the network has a self-loop", None)
    return graph


def subst(t: Any, m: dict[int, Any], memo: dict[int, Any]) -> Any:
    """A term with slot i replaced by the term (or constant) m[i]; other slots are kept."""
    if not isinstance(t, Term) or t.op == "const":
        return t
    hit = memo.get(id(t))
    if hit is not None:
        return hit
    if t.op == "slot":
        out = m.get(t.args[0], t)
    else:
        out = Term(t.op, tuple(subst(a, m, memo) for a in t.args), t.dom, t.lo, t.hi, t.loc)
    memo[id(t)] = out
    return out


class _RoundsBuilder(_Builder):
    """Traces a rounds spec's handlers per node and composes them into `transmit` and `receive` transitions."""

    def __init__(self, cls: type, binding: Any):
        super().__init__(cls, binding)
        for need in ("Node", "Message"):
            if not hasattr(cls, need):
                raise SpecError(f"rounds spec {cls.__name__} declares no {need}", None,
                                "declare Node = Range(...) and Message = Record(...) (or a Union)")
        if not isinstance(cls.Node, Range):
            raise SpecError(f"{cls.__name__}.Node must be a Range", None)
        if cls.starters not in STARTERS:
            raise SpecError(f"{cls.__name__}.starters is {cls.starters!r}", None, "use 'one' or 'any'")
        for kind in ("start", "transmit", "receive", "terminated"):
            if kind not in cls._handlers:
                raise SpecError(f"rounds spec {cls.__name__} has no {kind} handler", None,
                                f"mark one function with @{'on_' if kind != 'terminated' else ''}{kind}")
        self.node = cls.Node.dom()
        self.n = self.node.size
        try:
            graph = cls.network(dict(binding.values))
        except SpecError:
            raise
        except Exception as e:
            raise SpecError(f"{cls.__name__}: building the network failed: {type(e).__name__}: {e}", None) from None
        self.graph = check_graph(graph, self.n, cls.__name__)
        for name, value in cls.derive(self.graph, dict(binding.values)).items():
            binding.values[name] = value
        self.msg_option = Option(cls.Message)
        self.msg = cls.Message.dom()

    # -- local programs and steps ----------------------------------------------------------------
    def _state_fields(self) -> list[Field]:
        fields, base = [], 0
        for name, loc in self.cls._locals.items():
            f = Field(name, loc.type.dom(), base, loc.init, loc.location)
            fields.append(f)
            base += f.count
        if not fields:
            raise SpecError(f"rounds spec {self.cls.__name__} declares no local state", None,
                            "declare fields with Local(type, init=...)")
        return fields

    def _local_prog(self, fields: list[Field], extra: str | None) -> Program:
        fields = list(fields)
        if extra is not None:
            base = sum(f.count for f in fields)
            fields.append(Field(extra, self.msg_option.dom(), base, None, None))
        prog = Program(self.cls, dict(self.binding.values), fields)
        prog.init_defaults, prog.init_choices = self._initial_values(prog)
        return prog

    def _trace(self, prog: Program, kind: str, pid: int, inputs: tuple, choice: tuple) -> Transition | None:
        fn = self.cls._handlers[kind]
        view = NodeView(prog, self.binding, pid, self.cls, self.graph)
        fx = _Broadcast(self.msg_option.dom())
        token = _current.set(fx if kind == "transmit" else None)
        try:
            with tracing(view) as tracer:
                def body() -> None:
                    if kind == "terminated":
                        done = returned_condition(fn, f"terminated handler {fn.__name__}", fn(view), "return p.sent")
                        tracer.checks.append(Check("require", done if isinstance(done, Term) else const(done, None), None,
                                                   self._where(kind)))
                    else:
                        returned(fn, f"{kind} handler {fn.__name__}", fn(view, *inputs, *(v for _, v in choice)))

                if not trace_body(tracer, body):
                    return None
        finally:
            _current.reset(token)
        updates = {s: t for s, t in view.writes.items() if not (t.op == "slot" and t.args[0] == s)}
        if kind == "transmit" and fx.sent is not None:
            when, msg = fx.sent
            slot = prog.nslots - 1
            updates[slot] = msg if when is True else If(when, msg, const(0, self.msg_option.dom()))
        args = (("p", pid),) + choice
        return Transition(kind, args, tracer.checks, updates, self._where(kind), {}, ())

    def _where(self, kind: str) -> Any:
        """Where the handler of this kind is defined (looked up once)."""
        locs = self.__dict__.setdefault("_locs", {})
        if kind not in locs:
            locs[kind] = _def_location(self.cls._handlers[kind])
        return locs[kind]

    def _steps(self, prog: Program, kind: str, pid: int, inputs: tuple) -> list[LocalRound]:
        fn = self.cls._handlers[kind]
        fixed = {"start": 1, "transmit": 0, "receive": 1}[kind]
        choices = _choice_params(self.cls, fn, fixed) if kind != "start" else []
        doms = tuple(t.dom() for _, t in choices)
        out = []
        for values in domain_values(doms):
            choice = tuple((name, v) for (name, _), v in zip(choices, values))
            t = self._trace(prog, kind, pid, inputs, choice)
            if t is not None:
                out.append(LocalRound(kind, pid, choice, doms, t))
        return out

    def system(self, pids: list[int] | None = None) -> RoundsSystem:
        """The local steps of these nodes (default: all), without the global program."""
        fields = self._state_fields()
        state_prog = self._local_prog(fields, None)
        tx, rx = self._local_prog(fields, "_broadcast"), self._local_prog(fields, "_received")
        nstate = state_prog.nslots
        steps: dict[tuple[str, int], list[LocalRound]] = {}
        finished: dict[int, Transition] = {}
        init_locals: dict[int, tuple] = {}
        for pid in (range(self.n) if pids is None else pids):
            starts = []
            for starter in (False, True):
                t = self._trace(state_prog, "start", pid, (starter,), ())
                if t is None:
                    raise SpecError(f"the start handler of {self.cls.__name__} is not enabled at node {pid} "
                                    f"(initiator={starter})", _def_location(self.cls._handlers["start"]))
                starts.append(LocalRound("start", pid, (("initiator", starter),), (), t))
            steps[("start", pid)] = starts
            steps[("transmit", pid)] = self._steps(tx, "transmit", pid, ())
            m = TraceState(rx, self.binding, writable=False)._read(nstate)
            steps[("receive", pid)] = self._steps(rx, "receive", pid, (m,))
            for kind in ("transmit", "receive"):
                if not steps[(kind, pid)]:
                    raise SpecError(f"the {kind} handler of {self.cls.__name__} is never enabled at node {pid}",
                                    _def_location(self.cls._handlers[kind]))
            t = self._trace(state_prog, "terminated", pid, (), ())
            assert t is not None
            finished[pid] = t
            init_locals[pid] = tuple(self._local_defaults(state_prog, pid))
        return RoundsSystem(self.cls.__name__, dict(self.binding.values), self.graph, self.msg, fields, nstate, tx, rx,
                            steps, finished, init_locals, max_rounds=self._max_rounds())

    def _local_defaults(self, prog: Program, pid: int) -> list:
        out = []
        for f in prog.fields:
            init = f.init
            if callable(init) and not isinstance(init, (Type, dict)):
                init = init(pid)
            sub = Program(self.cls, {}, [Field(f.name, f.dom, 0, init, f.location)])
            out.extend(self._initial_values(sub)[0])
        return out

    def _max_rounds(self) -> int:
        r = self.cls.max_rounds(self.graph, dict(self.binding.values))
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            raise SpecError(f"{self.cls.__name__}.max_rounds gave {r!r}, not a positive integer", None)
        return r

    # -- the global program ----------------------------------------------------------------------
    def build(self) -> RoundsProgram:
        sysm = self.system()
        node_t = self.cls.Node
        decls: list[tuple[str, Type, Any, Any]] = [
            (name, Map(node_t, loc.type, init=self._map_init(loc)), None, loc.location)
            for name, loc in self.cls._locals.items()]
        decls += [("round", Int(0, sysm.max_rounds), 0, None), ("phase", Enum(*PHASES), PHASES[0], None),
                  ("outbox", Map(node_t, self.msg_option, init=None), None, None),
                  ("inbox", Map(node_t, self.msg_option, init=None), None, None),
                  ("broadcasters", Set(node_t), None, None), ("collisions", Set(node_t), None, None),
                  ("conflicts", Set(node_t), None, None)]
        fields, base = [], 0
        for name, t, init, loc in decls:
            dom = t.dom()
            f = Field(name, dom, base, init if init is not None else getattr(t, "init", None), loc)
            fields.append(f)
            base += f.count
        prog = RoundsProgram(self.cls, dict(self.binding.values), fields)
        prog.init_defaults, prog.init_choices = self._initial_values(prog)
        gslots = {}
        for pid in range(self.n):
            slots = []
            for f in sysm.state_fields:
                g = prog.field(f.name)
                slots.extend(g.base + pid * f.count + j for j in range(f.count))
            gslots[pid] = slots
        sysm.gslots = gslots
        prog.system = sysm
        prog.init_transitions = self._starts(prog, sysm)
        prog.transitions = self._rounds(prog, sysm)
        self._properties(prog)
        return prog

    def _view(self, prog: Program, writable: bool) -> TraceState:
        return NetworkView(prog, self.binding, writable, self.cls, self.graph)

    @staticmethod
    def _map_init(loc: Local) -> Any:
        init = loc.init
        return (lambda _p: init) if isinstance(init, dict) else init

    def _slot_terms(self, prog: Program) -> list[Term]:
        return TraceState(prog, self.binding, writable=False)._slots

    def _starts(self, prog: RoundsProgram, sysm: RoundsSystem) -> list[Transition]:
        """One initial transition per set of initiators the spec allows."""
        sets: list[tuple[int, ...]]
        if self.cls.starters == "one":
            sets = [(r,) for r in range(self.n)]
        else:
            sets = [tuple(p for p in range(self.n) if mask >> p & 1) for mask in range(1, 1 << self.n)]
        out = []
        g = self._slot_terms(prog)
        for starts in sets:
            checks: list[Check] = []
            updates: dict[int, Term] = {}
            for pid in range(self.n):
                step = sysm.steps[("start", pid)][int(pid in starts)]
                m = {i: g[s] for i, s in enumerate(sysm.gslots[pid])}
                memo: dict[int, Any] = {}
                checks.extend(Check(c.kind, subst(c.term, m, memo), c.message, c.loc) for c in step.transition.checks)
                for s, t in step.transition.updates.items():
                    updates[sysm.gslots[pid][s]] = subst(t, m, memo)
            out.append(Transition("start", (("initiators", frozenset(starts)),), checks, updates, None, {}, ()))
        return out

    def _rounds(self, prog: RoundsProgram, sysm: RoundsSystem) -> list[Transition]:
        """The `transmit` half of a round (every node's transmit step; what each node broadcasts goes to
        `outbox`, what it hears to `inbox`; collisions and conflicts), the `receive` half (every node's
        receive step on its inbox) and `halt`."""
        g = self._slot_terms(prog)
        nstate = sysm.nstate
        none = const(0, sysm.option)
        node_set = Set(self.cls.Node).dom()
        base = {name: prog.field(name).base for name in ("phase", "round", "outbox", "inbox", "broadcasters",
                                                         "collisions", "conflicts")}
        phase, rnd = g[base["phase"]], g[base["round"]]
        local = [{i: g[s] for i, s in enumerate(sysm.gslots[p])} for p in range(self.n)]
        halted = And(*(subst(sysm.finished[p].checks[0].term, local[p], {}) for p in range(self.n)))
        out: list[Transition] = []
        loc = self._where("transmit")
        for combo in product(*(sysm.steps[("transmit", p)] for p in range(self.n))):
            checks = [Check("require", as_term(phase == PHASES[0]), None, None),
                      Check("require", as_term(Not(halted)), None, None),
                      Check("require", as_term(rnd < sysm.max_rounds), None, None)]
            updates: dict[int, Any] = {base["phase"]: lift(PHASES[1], prog.field("phase").dom)}
            sent = []
            for p, tx in enumerate(combo):
                memo: dict[int, Any] = {}
                checks += [Check(c.kind, subst(c.term, local[p], memo), c.message, c.loc) for c in tx.transition.checks]
                for i, t in tx.transition.updates.items():
                    if i < nstate:
                        updates[sysm.gslots[p][i]] = subst(t, local[p], memo)
                sent.append(subst(tx.transition.updates.get(nstate, none), local[p], memo))
                updates[base["outbox"] + p] = sent[-1]
            spoke = [as_bool(Not(x.is_none())) for x in sent]
            parts: dict[str, list[Any]] = {"broadcasters": [], "collisions": [], "conflicts": []}
            for q in range(self.n):
                count: Any = 0
                heard: Any = none
                for r in sorted(self.graph.neighbors(q)):
                    count = count + If(spoke[r], 1, 0)
                    heard = If(spoke[r], sent[r], heard)
                count = as_term(count)
                updates[base["inbox"] + q] = If(And(Not(spoke[q]), count == 1), heard, none)
                only_q, empty = lift(frozenset({q}), node_set), lift(frozenset(), node_set)
                parts["broadcasters"].append(If(spoke[q], only_q, empty))
                parts["collisions"].append(If(count >= 2, only_q, empty))
                parts["conflicts"].append(If(And(spoke[q], count >= 1), only_q, empty))
            updates.update({base[name]: union_all(ts) for name, ts in parts.items()})
            out.append(self._transition("transmit", combo, checks, updates, prog, loc))
        loc = self._where("receive")
        for combo in product(*(sysm.steps[("receive", p)] for p in range(self.n))):
            checks = [Check("require", as_term(phase == PHASES[1]), None, None)]
            updates = {base["phase"]: lift(PHASES[0], prog.field("phase").dom), base["round"]: rnd + 1}
            for q, rx in enumerate(combo):
                m = dict(local[q])
                m[nstate] = g[base["inbox"] + q]
                memo = {}
                checks += [Check(c.kind, subst(c.term, m, memo), c.message, c.loc) for c in rx.transition.checks]
                for i, t in rx.transition.updates.items():
                    if i < nstate:
                        updates[sysm.gslots[q][i]] = subst(t, m, memo)
            out.append(self._transition("receive", combo, checks, updates, prog, loc))
        out.append(Transition("halt", (), [Check("require", as_term(And(phase == PHASES[0], halted)), None, None)],
                              {}, None, {}, ()))
        return out

    @staticmethod
    def _transition(action: str, combo: tuple, checks: list[Check], updates: dict[int, Any], prog: Program,
                    loc: Any) -> Transition:
        updates = {s: coerce(t, prog.slot_doms[s], prog.slot_names[s]) for s, t in updates.items()
                   if not (isinstance(t, Term) and t.op == "slot" and t.args[0] == s)}
        args = tuple((f"{name}@{step.pid}", v) for step in combo for name, v in step.choice)
        return Transition(action, args, checks, updates, loc, {}, ())


def union_all(sets: list[Any]) -> Any:
    """The union of set terms, as a balanced tree (generated code stays shallowly nested)."""
    if len(sets) == 1:
        return sets[0]
    mid = len(sets) // 2
    return union_all(sets[:mid]).union(union_all(sets[mid:]))


def as_term(x: Any) -> Term:
    """A Bool or integer value as a term (constants included)."""
    return x if isinstance(x, Term) else const(x, None)


RoundsSpec._program_builder = _RoundsBuilder


def rounds_system(cls: type, params: dict[str, int], pids: list[int] | None = None) -> RoundsSystem:
    """The local steps of a rounds spec's nodes (what one executor process needs), without the global program."""
    binding = bind_params(cls, params)
    with bound(binding):
        return _RoundsBuilder(cls, binding).system(pids)


__all__ = ["PHASES", "Local", "LocalRound", "NetworkView", "NodeView", "RoundsProgram", "RoundsSpec", "RoundsSystem", "broadcast",
           "check_graph", "on_receive", "on_start", "on_transmit", "rounds_system", "terminated"]
