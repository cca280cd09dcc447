"""The vector engine's compiled loops (numba): fingerprints, the visited table, serial order.

numpy's whole-array passes cost one trip through memory per operation; these loops make one trip
for what the search does per candidate successor: fingerprint its words (the parent's XOR the
step's delta) in the scalar engine's order (frontier row, then transition), bucket the
fingerprints by their top bits (stably, so that a bucket probes one cache-sized stretch of the
table), and insert each into the visited table if it is absent, so the first occurrence of a
state is the one kept without a deduplication pass. Every kernel releases the GIL (`nogil`),
so threads of one search run them in parallel. This module is imported on first use (numba's
import costs a fraction of a second) and its machine code is cached on disk (`cache=True`).

The table is linear probing over a uint64 array, 0 marking an empty slot; a key's home slot is
`(key >> 32) * capacity >> 32`, so any capacity below 2^32 works and homes are monotone in the
key. `_mix` is splitmix64's finaliser, equal to `layout._mix_array`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S32 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(32)
_ZERO, _ONE = np.uint64(0), np.uint64(1)

_jit = nb.njit(cache=True, nogil=True)


@nb.njit(cache=True, nogil=True, inline="always")
def _mix(z: np.uint64) -> np.uint64:
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@nb.njit(cache=True, nogil=True, inline="always")
def _home(key: np.uint64, cap: np.uint64) -> np.int64:
    return np.int64(((key >> _S32) * cap) >> _S32)


@_jit
def fingerprints(words: np.ndarray, seed: np.uint64, exact: bool) -> np.ndarray:
    """Fingerprints of a `(words, rows)` batch (as `Layout.fingerprints`)."""
    nw, n = words.shape
    out = np.empty(n, np.uint64)
    for r in range(n):
        h = _mix(words[0, r] ^ seed)
        for w in range(1, nw):
            h = _mix(h ^ words[w, r])
        if not exact and h == _ZERO:
            h = _ONE
        out[r] = h
    return out


@_jit
def contains(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which keys are in the table."""
    cap = np.uint64(table.size)
    out = np.zeros(keys.size, np.bool_)
    for i in range(keys.size):
        k = keys[i]
        p = _home(k, cap)
        while True:
            v = table[p]
            if v == k:
                out[i] = True
                break
            if v == _ZERO:
                break
            p += 1
            if p == table.size:
                p = 0
    return out


@nb.njit(cache=True, nogil=True, inline="always")
def _add(table: np.ndarray, k: np.uint64, cap: np.uint64) -> bool:
    """Insert key `k` if absent; whether it was."""
    p = _home(k, cap)
    while True:
        v = table[p]
        if v == k:
            return False
        if v == _ZERO:
            table[p] = k
            return True
        p += 1
        if p == table.size:
            p = 0


@_jit
def insert(table: np.ndarray, keys: np.ndarray) -> int:
    """Insert keys absent from the table (distinct or not); the number newly inserted."""
    cap = np.uint64(table.size)
    added = 0
    for i in range(keys.size):
        if _add(table, keys[i], cap):
            added += 1
    return added


@_jit
def rehash(old: np.ndarray, new: np.ndarray, start: int, stop: int) -> None:
    """Move the keys of `old[start:stop]` into `new` (linear probing is correct in any insertion order)."""
    cap = np.uint64(new.size)
    for i in range(start, stop):
        k = old[i]
        if k == _ZERO:
            continue
        p = _home(k, cap)
        while new[p] != _ZERO:
            p += 1
            if p == new.size:
                p = 0
        new[p] = k


@_jit
def serial_order(rows: np.ndarray, seg_start: np.ndarray, seg_tid: np.ndarray, n: int,
                 order: np.ndarray, tids: np.ndarray) -> None:
    """Candidates laid out transition-major (segment s holds transition `seg_tid[s]`'s candidates from
    `seg_start[s]`, rows ascending) put in the scalar engine's order — row, then transition — by a
    stable counting sort on the row: `order[k]` is the k-th candidate's position, `tids[k]` its
    transition."""
    count = np.zeros(n + 1, np.int64)
    for j in range(rows.size):
        count[rows[j] + 1] += 1
    for r in range(n):
        count[r + 1] += count[r]
    nseg = seg_tid.size
    for s in range(nseg):
        stop = seg_start[s + 1]
        t = seg_tid[s]
        for j in range(seg_start[s], stop):
            r = rows[j]
            k = count[r]
            count[r] = k + 1
            order[k] = j
            tids[k] = t


