"""Several distinct counterexamples from one breadth-first search (`--max-violations K`, as Apalache's
`--max-error` with a view): a state that violates an invariant is recorded, not expanded, and the search goes on;
violations count as distinct when they differ in the property or in the last action (its coverage entry: the
action, and for an actor delivery the message's tag). The first of each kind in breadth-first order is kept, so
each is a shortest counterexample of its kind; the search stops at the K-th. A deadlock or a failing step still
ends the search (it is reported after the invariant violations recorded before it)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..coverage import action_key
from ..model import Model
from ..result import Violation
from ..trace import Trace

INIT = "init"  # the last action of a counterexample that is an initial state


class Collector:
    """The distinct invariant violations of one search, in the order found (each with its state's fingerprint)."""

    def __init__(self, model: Model, limit: int):
        self.model, self.limit = model, limit
        self.kept: dict[tuple[str, str], tuple[int, str, str, str, str | None]] = {}  # key -> (fp, kind, name, ...)
        self.fresh: set[int] = set()  # violating states of the level being expanded (never expanded)
        self._frontier: list[tuple[int, Any]] = []
        self._parents_of: dict[int, Any] | None = None

    @property
    def full(self) -> bool:
        return len(self.kept) >= self.limit

    def recorded(self, f: int) -> bool:
        """Whether the state of fingerprint `f` is one of the violations kept."""
        return any(k[0] == f for k in self.kept.values())

    def level(self, frontier: list[tuple[int, Any]]) -> None:
        """A level starts: its states are the parents of what it finds."""
        self._frontier, self._parents_of = frontier, None

    def watch(self, bad: Callable[[Any], bool], parents: dict[int, Any]) -> Callable[[Any], bool]:
        """`bad` for an expander: a new violating state is recorded and passes (it is left out of the next level by
        `unexpanded`), unless it is the K-th distinct one, which stops the search. A violating state outside the
        state constraints (not stored, so without a parent link) stops it as well."""
        fingerprint = self.model.fingerprint

        def recording(st: Any) -> bool:
            if not bad(st):
                return False
            f = fingerprint(st)
            if f not in parents:
                return True
            self.fresh.add(f)
            self._record(f, parents[f], st)
            return self.full

        return recording

    def initial(self, f: int, st: Any) -> bool:
        """An initial state that violates an invariant: recorded; whether the search must stop."""
        self.fresh.add(f)
        self._record(f, None, st)
        return self.full

    def unexpanded(self, nxt: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
        """The next level without the violating states."""
        if not self.fresh:
            return nxt
        fresh, self.fresh = self.fresh, set()
        return [x for x in nxt if x[0] not in fresh]

    def _record(self, f: int, pf: int | None, st: Any) -> None:
        m = self.model
        try:
            i = m.violated(st)
            kind, name, message, location = "invariant", m.invariant_names[i], "", None
            message = f"invariant {name} is violated"
        except Exception:
            d = m.diagnose_predicate(st)
            kind, name, message, location = d.kind, d.action, d.message, d.location
        key = (name, INIT if pf is None else self._last_action(pf, f))
        if key not in self.kept:
            self.kept[key] = (f, kind, name, message, location)

    def _last_action(self, pf: int, f: int) -> str:
        m = self.model
        if self._parents_of is None:
            self._parents_of = dict(self._frontier)
        canon = m.canonical if m.symmetry else (lambda s: s)
        for lid, t in m.successors(self._parents_of[pf]):
            if m.fingerprint(canon(t)) == f:
                return action_key(m, lid)
        return "?"

    def violations(self, parents: dict[int, Any], rebuild_path: Callable[..., list[Any]]) -> list[Violation]:
        """The recorded violations with their traces (rebuilt along the parent links by the search's
        `rebuild_path`)."""
        out = []
        for (_name, action), (f, kind, name, message, location) in self.kept.items():
            path = rebuild_path(self.model, parents.get, f)
            prop = {"kind": "invariant" if kind == "invariant" else "step", "name": name}
            trace = Trace.from_states(self.model, path, property=prop, message=message, location=location)
            out.append(Violation(kind, name, message, location, trace, note=f"last action: {action}"))
        return out


def numbered_file(out: str, k: int) -> str:
    """Where `--out FILE` saves the k-th of several counterexamples: FILE's stem, `-k`, its suffix (cex-1.json)."""
    stem, ext = os.path.splitext(out)
    return f"{stem}-{k}{ext or '.json'}"
