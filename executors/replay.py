"""Replay a counterexample on real processes: the trace is re-checked against the spec, then run by
the replay of its system model (`actors.replay`, `rounds.replay`) under a controlled scheduler."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from lockstep.checker.replay import replay
from lockstep.checker.trace import Trace, TraceError, trusted_spec
from lockstep.specs.lang.actors import ActorProgram
from lockstep.specs.lang.rounds import RoundsProgram

from .actors.replay import replay_actors
from .controlled import ProcessReplay
from .rounds.replay import replay_rounds


async def replay_async(trace: Trace, say: Callable[[str], None], spec: str | None = None) -> ProcessReplay:
    spec = trusted_spec(trace.spec, spec, trace.origin)
    checked = replay(trace, spec=spec)  # the trace is a behaviour of the spec: check before running anything
    trace.spec = spec  # the processes run the spec the user named
    prog = getattr(checked.model, "prog", None)
    if isinstance(prog, RoundsProgram):
        return await replay_rounds(trace, checked, say)
    if isinstance(prog, ActorProgram):
        return await replay_actors(trace, checked, say)
    raise TraceError(f"spec {checked.model.name} is not an actor spec or a rounds spec: only actor and rounds "
                     "specs run as processes")


def replay_on_processes(trace: Trace, say: Callable[[str], None] = print, spec: str | None = None) -> ProcessReplay:
    """Replay a counterexample of an actor or rounds spec on real processes (`spec`: see `trusted_spec`)."""
    return asyncio.run(replay_async(trace, say, spec))
