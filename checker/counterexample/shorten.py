"""Shortest counterexamples after a search that does not guarantee one (partial-order reduction, depth-first).

A counterexample of N steps bounds the shortest one: a breadth-first search *without* the reduction, from the
initial states, to depth N (N-1 for an invariant, which a state shows when it is generated) finds a shortest one
or proves there is none shorter. The search is the engine's own (the vector engine's with the vector engine), with
the counterexample's property as its target; if it stops first at another violation, a breadth-first search over
the model's steps that looks for that property alone takes over. Its cost is bounded by a `Budget` of states and
seconds, after which the counterexample is kept as found and the note says why, and how short any other is at
least.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..explicit.search import Options, rebuild_path
from ..model import Model
from ..progress import NoProgress, Progress, Stats
from ..result import Violation
from .target import Target, steps_of


@dataclass(frozen=True)
class Budget:
    """How much a search for a shorter counterexample may cost: distinct states stored, and seconds."""

    states: int = 2_000_000
    seconds: float = 120.0

    @classmethod
    def within(cls, max_states: int | None) -> Budget:
        """The default budget, with no more states than a search's own bound `max_states`."""
        return cls() if max_states is None else cls(states=min(cls.states, max_states))


@dataclass
class Shortening:
    """The counterexample to report (a shorter one, or the one given) and what the search without reduction found."""

    violation: Violation
    before: int  # steps of the counterexample given
    shortest: bool  # the reported counterexample is a shortest one
    states: int = 0  # distinct states the search without the reduction stored
    why: str | None = None  # why the search stopped before deciding (its budget)
    least: int = 0  # when it stopped: the fewest steps any counterexample has

    @property
    def after(self) -> int:
        return steps_of(self.violation)

    def describe(self, found_with: str) -> str:
        """What was done, for a counterexample found with `found_with` ("partial-order reduction")."""
        n, m = self.before, self.after
        if self.why is not None:
            bound = f"; none has fewer than {self.least} steps" if 0 < self.least < n else ""
            return (f"kept as found with {found_with} ({n} steps), maybe not a shortest one: the breadth-first search "
                    f"for a shorter one stopped at {self.why}{bound}")
        if n == 0:
            return "shortest: the initial state shows it"
        if m < n:
            return (f"shortened from {n} to {m} steps (found with {found_with}; a breadth-first search, "
                    f"{self.states:,} states, found a shortest one)")
        return (f"shortest: a breadth-first search ({self.states:,} states) found none shorter than "
                f"this one, found with {found_with}")


class OverBudget(Exception):
    """A search ran out of time (raised from its progress reports)."""

    def __init__(self, stats: Stats):
        self.stats = stats


class Deadline(Progress):
    """Progress reports that end a search at a deadline (and otherwise report to `inner`)."""

    def __init__(self, seconds: float, inner: Progress | None = None):
        super().__init__(enabled=False)
        self.deadline = time.monotonic() + seconds
        self.inner = inner or NoProgress()

    def due(self) -> bool:
        return time.monotonic() >= self.deadline or self.inner.due()

    def report(self, s: Stats) -> None:
        if time.monotonic() >= self.deadline:
            raise OverBudget(s)
        self.inner.report(s)

    def close(self) -> None:
        self.inner.close()


def shorten(model: Model, v: Violation, found_with: str, engine: str = "scalar", vm: Any = None,
            budget: Budget | None = None, progress: Progress | None = None) -> Shortening:
    """A shortest counterexample to the property `v` violates, `v` itself if none is shorter, or `v` kept when
    the budget ran out; the reported violation's `note` says which, for `v` found with `found_with` ("partial-order
    reduction"). `engine` and `vm` are the engine that found it (`choice.choose`'s answer): the search without the
    reduction runs on it."""
    got = search_shorter(model, v, engine, vm, budget, progress)
    got.violation.note = got.describe(found_with)
    return got


