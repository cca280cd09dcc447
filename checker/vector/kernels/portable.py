"""The vector engine's loops as numpy whole-array passes: `compiled`'s functions, same results.

A search starts with these and moves to the compiled loops once its levels are large enough to
repay numba's import (a fraction of a second, plus loading the cached machine code): small
checks never import numba. Each function has the signature and the results of its namesake in
`compiled` — the same visited-table layout (linear probing, home slot `(key >> 32) * capacity >>
32`, 0 for empty), the same serial order, the same first occurrences — so a table filled by one
is read and extended by the other.
"""

from __future__ import annotations

import numpy as np

_Z = np.uint64(0)
_S32 = np.uint64(32)


def _home(keys: np.ndarray, cap: int) -> np.ndarray:
    return (((keys >> _S32) * np.uint64(cap)) >> _S32).astype(np.int64)


def _mix(z: np.ndarray) -> np.ndarray:
    z = z ^ (z >> np.uint64(30))
    z = z * np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def fingerprints(words: np.ndarray, seed: np.uint64, exact: bool) -> np.ndarray:
    """Fingerprints of a `(words, rows)` batch (as `Layout.fingerprints`)."""
    h = _mix(words[0] ^ np.uint64(seed))
    for w in range(1, words.shape[0]):
        h = _mix(h ^ words[w])
    if not exact:
        h[h == 0] = 1
    return h


