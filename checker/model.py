"""`Model`: what the explicit engines, simulation and replay need from a spec.

Two implementations: `TypedModel` (a `lockstep.specs.lang` spec, compiled) and `PlainModel` (any
object with `init()` and `next(state)`). Engines see only this interface.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

State = Hashable


@dataclass(frozen=True)
class StepFailure:
    """An enabled step failed on a state: which action, what, and where in the spec."""

    action: str  # the action's label ("" if unknown)
    kind: str  # "assertion" | "type" (violations of the protocol) | "error" (a spec error: the spec's code raised)
    message: str
    location: str | None

    def describe(self) -> str:
        where = f" at {self.location}" if self.location else ""
        who = f"action {self.action}" if self.action else "next()"
        return f"{who} failed{where}: {self.message}"


class Model:
    """A spec as the engines see it. Labels are opaque ids; `label()` renders them."""

    name: str
    ref: str  # how to load the spec again (registered name, module:obj or path:obj)
    params: dict[str, Any]
    invariant_names: list[str]
    constraint_names: list[str]
    vars: list[str]
    symmetry: bool = False

    def initial_states(self) -> list[State]:
        raise NotImplementedError

    def successors(self, state: State) -> list[tuple[Any, State]]:
        """(label id, successor) for every enabled step; raises on a failing step."""
        raise NotImplementedError

    def violated(self, state: State) -> int:
        """Index of the first invariant false on `state`, or -1; raises if one fails to evaluate."""
        raise NotImplementedError

    def outside(self, state: State) -> int:
        """Index of the first state constraint false on `state`, or -1."""
        raise NotImplementedError

    def canonical(self, state: State) -> State:
        return state

    def fingerprint(self, state: State) -> int:
        raise NotImplementedError

    def diagnose(self, state: State) -> StepFailure:
        """Why `successors(state)` raised."""
        raise NotImplementedError

    def diagnose_predicate(self, state: State) -> StepFailure:
        """Why `violated(state)` raised."""
        raise NotImplementedError

    def label(self, lid: Any) -> str:
        raise NotImplementedError

    def label_json(self, lid: Any) -> dict[str, Any]:
        """The step's action for the trace file: {"action": name, "args": {...}}."""
        raise NotImplementedError

    def encode_state(self, state: State) -> dict[str, Any]:
        """The state as ITF values, one entry per variable."""
        raise NotImplementedError

    def show_state(self, state: State) -> dict[str, str]:
        """The state as readable text, one entry per variable."""
        raise NotImplementedError

    def decode_state(self, values: dict[str, Any]) -> State:
        """The state whose ITF values (one entry per variable) are `values`; ValueError if there is none."""
        raise ValueError(f"spec {self.name} can start a trace only from an initial state")

    def invariant_holds(self, name: str, state: State) -> bool:
        """Whether the named invariant holds on `state` (False if it fails to evaluate)."""
        raise ValueError(f"spec {self.name} cannot evaluate invariant {name!r} on its own")

    def explain_disabled(self, state: State, label_json: dict[str, Any]) -> str:
        """Why the step named by `label_json` is not possible from `state`."""
        return "no enabled step has this label"

    def fast_functions(self) -> tuple[Callable, Callable, Callable | None]:
        """(successors, fingerprint, canonical or None): the hot loop's functions."""
        canon = self.canonical if self.symmetry else None
        return self.successors, self.fingerprint, canon
