"""One process's handlers, compiled from the spec's local steps: what a real process runs.

The local steps are the handlers traced into terms (`lockstep.specs.lang.actors`); the same steps are
composed into the global spec the checker explores. Here they are compiled to Python
(`lockstep.checker.codegen`) and run on the process's concrete local state.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from lockstep.checker import interpret
from lockstep.checker.codegen import compile_transitions
from lockstep.specs.lang.actors import ActorSystem, LocalStep
from lockstep.specs.lang.jsonvalues import to_json


@dataclass
class Outcome:
    """The result of one handler run: the step, the new local state, what it sent, (re)started and observed."""

    step: LocalStep
    state: tuple
    sends: list[tuple[int, Any]]
    restarts: list[str]
    observed: list[Any]


class StepFailed(Exception):
    """A handler's assertion failed or it raised, on this input and state."""

    def __init__(self, step: LocalStep, message: str):
        super().__init__(message)
        self.step = step


class LocalExec:
    """The compiled handlers of process `pid`, keyed by input; `run` picks among enabled choices."""

    def __init__(self, system: ActorSystem, pid: int, seed: int | None = None):
        self.system = system
        self.pid = pid
        self.rng = random.Random(seed)
        steps = [s for s in system.steps if s.pid == pid]
        fns = compile_transitions(system.local, [s.transition for s in steps])
        self.table: dict[tuple, list[tuple[LocalStep, Any]]] = {}
        self.choice_json = {id(s): {n: to_json(d, v) for (n, v), d in zip(s.choice, s.choice_doms)} for s in steps}
        for s, fn in zip(steps, fns):
            self.table.setdefault(self._input(s.kind, s.src, s.msg, s.timer), []).append((s, fn))

    @staticmethod
    def _input(kind: str, src: int | None, msg: Any, timer: str | None) -> tuple:
        return (kind, src, msg, timer)

    def handles(self, kind: str, src: int | None = None, msg: Any = None, timer: str | None = None) -> bool:
        return self._input(kind, src, msg, timer) in self.table

    def run(self, state: tuple, kind: str, src: int | None = None, msg: Any = None, timer: str | None = None,
            choice: dict[str, Any] | None = None) -> Outcome | None:
        """Run the handler for this input on `state`; None if no choice of it is enabled.

        `choice` (the JSON form of the choice values, by name) forces one variant, as replay needs.
        """
        options = self.table.get(self._input(kind, src, msg, timer))
        if not options:
            return None
        padded = self.system.pad(state)
        enabled = []
        for step, fn in options:
            if choice is not None and self.choice_json[id(step)] != choice:
                continue
            try:
                out = fn(padded)
            except Exception:
                raise StepFailed(step, self._diagnose(step, padded)) from None
            if out:
                enabled.append((step, out[0][1]))
        if not enabled:
            return None
        step, full = enabled[0] if len(enabled) == 1 else self.rng.choice(enabled)
        sends, restarts = self.system.outputs(full, len(step.sends))
        return Outcome(step, full[:self.system.nstate], sends, [t for t, on in restarts.items() if on],
                       self.system.observed(full, len(step.observed)))

    def _diagnose(self, step: LocalStep, padded: tuple) -> str:
        try:
            interpret.run_transition(self.system.local, step.transition, padded)
        except interpret.Failure as f:
            where = f" at {f.loc}" if f.loc else ""
            return f"{step.transition.label} failed{where}: {f.message}"
        return f"{step.transition.label} failed"