def contains(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which keys are in the table."""
    cap = table.size
    out = np.zeros(keys.size, dtype=np.bool_)
    go = np.arange(keys.size)
    k = keys
    p = _home(keys, cap)
    while go.size:
        v = table[p]
        hit = v == k
        out[go[hit]] = True
        on = (~hit & (v != _Z)).nonzero()[0]
        go, k, p = go[on], k[on], p[on] + 1
        p[p == cap] = 0
    return out


def _place(table: np.ndarray, keys: np.ndarray) -> None:
    """Store distinct keys, none of them in the table, each in the first empty slot of its probe sequence
    (keys racing for one empty slot: one wins, the others probe on)."""
    cap = table.size
    k = keys
    p = _home(keys, cap)
    while k.size:
        empty = table[p] == _Z
        table[p[empty]] = k[empty]
        won = table[p] == k
        on = (~won).nonzero()[0]
        k, p = k[on], p[on] + 1
        p[p == cap] = 0


def _fresh_firsts(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Positions of the keys that are the first occurrence of their value and not in the table, ascending."""
    _vals, first = np.unique(keys, return_index=True)
    first.sort()
    return first[~contains(table, keys[first])]


def insert(table: np.ndarray, keys: np.ndarray) -> int:
    """Insert keys absent from the table (distinct or not); the number newly inserted."""
    fresh = _fresh_firsts(table, keys)
    _place(table, keys[fresh])
    return int(fresh.size)


def rehash(old: np.ndarray, new: np.ndarray, start: int, stop: int, state: np.ndarray, mask: int = 0,
           part: int = 0) -> None:
    """Move the keys k of `old[start:stop]` with `k & mask == part` (every key: mask 0) into `new` (`state`,
    which the C loop keeps between slices, is not needed here)."""
    keys = old[start:stop]
    _place(new, keys[(keys != _Z) & (keys & np.uint64(mask) == np.uint64(part))])


def serial_order(rows: np.ndarray, seg_start: np.ndarray, seg_tid: np.ndarray, n: int,
                 order: np.ndarray, tids: np.ndarray) -> None:
    """Transition-major candidates put in serial order (row, then transition): `order[k]` is the k-th
    candidate's position, `tids[k]` its transition."""
    total = rows.size
    perm = np.argsort(rows, kind="stable")  # segments are in transition order, so ties keep it
    order[:total] = perm
    tids[:total] = np.repeat(seg_tid, np.diff(seg_start))[perm]


def candidate_fps(words: np.ndarray, rows: np.ndarray, deltas: np.ndarray, order: np.ndarray, allow: np.ndarray,
                  seed: np.uint64, exact: bool) -> tuple:
    """(fingerprints, serial positions, count) of the candidates `order[...]` that moved and are allowed."""
    j = order
    keep = (deltas[:, j] != _Z).any(axis=0)
    if allow.size:
        keep &= allow[j]
    ks = keep.nonzero()[0]
    sel = j[ks]
    fps = fingerprints(words[:, rows[sel]] ^ deltas[:, sel], seed, exact)
    return fps, ks.astype(np.int64), int(ks.size)


def keep_allowed(fps: np.ndarray, ks: np.ndarray, n: int, order: np.ndarray, allow: np.ndarray) -> int:
    """Drop, in place, the first `n` pairs whose candidate is not allowed; how many stay."""
    sel = allow[order[ks[:n]]]
    m = int(np.count_nonzero(sel))
    fps[:m] = fps[:n][sel]
    ks[:m] = ks[:n][sel]
    return m


def gather_range(cand: np.ndarray, keys: np.ndarray, pos: np.ndarray, lo: int, hi: int, T1: int, base: int,  # noqa: N803
                 tbits: int, words: np.ndarray, links: np.ndarray, ukeys: np.ndarray) -> None:
    """For the fused kernel's new candidates `pos[lo:hi]`: their words, parent links (parent's index in the
    level, shifted, or the transition) and serial keys within the level, written at lo..hi of the outputs."""
    rows, tids = np.divmod(keys[pos[lo:hi]], T1)
    words[:, lo:hi] = cand[:, pos[lo:hi]]
    links[lo:hi] = ((base + rows).astype(np.uint64) << np.uint64(tbits)) | tids.astype(np.uint64)
    ukeys[lo:hi] = (base + rows) * T1 + tids


def merge_runs(k0: np.ndarray, f0: np.ndarray, k1: np.ndarray, f1: np.ndarray) -> tuple[np.ndarray, ...]:
    """Two tables' new states, each in serial order, merged by position: (positions, fingerprints)."""
    k = np.concatenate([k0, k1])
    serial = np.argsort(k, kind="stable")
    return k[serial], np.concatenate([f0, f1])[serial]


def merge_range(k0: np.ndarray, f0: np.ndarray, k1: np.ndarray, f1: np.ndarray, lo: int, hi: int,
                pos: np.ndarray, fps: np.ndarray) -> None:
    """Outputs lo..hi of `merge_runs`, written at lo..hi of `pos` and `fps`."""
    k, f = merge_runs(k0, f0, k1, f1)
    pos[lo:hi], fps[lo:hi] = k[lo:hi], f[lo:hi]


def insert_serial(table: np.ndarray, size: int, limit: int, fps: np.ndarray, ks: np.ndarray | None, n: int,
                  start: int, parts_mask: int, part: int, out_k: np.ndarray, out_fp: np.ndarray,
                  m: int, scratch: np.ndarray | None = None) -> tuple[int, int, int]:
    """Insert the keys of table `part` (`key & parts_mask == part`) among `fps[start:n]`, in order, each if
    absent, appending (position `ks[i]`, or i without `ks`, and fingerprint) of the new ones to the outputs at
    `m`; stops before the table holds more than `limit` keys. Returns (next i, size, m). `scratch`, int64
    room for n - start positions that the C loop reuses, is not needed here."""
    if ks is None:
        ks = np.arange(n, dtype=np.int64)
    rest = fps[start:n]
    mine = (rest & np.uint64(parts_mask)) == np.uint64(part)
    idx = mine.nonzero()[0]
    fresh = idx[_fresh_firsts(table, rest[idx])]
    room = max(limit - size, 0)
    nxt = n
    if fresh.size > room:
        nxt = start + int(fresh[room])
        fresh = fresh[:room]
    _place(table, rest[fresh])
    c = fresh.size
    out_k[m:m + c] = ks[start:n][fresh]
    out_fp[m:m + c] = rest[fresh]
    return nxt, size + c, m + c


def route(fps: np.ndarray, rmask: int, off: int, r0: np.ndarray, r1: np.ndarray, counts: np.ndarray) -> None:
    """Append the positions `off + i` of the keys `fps[i]` to two lists by visited table, `r0` where
    `fps[i] & rmask` is 0 and `r1` where it is not, from `counts[0]` and `counts[1]` on (updated)."""
    ones = (fps & np.uint64(rmask)) != 0
    for p, (out, sel) in enumerate(((r0, ~ones), (r1, ones))):
        at = np.flatnonzero(sel) + off
        out[counts[p]:counts[p] + at.size] = at
        counts[p] += at.size


def insert_at(table: np.ndarray, size: int, limit: int, fps: np.ndarray, ks: np.ndarray | None, pos: np.ndarray,
              q: int, c: int, out_k: np.ndarray, out_fp: np.ndarray, m: int,
              por: tuple | None = None) -> tuple[int, int, int]:
    """Insert the keys at positions `pos[q:c]` in order, each if absent, appending (position `ks[i]`, or i
    without `ks`, and fingerprint) of the new ones to the outputs at `m`; stops before the table holds
    more than `limit` keys. Returns (the q to go on from, size, m). `por` = (flags, keys, T1, back) of a
    partial-order reduction: a candidate flagged 2 is left out unless `back[0]` or `back[1]` marks its row."""
    at = pos[q:c]
    idx = np.arange(at.size)
    if por is not None:
        flags, keys, t1, back = por
        rows = keys[at] // t1
        idx = idx[(flags[at] != 2) | (back[0][rows] != 0) | (back[1][rows] != 0)]
    keys = fps[at[idx]]
    fresh = _fresh_firsts(table, keys)
    room = max(limit - size, 0)
    nxt = c
    if fresh.size > room:
        nxt = q + int(idx[fresh[room]])
        fresh = fresh[:room]
    _place(table, keys[fresh])
    n = fresh.size
    chosen = at[idx[fresh]]
    out_k[m:m + n] = chosen if ks is None else ks[chosen]
    out_fp[m:m + n] = keys[fresh]
    return nxt, size + n, m + n


def probe(table: np.ndarray, level: np.ndarray, fps: np.ndarray, flags: np.ndarray, keys: np.ndarray, T1: int,  # noqa: N803
          pos: np.ndarray, c: int, back: np.ndarray) -> None:
    """The cycle proviso for the candidates at `pos[:c]`: back[row] = 1 where one flagged 1 (in its row's
    reduced set) is in `table` but not in `level` (the states found at this level)."""
    at = pos[:c][flags[pos[:c]] == 1]
    h = fps[at]
    old = contains(table, h) & ~contains(level, h)
    back[keys[at[old]] // T1] = 1
