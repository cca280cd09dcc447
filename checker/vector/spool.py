"""Append-only uint64 tables that move to disk when the search's memory budget is spent.

The vector engine keeps two kinds of bulk data besides its visited set: the frontier (packed
states of the next level) and the parent links (fingerprint, parent fingerprint) of every
level. Both are written once and read back in order, so each is a `Spool`: segments of
`(columns, rows)` arrays held in memory while the shared `Budget` allows, and appended to a
file in the spill directory otherwise, read back through `np.memmap`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import numpy as np

WORD = np.dtype(np.uint64)


def available_memory() -> int:
    """Bytes of memory the system reports as available (a conservative default if unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 2 << 30


class Budget:
    """Bytes of RAM the spools may hold together; past it, new segments go to files in `directory`."""

    def __init__(self, limit: int | None = None, directory: str | None = None):
        self.limit = available_memory() // 4 if limit is None else limit
        self.used = 0
        self.spilled = 0
        self._dir = directory
        self._tmp: tempfile.TemporaryDirectory | None = None

    def directory(self) -> str:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="lockstep-spill-", dir=self._dir)
        return self._tmp.name

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


class Spool:
    """An append-only `(columns, rows)` uint64 table, in memory or spilled to a file."""

    _count = 0

    def __init__(self, budget: Budget, columns: int):
        self.budget = budget
        self.columns = columns
        self.rows = 0
        self.segments: list[np.ndarray | tuple[int, int]] = []  # in memory, or (file offset, rows)
        self.path: str | None = None
        self.ram = 0

    def __len__(self) -> int:
        return self.rows

    def append(self, block: np.ndarray) -> None:
        m = block.shape[1]
        if not m:
            return
        nbytes = block.size * WORD.itemsize
        if self.budget.used + nbytes <= self.budget.limit:
            self.segments.append(np.ascontiguousarray(block, dtype=np.uint64))
            self.budget.used += nbytes
            self.ram += nbytes
        else:
            if self.path is None:
                Spool._count += 1
                self.path = os.path.join(self.budget.directory(), f"spool-{Spool._count}.bin")
            offset = os.path.getsize(self.path) if os.path.exists(self.path) else 0
            with open(self.path, "ab") as f:
                np.ascontiguousarray(block, dtype=np.uint64).tofile(f)
            self.segments.append((offset, m))
            self.budget.spilled += nbytes
        self.rows += m

    def _segment(self, seg: np.ndarray | tuple[int, int]) -> np.ndarray:
        if isinstance(seg, np.ndarray):
            return seg
        offset, m = seg
        return np.memmap(self.path, dtype=np.uint64, mode="r", offset=offset, shape=(self.columns, m))

    def batches(self, size: int) -> Iterator[np.ndarray]:
        """The rows in order, as `(columns, <= size)` arrays in memory."""
        pending: list[np.ndarray] = []
        held = 0
        for seg in self.segments:
            arr = self._segment(seg)
            start = 0
            while start < arr.shape[1]:
                take = min(size - held, arr.shape[1] - start)
                pending.append(arr[:, start:start + take])
                held += take
                start += take
                if held == size:
                    yield _join(pending)
                    pending, held = [], 0
        if held:
            yield _join(pending)

    def find(self, column: int, value: int) -> np.ndarray | None:
        """The first row whose `column` holds `value` (all its columns), or None."""
        for seg in self.segments:
            arr = self._segment(seg)
            hit = np.flatnonzero(arr[column] == np.uint64(value))
            if hit.size:
                return np.array(arr[:, hit[0]])
        return None

    def row(self, i: int) -> np.ndarray:
        """Row `i` (all its columns)."""
        if not 0 <= i < self.rows:
            raise IndexError(f"row {i} of a spool of {self.rows}")
        for seg in self.segments:
            arr = self._segment(seg)
            if i < arr.shape[1]:
                return np.array(arr[:, i])
            i -= arr.shape[1]
        raise IndexError(i)

    def close(self) -> None:
        """Release the memory and the file."""
        self.budget.used -= self.ram
        self.ram = 0
        self.segments = []
        if self.path is not None and os.path.exists(self.path):
            os.remove(self.path)
        self.path = None


def _join(parts: list[np.ndarray]) -> np.ndarray:
    return np.array(parts[0]) if len(parts) == 1 else np.concatenate(parts, axis=1)