def search_shorter(model: Model, v: Violation, engine: str = "scalar", vm: Any = None, budget: Budget | None = None,
                   progress: Progress | None = None) -> Shortening:
    """`shorten` without the note."""
    budget = budget or Budget()
    target = Target.of(model, v)
    n = steps_of(v)
    if n == 0:
        return Shortening(v, 0, True)
    bound = n - 1 if target.at_state else n
    began = time.monotonic()
    opts = Options(deadlock=target.kind == "deadlock", max_depth=bound, max_states=budget.states)
    from ..vector import choice

    try:
        res = choice.run(engine, model, vm, opts, Deadline(budget.seconds, progress))
    except OverBudget as e:
        return Shortening(v, n, False, e.stats.distinct, f"its budget of {budget.seconds:g} s", _least(target, e.stats.depth))
    w = res.violation
    if w is not None and target.matches(w) and steps_of(w) <= n:
        return Shortening(w if steps_of(w) < n else v, n, True, res.distinct)
    if w is None:
        if res.cut is not None and res.cut.startswith("state bound"):
            return Shortening(v, n, False, res.distinct, f"its budget of {budget.states:,} states",
                              _least(target, res.depth))
        return Shortening(v, n, True, res.distinct)
    left = Budget(budget.states, max(budget.seconds - (time.monotonic() - began), 0.0))
    path, states, least, why = shortest_path(model, target, bound, left)
    if path is None:
        return Shortening(v, n, why is None, states, why, least)
    return Shortening(target.violation(model, path), n, True, states)


def _least(target: Target, depth: int) -> int:
    """The fewest steps a counterexample can have when the levels before TLC-style `depth` were searched."""
    return depth if target.at_state else max(depth - 1, 0)


def shortest_path(model: Model, target: Target, bound: int, budget: Budget) -> tuple[list | None, int, int, str | None]:
    """Breadth-first from the initial states, without reduction, to the nearest state that shows `target`
    within `bound` steps: (its path or None, states stored, the fewest steps a counterexample can have, why the
    search stopped early or None). States outside the state constraints are tested, not expanded."""
    deadline = time.monotonic() + budget.seconds
    fp = model.fingerprint
    canon = model.canonical if model.symmetry else None
    outside = model.outside if model.constraint_names else None
    parents: dict[int, int | None] = {}
    frontier: list[tuple[int, Any]] = []
    for s in model.initial_states():
        c = canon(s) if canon else s
        f = fp(c)
        if f in parents:
            continue
        if target.at_state and target.shown(model, c):
            return [(None, s)], len(parents), 0, None
        if outside is not None and outside(c) >= 0:
            continue
        parents[f] = None
        frontier.append((f, c))
    level = 0
    while frontier:
        nxt: list[tuple[int, Any]] = []
        for k, (pf, st) in enumerate(frontier):
            if not k & 255 and time.monotonic() >= deadline:
                return None, len(parents), level + 1 if target.at_state else level, f"its budget of {budget.seconds:g} s"
            shown, succs = target.expand(model, st)
            if shown:
                return rebuild_path(model, parents.get, pf), len(parents), level, None
            if level == bound:
                continue
            for _lid, t in succs:
                c = canon(t) if canon else t
                f = fp(c)
                if f in parents:
                    continue
                if outside is not None and outside(c) >= 0:
                    if target.at_state and target.shown(model, c):
                        path = rebuild_path(model, parents.get, pf)
                        return path + [_step_to(model, path[-1][1], f)], len(parents), level + 1, None
                    continue
                if len(parents) >= budget.states:
                    return None, len(parents), level + 1 if target.at_state else level, \
                        f"its budget of {budget.states:,} states"
                parents[f] = pf
                if target.at_state and target.shown(model, c):
                    return rebuild_path(model, parents.get, f), len(parents), level + 1, None
                nxt.append((f, c))
        level += 1
        if target.at_state and level >= bound:
            break
        frontier = nxt
    return None, len(parents), bound + 1, None


def _step_to(model: Model, cur: Any, f: int) -> tuple[Any, Any]:
    """The step from `cur` to a state of fingerprint `f` (canonical under symmetry)."""
    canon = model.canonical if model.symmetry else (lambda s: s)
    for lid, t in Target("invariant", "").expand(model, cur)[1]:
        if model.fingerprint(canon(t)) == f:
            return lid, t
    raise RuntimeError("a step of the shortened counterexample could not be regenerated")
