"""Where the lines of files made from a user's input come from, so that a message names the user's file and line.

`lockstep validate FILE` splits a run's combined trace into one file per process, and step-by-step validation
projects those onto the events a spec instance sees; both are temporary files. Each writer registers the file it
made, line by line, against the file it read; a message about a made file is rewritten to name the user's file
and line instead (through every stage: a projection of a split file names the combined trace).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import TraceError, UsageError


@dataclass
class Origins:
    """Made file -> (the file it was made from, the line there of each of its lines, line 1 first; None where a
    line has none, as a header the maker wrote)."""

    files: dict[str, tuple[str, list[int | None]]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # a file no one keeps -> what to call it

    def add(self, made: str, source: str, lines: list[int | None]) -> None:
        """Line k (from 1) of `made` is line `lines[k - 1]` of `source`."""
        self.files[made] = (source, lines)

    def label(self, made: str, name: str) -> None:
        """Call `made`, a file that is not kept (a process's log of a run without --trace), `name`."""
        self.labels[made] = name

    def locate(self, path: str, line: int | None) -> tuple[str, int | None]:
        """The user's file and line that `path`'s line `line` comes from (`path` itself if it is not a made file)."""
        seen = 0
        while path in self.files and seen <= len(self.files):
            source, lines = self.files[path]
            line = lines[line - 1] if line is not None and 0 < line <= len(lines) else None
            path, seen = source, seen + 1
        return path, line

    def relocate(self, text: str) -> str:
        """`text` with every made file it names (as `PATH` or `PATH:LINE`) replaced by the user's file and line."""
        made = {**self.files, **self.labels}
        if not any(p in text for p in made):
            return text
        names = "|".join(re.escape(p) for p in sorted(made, key=len, reverse=True))

        def user(m: re.Match[str]) -> str:
            path, line = self.locate(m.group(1), int(m.group(2)) if m.group(2) else None)
            if path in self.labels:
                return self.labels[path] if line is None else f"{self.labels[path]}, line {line}"
            return path if line is None else f"{path}:{line}"

        return re.sub(rf"({names})(?::(\d+))?", user, text)

    @contextmanager
    def naming(self) -> Iterator[None]:
        """An input or usage error raised in the block is raised again naming the user's places (`relocate`)."""
        try:
            yield
        except (TraceError, UsageError) as e:
            text = self.relocate(str(e))
            if text == str(e):
                raise
            raise type(e)(text) from None
