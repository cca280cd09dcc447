"""Whether a search on two threads gets a second core: judged level by level from its own CPU time and, while it
runs on one thread, from the machine's idle time.

Two threads pay only with a second core. A level on two threads that got less than `CROWDED` CPU seconds per
second, while the machine had less than `IDLE_CORE` of a core idle (Linux's /proc/stat; the threads did not
merely wait for each other), sends the next levels to one thread. Levels on one thread return to two when the
machine had at least `IDLE_CORE` of a core idle while they ran; where the idle time cannot be read, a level on
two threads is judged by its CPU time alone, and levels on one thread return when it got at least `WHOLE_CORE`
CPU seconds per second. Only stretches of at least `MEASURED` seconds count;
consecutive levels run the same way are measured together. The search's results are the same either way.
"""

from __future__ import annotations

import os
import time

CROWDED, IDLE_CORE, WHOLE_CORE, MEASURED = 1.3, 0.6, 0.8, 0.25


def idle_seconds() -> float | None:
    """CPU seconds the machine's CPUs have spent idle since boot, summed over them; None where it cannot be read."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
        return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")  # idle and iowait
    except (OSError, ValueError, IndexError):
        return None


class CoreJudge:
    """Measures the levels of a two-thread search and says whether the next ones get a second core."""

    def __init__(self) -> None:
        self.crowded = False  # the last judged stretch showed no second core to be had
        self._split = False
        self._wall = self._cpu = self._idle = 0.0
        self._idle_known = True
        self._mark: tuple[float, float, float | None] | None = None

    def start(self) -> None:
        """A level starts."""
        self._mark = (time.monotonic(), time.process_time(), idle_seconds())

    def end(self, split: bool) -> None:
        """The level started last ended; it ran on two threads (`split`) or on one."""
        assert self._mark is not None
        wall, cpu, idle = self._mark
        now_idle = idle_seconds()
        if split != self._split:  # a stretch of levels run the same way
            self._split, self._wall, self._cpu, self._idle, self._idle_known = split, 0.0, 0.0, 0.0, True
        self._wall += time.monotonic() - wall
        self._cpu += time.process_time() - cpu
        if idle is None or now_idle is None:
            self._idle_known = False
        else:
            self._idle += now_idle - idle
        if self._wall < MEASURED or self._wall <= 0:
            return
        idle = self._idle / self._wall >= IDLE_CORE if self._idle_known else None
        if split:  # short of two cores while the machine had one idle: the threads waited for each other
            self.crowded = self._cpu / self._wall < CROWDED and not idle
        else:
            self.crowded = not idle if idle is not None else self._cpu / self._wall < WHOLE_CORE
        self._wall = self._cpu = self._idle = 0.0
        self._idle_known = True
