"""Outcomes of a check: verdict, statistics, and the violation with its trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a trace's module is imported when a violation is built (`lockstep check` starts faster)
    from .trace import Trace

HOLDS, VIOLATION, INCONCLUSIVE = "holds", "violation", "inconclusive"
EXIT_CODES = {HOLDS: 0, VIOLATION: 1, INCONCLUSIVE: 3}
SPEC_ERROR_EXIT = 5
"""A spec error found while checking: the spec's code raised (a NameError, a TypeError, a division by zero),
which is a bug of the spec, not a property violation of the protocol; the trace shows how it is reached."""


def exit_code(verdict: str, violation: Violation | None) -> int:
    """The CLI's exit code for a verdict: a violation of kind "error" is a spec error (5), not a violation (1)."""
    if verdict == VIOLATION and violation is not None and violation.kind == "error":
        return SPEC_ERROR_EXIT
    return EXIT_CODES[verdict]


@dataclass
class Violation:
    """What failed: an invariant, a deadlock, or a step (assertion, error, out-of-type value)."""

    kind: str  # "invariant" | "deadlock" | "assertion" | "type" (violations) | "error" (a spec error)
    name: str  # invariant name or action label
    message: str
    location: str | None
    trace: Trace
    note: str | None = None  # what was done to the counterexample found (shortened, minimised, kept and why)

    def heading(self) -> list[str]:
        """What was found and where, and the title of its trace, as `lockstep check` prints them."""
        steps = len(self.trace.steps) - 1
        where = f" at {self.location}" if self.location and self.location not in self.message else ""
        if self.kind == "error":
            lines = [f"Spec error: {self.message}{where}",
                     "  the spec's own code fails here (a bug of the spec, not a violation of its properties); "
                     "fix it and check again"]
        else:
            lines = [f"Violation: {self.message}{where}"]
        title = "The run that reaches it" if self.kind == "error" else "Counterexample"
        if self.note:
            lines.append(f"  {self.note}")
        return lines + [f"{title} ({steps} step{'s' if steps != 1 else ''}):"]

    def text(self, model: object | None = None, full: bool = False) -> str:
        """The violation and its numbered counterexample as plain text (per-element changes, or whole states)."""
        from .render.text import plain_listing

        return "\n".join([*self.heading(), plain_listing(self.trace, model, full)])


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
    bitstate_omitted: float | None = None  # a bitstate search: the expected number of states it omitted
    model: object | None = field(default=None, repr=False, compare=False)  # what was explored (set by the API)
    witnesses: list = field(default_factory=list)  # a WitnessResult per `@witness` (searched when nothing failed)
    violations: list[Violation] = field(default_factory=list)  # with max_violations: the distinct ones, first first

    @property
    def exit_code(self) -> int:
        """As `lockstep check`: 0 holds, 1 violation, 3 inconclusive, 5 spec error; once the witnesses are searched,
        1 if one is unreachable or fails to evaluate, else 3 if one is not reached within the bounds."""
        code = exit_code(self.verdict, self.violation)
        if self.violation is not None or not self.witnesses:
            return code
        codes = [w.exit_code for w in self.witnesses]
        return 1 if 1 in codes else max([code, *codes])

    def settle_depth(self) -> None:
        """Count depth one way, TLC's (the states on the longest shortest path, an initial state at depth 1): a
        counterexample's last state (the violating state, or the one whose step fails or deadlocks) is at least as
        deep as the search went. A lasso is left alone: its loop may go round states of any depth."""
        v = self.violation
        if v is not None and v.trace.loop is None:
            self.depth = max(self.depth, len(v.trace.steps))

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
