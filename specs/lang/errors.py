"""Errors raised for malformed specs, and the source locations they point at."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

_LANG_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Location:
    """A place in a spec's source file."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


_INSIDE: dict[str, bool] = {}  # source file -> whether it lies in the language package


def _inside(path: str) -> bool:
    hit = _INSIDE.get(path)
    if hit is None:
        hit = _INSIDE[path] = os.path.abspath(path).startswith(_LANG_DIR)
    return hit


def user_location(skip: int = 1) -> Location | None:
    """The innermost frame of the caller's stack that lies outside the language package."""
    frame = sys._getframe(skip)
    while frame is not None:
        path = frame.f_code.co_filename
        if not _inside(path):
            return Location(path, frame.f_lineno)
        frame = frame.f_back
    return None


def user_frame(skip: int = 1):
    """Like `user_location`, but the frame itself (for bytecode inspection)."""
    frame = sys._getframe(skip)
    while frame is not None:
        if not _inside(frame.f_code.co_filename):
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
