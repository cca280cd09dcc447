"""Population protocols: anonymous agents that interact in random ordered pairs.

A protocol is a `Population` subclass. It declares its parameters (`n` is required: the
number of agents), the agent-state type `agent` (any finite Lockstep type, or a method
returning one once the parameters are known) and the transition function
`delta(self, u, v)` from initiator `u` and responder `v` to `(u', v')`, or, for a randomized
rule, to `{(u', v'): probability}`:

    class Epidemic(Population):
        n = Param("n", default=5, lo=2)
        agent = Enum("S", "I")

        def delta(self, u, v):
            return (u, "I") if u == "I" else (u, v)

        @start
        def one_infected(self):
            return {"I": 1, "S": self.n - 1}

        @predicate
        def all_infected(self, c):
            return c["S"] == 0

Optional hooks: `output(q)` and `input(q)` (the agent's output and input), `with_input(q, x)`
(the agent with its input replaced) and `input_change(x) -> {y: probability}` (in every
interaction the initiator's input changes from x to y with that probability before `delta`
runs: inputs that change over time). `setup()` derives constants from the parameters.

**Counting abstraction.** Agents are anonymous, so a configuration is a count vector over the
agent states (`Population.states` fixes the order); the counts sum to n. The scheduler picks an
ordered pair of distinct agents uniformly, so from configuration c the pair of states (a, b)
interacts with probability c[a]·(c[b] − [a = b]) / (n(n − 1)).

The compiled protocol is a *plain spec* (`init()`, `next(config)`, `invariants`) over count
tuples. The typed language does not fit: its initial states cannot enumerate every
configuration of n agents, and it has no place for the count-dependent probabilities the
probabilistic engine needs; here `delta` is evaluated once per ordered pair of agent states
when the protocol is built, so engines read a finite rule table (`outcomes`) and never call
spec code in their inner loops. `next` yields only the interactions that change the
configuration, so a deadlock reported by the explicit engine is a *silent* configuration.

Everything is validated when the protocol is built: an unknown parameter, n < 2, a state
outside the declared type, a malformed result or probabilities that do not sum to 1 raise one
`SpecError` naming the pair, the spec line and the fix.
"""

from __future__ import annotations

import gc
import inspect
import keyword
import math
import re
from collections import namedtuple
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from itertools import combinations, compress
from numbers import Number
from typing import Any

from ..errors import Location, SpecError
from ..markers import kind_of
from ..params import Binding, Param, bound
from ..types import Domain, Type

ONE = Fraction(1)

ALL = type("AllConfigurations", (), {"__repr__": lambda self: "ALL"})()
"""Returned by a `@start` function: every configuration of n agents is initial."""

_KIND = "_population_kind"


def start(fn: Callable) -> Callable:
    """Mark `def name(self)` as a named start: it returns a configuration `{state: count}`, a list
    of them, or `ALL`. The first start declared is the default."""
    setattr(fn, _KIND, "start")
    return fn


def predicate(fn: Callable | None = None, *, invariant: bool = False):
    """Mark `def name(self, c) -> bool` as a named set of configurations (`c[q]` is the count of
    state q). With `invariant=True` the explicit engine checks it in every reachable configuration."""

    def mark(f: Callable) -> Callable:
        setattr(f, _KIND, "invariant" if invariant else "predicate")
        return f

    return mark(fn) if fn is not None else mark


