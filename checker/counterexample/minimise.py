"""Minimised counterexamples of random walks: drop the steps the violation does not need, move each process's
events together where they commute (fewer process switches: TLA+ issue 1084), then look for a shortest one.

A candidate is a sequence of step labels replayed from the walk's initial state: each label must be enabled where
it is taken, and the last state must show the walk's violation (`Target`); if a state before the end shows it,
the candidate ends there. Steps are dropped in halves, quarters, ... down to single steps (delta debugging), and
an event is moved next to the previous event of its process when each swap on the way leads to the very same
state (so the rest of the trace is unchanged). A breadth-first search without reduction, bounded by the minimised
length and a `Budget`, then finds a shortest counterexample or proves the minimised one shortest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..model import Model
from ..result import Violation
from .shorten import Budget, search_shorter
from .target import Target, path_of, steps_of

Path = list[tuple[Any, Any]]  # [(None, s0), (label id, s1), ...]
REPLAYED = 400_000  # most steps replayed while minimising (each computes a state's successors)
SEARCH = Budget(states=20_000, seconds=30.0)  # the search for a shortest one after minimising (walks are for large specs)


@dataclass
class Minimised:
    """The minimised counterexample and what was done to it."""

    violation: Violation
    before: int
    dropped: int
    moved: int
    switches: tuple[int, int]  # process switches before and after
    shortest: bool | None  # a shortest one (True), not known (None: the search ran out of budget)
    note: str


class _OutOfSteps(Exception):
    """Minimising replayed its allowance of steps."""


class _Replayer:
    """Replays label sequences from a prefix of a path, counting the steps it computes."""

    def __init__(self, model: Model, target: Target, allowance: int, deadline: float):
        self.model, self.target = model, target
        self.left, self.deadline = allowance, deadline

    def steps(self, st: Any) -> tuple[bool, list[tuple[Any, Any]]]:
        self.left -= 1
        if self.left < 0 or (not self.left & 255 and time.monotonic() >= self.deadline):
            raise _OutOfSteps
        return self.target.expand(self.model, st)

    def shows(self, st: Any) -> bool:
        return self.target.at_state and self.target.shown(self.model, st)

    def run(self, prefix: Path, labels: list[Any]) -> Path | None:
        """`prefix` (whose states do not show the target) followed by `labels`, cut at the first state that shows
        the target; None if a label is not enabled where it is taken or the end does not show the target."""
        path = list(prefix)
        for lid in labels:
            shown, succs = self.steps(path[-1][1])
            if shown:
                return path
            nxt = next((t for l2, t in succs if l2 == lid), None)
            if nxt is None:
                return None
            path.append((lid, nxt))
            if self.shows(nxt):
                return path
        if self.target.at_state:
            return path if self.shows(path[-1][1]) else None
        return path if self.steps(path[-1][1])[0] else None

    def swapped(self, path: Path, p: int) -> Path | None:
        """`path` with steps p and p+1 (labels of states p+1 and p+2) swapped, if that reaches the same state."""
        a, b = path[p + 1][0], path[p + 2][0]
        x = next((t for lid, t in self.steps(path[p][1])[1] if lid == b), None)
        if x is None:
            return None
        y = next((t for lid, t in self.steps(x)[1] if lid == a), None)
        if y is None or y != path[p + 2][1]:
            return None
        return path[:p + 1] + [(b, x), (a, y)] + path[p + 3:]


def owner_function(model: Model) -> Callable[[Any], Any]:
    """The process a step belongs to: an actor event's owner, else a typed action's first argument (None for a
    plain spec's steps: their processes are not known)."""
    prog = getattr(model, "prog", None)
    if prog is None:
        return lambda lid: None
    owners: list[Any] = []
    for t in prog.transitions:
        ev = t.meta.get("event")
        if ev is not None:
            owners.append(ev[1])
        else:
            owners.append(t.args[0][1] if t.args else None)
    return lambda lid: owners[lid]


def switches(owners: list[Any]) -> int:
    """How often consecutive steps belong to different processes."""
    return sum(1 for a, b in zip(owners, owners[1:]) if a != b)


def minimise(model: Model, path: Path, v: Violation, found_with: str = "random simulation",
             search: Budget | None = SEARCH, allowance: int = REPLAYED, seconds: float = 60.0) -> Minimised:
    """The counterexample `v` (whose states are `path`) minimised; with `search`, then a shortest one if the
    budget allows. The reported violation's `note` says what was done."""
    target = Target.of(model, v)
    before = len(path) - 1
    owner = owner_function(model)
    first = switches([owner(lid) for lid, _ in path[1:]])
    r = _Replayer(model, target, allowance, time.monotonic() + seconds)
    best, complete = [path, 0], True  # the last path accepted and the events moved so far
    try:
        for _ in range(3):  # dropping may let events move together, and moving may let steps drop
            cur = best[0]
            _drop(r, best)
            _regroup(r, best, owner)
            if best[0] == cur:
                break
    except _OutOfSteps:
        complete = False
    cur, moved = best
    dropped = before - (len(cur) - 1)
    w = target.violation(model, cur)
    final, shortest, found = cur, None, None
    if search is not None:
        found = search_shorter(model, w, "scalar", None, search)
        if found.why is None:
            shortest = True
            if found.after < steps_of(w):
                better = [path_of(model, found.violation), 0]
                try:
                    _regroup(_Replayer(model, target, allowance, time.monotonic() + seconds), better, owner)
                except _OutOfSteps:
                    pass
                final = better[0]
                w = target.violation(model, final)
    last = switches([owner(lid) for lid, _ in final[1:]])
    note = _note(before, steps_of(w), dropped, moved, (first, last), complete, found, found_with)
    w.note = note
    return Minimised(w, before, dropped, moved, (first, last), shortest, note)


def _drop(r: _Replayer, best: list) -> None:
    """Drop from `best[0]` the steps the violation does not need (halves, quarters, ... then single steps)."""
    path = best[0]
    chunk = max((len(path) - 1) // 2, 1)
    while True:
        changed = False
        i = 0
        while i < len(path) - 1:
            labels = [lid for lid, _ in path[1:]]
            got = r.run(path[:i + 1], labels[i + chunk:])
            if got is not None and len(got) < len(path):
                path, changed = got, True
                best[0] = path
            else:
                i += chunk
        if chunk == 1 and not changed:
            return
        chunk = max(chunk // 2, 1)


def _regroup(r: _Replayer, best: list, owner: Callable[[Any], Any]) -> None:
    """Move events of `best[0]` next to their process's previous event where every swap on the way commutes and
    the number of process switches drops (`best[1]` counts the events moved)."""
    path = best[0]
    j = 1
    while j < len(path) - 1:  # the event taken from state j (label of state j+1)
        owners = [owner(lid) for lid, _ in path[1:]]
        o = owners[j]
        if o is None or owners[j - 1] == o:
            j += 1
            continue
        i = next((k for k in range(j - 2, -1, -1) if owners[k] == o), None)
        if i is None:
            j += 1
            continue
        cand: Path | None = path
        for p in range(j - 1, i, -1):  # swap the event one step back at a time
            cand = r.swapped(cand, p)
            if cand is None:
                break
        if cand is not None and switches([owner(lid) for lid, _ in cand[1:]]) < switches(owners):
            checked = r.run(cand[:1], [lid for lid, _ in cand[1:]])
            if checked is not None:
                path = best[0] = checked
                best[1] += 1
        j += 1


def _note(before: int, after: int, dropped: int, moved: int, sw: tuple[int, int], complete: bool, found: Any,
          found_with: str) -> str:
    parts = []
    if dropped or moved:
        what = [f"{dropped} step{'s' if dropped != 1 else ''} dropped"] if dropped else []
        if moved:
            what.append(f"{moved} event{'s' if moved != 1 else ''} moved to follow the previous event of the same process")
        parts.append(f"minimised from {before} steps ({', '.join(what)}; {sw[0]} process switches before, "
                     f"{sw[1]} after)")
    else:
        parts.append(f"no step of the {before} found by {found_with} could be dropped")
    if not complete:
        parts.append("minimising stopped at its allowance of replayed steps")
    if found is not None:
        if found.why is not None:
            least = f"; none has fewer than {found.least} steps" if found.least else ""
            parts.append(f"maybe not a shortest one: the breadth-first search for a shorter one stopped at "
                         f"{found.why}{least}")
        elif found.after < found.before:
            parts.append(f"then shortened to {after} steps, a shortest one (a breadth-first search without "
                         f"reduction, {found.states:,} states)")
        else:
            parts.append(f"shortest: no counterexample is shorter (a breadth-first search, {found.states:,} states)")
    return "; ".join(parts)
