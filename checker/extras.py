"""The optional parts of the install: which extra brings each library the core leaves out, and the one error that a
missing one gives (`lockstep: error: ...`, exit 2), naming the extra to install."""

from __future__ import annotations

from .errors import UsageError

EXTRAS: dict[str, tuple[str, str]] = {
    "matplotlib": ("plots", "plotting (`simulate --plot`)"),
    "scipy": ("analyze", "exact Markov-chain analysis (`lockstep analyze`)"),
    "sympy": ("analyze", "exact rational arithmetic (`lockstep analyze --exact`)"),
    "starlette": ("explore", "the explorer (`lockstep explore`)"),
    "uvicorn": ("explore", "the explorer (`lockstep explore`)"),
    "ray": ("cluster", "the partitioned search (`--cluster`)"),
}
"""Library (top-level module) -> (the extra that installs it, what needs it)."""


class MissingExtra(UsageError):
    """An optional library is not installed; the message names the extra that installs it."""

    def __init__(self, module: str):
        extra, what = EXTRAS[module]
        super().__init__(f"{what} needs {module}, which the core install leaves out: "
                         f"pip install 'lockstep-mc[{extra}]'")
        self.module, self.extra = module, extra


def missing_extra(error: BaseException) -> MissingExtra | None:
    """The MissingExtra for an optional library whose import failed with `error` (None for anything else)."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        top = error.name.partition(".")[0]
        if top in EXTRAS:
            return MissingExtra(top)
    return None
