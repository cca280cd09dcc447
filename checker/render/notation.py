"""What a renderer knows of a trace's spec: the declared domain of each field and, for actor
specs, the processes and which local fields each process's handlers actually touch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockstep.specs.lang.actors import ActorProgram, ActorSystem
from lockstep.specs.lang.terms import Term
from lockstep.specs.lang.types import Domain

from ..model import Model


@dataclass
class Notation:
    """Field domains (empty for plain specs) and the actor layout (None for other specs)."""

    doms: dict[str, Domain] = field(default_factory=dict)
    actors: ActorLayout | None = None


@dataclass
class ActorLayout:
    """The processes of an actor spec: the per-process fields (maps over process ids), and the ones each process has."""

    pids: list[int]
    local_fields: list[str]
    owned: dict[int, list[str]]  # pid -> the local fields its handlers read or write, in declaration order
    byzantine: frozenset[int]
    system: ActorSystem


def notation_of(model: Model | None) -> Notation:
    """The notation of a loaded model (an empty one without a model, or for a plain spec)."""
    prog = getattr(model, "prog", None)
    if prog is None:
        return Notation()
    doms = {f.name: f.dom for f in prog.fields}
    actors = _layout(prog.system) if isinstance(prog, ActorProgram) else None
    return Notation(doms, actors)


def _layout(system: ActorSystem) -> ActorLayout:
    names = [f.name for f in system.state_fields]
    slot_field: dict[int, str] = {}
    for f in system.state_fields:
        for j in range(f.count):
            slot_field[f.base + j] = f.name
    touched: dict[int, set[str]] = {p: set() for p in system.pids}
    for step in system.steps:
        slots: set[int] = set()
        t = step.transition
        for c in t.checks:
            _slots(c.term, slots)
        for s, term in t.updates.items():
            slots.add(s)
            _slots(term, slots)
        for when, dst, msg in step.sends:
            for x in (when, dst, msg):
                _slots(x, slots)
        touched[step.pid].update(slot_field[s] for s in slots if s in slot_field)
    owned = {p: [n for n in names if n in touched[p]] for p in system.pids}
    return ActorLayout(system.pids, names, owned, system.byzantine, system)


def _slots(t: Any, out: set[int]) -> None:
    """The slots a term reads (iteratively: traced terms can be deep)."""
    stack, seen = [t], set()
    while stack:
        x = stack.pop()
        if not isinstance(x, Term) or id(x) in seen:
            continue
        seen.add(id(x))
        if x.op == "slot":
            out.add(x.args[0])
        else:
            stack.extend(a for a in x.args if isinstance(a, Term))
