"""The population simulators' kernels in Python: `kernels.Compiled`'s functions, the same results for a seed.

Used where no C compiler builds the C kernels (and by the tests, against them): the same xoshiro256**
stream, bounded integers, outcome draws, batch labelling and hash table, one interaction at a time,
about a microsecond each.
"""

from __future__ import annotations

import numpy as np

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def _next(s: list[int]) -> int:
    """xoshiro256**: the next 64 random bits; `s` is the 4-word state, as Python ints."""
    x = (s[1] * 5) & _M64
    r = ((((x << 7) | (x >> 57)) & _M64) * 9) & _M64
    t = (s[1] << 17) & _M64
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = ((s[3] << 45) | (s[3] >> 19)) & _M64
    return r


def _below(s: list[int], n: int) -> int:
    """A uniform integer in [0, n), n < 2**32 (Lemire's multiply-shift with rejection)."""
    m = (_next(s) >> 32) * n
    low = m & 0xFFFFFFFF
    if low < n:
        threshold = (0x100000000 - n) % n
        while low < threshold:
            m = (_next(s) >> 32) * n
            low = m & 0xFFFFFFFF
    return m >> 32


def _below_any(s: list[int], n: int, mask: int) -> int:
    """A uniform integer in [0, n) for any n < 2**63; `mask` is 2**k − 1 ≥ n − 1."""
    if n < 0x100000000:
        return _below(s, n)
    r = _next(s) & mask
    while r >= n:
        r = _next(s) & mask
    return r


def _outcome(s: list[int], cum: list[list[float]], k: int) -> int:
    """The first outcome of pair k whose cumulative probability exceeds a uniform draw."""
    row = cum[k]
    o = 0
    if len(row) > 1:
        r = float(_next(s) >> 11) * (1.0 / 9007199254740992.0)
        while r >= row[o]:
            o += 1
    return o


def interact(agents: np.ndarray, counts: np.ndarray, out_a: np.ndarray, out_b: np.ndarray, cum: np.ndarray,
             steps: int, state: np.ndarray) -> None:
    """As `kernels.Compiled.interact`."""
    s = [int(w) for w in state]
    n, q = agents.size, counts.size
    ag, cn, oa, ob, cm = agents.tolist(), counts.tolist(), out_a.tolist(), out_b.tolist(), cum.tolist()
    for _ in range(steps):
        i = _below(s, n)
        j = _below(s, n - 1)
        if j >= i:
            j += 1
        u, v = ag[i], ag[j]
        k = u * q + v
        o = _outcome(s, cm, k)
        a2, b2 = oa[k][o], ob[k][o]
        if a2 != u:
            ag[i] = a2
            cn[u] -= 1
            cn[a2] += 1
        if b2 != v:
            ag[j] = b2
            cn[v] -= 1
            cn[b2] += 1
    agents[:] = ag
    counts[:] = cn
    state[:] = s


def _slot(table: np.ndarray, agent: int, batch: int, shift: int) -> int:
    """The row of `agent` in the hash table, or the free row where it would go."""
    mask = table.shape[0] - 1
    h = ((agent * _GOLDEN) & _M64) >> shift
    while table[h, 2] == batch and table[h, 0] != agent:
        h = (h + 1) & mask
    return h


def batches(counts: np.ndarray, n: int, out_a: np.ndarray, out_b: np.ndarray, cum: np.ndarray, limit: int,
            until: int, cap: int, state: np.ndarray, table: np.ndarray, batch: int, touched: np.ndarray,
            track: bool) -> tuple[int, int]:
    """As `kernels.Compiled.batches`."""
    s = [int(w) for w in state]
    q = counts.size
    cn, oa, ob, cm = counts.tolist(), out_a.tolist(), out_b.tolist(), cum.tolist()
    shift = 64 - (table.shape[0].bit_length() - 1)
    mask = 1
    while mask < n - 1:
        mask = (mask << 1) | 1
    bits = 1
    while (1 << bits) < n and bits < 62:
        bits += 1
    wanted = 1
    while (1 << wanted) < 2 * q:
        wanted += 1
    gshift = bits - wanted if bits > wanted else 0
    t = 0
    while t < limit:
        batch += 1
        held, ends, total = [], [], 0
        for a in range(q):
            if cn[a] > 0:
                total += cn[a]
                held.append(a)
                ends.append(total)
            if track:
                touched[a] = cn[a] > 0
        guide, x = [], 0
        for g in range(((n - 1) >> gshift) + 1):
            while ends[x] <= g << gshift:
                x += 1
            guide.append(x)

        def state_of(label: int) -> int:
            x = guide[label >> gshift]
            while ends[x] <= label:
                x += 1
            return held[x]

        free = 0
        while t < limit:
            i = _below_any(s, n, mask)
            j = _below_any(s, n - 1, mask)
            if j >= i:
                j += 1
            si = _slot(table, i, batch, shift)
            used_i = table[si, 2] == batch
            sj = _slot(table, j, batch, shift)
            used_j = table[sj, 2] == batch
            u = int(table[si, 1]) if used_i else state_of(i)
            v = int(table[sj, 1]) if used_j else state_of(j)
            k = u * q + v
            o = _outcome(s, cm, k)
            a2, b2 = oa[k][o], ob[k][o]
            cn[u] -= 1
            cn[a2] += 1
            cn[v] -= 1
            cn[b2] += 1
            if track:
                touched[a2] = touched[b2] = True
            t += 1
            if used_i or used_j:
                break  # the collision ends the batch
            table[si] = (i, a2, batch)
            sj = _slot(table, j, batch, shift)  # i may have taken j's row
            table[sj] = (j, b2, batch)
            free += 1
            if free >= cap:
                break
        if t >= until:
            break
    counts[:] = cn
    state[:] = s
    return t, batch
