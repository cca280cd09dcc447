"""The liveness graph's append-only arrays: appended in place on reserved address space, read whole without a copy,
and grown as ordinary arrays past the reservation or where none can be had."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from lockstep.checker.vector import reserved
from lockstep.checker.vector.reserved import Reserved


@pytest.mark.parametrize("nbytes", [None, 64, 4096])
def test_appended_items_read_back_whole_and_since(nbytes):
    """At the machine's size, at 64 bytes (eight int64s, so the appends outgrow it at once) and at a page."""
    a = Reserved(np.int64, nbytes)
    chunks = [np.arange(k * 100, k * 100 + k, dtype=np.int64) for k in range(1, 40)]
    for c in chunks:
        a.append(c)
    assert np.array_equal(a.whole(), np.concatenate(chunks)) and a.n == sum(len(c) for c in chunks)
    assert np.array_equal(a.since(5), np.concatenate(chunks)[5:])
    a.append(np.zeros(0, dtype=np.int64))
    assert a.whole().dtype == np.int64 and len(a.whole()) == a.n


def test_without_a_reservation_it_is_an_ordinary_array(monkeypatch):
    monkeypatch.setattr(reserved, "_reserve", lambda nbytes: None)
    a = Reserved(np.bool_)
    a.append(np.ones(10_000, dtype=bool))
    a.append(np.zeros(3, dtype=bool))
    assert a.whole().sum() == 10_000 and a.n == 10_003 and not a.whole()[-3:].any()


def test_a_reservation_is_only_backed_where_written():
    """Reserving half the machine's memory for each array costs none of it: the views read the written items."""
    arrays = [Reserved(np.int32) for _ in range(64)]  # 32 times the machine's memory, reserved
    for k, a in enumerate(arrays):
        a.append(np.full(1000, k, dtype=np.int32))
    assert [int(a.whole().sum()) for a in arrays] == [1000 * k for k in range(64)]
    with open("/proc/sys/vm/overcommit_memory") as f:
        strict = f.read().strip() == "2"  # strict accounting: no reservation, ordinary arrays
    assert strict or all(isinstance(a.data.base, memoryview) and len(a.data) > 1 << 20 for a in arrays)


def test_a_process_holding_reservations_can_start_others():
    """The reservations are not committed memory: a process that holds several (a liveness check in a user's tests,
    say) still forks, which it could not if each counted as half the machine's memory."""
    arrays = [Reserved(np.int64) for _ in range(8)]
    for a in arrays:
        a.append(np.arange(1000, dtype=np.int64))
    # a preexec_fn makes subprocess fork (rather than vfork), which commits the parent's counted mappings again
    done = subprocess.run([sys.executable, "-c", "pass"], preexec_fn=lambda: None, check=False)
    assert done.returncode == 0 and all(int(a.whole().sum()) == 499_500 for a in arrays)
