"""What a proof module is made of: facts, each a one-line statement, its expected outcome, and a check.

`python -m lockstep.proofs.NAME` runs a module's facts and prints one line per fact — the statement,
proved or refuted (with the counterexample), and the seconds taken — and exits 1 if any
outcome differs from the one the module expects.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

PROVED, REFUTED, UNKNOWN = "proved", "refuted", "unknown"


@dataclass(frozen=True)
class Outcome:
    """How a check ended, and the counterexample or reason that goes with it."""

    verdict: str
    detail: str = ""


@dataclass(frozen=True)
class Fact:
    """A statement about a spec or a protocol's arithmetic, and the check that decides it."""

    statement: str
    expected: str
    check: Callable[[], Outcome]


@dataclass(frozen=True)
class Result:
    fact: Fact
    outcome: Outcome
    seconds: float

    @property
    def as_expected(self) -> bool:
        return self.outcome.verdict == self.fact.expected

    def line(self) -> str:
        detail = f": {self.outcome.detail}" if self.outcome.detail else ""
        return f"{self.fact.statement}: {self.outcome.verdict} ({self.seconds:.2f} s){detail}"


def run(facts: Sequence[Fact], say: Callable[[str], None] | None = None) -> list[Result]:
    """Check each fact, in order, timing it."""
    out = []
    for fact in facts:
        t0 = time.monotonic()
        outcome = fact.check()
        out.append(Result(fact, outcome, time.monotonic() - t0))
        if say is not None:
            say(out[-1].line())
    return out


def main(facts: Sequence[Fact]) -> int:
    """Print one line per fact; exit code 1 if an outcome is not the expected one."""
    results = run(facts, say=lambda line: print(line, flush=True))
    wrong = [r for r in results if not r.as_expected]
    for r in wrong:
        print(f"UNEXPECTED: {r.fact.statement}: expected {r.fact.expected}, got {r.outcome.verdict}", file=sys.stderr)
    return 1 if wrong else 0