@_jit
def candidate_fps(words: np.ndarray, rows: np.ndarray, deltas: np.ndarray, order: np.ndarray, allow: np.ndarray,
                  seed: np.uint64, exact: bool) -> tuple:
    """The fingerprints of candidates `order[...]` in serial order, with their serial positions, leaving
    out those equal to their parent or not allowed: (fingerprints, positions, count)."""
    nw = words.shape[0]
    check = allow.size > 0
    fps = np.empty(order.size, np.uint64)
    ks = np.empty(order.size, np.int64)
    n = 0
    for k in range(order.size):
        j = order[k]
        if check and not allow[j]:
            continue
        moved = False
        for w in range(nw):
            if deltas[w, j] != _ZERO:
                moved = True
                break
        if not moved:
            continue
        r = rows[j]
        h = _mix(words[0, r] ^ deltas[0, j] ^ seed)
        for w in range(1, nw):
            h = _mix(h ^ (words[w, r] ^ deltas[w, j]))
        if not exact and h == _ZERO:
            h = _ONE
        fps[n] = h
        ks[n] = k
        n += 1
    return fps, ks, n


@_jit
def keep_allowed(fps: np.ndarray, ks: np.ndarray, n: int, order: np.ndarray, allow: np.ndarray) -> int:
    """Drop, in place, the first `n` pairs whose candidate (`order[position]`) is not allowed; how many stay."""
    m = 0
    for i in range(n):
        if allow[order[ks[i]]]:
            fps[m] = fps[i]
            ks[m] = ks[i]
            m += 1
    return m


@_jit
def bucket_sort(fps: np.ndarray, ks: np.ndarray, n: int, bits: int, parts_mask: np.uint64) -> tuple:
    """The first `n` (fingerprint, position) pairs stably sorted by table part (the fingerprint's low bits
    under `parts_mask`), then by the fingerprint's top `bits` bits: each bucket's home slots are one stretch
    of its part's table, and each key's occurrences keep their order. Returns the sorted pairs and where
    each part's pairs start (one more entry than parts)."""
    parts = np.int64(parts_mask) + 1
    nb = 1 << bits
    shift = np.uint64(64 - bits)
    count = np.zeros(parts * nb + 1, np.int64)
    for i in range(n):
        b = np.int64(fps[i] & parts_mask) * nb + (np.int64(fps[i] >> shift) if bits else 0)
        count[b + 1] += 1
    for b in range(parts * nb):
        count[b + 1] += count[b]
    starts = np.empty(parts + 1, np.int64)
    for q in range(parts + 1):
        starts[q] = count[q * nb]
    out_fp = np.empty(n, np.uint64)
    out_k = np.empty(n, np.int64)
    for i in range(n):
        b = np.int64(fps[i] & parts_mask) * nb + (np.int64(fps[i] >> shift) if bits else 0)
        p = count[b]
        count[b] = p + 1
        out_fp[p] = fps[i]
        out_k[p] = ks[i]
    return out_fp, out_k, starts


@_jit
def insert_sorted(table: np.ndarray, size: int, limit: int, fps: np.ndarray, ks: np.ndarray, start: int,
                  out_k: np.ndarray, out_fp: np.ndarray, m: int) -> tuple[int, int, int]:
    """Insert `fps[start:]` in order, each if absent, appending (position, fingerprint) of the new ones to
    the outputs at `m`; stops before the table holds more than `limit` keys. Returns (next i, size, m)."""
    cap = np.uint64(table.size)
    for i in range(start, fps.size):
        if size >= limit:
            return i, size, m
        h = fps[i]
        if _add(table, h, cap):
            size += 1
            out_k[m] = ks[i]
            out_fp[m] = h
            m += 1
    return fps.size, size, m
