"""The vector engine's inner loops, in two interchangeable forms: numpy passes and compiled C.

`portable` (numpy) and `runtime` (C, loaded with ctypes, GIL-free) offer the same functions with the
same results on the same visited-table layout; `backend()` gives the C loops once they are loaded in
this process, numpy before. `fused` generates a spec's own successor function in C. `Native` builds
and loads both for one search: at once when they are in the per-user cache, otherwise on a
background thread while the search goes on with numpy (the C compiler takes about half a second), so
a small check never waits for a compiler and a large one moves to C within its first levels.
"""

from __future__ import annotations

import ctypes
import os
from types import ModuleType
from typing import Any

from lockstep.specs.lang.program import Program

from . import portable
from .cbuild import Background, BuildError, Library, compiler
from .fused import Fused, Unfusable, fuse
from .runtime import Runtime, bitstate_library
from .runtime import library as runtime_library

__all__ = ["MODES", "BuildError", "Native", "backend", "bitstate_backend", "portable"]

MODES = ("auto", "always", "never")
_RUNTIME: Runtime | None = None  # the C loops, once loaded in this process
_BITSTATE: Runtime | None = None  # the C loops over a bitstate table, once loaded


def backend() -> Runtime | ModuleType:
    """The loops to use: C if loaded, else numpy."""
    return _RUNTIME if _RUNTIME is not None else portable


def bitstate_backend() -> Runtime:
    """The loops over a bitstate table, in C only (built now unless cached; `BuildError` without a compiler)."""
    global _BITSTATE
    if _BITSTATE is None:
        _BITSTATE = Runtime(bitstate_library().load())
    return _BITSTATE


class Native:
    """The C runtime and (if the spec suits one) its fused kernel, for one search.

    `mode` is "auto" (use them once built: at once if cached, else after a background build that
    `start` begins), "always" (build now and wait; a failed build raises `BuildError`) or "never"
    (numpy only); the environment variable `LOCKSTEP_NATIVE` overrides "auto". `note` says why a search
    runs without them. `reduction` and `symmetry`: the kernel of a search with a partial-order reduction (a
    `Reducer`) or symmetry reduction (a `BatchSymmetry`), which it applies itself (`fused._Source`)."""

    def __init__(self, prog: Program, layout: Any, want_fused: bool, mode: str = "auto", reduction: Any = None,
                 symmetry: Any = None):
        if mode == "auto":
            mode = os.environ.get("LOCKSTEP_NATIVE", "auto")
        if mode not in MODES:
            raise ValueError(f"native code mode {mode!r}: expected one of {', '.join(MODES)}")
        self.note: str | None = None
        self.fused: Fused | None = None
        self.loaded = False
        self._libs: list[Library] = []
        self._bg: Background | None = None
        if mode == "never":
            return
        if compiler() is None:
            if mode == "always":
                raise BuildError("no C compiler (set CC, or install cc, gcc or clang)")
            self.note = "vector engine: no C compiler (set CC to one), so every step runs as numpy passes"
            return
        self._libs.append(runtime_library())
        if self._libs[0].refusal:
            self.note = f"vector engine: compiled kernels are built for this run only, not cached: {self._libs[0].refusal}"
        if want_fused:
            try:
                self.fused = fuse(prog, layout, reduction, symmetry)
                self._libs += self.fused.libraries
            except Unfusable as e:
                why = f"vector engine: no fused kernel for this spec ({e}); its steps run as numpy passes"
                self.note = f"{self.note}; {why}" if self.note else why
        if mode == "always":
            self._finish([lib.load() for lib in self._libs])
        elif all(lib.cached() for lib in self._libs):
            try:
                self._finish([lib.load() for lib in self._libs])
            except OSError as e:
                self._give_up(str(e))

    def start(self) -> None:
        """Begin building on a background thread (once)."""
        if self._libs and not self.loaded and self._bg is None:
            self._bg = Background(self._libs)

    def ready(self) -> bool:
        """Whether the C loops are loaded (loading them if a background build has just finished)."""
        if not self.loaded and self._bg is not None and self._bg.done():
            if self._bg.error:
                self._give_up(self._bg.error)
            else:
                self._finish(self._bg.result)
            self._bg = None
        return self.loaded

    def _give_up(self, why: str) -> None:
        self.note = f"vector engine: the C kernels did not build or load ({why}); steps run as numpy passes"
        self.fused = None
        self._libs = []

    def _finish(self, libs: list[ctypes.CDLL]) -> None:
        global _RUNTIME
        if _RUNTIME is None:
            _RUNTIME = Runtime(libs[0])
        if self.fused is not None:
            self.fused.bind(libs[1], libs[2:])
        self.loaded = True

    def cancel(self) -> None:
        """Stop a background build still running."""
        if self._bg is not None:
            self._bg.cancel()
            self._bg = None
