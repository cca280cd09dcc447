"""The sequential scheduler on an array of agents, compiled with numba: one interaction at a time.

Each interaction draws an ordered pair of distinct agents uniformly (two exact bounded integers,
Lemire's method with rejection) and applies the protocol's rule table to their states; a
randomized rule's outcome is chosen by one uniform double against the rule's cumulative
probabilities. This is the population model itself, so it is exact by construction; at a few
nanoseconds per interaction it is the fastest method while the agents fit in memory (the batched
simulator takes over above `batched.AGENT_LIMIT` agents). Random numbers come from xoshiro256**, whose
256-bit state is seeded from the simulator's numpy generator, so a run is determined by its seed.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

_MASK32 = uint64(0xFFFFFFFF)


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


@njit(cache=True)
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
        if outcomes > 1:
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


def seed_state(rng: np.random.Generator) -> np.ndarray:
    """A xoshiro256** state drawn from `rng` (never all zero)."""
    while True:
        s = rng.integers(0, np.iinfo(np.uint64).max, size=4, dtype=np.uint64, endpoint=True)
        if s.any():
            return s


def spread(counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """An array of agents holding the configuration `counts`, in random order."""
    agents = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
    rng.shuffle(agents)
    return agents
