"""How a spec's decorators mark its functions: a kind (`action`, `invariant`, `temporal`, ...) and
keyword options that engines read (for example `fairness="weak"`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import SpecError, user_location

_KIND = "_lockstep_kind"
_META = "_lockstep_meta"


def marker(kind: str, fn: Callable | None, **meta: Any):
    """The decorator `@kind` (or `@kind(**meta)` when `fn` is None)."""

    def mark(f: Callable) -> Callable:
        if not callable(f):
            raise SpecError(f"@{kind} decorates a function", user_location())
        setattr(f, _KIND, kind)
        setattr(f, _META, meta)
        return f

    return mark(fn) if fn is not None else mark


def kind_of(fn: Any) -> str | None:
    """The kind a decorator gave `fn` (None for an unmarked function)."""
    return getattr(fn, _KIND, None)


def meta_of(fn: Any) -> dict[str, Any]:
    """The keyword options given to `fn`'s decorator."""
    return getattr(fn, _META, {})
