"""A replica's local fields read from a global Autobahn state, as its handlers read them."""

from __future__ import annotations

from typing import Any


class At:
    """Replica b's local fields in a global state, read as a handler reads them (`p.field`)."""

    def __init__(self, s: Any, b: int):
        object.__setattr__(self, "_s", s)
        object.__setattr__(self, "_binding", object.__getattribute__(s, "_binding"))
        object.__setattr__(self, "id", b)
        object.__setattr__(self, "spec", s.spec)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s, name)[self.id]
