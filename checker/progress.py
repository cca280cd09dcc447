"""Progress of long searches: a live line on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO


@dataclass
class Stats:
    distinct: int = 0
    generated: int = 0
    queued: int = 0
    depth: int = 0


class Progress:
    """Reports search statistics every `interval` seconds while a search runs."""

    def __init__(self, interval: float = 3.0, stream: TextIO | None = None, enabled: bool = True):
        self.interval = interval
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.start = time.monotonic()
        self.next_report = self.start + interval
        self._live = None
        if enabled and self.stream.isatty():
            from rich.live import Live

            from .render.text import PipeConsole

            self._live = Live(console=PipeConsole(file=self.stream), refresh_per_second=2, transient=True)
            self._live.start()

    def due(self) -> bool:
        return self.enabled and time.monotonic() >= self.next_report

    def report(self, s: Stats) -> None:
        now = time.monotonic()
        self.next_report = now + (0.5 if self._live else self.interval)
        elapsed = max(now - self.start, 1e-9)
        text = (f"{s.distinct:,} distinct, {s.generated:,} generated, {s.queued:,} queued, depth {s.depth}, "
                f"{s.distinct / elapsed:,.0f} distinct/s, {elapsed:.0f}s")
        if self._live is not None:
            from rich.text import Text

            self._live.update(Text("checking: " + text, style="cyan"))
        else:
            print("progress: " + text, file=self.stream, flush=True)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


class Heartbeat:
    """While a long call that cannot report runs (a z3 query, a sparse solve, building a chain), say
    `{what}, {elapsed}s` every `interval` seconds from a background thread; nothing if `say` is None."""

    def __init__(self, say: Callable[[str], None] | None, what: str, interval: float = 3.0):
        self.say, self.what, self.interval = say, what, interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Heartbeat:
        if self.say is not None:
            self._thread = threading.Thread(target=self._beat, name="lockstep-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        start = time.monotonic()
        while not self._stop.wait(self.interval):
            try:
                self.say(f"{self.what}, {time.monotonic() - start:.0f}s")  # type: ignore[misc]
            except BrokenPipeError:  # nobody reads the progress any more: the command itself ends at its next output
                return


def stderr_say(quiet: bool) -> Callable[[str], None] | None:
    """How a command reports progress: `progress: ...` lines on stderr, or nothing with --quiet."""
    if quiet:
        return None
    return lambda text: print("progress: " + text, file=sys.stderr, flush=True)


class NoProgress(Progress):
    def __init__(self) -> None:
        super().__init__(enabled=False)

    def due(self) -> bool:
        return False
