"""The population simulators' compiled kernels (C): the sequential scheduler, one interaction at a time.

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
generator, so a run is determined by its seed. The C is built once per machine through the vector
engine's mechanism (`cbuild`: the per-user cache, loaded with ctypes); without a C compiler `load`
gives `portable`, the same loops in Python with the same results, much slower.
"""

from __future__ import annotations

import ctypes
import sys
from types import ModuleType
from typing import Any

import numpy as np

from ..vector.kernels.cbuild import BuildError, Library, compiler

SOURCE = r"""
#include <stdint.h>
#include <stdlib.h>
#define GOLDEN UINT64_C(0x9E3779B97F4A7C15) /* Fibonacci hashing of agent labels */

static inline uint64_t next(uint64_t *s) {  /* xoshiro256** (Blackman & Vigna): the next 64 random bits */
    const uint64_t x = s[1] * 5, r = ((x << 7) | (x >> 57)) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return r;
}

static inline int64_t below(uint64_t *s, int64_t n) {  /* uniform in [0, n), n < 2^32: Lemire's method, unbiased */
    const uint64_t bound = (uint64_t)n;
    uint64_t m = (next(s) >> 32) * bound, low = m & 0xFFFFFFFFu;
    if (low < bound) {
        const uint64_t threshold = (UINT64_C(0x100000000) - bound) % bound;
        while (low < threshold) { m = (next(s) >> 32) * bound; low = m & 0xFFFFFFFFu; }
    }
    return (int64_t)(m >> 32);
}

static inline int64_t below_any(uint64_t *s, int64_t n, uint64_t mask) {  /* any n < 2^63; mask = 2^k - 1 >= n - 1 */
    if (n < INT64_C(0x100000000)) return below(s, n);
    uint64_t r = next(s) & mask;
    while (r >= (uint64_t)n) r = next(s) & mask;
    return (int64_t)r;
}

static inline int64_t outcome(uint64_t *s, const double *cum, int64_t k, int64_t outcomes) {
    /* the first outcome of pair k whose cumulative probability exceeds a uniform draw */
    int64_t o = 0;
    if (outcomes > 1) {
        const double r = (double)(next(s) >> 11) * (1.0 / 9007199254740992.0);
        while (r >= cum[k * outcomes + o]) o++;
    }
    return o;
}

#define INTERACT(NAME, T)                                                                                         \
void NAME(T *agents, int64_t n, int64_t *counts, int64_t q, const int32_t *out_a, const int32_t *out_b,           \
          const double *cum, int64_t outcomes, int64_t steps, uint64_t *s) {                                      \
    for (int64_t step = 0; step < steps; step++) {                                                                \
        const int64_t i = below(s, n);                                                                            \
        int64_t j = below(s, n - 1);                                                                              \
        if (j >= i) j++;                                                                                          \
        const int64_t u = agents[i], v = agents[j], k = u * q + v;                                                \
        const int64_t o = outcome(s, cum, k, outcomes);                                                           \
        const int64_t a2 = out_a[k * outcomes + o], b2 = out_b[k * outcomes + o];                                 \
        if (a2 != u) { agents[i] = (T)a2; counts[u]--; counts[a2]++; }                                            \
        if (b2 != v) { agents[j] = (T)b2; counts[v]--; counts[b2]++; }                                            \
    }                                                                                                             \
}
INTERACT(interact_u8, uint8_t)
INTERACT(interact_u16, uint16_t)
INTERACT(interact_i32, int32_t)

static inline int64_t slot(const int64_t *table, int64_t rows, int64_t agent, int64_t batch, int shift) {
    /* the row of `agent` in the hash table, or the free row where it would go (linear probing; a row
       belongs to the current batch while its column 2 holds the batch's number) */
    int64_t h = (int64_t)(((uint64_t)agent * GOLDEN) >> shift);
    while (table[3 * h + 2] == batch && table[3 * h] != agent) h = (h + 1) & (rows - 1);
    return h;
}

int64_t batches(int64_t *counts, int64_t q, int64_t n, const int32_t *out_a, const int32_t *out_b, const double *cum,
                int64_t outcomes, int64_t limit, int64_t until, int64_t cap, uint64_t *s, int64_t *table, int64_t rows,
                int64_t *batch_io, uint8_t *touched, int track) {
    /* Batches on the configuration `counts` (n agents) until at least `until` interactions have run, the last
       one cut at `limit`; returns the interactions run (-1: out of memory) and leaves the last batch's number
       in *batch_io. `held` lists the states held at a batch's start, label l is in block x when
       ends[x-1] <= l < ends[x], and guide[g] is the block of label g << gshift, from which the scan goes on. */
    int shift = 64;
    for (int64_t r = rows; r > 1; r >>= 1) shift--;
    uint64_t mask = 1;
    while (mask < (uint64_t)(n - 1)) mask = (mask << 1) | 1;
    int bits = 1, wanted = 1;
    while ((INT64_C(1) << bits) < n && bits < 62) bits++;
    while ((INT64_C(1) << wanted) < 2 * q) wanted++;
    const int gshift = bits > wanted ? bits - wanted : 0;
    const int64_t guides = ((n - 1) >> gshift) + 1;
    int64_t *held = malloc(sizeof(int64_t) * (size_t)(2 * q + guides));
    if (!held) return -1;
    int64_t *ends = held + q, *guide = ends + q;
    int64_t batch = *batch_io, t = 0;
    while (t < limit) {
        batch++;
        int64_t m = 0, total = 0;
        for (int64_t a = 0; a < q; a++) {
            if (counts[a] > 0) { total += counts[a]; held[m] = a; ends[m] = total; m++; }
            if (track) touched[a] = counts[a] > 0;
        }
        for (int64_t g = 0, x = 0; g < guides; g++) {
            while (ends[x] <= (g << gshift)) x++;
            guide[g] = x;
        }
        int64_t free_run = 0;
        while (t < limit) {
            const int64_t i = below_any(s, n, mask);
            int64_t j = below_any(s, n - 1, mask);
            if (j >= i) j++;
            const int64_t si = slot(table, rows, i, batch, shift);
            const int used_i = table[3 * si + 2] == batch;
            int64_t sj = slot(table, rows, j, batch, shift);
            const int used_j = table[3 * sj + 2] == batch;
            int64_t u, v;
            if (used_i) u = table[3 * si + 1];
            else { int64_t x = guide[i >> gshift]; while (ends[x] <= i) x++; u = held[x]; }
            if (used_j) v = table[3 * sj + 1];
            else { int64_t x = guide[j >> gshift]; while (ends[x] <= j) x++; v = held[x]; }
            const int64_t k = u * q + v, o = outcome(s, cum, k, outcomes);
            const int64_t a2 = out_a[k * outcomes + o], b2 = out_b[k * outcomes + o];
            counts[u]--; counts[a2]++; counts[v]--; counts[b2]++;
            if (track) { touched[a2] = 1; touched[b2] = 1; }
            t++;
            if (used_i || used_j) break;  /* the collision ends the batch */
            table[3 * si] = i; table[3 * si + 1] = a2; table[3 * si + 2] = batch;
            sj = slot(table, rows, j, batch, shift);  /* i may have taken j's row */
            table[3 * sj] = j; table[3 * sj + 1] = b2; table[3 * sj + 2] = batch;
            if (++free_run >= cap) break;
        }
        if (t >= until) break;
    }
    free(held);
    *batch_io = batch;
    return t;
}
"""

