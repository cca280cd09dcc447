"""Refinement between fair-algebra commands (c ⊑ d: every trace of d is a trace of c), decided exactly."""

from __future__ import annotations

from dataclasses import dataclass

from lockstep.specs.fair_algebra.commands import Command
from lockstep.specs.fair_algebra.semantics import CommandAutomaton, Semantics
from lockstep.specs.fair_algebra.traces import show_word

from .refinement import Verdict, refines

DEFAULT_LIMIT = 200_000


@dataclass
class Refinement:
    """The verdict on c ⊑ d, with a trace of d that c lacks when it fails."""

    spec: Command
    impl: Command
    verdict: Verdict

    @property
    def holds(self) -> bool | None:
        return self.verdict.holds

    @property
    def trace(self) -> str | None:
        cex = self.verdict.counterexample
        return None if cex is None else show_word(cex.word, cex.end, cex.loop)

    def describe(self) -> str:
        law = f"{self.spec} ⊑ {self.impl}"
        if self.holds:
            return f"{law}: holds"
        if self.holds is None:
            return f"{law}: inconclusive ({self.verdict.note})"
        return f"{law}: fails; {self.impl} has the trace {self.trace}, which {self.spec} does not"


def check_refines(spec: Command, impl: Command, n: int, limit: int = DEFAULT_LIMIT,
                  seconds: float | None = None) -> Refinement:
    """Decide spec ⊑ impl over Σ = {0..n-1} (inconclusive past `limit` steps or `seconds`)."""
    sem = Semantics(n)
    return Refinement(spec, impl, refines(CommandAutomaton(sem, spec), CommandAutomaton(sem, impl), limit, seconds))
