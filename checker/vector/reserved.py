"""An append-only array on reserved address space: appended to in place and read whole without a copy.

The liveness graph's per-state and per-step arrays grow a batch at a time to hundreds of megabytes. Kept as chunks
and joined at the end, each is written twice, and the join touches as much fresh memory again, which the kernel
must zero page by page (on a virtual machine, a large part of a search's time). Here the array lives in an
anonymous mapping of half the machine's memory, reserved but not committed: only the pages written are backed,
once. Where the system will not reserve so much (strict overcommit accounting), or past the reservation, it is an
ordinary array grown by doubling.
"""

from __future__ import annotations

import functools
import mmap
import os
import platform
import sys

import numpy as np


def _machine_bytes() -> int:
    """Half the machine's physical memory in bytes (an array of a search past it grows by doubling; a kernel that
    estimates whether memory can be had refuses one mapping larger than the machine), or 16 GiB if unknown."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 1 << 34


# Linux's MAP_NORESERVE where it is not 0x4000, by the machine's name
_NORESERVE = (("mips", 0x0400), ("ppc", 0x40), ("powerpc", 0x40), ("sparc", 0x40), ("alpha", 0x10000))


@functools.cache
def _no_reserve() -> int | None:
    """The flag that keeps a private mapping out of the system's commit accounting (Linux's MAP_NORESERVE, which
    older versions of Python's mmap module do not name: then by architecture), 0 where mappings are not accounted, or None
    where they would be: strict accounting (vm.overcommit_memory = 2), which ignores the flag. Read once per process."""
    if hasattr(mmap, "MAP_NORESERVE"):
        flag = mmap.MAP_NORESERVE
    elif not sys.platform.startswith("linux"):
        return 0
    else:
        arch = platform.machine().lower()
        flag = next((v for prefix, v in _NORESERVE if arch.startswith(prefix)), 0x4000)
    try:
        with open("/proc/sys/vm/overcommit_memory", encoding="ascii") as f:
            if f.read().strip() == "2":
                return None
    except OSError:
        pass
    return flag


def _reserve(nbytes: int) -> mmap.mmap | None:
    """An anonymous private mapping of `nbytes` whose pages are backed only when written and which the system does
    not count as committed, or None where it cannot be had. A counted one would make every fork of the process fail
    (it would have to commit the whole reservation again): a check run in a process that then starts others."""
    flag = _no_reserve()
    if flag is None:
        return None
    try:
        return mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | flag)
    except (OSError, OverflowError, ValueError):
        return None


class Reserved:
    """A 1-D array of `dtype` that only grows at its end: `append`, then `since(start)` or `whole()` as views."""

    def __init__(self, dtype: type, nbytes: int | None = None):
        self.dtype = np.dtype(dtype)
        self.n = 0
        mm = _reserve(nbytes if nbytes is not None else _machine_bytes())
        # the view keeps the mapping alive; it is unmapped once the last view of it goes
        self.data = np.frombuffer(mm, dtype=self.dtype) if mm is not None else np.zeros(1 << 12, dtype=self.dtype)

    def append(self, a: np.ndarray) -> None:
        m = len(a)
        if self.n + m > len(self.data):  # past the reservation (or without one): an array twice as large
            grown = np.empty(max(self.n + m, 2 * len(self.data)), dtype=self.dtype)
            grown[:self.n] = self.data[:self.n]
            self.data = grown
        self.data[self.n:self.n + m] = a
        self.n += m

    def since(self, start: int) -> np.ndarray:
        """The items from `start` on (a view)."""
        return self.data[start:self.n]

    def whole(self) -> np.ndarray:
        """Every item (a view)."""
        return self.data[:self.n]
