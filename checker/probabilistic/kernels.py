"""The population simulators' compiled kernels (numba): the sequential scheduler, one interaction at a time.

Both kernels run the population model itself: each interaction draws an ordered pair of distinct
agents uniformly (exact bounded integers) and applies the protocol's rule table to their states; a
randomized rule's outcome is chosen by one uniform double against the rule's cumulative
probabilities. So both are exact by construction. They differ in how an agent's state is found:

- `interact` keeps every agent's state in an array (one to four bytes per agent; a few nanoseconds
  per interaction while the array stays in the cache).
- `batches` keeps only the configuration. The scheduler may relabel agents between interactions
  (it picks a uniform pair whatever the labels), so at the start of a batch the agents are
  labelled in state order, and an agent not yet used in the batch has the state whose block of
  labels holds its label (found through a guide table over the prefix sums of the counts); the
  agents used in the batch and their current states are kept in a hash table. A batch ends with
  the first interaction that meets an agent already used in it (or at its cap), so inside a batch
  every agent is in its state before or after it. Memory is O(Q + cap), whatever n.

Random numbers come from xoshiro256**, whose 256-bit state is seeded from the simulator's numpy
generator, so a run is determined by its seed.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

from ..cache import numba_dir

_CACHED = numba_dir() is not None  # machine code is kept only in the private per-user cache, else not at all
_MASK32 = uint64(0xFFFFFFFF)
_GOLDEN = uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing of agent labels


@njit(inline="always")
def _next(s: np.ndarray) -> uint64:
    """xoshiro256** (Blackman & Vigna): the next 64 random bits; `s` is the 4-word state."""
    x = s[1] * uint64(5)
    r = ((x << uint64(7)) | (x >> uint64(57))) * uint64(9)
    t = s[1] << uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = (s[3] << uint64(45)) | (s[3] >> uint64(19))
    return r


@njit(inline="always")
def _below(s: np.ndarray, n: int) -> int:
    """A uniform integer in [0, n), n < 2**32 (Lemire's multiply-shift with rejection: unbiased)."""
    bound = uint64(n)
    m = (_next(s) >> uint64(32)) * bound
    low = m & _MASK32
    if low < bound:
        threshold = (uint64(0x100000000) - bound) % bound
        while low < threshold:
            m = (_next(s) >> uint64(32)) * bound
            low = m & _MASK32
    return np.int64(m >> uint64(32))


@njit(inline="always")
def _below_any(s: np.ndarray, n: int, mask: uint64) -> int:
    """A uniform integer in [0, n) for any n < 2**63; `mask` is 2**k − 1 ≥ n − 1 (used from 2**32 on)."""
    if n < 0x100000000:
        return _below(s, n)
    r = _next(s) & mask
    while r >= uint64(n):
        r = _next(s) & mask
    return np.int64(r)


@njit(cache=_CACHED)
def interact(agents: np.ndarray, counts: np.ndarray, out_a: np.ndarray, out_b: np.ndarray, cum: np.ndarray,
             steps: int, state: np.ndarray) -> None:
    """Run `steps` interactions on `agents` (state indices), keeping `counts` (per state) in step.
    `out_a[k, j]`, `out_b[k, j]` are outcome j of the pair k = a·Q + b, chosen while the uniform draw
    is at least `cum[k, j]` (the last entry of each row is 2, above every draw)."""
    n = agents.shape[0]
    q = counts.shape[0]
    outcomes = out_a.shape[1]
    for _ in range(steps):
        i = _below(state, n)
        j = _below(state, n - 1)
        if j >= i:
            j += 1
        u = agents[i]
        v = agents[j]
        k = u * q + v
        o = 0
        if outcomes > 1:  # the first outcome whose cumulative probability exceeds a uniform draw
            r = float(_next(state) >> uint64(11)) * (1.0 / 9007199254740992.0)
            while r >= cum[k, o]:
                o += 1
        a2 = out_a[k, o]
        b2 = out_b[k, o]
        if a2 != u:
            agents[i] = a2
            counts[u] -= 1
            counts[a2] += 1
        if b2 != v:
            agents[j] = b2
            counts[v] -= 1
            counts[b2] += 1


@njit(inline="always")
def _slot(table: np.ndarray, agent: int, batch: int, shift: uint64) -> int:
    """The row of `agent` in the hash table, or the free row where it would go (linear probing;
    a row belongs to the current batch while its column 2 holds the batch's number)."""
    mask = table.shape[0] - 1
    h = np.int64((uint64(agent) * _GOLDEN) >> shift)
    while table[h, 2] == batch and table[h, 0] != agent:
        h = (h + 1) & mask
    return h


@njit(inline="always")
def _block(ends: np.ndarray, guide: np.ndarray, shift: int, label: int) -> int:
    """The block of labels that holds `label`: the least x with ends[x] > label, from the guide's guess."""
    x = guide[label >> shift]
    while ends[x] <= label:
        x += 1
    return x


@njit(cache=_CACHED)
def batches(counts: np.ndarray, n: int, out_a: np.ndarray, out_b: np.ndarray, cum: np.ndarray, limit: int,
            until: int, cap: int, state: np.ndarray, table: np.ndarray, batch: int, touched: np.ndarray,
            track: bool) -> tuple[int, int]:
    """Run batches on the configuration `counts` (n agents) until at least `until` interactions have
    run, cutting the last batch at `limit`; returns (interactions run, the last batch's number).

    A batch ends after the first interaction that meets an agent already used in it, or after `cap`
    interactions that do not. At its start the agents are labelled 0..n−1 in state order: `held`
    lists the states held, label l is in block x of `held` when ends[x−1] ≤ l < ends[x], and `guide`
    maps the high bits of a label to the block of the first label with those bits, from which
    `_block` scans forward. `table` (rows: agent, state, batch number;
    a power of two > 2·cap rows) holds the agents used in the current batch; `batch` is the previous
    batch's number. With `track`, `touched` marks the states held at some moment of the last batch.
    `out_a`, `out_b`, `cum` are the rule table as in `interact`."""
    q = counts.shape[0]
    outcomes = out_a.shape[1]
    rows_shift = uint64(64)
    rows = table.shape[0]
    while rows > 1:
        rows >>= 1
        rows_shift -= uint64(1)
    mask = uint64(1)  # 2**k − 1 ≥ n − 1, for labels beyond 32 bits
    while mask < uint64(n - 1):
        mask = (mask << uint64(1)) | uint64(1)
    bits = 1  # labels have `bits` bits; the guide has one entry per 2**shift labels, at least Q of them
    while (1 << bits) < n and bits < 62:
        bits += 1
    wanted = 1
    while (1 << wanted) < 2 * q:
        wanted += 1
    shift = bits - wanted if bits > wanted else 0
    held = np.empty(q, np.int64)
    ends = np.empty(q, np.int64)
    guide = np.empty(((n - 1) >> shift) + 1, np.int64)
    t = 0
    while t < limit:
        batch += 1
        m = 0
        total = 0
        for a in range(q):
            c = counts[a]
            if c > 0:
                total += c
                held[m] = a
                ends[m] = total
                m += 1
            if track:
                touched[a] = c > 0
        x = 0
        for g in range(guide.shape[0]):
            while ends[x] <= (g << shift):
                x += 1
            guide[g] = x
        free = 0
        while t < limit:
            i = _below_any(state, n, mask)
            j = _below_any(state, n - 1, mask)
            if j >= i:
                j += 1
            si = _slot(table, i, batch, rows_shift)
            used_i = table[si, 2] == batch
            sj = _slot(table, j, batch, rows_shift)
            used_j = table[sj, 2] == batch
            u = table[si, 1] if used_i else held[_block(ends, guide, shift, i)]
            v = table[sj, 1] if used_j else held[_block(ends, guide, shift, j)]
            k = u * q + v
            o = 0
            if outcomes > 1:
                r = float(_next(state) >> uint64(11)) * (1.0 / 9007199254740992.0)
                while r >= cum[k, o]:
                    o += 1
            a2 = out_a[k, o]
            b2 = out_b[k, o]
            counts[u] -= 1
            counts[a2] += 1
            counts[v] -= 1
            counts[b2] += 1
            if track:
                touched[a2] = True
                touched[b2] = True
            t += 1
            if used_i or used_j:
                break  # the collision ends the batch
            table[si, 0] = i
            table[si, 1] = a2
            table[si, 2] = batch
            sj = _slot(table, j, batch, rows_shift)  # i may have taken j's row
            table[sj, 0] = j
            table[sj, 1] = b2
            table[sj, 2] = batch
            free += 1
            if free >= cap:
                break
        if t >= until:
            break
    return t, batch

def seed_state(rng: np.random.Generator) -> np.ndarray:
    """A xoshiro256** state drawn from `rng` (never all zero)."""
    while True:
        s = rng.integers(0, np.iinfo(np.uint64).max, size=4, dtype=np.uint64, endpoint=True)
        if s.any():
            return s


def spread(counts: np.ndarray, rng: np.random.Generator, dtype: np.dtype) -> np.ndarray:
    """An array of agents (of `dtype`) holding the configuration `counts`, in random order."""
    agents = np.repeat(np.arange(len(counts), dtype=dtype), counts)
    rng.shuffle(agents)
    return agents
