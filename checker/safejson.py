"""JSON from files and sockets that Lockstep did not write itself: bounded size and nesting, one readable
error (a `ValueError` subclass) for anything that is not a JSON document of the expected shape."""

from __future__ import annotations

import json
from typing import Any

from .safeio import read_bytes

MAX_DEPTH = 64  # no Lockstep trace, fault plan or frame nests deeper; a deeper document is refused, not recursed into
MAX_FILE_BYTES = 1 << 30  # a JSON file larger than this is refused: no more than this and one byte is read


class JSONInputError(ValueError):
    """A document that is not acceptable JSON; the message says what and where."""


def loads(text: str | bytes, where: str, max_depth: int = MAX_DEPTH, one_line: bool = False) -> Any:
    """Parse `text`; a JSONInputError names `where`, the position and the cause (truncation, nesting, encoding).
    `one_line`: `where` already names the line (of a JSON-lines file); the column is given in words."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise JSONInputError(f"{where}: not UTF-8 text (byte {e.start} is {bytes(text)[e.start:e.start + 1]!r}): "
                                 "expected JSON") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        hint = f" (the {'line' if one_line else 'document'} ends early: truncated?)" if e.pos >= len(text.rstrip()) else ""
        if one_line:
            raise JSONInputError(f"{where}: not valid JSON: {e.msg} at column {e.colno}{hint}") from None
        raise JSONInputError(f"{where}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}{hint}") from None
    except RecursionError:
        raise JSONInputError(f"{where}: JSON nested more than {max_depth} levels deep") from None
    except ValueError as e:  # e.g. an integer literal of more digits than Python converts
        raise JSONInputError(f"{where}: not acceptable JSON: {e}") from None
    if not shallow(obj, max_depth):
        raise JSONInputError(f"{where}: JSON nested more than {max_depth} levels deep")
    return obj


def shallow(obj: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether no container in `obj` is nested more than `max_depth` deep (checked without recursion)."""
    if not isinstance(obj, (dict, list)):
        return True
    stack = [(obj, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        o, d = pop()
        if d > max_depth:
            return False
        for v in (o.values() if isinstance(o, dict) else o):
            if isinstance(v, (dict, list)):
                push((v, d + 1))
    return True


def read_text(path: str, what: str = "file") -> str:
    """A whole file as text: a regular file of at most MAX_FILE_BYTES, counted as read (`safeio.read_bytes`); a
    JSONInputError for a file that cannot be read, is not a regular file, is too large or is not text."""
    try:
        data = read_bytes(path, MAX_FILE_BYTES, what)
    except OSError as e:
        raise JSONInputError(f"cannot read {what} {path}: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JSONInputError(f"{path}: not a text file (byte {e.start} is not UTF-8): expected JSON") from None