_P = ctypes.c_void_p
_I = ctypes.c_int64
_INTERACT = {np.dtype(np.uint8): "interact_u8", np.dtype(np.uint16): "interact_u16", np.dtype(np.int32): "interact_i32"}


def _ptr(a: np.ndarray) -> int:
    assert a.flags.c_contiguous, "a C loop needs contiguous arrays"
    return a.ctypes.data


class Compiled:
    """The C kernels, with `portable`'s Python signatures and results."""

    def __init__(self, lib: ctypes.CDLL):
        self._interact = {}
        for dtype, name in _INTERACT.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = [_P, _I, _P, _I, _P, _P, _P, _I, _I, _P], None
            self._interact[dtype] = fn
        self._batches = lib.batches
        self._batches.argtypes = [_P, _I, _I, _P, _P, _P, _I, _I, _I, _I, _P, _P, _I, ctypes.POINTER(_I), _P,
                                  ctypes.c_int]
        self._batches.restype = _I

    def interact(self, agents: np.ndarray, counts: np.ndarray, out_a: np.ndarray, out_b: np.ndarray, cum: np.ndarray,
                 steps: int, state: np.ndarray) -> None:
        """Run `steps` interactions on `agents` (state indices), keeping `counts` (per state) in step.
        `out_a[k, j]`, `out_b[k, j]` are outcome j of the pair k = a·Q + b, chosen while the uniform draw
        is at least `cum[k, j]` (the last entry of each row is 2, above every draw)."""
        _check(counts, out_a, out_b, cum, state)
        self._interact[agents.dtype](_ptr(agents), agents.size, _ptr(counts), counts.size, _ptr(out_a), _ptr(out_b),
                                     _ptr(cum), out_a.shape[1], steps, _ptr(state))

    def batches(self, counts: np.ndarray, n: int, out_a: np.ndarray, out_b: np.ndarray, cum: np.ndarray, limit: int,
                until: int, cap: int, state: np.ndarray, table: np.ndarray, batch: int, touched: np.ndarray,
                track: bool) -> tuple[int, int]:
        """Run batches on the configuration `counts` (n agents) until at least `until` interactions have
        run, cutting the last batch at `limit`; returns (interactions run, the last batch's number).
        `table` (rows: agent, state, batch number; a power of two > 2·cap rows) holds the agents used in the
        current batch, `batch` is the previous batch's number; with `track`, `touched` marks the states held
        at some moment of the last batch."""
        _check(counts, out_a, out_b, cum, state)
        assert table.dtype == np.int64 and table.shape[1] == 3 and touched.dtype == np.bool_
        number = _I(batch)
        ran = self._batches(_ptr(counts), counts.size, n, _ptr(out_a), _ptr(out_b), _ptr(cum), out_a.shape[1], limit,
                            until, cap, _ptr(state), _ptr(table), table.shape[0], ctypes.byref(number), _ptr(touched),
                            int(track))
        if ran < 0:
            raise MemoryError("the batched simulator's guide table")
        return int(ran), number.value


def _check(counts: np.ndarray, out_a: np.ndarray, out_b: np.ndarray, cum: np.ndarray, state: np.ndarray) -> None:
    """The types the C loops read their arrays as."""
    assert counts.dtype == np.int64 and out_a.dtype == out_b.dtype == np.int32 and cum.dtype == np.float64
    assert state.dtype == np.uint64 and state.size == 4 and out_a.shape == out_b.shape == cum.shape


_LOADED: list[Any] = []  # the kernels of this process, once chosen


def load() -> Compiled | ModuleType:
    """The kernels: the C ones, built on a first use per machine (about a second) and then loaded from the per-user
    cache; `portable` where no C compiler builds them, said once on stderr."""
    if not _LOADED:
        why = "no C compiler (set CC, or install cc, gcc or clang)"
        if compiler() is not None:
            try:
                _LOADED.append(Compiled(Library(SOURCE, "lockstep_population").load()))
            except (BuildError, OSError) as e:
                why = str(e)
        if not _LOADED:
            from . import portable

            print(f"lockstep: the population simulator runs in Python, 50 to 100 times slower: {why}", file=sys.stderr)
            _LOADED.append(portable)
    return _LOADED[0]


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
