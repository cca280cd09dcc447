"""Validation of population runs: is a recorded run of agent processes a behaviour of its protocol?

The agents' records are taken in interaction order. Interaction k must be the k-th ordered
pair the run's seed gives the scheduler, recorded by both agents of the pair; each agent's
state before must be its state after its previous interaction (or its start state); both
must agree on each other's state before and on the draw; the draw must be the responder's
draw for this interaction from its seeded generator when the rule is randomized (and absent
when it is not); and
the states after must be an outcome of the rule with non-zero probability — the one the draw
selects. The configurations (count vectors) the interactions pass through must be a path of
the counting-abstraction spec: it starts in a configuration of the run's start and every
change is a step of `next(c)`; the protocol's invariants must hold along it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lockstep.specs.lang.errors import SpecError
from lockstep.specs.lang.population import ALL, Population
from lockstep.specs.lang.population.agents import Rules, StateCodec, agent_rng, draw, pairs

from ..loader import LoadError, load_protocol
from ..trace import Trace, TraceError
from .runtrace import MergedRun, Mismatch


@dataclass
class PopulationValidation:
    """The outcome of validating a population run."""

    protocol: Population
    interactions: int  # interactions validated
    recorded: int  # interactions with at least one record
    path: list[tuple[int, str, tuple]]  # (interaction, label, configuration after) per change; (0, "init", c0) first
    first_held: dict[str, int | None] = field(default_factory=dict)  # predicate -> first interaction it held after
    violation: str | None = None  # an invariant that fails
    violation_at: int | None = None
    incomplete: str | None = None  # why validation stopped before the last recorded interaction
    truncated: bool = False  # the trace file lacks its end record
    final_configuration: tuple | None = None
    configurations: int = 1  # configurations passed through (the start one included)

    @property
    def final(self) -> tuple:
        return self.final_configuration if self.final_configuration is not None else self.path[-1][2]


def is_population_run(run: MergedRun) -> bool:
    return run.header.get("model") == "population"


def _natural(h: dict[str, Any], key: str) -> int:
    v = h.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise TraceError(f"the run header's {key!r} must be a non-negative integer, got {v!r}")
    return v


class PopulationValidator:
    """Checks the interactions of a merged population run against the protocol its header names."""

    def __init__(self, run: MergedRun):
        h = run.header
        params = h.get("params") or {}
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in params.values()):
            raise TraceError("the run header's params must be integers")
        try:
            self.protocol = load_protocol(h["spec"], params)
        except (LoadError, SpecError) as e:
            raise TraceError(f"the trace names spec {h['spec']!r}, which cannot be loaded as a population "
                             f"protocol: {e}") from None
        self.run = run
        self.n = self.protocol.n
        if _natural(h, "agents") != self.n:
            raise TraceError(f"the run header says {h['agents']} agents, but the protocol has n = {self.n}")
        self.seed = _natural(h, "seed")
        self.issued = _natural(h, "interactions")
        self.start = h.get("start")
        if self.start is not None and not isinstance(self.start, str):
            raise TraceError(f"the run header's start must be a start name, got {self.start!r}")
        self.complete = h.get("complete") is True
        self.rules = Rules(self.protocol)
        self.codec = StateCodec(self.protocol)

    def _state(self, e: dict[str, Any], key: str) -> int:
        try:
            return self.codec.decode(e.get(key), key)
        except ValueError as err:
            raise Mismatch(e, f"not an agent state of {self.protocol.name}: {err}") from None

    def _agent(self, e: dict[str, Any], key: str) -> int:
        v = e.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < self.n:
            raise Mismatch(e, f"{key} {v!r} is not an agent (0..{self.n - 1})")
        return v

    def _groups(self) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """(interaction number, its records) in order, read as a stream; interaction 0 is the agents' starts."""
        current, group = 0, []
        for e in self.run.events:
            kind = e.get("kind")
            if kind in ("rejected", "overflow"):
                continue
            self._agent(e, "pid")
            if kind == "start":
                k = 0
            elif kind == "interact":
                k = e.get("clock")
                if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                    raise Mismatch(e, f"clock {k!r} is not an interaction number (1, 2, ...)")
            else:
                raise Mismatch(e, f"{kind!r} is not an event of a population run (start, interact, rejected)")
            if k < current:
                raise Mismatch(e, f"the record of interaction {k} comes after interaction {current}: the trace is not "
                                  "merged by interaction")
            if k != current:
                yield current, group
                current, group = k, []
            group.append(e)
        yield current, group

    def _starts(self, evs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
        starts: dict[int, dict[str, Any]] = {}
        for e in evs:
            if e["kind"] != "start":
                raise Mismatch(e, f"agent {e['pid']} records interaction 0")
            if e["pid"] in starts:
                raise Mismatch(e, f"agent {e['pid']} starts twice")
            starts[e["pid"]] = e
        missing = [p for p in range(self.n) if p not in starts]
        if missing:
            raise TraceError(f"the trace has no start event for agent {missing[0]}: an agent that never started "
                             "cannot be validated")
        return starts

    def initial(self, starts: dict[int, dict[str, Any]]) -> tuple[list[int], tuple]:
        """The agents' start states and the start configuration, checked against the run's start."""
        agents = [self._state(starts[p], "state") for p in range(self.n)]
        counts = [0] * self.protocol.Q
        for q in agents:
            counts[q] += 1
        c0 = self.protocol.configuration(tuple(counts))
        try:
            allowed = self.protocol.start_configurations(self.start)
        except SpecError as e:
            raise TraceError(f"the run's start {self.start!r}: {e}") from None
        if allowed is not ALL and c0 not in allowed:
            raise Mismatch(starts[0], f"the agents' start states form {self.protocol.view(c0)}, which is not a "
                                      f"configuration of start {self.start or self.protocol.start_names()[0]!r}",
                           [self.protocol.view(c).as_dict() for c in allowed[:3]], self.protocol.view(c0).as_dict())
        return agents, c0

    def validate(self, keep_path: bool = False) -> PopulationValidation:
        """Check every recorded interaction as the trace is read; raise Mismatch at the first that is not a step
        of the protocol. The configurations passed through are kept only with `keep_path` (memory is otherwise
        bounded by the protocol, not by the length of the run)."""
        groups = self._groups()
        k0, first = next(groups)
        starts = self._starts(first if k0 == 0 else [])
        agents, c = self.initial(starts)
        protocol = self.protocol
        res = PopulationValidation(protocol, 0, 0, [(0, "init", c)])
        for name in protocol.predicate_names():
            res.first_held[name] = 0 if protocol.holds(name, c) else None
        if self._check_invariants(res, c, 0):
            return res
        schedule = pairs(self.seed, self.n)
        rngs: dict[int, Any] = {}
        k = 0
        for got, evs in itertools.chain([(k0, first)] if k0 else [], groups):
            if got > self.issued:
                raise Mismatch(evs[0], f"interaction {got} was never scheduled: the run issued {self.issued} interactions")
            res.recorded += 1
            k += 1
            i, r = next(schedule)
            if got != k:  # interaction k has no record at all
                if self.complete:
                    raise Mismatch({"kind": "interact", "clock": k}, f"the run is marked complete, but interaction "
                                                                     f"{k} has no record: records are missing")
                res.incomplete = self._why_incomplete(k, i, r, [])
                break
            if len(evs) < 2 and not self.complete:
                res.incomplete = self._why_incomplete(k, i, r, evs)
                break
            c = self._interaction(res, k, i, r, evs, agents, c, rngs, keep_path)
            if res.violation is not None:
                return res
        last = k
        if self.complete and last < self.issued and res.incomplete is None:
            raise Mismatch({"kind": "interact", "clock": last + 1},
                           f"the run is marked complete with {self.issued} interactions, but the records stop at "
                           f"interaction {last}: records are missing")
        if res.incomplete is None and last < self.issued:
            res.incomplete = (f"the records stop at interaction {last} of {self.issued}; the run did not complete "
                              f"({'; '.join(self.run.notes) or 'see the run notes'})")
        if not self.run.ended:
            res.truncated = True
            res.incomplete = (res.incomplete or "") + ("; " if res.incomplete else "") + \
                "the trace has no end record (the file was cut short)"
        return res

    def _interaction(self, res: PopulationValidation, k: int, i: int, r: int, evs: list[dict[str, Any]],
                     agents: list[int], c: tuple, rngs: dict[int, Any], keep_path: bool) -> tuple:
        """Check interaction k (initiator i, responder r) and apply it; the configuration after it."""
        protocol = self.protocol
        ini, res_e = self._halves(k, i, r, evs)
        a, b = agents[i], agents[r]
        for e, own, other in ((ini, a, b), (res_e, b, a)):
            before = self._state(e, "before")
            if before != own:
                raise Mismatch(e, f"agent {e['pid']}'s state before interaction {k} is {self.codec.show(before)}, "
                                  f"but its previous interaction left it in {self.codec.show(own)}",
                               self.codec.json[own], e.get("before"))
            if self._state(e, "partner_before") != other:
                raise Mismatch(e, f"agent {e['pid']} records its partner's state before interaction {k} as "
                                  f"{e.get('partner_before')!r}, but the partner was in {self.codec.show(other)}",
                               self.codec.json[other], e.get("partner_before"))
        out = (self._state(ini, "after"), self._state(res_e, "after"))
        if self.rules.probability(a, b, out) == 0:
            raise Mismatch(ini, f"not a transition of {protocol.name}: {self.codec.show(a)} meeting "
                                f"{self.codec.show(b)} cannot give ({self.codec.show(out[0])}, "
                                f"{self.codec.show(out[1])}); its outcomes: {self.rules.describe(a, b)}",
                           [[self.codec.json[x], self.codec.json[y]] for x, y, _ in self.rules.table[a * self.rules.Q + b]],
                           [ini.get("after"), res_e.get("after")])
        d = self._draw(k, ini, res_e, a, b, r, rngs)
        want = self.rules.pick(a, b, d)
        if want != out:
            raise Mismatch(res_e, f"the states after interaction {k} are an outcome of the rule, but not the one "
                                  f"draw {d} selects", [self.codec.json[x] for x in want],
                           [self.codec.json[x] for x in out])
        agents[i], agents[r] = out
        res.interactions = k
        step = protocol.configuration_step(c, a, b, out)
        if step is not None:
            label, c = step
            res.configurations += 1
            if keep_path:
                res.path.append((k, label, c))
            for name, held in res.first_held.items():
                if held is None and protocol.holds(name, c):
                    res.first_held[name] = k
            self._check_invariants(res, c, k)
        res.final_configuration = c
        return c

    def _halves(self, k: int, i: int, r: int, evs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The initiator's and the responder's records of interaction k (Mismatch if they are not exactly those)."""
        by_pid: dict[int, dict[str, Any]] = {}
        for e in evs:
            if e["pid"] not in (i, r):
                raise Mismatch(e, f"agent {e['pid']} records interaction {k}, but the scheduler paired initiator {i} "
                                  f"with responder {r}")
            if e["pid"] in by_pid:
                raise Mismatch(e, f"agent {e['pid']} records interaction {k} twice")
            by_pid[e["pid"]] = e
        for pid, role, partner in ((i, "initiator", r), (r, "responder", i)):
            e = by_pid.get(pid)
            if e is None:
                raise Mismatch(evs[0] if evs else {"kind": "interact", "clock": k},
                               f"agent {pid}, the {role} of interaction {k}, has no record of it, though the run "
                               "completed: a record is missing")
            if e.get("role") != role or e.get("partner") != partner:
                raise Mismatch(e, f"interaction {k} is initiator {i} meeting responder {r}, but agent {pid} records "
                                  f"role {e.get('role')!r} with partner {e.get('partner')!r}")
        return by_pid[i], by_pid[r]

    def _draw(self, k: int, ini: dict[str, Any], res_e: dict[str, Any], a: int, b: int, r: int,
              rngs: dict[int, Any]) -> int | None:
        d = res_e.get("draw")
        if ini.get("draw") != d:
            raise Mismatch(ini, f"the agents of interaction {k} record different draws", d, ini.get("draw"))
        rng = rngs.get(r)
        if rng is None:
            rng = rngs[r] = agent_rng(self.seed, r)
        want = draw(rng)  # the responder draws in every interaction; a deterministic rule ignores it
        if not self.rules.randomized(a, b):
            if d is not None:
                raise Mismatch(res_e, f"a draw is recorded, but the rule for {self.codec.show(a)} meeting "
                                      f"{self.codec.show(b)} is deterministic")
            return None
        if d != want:
            raise Mismatch(res_e, f"the draw of interaction {k} is not the next draw of agent {r}'s seeded generator",
                           want, d)
        return d

    def _why_incomplete(self, k: int, i: int, r: int, evs: list[dict[str, Any]]) -> str:
        have = {e["pid"] for e in evs}
        lacking = [p for p in (i, r) if p not in have]
        who = " and ".join(f"agent {p}" for p in lacking)
        return (f"interaction {k} (agent {i} meets agent {r}) has no record from {who}; the run did not complete "
                f"({'; '.join(self.run.notes) or 'see the run notes'}), so the interactions from {k} on are not validated")

    def _check_invariants(self, res: PopulationValidation, c: tuple, k: int) -> bool:
        for name, fn in self.protocol.invariants.items():
            if not fn(c):
                res.violation, res.violation_at = name, k
                return True
        return False


def validate_population(run: MergedRun, keep_path: bool = False) -> PopulationValidation:
    """Validate a merged population run (Mismatch at the first interaction that is not a step of the protocol)."""
    return PopulationValidator(run).validate(keep_path)


def configuration_trace(res: PopulationValidation, spec: str) -> Trace:
    """The configurations of a validated run as an ITF trace of the counting-abstraction (plain) spec."""
    from ..plain_model import PlainModel

    if len(res.path) != res.configurations:
        raise ValueError("the configurations were not kept: validate with keep_path=True")
    protocol = res.protocol
    model = PlainModel(protocol, spec, protocol.name, protocol.params)
    model.vars = list(res.path[0][2]._fields)
    return Trace.from_states(model, [(None if k == 0 else label, c) for k, label, c in res.path],
                             property={"kind": "run", "name": "population run"},
                             message=f"configurations of a run of {res.interactions} interactions")