def def_location(fn: Callable) -> Location | None:
    """Where `def fn` is."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return Location(code.co_filename, code.co_firstlineno)
    offset = next((i for i, text in enumerate(lines) if text.lstrip().startswith("def ")), 0)
    return Location(code.co_filename, first + offset)


class Config:
    """A read-only view of a configuration for predicates: `c[q]` is the number of agents in state q."""

    __slots__ = ("protocol", "counts")

    def __init__(self, protocol: Population, counts: tuple[int, ...]):
        self.protocol = protocol
        self.counts = counts

    def __getitem__(self, q: Any) -> int:
        try:
            return self.counts[self.protocol.index[q]]
        except KeyError:
            raise KeyError(f"{q!r} is not an agent state of {self.protocol.name}") from None

    @property
    def n(self) -> int:
        return sum(self.counts)

    def present(self) -> list:
        """The agent states held by at least one agent, in state order."""
        return list(compress(self.protocol.states, self.counts))

    def count(self, test: Callable[[Any], bool]) -> int:
        """How many agents are in a state satisfying `test`."""
        states = self.protocol.states
        return sum(k for i, k in enumerate(self.counts) if k and test(states[i]))

    def as_dict(self) -> dict:
        states = self.protocol.states
        return {states[i]: k for i, k in enumerate(self.counts) if k}

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{q!r}: {k}" for q, k in self.as_dict().items()) + "}"


class Population:
    """Base class of population protocols; see the module docstring for what a subclass declares."""

    agent: Type | Callable[[], Type] | None = None

    # -- what a protocol defines ---------------------------------------------------------------
    def setup(self) -> None:
        """Derive constants from the bound parameters (optional)."""

    def delta(self, u: Any, v: Any) -> Any:
        raise NotImplementedError

    def output(self, q: Any) -> Any:
        """The output of an agent in state q (None: the protocol has no output)."""
        return None

    def input(self, q: Any) -> Any:
        """The current input of an agent in state q (None: the protocol has no input)."""
        return None

    def with_input(self, q: Any, x: Any) -> Any:
        """State q with its input replaced by x."""
        raise SpecError(f"{type(self).__name__} changes inputs but does not define with_input(q, x)")

    def input_change(self, x: Any) -> dict:
        """{y: probability}: how the initiator's input x changes in one interaction (default: never)."""
        return {}

    # -- declarations ----------------------------------------------------------------------------
    @classmethod
    def declared_params(cls) -> dict[str, Param]:
        """The protocol's parameters, by name, in declaration order."""
        out: dict[str, Param] = {}
        for klass in reversed(cls.__mro__):
            for value in vars(klass).values():
                if isinstance(value, Param):
                    out[value.name] = value
        return out

    @classmethod
    def _marked(cls, *kinds: str) -> dict[str, Callable]:
        out: dict[str, Callable] = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if callable(value) and getattr(value, _KIND, None) in kinds:
                    out[name] = value
                elif name in out and not callable(value):
                    del out[name]
        return out

    # -- building ----------------------------------------------------------------------------------
    def __init__(self, **params: Any):
        cls = type(self)
        self.name = cls.__name__
        for klass in cls.__mro__:  # the typed language's decorators mean nothing here: refused, not ignored
            for name, value in vars(klass).items():
                if kind_of(value) is not None:
                    raise SpecError(f"population protocol {self.name} marks {name} @{kind_of(value)}, which population "
                                    "protocols do not read", def_location(value),
                                    "mark a set of configurations @predicate (@predicate(invariant=True) for an "
                                    "invariant) and a start @start; the agents' rule is delta(self, u, v)")
        declared = self.declared_params()
        if "n" not in declared:
            raise SpecError(f"population protocol {self.name} declares no parameter n (the number of agents)",
                            def_location(cls.delta), 'declare n = Param("n", default=..., lo=2)')
        for key in params:
            if key not in declared:
                raise SpecError(f"spec {self.name} has no parameter {key!r} (its parameters: {', '.join(declared)})")
        values = {k: (p.check(params[k], "value") if k in params else p.default) for k, p in declared.items()}
        if values["n"] < 2:
            raise SpecError(f"spec {self.name}: n = {values['n']} agents, but an interaction needs two",
                            declared["n"].location, "use --param n=2 or more")
        self.params = values
        for attr, value in vars_with_params(cls):
            setattr(self, attr, values[value.name])
        self.n: int = values["n"]
        self._binding = Binding(self.name, values)
        with bound(self._binding):
            self.setup()
            for attr, value in vars_with_params(cls):  # setup may derive defaults (0 = "choose for me")
                self.params[value.name] = getattr(self, attr)
            self.dom = self._agent_domain()
            self.states: list = self.dom.values()
        self.index: dict[Any, int] = {q: i for i, q in enumerate(self.states)}
        self.Q = len(self.states)
        with _no_cyclic_gc():
            self.outcomes: list[list[tuple[int, int, Fraction]]] = self._compile_rules()
        self._moves_cache: list | None = None
        self.starts = self._marked("start")
        self.predicates = {k: self._condition(k, fn) for k, fn in self._marked("predicate", "invariant").items()}
        self.invariants = {k: self._config_fn(fn) for k, fn in self._marked("invariant").items()}
        self._config_type = namedtuple("Configuration", _field_names(self.states))  # type: ignore[misc]
        self._step_index: dict[tuple, tuple[int, int]] | None = None

    def _agent_domain(self) -> Domain:
        agent = type(self).agent
        if agent is None:
            raise SpecError(f"population protocol {self.name} declares no agent-state type",
                            def_location(type(self).delta), "declare agent = Int(0, k) (or Enum(...), a Record, ...)")
        if not isinstance(agent, Type) and callable(agent):
            agent = agent(self)
        if not isinstance(agent, Type):
            raise SpecError(f"{self.name}.agent is {agent!r}, not a Lockstep type", def_location(type(self).delta),
                            "use Int(lo, hi), Enum(...), Bool, a Record, or a method returning one")
        dom = agent.dom(self._binding)
        if dom.size > 100_000:
            raise SpecError(f"{self.name}: the agent-state type has {dom.size:,} values; "
                            "the rule table needs one entry per ordered pair of states", None,
                            "shrink the agent type (fewer clock values, smaller fields)")
        return dom

    # -- the rule table ----------------------------------------------------------------------------
    def _compile_rules(self) -> list[list[tuple[int, int, Fraction]]]:
        """outcomes[a*Q + b] = [(a', b', p), ...]: the distribution of delta(states[a], states[b])
        (after the initiator's input change), with probabilities > 0 summing to 1.

        `delta` runs once per ordered pair of states: an initiator whose input may change mixes the
        rows of the states it may change to, so each row is computed once and dropped once every
        initiator that mixes it has been compiled."""
        cls = type(self)
        loc = def_location(cls.delta)
        with bound(self._binding):
            variants = self._input_variants()
            users = [0] * self.Q
            for vs in variants:
                for a0, _ in vs:
                    users[a0] += 1
            rows: dict[int, list[dict[tuple[int, int], Fraction]]] = {}
            shared: dict[Fraction, Fraction] = {}  # one object per distinct probability: the table is large

            def row(a0: int) -> list[dict[tuple[int, int], Fraction]]:
                got = rows.get(a0)
                if got is None:
                    u0 = self.states[a0]
                    got = rows[a0] = [{(self.index[a2], self.index[b2]): p for (a2, b2), p in self._call_delta(u0, v, loc)
                                       if p} for v in self.states]
                return got

            table: list[list[tuple[int, int, Fraction]]] = []
            for vs in variants:
                if len(vs) == 1:
                    table.extend([(a2, b2, p) for (a2, b2), p in dist.items()] for dist in row(vs[0][0]))
                else:
                    mixed = [(row(a0), w) for a0, w in vs]
                    for b in range(self.Q):
                        dist: dict[tuple[int, int], Fraction] = {}
                        for r, w in mixed:
                            for key, p in r[b].items():
                                x = w if p is ONE else w * p
                                dist[key] = dist[key] + x if key in dist else x
                        table.append([(a2, b2, shared.setdefault(p, p)) for (a2, b2), p in dist.items()])
                for a0, _ in vs:
                    users[a0] -= 1
                    if not users[a0]:
                        rows.pop(a0, None)
        return table

    def _input_variants(self) -> list[list[tuple[int, Fraction]]]:
        """Per initiator state: [(state index after its input change, probability), ...] (itself with
        probability 1 when its input never changes)."""
        changes: dict[Any, list[tuple[Any, Fraction]]] = {}
        out: list[list[tuple[int, Fraction]]] = []
        for a, u in enumerate(self.states):
            x = self.input(u)
            if x is not None and x not in changes:
                changes[x] = self._input_changes(x)
            if x is None or not changes[x]:
                out.append([(a, ONE)])
                continue
            stay = 1 - sum(p for _, p in changes[x])
            out.append(([(a, stay)] if stay else []) + [(self.index[self._changed(u, y)], p) for y, p in changes[x]])
        return out

    def _call_delta(self, u: Any, v: Any, loc: Location | None) -> list[tuple[tuple[Any, Any], Fraction]]:
        def where() -> str:
            return f"{self.name}.delta({u!r}, {v!r})"

        try:
            result = self.delta(u, v)
        except SpecError:
            raise
        except Exception as e:
            raise SpecError(f"{where()} raised {type(e).__name__}: {e}", _raise_location(e) or loc,
                            "delta must return a pair of agent states for every pair of states") from None
        if isinstance(result, tuple) and len(result) == 2 and result[0] in self.index and result[1] in self.index:
            return [(result, ONE)]
        if isinstance(result, dict):
            pairs = list(result.items())
            if not pairs:
                raise SpecError(f"{where()} returned an empty distribution", loc,
                                "return {(u2, v2): probability, ...} with probabilities summing to 1")
        else:
            pairs = [(result, Fraction(1))]
        out = []
        for pair, p in pairs:
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise SpecError(f"{where()} returned {pair!r}, not a pair (initiator, responder)", loc,
                                "return (u2, v2) or {(u2, v2): probability}")
            for role, q in zip(("initiator", "responder"), pair):
                self._check_state(q, f"{where()} gives the {role} state {q!r}", loc)
            out.append((pair, _probability(p, f"{where()}: probability of {pair!r}", loc)))
        total = sum(p for _, p in out)
        if total != 1:
            raise SpecError(f"{where()}: the probabilities sum to {total} ({float(total):.6g}), not 1", loc,
                            "make the outcome probabilities of every pair sum to exactly 1 (use fractions.Fraction)")
        return out

    def _check_state(self, q: Any, what: str, loc: Location | None) -> None:
        try:
            ok = q in self.index
        except TypeError:
            ok = False
        if not ok:
            raise SpecError(f"{what}, which is not a value of the agent type {self.dom.describe()}", loc,
                            "keep every returned state inside the declared agent type")

    def _input_changes(self, x: Any) -> list[tuple[Any, Fraction]]:
        loc = def_location(type(self).input_change)
        where = f"{self.name}.input_change({x!r})"
        try:
            dist = self.input_change(x)
        except Exception as e:
            raise SpecError(f"{where} raised {type(e).__name__}: {e}", _raise_location(e) or loc) from None
        if not isinstance(dist, dict):
            raise SpecError(f"{where} returned {dist!r}, not a dict {{new input: probability}}", loc)
        out = [(y, _probability(p, f"{where}: probability of {y!r}", loc)) for y, p in dist.items() if y != x]
        if sum(p for _, p in out) > 1:
            raise SpecError(f"{where}: the change probabilities sum to more than 1", loc)
        return [(y, p) for y, p in out if p]

    def _changed(self, q: Any, x: Any) -> Any:
        try:
            q2 = self.with_input(q, x)
        except SpecError:
            raise
        except Exception as e:
            raise SpecError(f"{self.name}.with_input({q!r}, {x!r}) raised {type(e).__name__}: {e}",
                            _raise_location(e) or def_location(type(self).with_input)) from None
        try:
            ok = q2 in self.index
        except TypeError:
            ok = False
        if not ok:
            self._check_state(q2, f"{self.name}.with_input({q!r}, {x!r}) gives {q2!r}", def_location(type(self).with_input))
        return q2

    @property
    def _moves(self) -> list[tuple[int, int, list[tuple[tuple, Fraction, tuple[int, int]]]]]:
        """The configuration-changing outcomes (`_config_moves`), built on first use: the exact chain and
        the explicit engine need them, the simulator and the agents only `outcomes`."""
        if self._moves_cache is None:
            with _no_cyclic_gc():
                self._moves_cache = self._config_moves()
        return self._moves_cache

    def _config_moves(self) -> list[tuple[int, int, list[tuple[tuple, Fraction, tuple[int, int]]]]]:
        """Per ordered pair (a, b): the outcomes that change the configuration, merged by their
        effect ((state, ±1) pairs), each with its probability and one outcome (a', b') producing it."""
        moves = []
        for k, outs in enumerate(self.outcomes):
            a, b = divmod(k, self.Q)
            merged: dict[tuple, tuple[Fraction, tuple[int, int]]] = {}
            for a2, b2, p in outs:
                if (a == a2 and b == b2) or (a == b2 and b == a2):
                    continue
                effect = tuple(sorted(((a, -1), (b, -1), (a2, 1), (b2, 1))))
                old = merged.get(effect)
                merged[effect] = (p, (a2, b2)) if old is None else (old[0] + p, old[1])
            if merged:
                moves.append((a, b, [(eff, p, out) for eff, (p, out) in merged.items()]))
        return moves

    def move_label(self, a: int, b: int, out: tuple[int, int]) -> str:
        """The label of the interaction of states a and b giving `out` (state indices)."""
        s = self.states
        return f"{s[a]!r} meets {s[b]!r} -> ({s[out[0]]!r}, {s[out[1]]!r})"

    # -- configurations --------------------------------------------------------------------------------
    def configuration(self, counts: dict | Config | tuple) -> tuple[int, ...]:
        """A configuration as a count tuple (in `states` order), checked to hold n agents."""
        if isinstance(counts, Config):
            return counts.counts
        if isinstance(counts, tuple) and len(counts) == self.Q and all(isinstance(k, int) for k in counts):
            vec = list(counts)
        elif isinstance(counts, dict):
            vec = [0] * self.Q
            for q, k in counts.items():
                self._check_state(q, f"{self.name}: a start configuration names state {q!r}", None)
                if isinstance(k, bool) or not isinstance(k, int) or k < 0:
                    raise SpecError(f"{self.name}: a start configuration gives state {q!r} the count {k!r}",
                                    None, "counts are non-negative integers")
                vec[self.index[q]] += k
        else:
            raise SpecError(f"{self.name}: {counts!r} is not a configuration", None,
                            "a start returns {state: count}, a list of such dicts, or ALL")
        if sum(vec) != self.n:
            raise SpecError(f"{self.name}: a start configuration holds {sum(vec)} agents, but n = {self.n}", None,
                            "make the counts of every start sum to n")
        return self._config_type._make(vec)

    def start_names(self) -> list[str]:
        return list(self.starts)

    def start_configurations(self, name: str | None = None) -> list[tuple[int, ...]] | Any:
        """The configurations of start `name` (default: the first declared), or `ALL`."""
        if not self.starts:
            raise SpecError(f"population protocol {self.name} declares no @start", None,
                            "add a method marked @start returning {state: count}")
        name = name or next(iter(self.starts))
        if name not in self.starts:
            raise SpecError(f"{self.name} has no start {name!r} (its starts: {', '.join(self.starts)})")
        fn = self.starts[name]
        with bound(self._binding):
            try:
                got = fn(self)
            except SpecError:
                raise
            except Exception as e:
                raise SpecError(f"start {name} of {self.name} raised {type(e).__name__}: {e}",
                                _raise_location(e) or def_location(fn)) from None
        if got is ALL:
            return ALL
        items = got if isinstance(got, list) else [got]
        try:
            return list(dict.fromkeys(self.configuration(c) for c in items))
        except SpecError as e:
            raise SpecError(f"start {name}: {e.message}", def_location(fn), e.hint) from None

    def configuration_count(self) -> int:
        """How many configurations of n agents there are: C(n + Q - 1, Q - 1)."""
        return math.comb(self.n + self.Q - 1, self.Q - 1)

    def all_configurations(self) -> Iterator[tuple[int, ...]]:
        """Every configuration of n agents (stars and bars), lexicographically."""
        n, q = self.n, self.Q
        for bars in combinations(range(n + q - 1), q - 1):
            prev, vec = -1, []
            for b in bars + (n + q - 1,):
                vec.append(b - prev - 1)
                prev = b
            yield self._config_type._make(vec)

    def view(self, counts: tuple[int, ...]) -> Config:
        return Config(self, tuple(counts))

    def holds(self, name: str, counts: tuple[int, ...]) -> bool:
        """Whether predicate `name` holds in a configuration."""
        return bool(self.predicates[name](Config(self, tuple(counts))))

    def predicate_names(self) -> list[str]:
        return list(self.predicates)

    def weighted_successors(self, c: tuple[int, ...]) -> list[tuple[Fraction, str, tuple[int, ...]]]:
        """(probability, label, successor) for every configuration-changing interaction from c."""
        nn = self.n * (self.n - 1)
        out = []
        for a, b, effects in self._moves_from(c):
            ca, cb = c[a], c[b] - (a == b)
            if ca <= 0 or cb <= 0:
                continue
            w = Fraction(ca * cb, nn)
            for effect, p, res in effects:
                vec = list(c)
                for i, d in effect:
                    vec[i] += d
                out.append((w * p, self.move_label(a, b, res), self._config_type._make(vec)))
        return out

    def _moves_from(self, c: tuple[int, ...]) -> list:
        """The moves whose pair of states is present in c, in `_moves` order (ascending a, then b): all of
        them when most states are present, else looked up pair by pair (a few agents among many states)."""
        present = [i for i, x in enumerate(c) if x > 0]
        if len(present) ** 2 >= len(self._moves):
            return self._moves
        by_pair = self.__dict__.get("_moves_by_pair")
        if by_pair is None:
            by_pair = self.__dict__["_moves_by_pair"] = {(a, b): m for m in self._moves for a, b in [m[:2]]}
        return [m for a in present for b in present if (m := by_pair.get((a, b))) is not None]

    def configuration_step(self, c: tuple[int, ...], a: int, b: int, out: tuple[int, int]) -> tuple[str, tuple] | None:
        """The step of `next(c)` made when states a and b (indices) interact with outcome `out`:
        (label, successor), or None if the outcome leaves c unchanged. ValueError if the pair is
        not in c or `out` is not an outcome of the pair with positive probability."""
        if c[a] <= 0 or c[b] - (a == b) <= 0:
            raise ValueError(f"configuration {self.view(c)} holds no pair of agents in states "
                             f"{self.states[a]!r} and {self.states[b]!r}")
        if not any((a2, b2) == out for a2, b2, _ in self.outcomes[a * self.Q + b]):
            raise ValueError(f"({self.states[out[0]]!r}, {self.states[out[1]]!r}) is not an outcome of "
                             f"{self.states[a]!r} meeting {self.states[b]!r}")
        if self._step_index is None:
            self._step_index = {(a0, b0, eff): rep for a0, b0, effects in self._moves for eff, _, rep in effects}
        effect = tuple(sorted(((a, -1), (b, -1), (out[0], 1), (out[1], 1))))
        rep = self._step_index.get((a, b, effect))
        if rep is None:
            return None
        vec = list(c)
        for i, d in effect:
            vec[i] += d
        return self.move_label(a, b, rep), self._config_type._make(vec)

    def _config_fn(self, fn: Callable) -> Callable[[tuple], bool]:
        bound_fn = self._condition(fn.__name__, fn)
        return lambda counts: bool(bound_fn(Config(self, tuple(counts))))

    def _condition(self, name: str, fn: Callable) -> Callable[[Config], Any]:
        """A predicate bound to the protocol, refusing a result of None (a missing `return`, which would read as false)."""
        bound_fn = fn.__get__(self)

        def holds(c: Config) -> Any:
            got = bound_fn(c)
            if got is None:
                raise SpecError(f"predicate {name} of {self.name} returns None, not a condition", def_location(fn),
                                "return a bool (is a `return` missing?)")
            return got

        return holds

    # -- the plain-spec interface read by the explicit engine ---------------------------------------------
    def init(self) -> list[tuple[int, ...]]:
        got = self.start_configurations()
        return list(self.all_configurations()) if got is ALL else got

    def initial_count(self) -> int:
        """How many configurations `init()` has, counted without listing them (every configuration of the n
        agents over the Q states when the first start is ALL)."""
        got = self.start_configurations()
        return math.comb(self.n + self.Q - 1, self.Q - 1) if got is ALL else len(got)

    def next(self, c: tuple[int, ...]) -> Iterator[tuple[str, tuple[int, ...]]]:
        for _, label, succ in self.weighted_successors(c):
            yield label, succ


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: the rule tables are millions of small tuples, which it would
    rescan again and again while they are built."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def vars_with_params(cls: type) -> list[tuple[str, Param]]:
    """(attribute name, Param) for every parameter declared as a class attribute."""
    out: dict[str, Param] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, Param):
                out[name] = value
    return list(out.items())


