"""Controlled runs: real processes driven step by step through a trace, and what they showed."""

from __future__ import annotations

from dataclasses import dataclass

STEP_TIMEOUT = 10.0  # seconds for a process to take the step it was told to take


@dataclass
class ProcessReplay:
    """What the real processes showed."""

    steps: int
    violated: str | None  # the invariant the processes' final global state violates
    conclusion: str
    validated: bool
    failed: str | None = None  # the failure of the handler the trace says fails next
    deadlocked: bool = False  # no handler of any process is enabled in the final state
