"""Lockstep: specify, model-check and run synchronization protocols in Python.

    import lockstep
    result = lockstep.check(TwoPhase, rm=3)        # a Spec subclass, a plain spec or a name
    assert result.holds, result.violation

One installed namespace: `lockstep.specs` (the modelling language and the protocols),
`lockstep.checker` (the engines and the `lockstep` command), `lockstep.executors` (protocols
run as real OS processes) and `lockstep.proofs` (machine-checked facts about specs); the API
below (`lockstep.api`) and `lockstep.testing` (pytest and hypothesis helpers) sit on top.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.2.0"

_API = {"bmc", "check", "model", "prove", "replay", "run", "simulate", "validate"}
_ERRORS = {"SpecError": "lockstep.specs.lang.errors", "LoadError": "lockstep.checker.loader",
           "FaultsError": "lockstep.executors.faults",
           "TraceError": "lockstep.checker.trace", "UsageError": "lockstep.checker.errors"}
__all__ = sorted(_API | set(_ERRORS) | {"__version__"})


def __getattr__(name: str) -> Any:
    """The API is imported on first use, so that `import lockstep` (and the command line) stay fast."""
    import importlib

    if name in _API:
        return getattr(importlib.import_module("lockstep.api"), name)
    if name in _ERRORS:
        return getattr(importlib.import_module(_ERRORS[name]), name)
    raise AttributeError(f"module 'lockstep' has no attribute {name!r}")
