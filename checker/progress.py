"""Progress of long searches: a live line on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import sys
import time
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
            from rich.console import Console
            from rich.live import Live

            self._live = Live(console=Console(file=self.stream), refresh_per_second=2, transient=True)
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


class NoProgress(Progress):
    def __init__(self) -> None:
        super().__init__(enabled=False)

    def due(self) -> bool:
        return False