def _probability(p: Any, what: str, loc: Location | None) -> Fraction:
    if isinstance(p, bool) or not isinstance(p, Number):
        raise SpecError(f"{what} is {p!r}, not a number", loc, "use a fractions.Fraction, an int or a float")
    try:
        f = Fraction(p) if isinstance(p, (int, Fraction)) else Fraction(float(p)).limit_denominator(10**12)
    except (TypeError, ValueError, OverflowError):
        raise SpecError(f"{what} is {p!r}, not a finite number", loc) from None
    if f < 0 or f > 1:
        raise SpecError(f"{what} is {p}, outside [0, 1]", loc)
    return f


def _raise_location(e: BaseException) -> Location | None:
    import traceback

    frames = traceback.extract_tb(e.__traceback__)
    return Location(frames[-1].filename, frames[-1].lineno or 0) if frames else None


def _field_names(states: list) -> list[str]:
    """Identifier-safe, unique names for the agent states (the configuration's fields)."""
    names, seen = [], set()
    for q in states:
        base = re.sub(r"\W+", "_", repr(q)).strip("_") or "q"
        base = base if base[0].isalpha() and not keyword.iskeyword(base) else "q_" + base
        name, k = base, 2
        while name in seen or name.startswith("_"):
            name, k = f"{base}_{k}", k + 1
        seen.add(name)
        names.append(name)
    return names
