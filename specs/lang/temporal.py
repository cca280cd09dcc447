"""Temporal properties and fairness: what a behaviour must eventually do, and under which scheduling.

A temporal property is a function marked `@temporal` that returns one of

    eventually(P)           ◇P      some state satisfies P
    always_eventually(P)    □◇P     P holds infinitely often
    eventually_always(P)    ◇□P     from some point on, P holds for ever
    leads_to(P, Q)          P ↝ Q   every P-state is followed (now or later) by a Q-state

with P and Q state conditions, as in an `@invariant`. Behaviours are TLA+ behaviours: the
system may stop taking steps at any point (it stutters for ever), unless fairness forbids it.
Fairness is declared on actions, as TLA+'s WF and SF:

    @action(fairness="weak")                      # every instance: ∀ p. WF(enter(p))
    @action(fairness="strong", family="acquire")  # the family as one action: SF(∃ p. acquire(p))

An action with `fairness` alone is fair instance by instance (one constraint per choice of
its parameters); actions that name the same `family` form one action, the disjunction of
all their instances, with one constraint. Plain specs declare `temporal = {name: eventually(fn)}`
with conditions as functions of the state, and `fairness = {action: "weak" | "strong"}`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import Location, SpecError, user_location
from .markers import marker
from .terms import Term, describe

KINDS = {"eventually": 1, "always_eventually": 1, "eventually_always": 1, "leads_to": 2}
FAIRNESS = ("weak", "strong")
SYMBOLS = {"eventually": "◇{0}", "always_eventually": "□◇{0}", "eventually_always": "◇□{0}", "leads_to": "{0} ↝ {1}"}


@dataclass(frozen=True)
class Temporal:
    """A temporal formula of one of the supported shapes; operands are state conditions."""

    kind: str
    operands: tuple[Any, ...]

    def describe(self, names: tuple[str, ...] = ("P", "Q")) -> str:
        return SYMBOLS[self.kind].format(*names)


def eventually(p: Any) -> Temporal:
    """◇P: some state of every behaviour satisfies P."""
    return Temporal("eventually", (p,))


def always_eventually(p: Any) -> Temporal:
    """□◇P: P holds in infinitely many states of every behaviour."""
    return Temporal("always_eventually", (p,))


def eventually_always(p: Any) -> Temporal:
    """◇□P: every behaviour reaches a point after which P always holds."""
    return Temporal("eventually_always", (p,))


def leads_to(p: Any, q: Any) -> Temporal:
    """P ↝ Q, that is □(P ⇒ ◇Q): every state satisfying P is followed, now or later, by one satisfying Q."""
    return Temporal("leads_to", (p, q))


def temporal(fn: Callable | None = None, **meta: Any):
    """Mark `def name(s) -> Temporal` as a temporal property, checked with `lockstep check --property name`."""
    return marker("temporal", fn, **meta)


def check_fairness_meta(action: str, meta: dict[str, Any], loc: Any) -> None:
    """Reject a malformed `fairness=` or `family=` option of `@action`."""
    kind = meta.get("fairness")
    if kind is not None and kind not in FAIRNESS:
        raise SpecError(f"action {action}: fairness={kind!r} is not a kind of fairness", loc,
                        'use fairness="weak" (WF) or fairness="strong" (SF)')
    family = meta.get("family")
    if family is not None:
        if not isinstance(family, str) or not family:
            raise SpecError(f"action {action}: family={family!r} is not a name", loc, 'name the family, e.g. family="system"')
        if kind is None:
            raise SpecError(f"action {action}: family={family!r} without fairness", loc,
                            'add fairness="weak" or fairness="strong"')


def as_temporal(value: Any, name: str, where: Location | None = None) -> Temporal:
    """The value a `@temporal` function returned (at `where`), checked."""
    if not isinstance(value, Temporal):
        what = "nothing" if value is None else describe(value) if isinstance(value, Term) else type(value).__name__
        raise SpecError(f"temporal property {name} returns {what}, not a temporal formula", where or user_location(),
                        "return eventually(P), always_eventually(P), eventually_always(P) or leads_to(P, Q)")
    return value
