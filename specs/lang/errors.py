"""Errors raised for malformed specs, and the source locations they point at."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

_LANG_DIR = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_LANG_DIR))  # where lockstep's packages are (specs/, checker/, ...)
_TOOL_DIRS = tuple(os.path.join(d, "") for d in
                   (_LANG_DIR, os.path.join(_ROOT, "checker"), os.path.join(_ROOT, "executors")))
"""Frames in these folders are Lockstep's own: an error's location is never inside them."""


_IS_TOOL: dict[str, bool] = {}  # code file name -> whether it is Lockstep's own (see _TOOL_DIRS)


def _is_tool(path: str) -> bool:
    hit = _IS_TOOL.get(path)
    if hit is None:
        hit = _IS_TOOL[path] = os.path.abspath(path).startswith(_TOOL_DIRS) or "importlib" in path
    return hit


@dataclass(frozen=True)
class Location:
    """A place in a spec's source file."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


_IN_LANG: dict[str, bool] = {}  # code file name -> whether it lies inside the language package


def _in_lang(path: str) -> bool:
    hit = _IN_LANG.get(path)
    if hit is None:
        hit = _IN_LANG[path] = os.path.abspath(path).startswith(_LANG_DIR)
    return hit


def user_location(skip: int = 1) -> Location | None:
    """The innermost frame of the caller's stack that lies in the user's code (outside the language, the
    engines and the executors); None when Lockstep itself is building a spec (the caller then names the
    declaration)."""
    frame = sys._getframe(skip)
    while frame is not None:
        path = frame.f_code.co_filename
        if not _is_tool(path):
            return Location(path, frame.f_lineno)
        frame = frame.f_back
    return None


def user_frame(skip: int = 1):
    """Like `user_location`, but the frame itself (for bytecode inspection)."""
    frame = sys._getframe(skip)
    while frame is not None:
        if not _in_lang(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


class SpecError(Exception):
    """A spec is malformed: the message says what, where, and how to fix it."""

    def __init__(self, message: str, location: Location | None = None, hint: str | None = None):
        self.message = message
        self.location = location
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        where = f"{self.location}: " if self.location else ""
        text = f"{where}{self.message}"
        if self.hint:
            text += f"\n  fix: {self.hint}"
        return text
