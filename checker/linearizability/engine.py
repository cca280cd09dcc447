"""One search of one (sub-)history: the compiled kernel where the model has a compiled form, else Python."""

from __future__ import annotations

import ctypes
import functools
import os
import time
from collections.abc import Collection

from . import native, wgl
from .history import Operation
from .models import Model
from .wgl import ILLEGAL_HISTORY, LINEARIZABLE, STOPPED, Outcome


class Timeout(Exception):
    """The time budget ran out (or a search could not give an answer)."""


@functools.cache
def cores() -> int:
    """The cores this process may run on (when first asked)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def solve(ops: list[Operation], model: Model, deadline: float | None = None, optional: Collection[int] = ()) -> Outcome:
    """Search one (sub-)history, compiled where the model has a compiled form; code STOPPED past `deadline`.
    `optional`: operations (indices) that may not have taken effect."""
    enc = native.encoder(model, ops) if native.library() is not None else None
    if enc is not None:
        return native.search(enc(ops), deadline, ctypes.c_int32(0), optional)
    out = Outcome(STOPPED)
    gen = wgl.search(ops, model, out, optional)
    for _ in gen:
        if deadline is not None and time.monotonic() > deadline:
            gen.close()
            break
    return out


def linearizable(ops: list[Operation], model: Model, deadline: float | None = None) -> bool:
    """Whether one (sub-)history is linearizable; Timeout past `deadline` (time.monotonic())."""
    out = solve(ops, model, deadline)
    if out.code not in (LINEARIZABLE, ILLEGAL_HISTORY):
        raise Timeout()
    return out.code == LINEARIZABLE
