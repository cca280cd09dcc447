"""Outcomes of a check: verdict, statistics, and the violation with its trace."""

from __future__ import annotations

from dataclasses import dataclass, field

from .trace import Trace, render

HOLDS, VIOLATION, INCONCLUSIVE = "holds", "violation", "inconclusive"
EXIT_CODES = {HOLDS: 0, VIOLATION: 1, INCONCLUSIVE: 3}


@dataclass
class Violation:
    """What failed: an invariant, a deadlock, or a step (assertion, error, out-of-type value)."""

    kind: str  # "invariant" | "deadlock" | "assertion" | "error" | "type"
    name: str  # invariant name or action label
    message: str
    location: str | None
    trace: Trace

    def text(self) -> str:
        """The violation and its numbered counterexample, as `lockstep check` prints them."""
        steps = len(self.trace.steps) - 1
        where = f" at {self.location}" if self.location and self.location not in self.message else ""
        lines = [f"Violation: {self.message}{where}", f"Counterexample ({steps} step{'s' if steps != 1 else ''}):",
                 render(self.trace)]
        if self.trace.loop is not None:
            lines.append(f"  {'':>3}  (stutters in state {steps} for ever)" if self.trace.loop == steps
                         else f"  {'':>3}  (back to state {self.trace.loop}; the loop repeats for ever)")
        return "\n".join(lines)


@dataclass
class CheckResult:
    """The result of one explicit-state search."""

    verdict: str
    distinct: int
    generated: int
    depth: int
    seconds: float
    queued: int = 0
    violation: Violation | None = None
    cut: str | None = None  # why the search stopped early (inconclusive)
    workers: int = 1
    visited_bytes: int | None = None
    exact_fingerprints: bool = False  # fingerprints identify states (an injective packing): no collision
    notes: list[str] = field(default_factory=list)
    fingerprinted: bool = True  # states were stored as fingerprints (False: kept whole, no collisions)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def holds(self) -> bool:
        """Every reachable state was explored and no property was violated."""
        return self.verdict == HOLDS

    @property
    def collision_probability(self) -> float:
        """TLC's optimistic estimate of a fingerprint collision: d·(g−d) / 2^64 (0 if fingerprints are exact)."""
        if self.exact_fingerprints:
            return 0.0
        d, g = self.distinct, self.generated
        return d * max(g - d, 0) / 2.0**64
