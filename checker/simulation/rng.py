"""The walks' random choices, counter-based: choice j of walk k is a function of (seed, k, j) alone, so a walk is
the same whichever process, thread or Ray actor runs it, and in C (`kernel`) as here."""

from __future__ import annotations

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / φ: spreads the counters before mixing

C_SOURCE = f"""
static inline uint64_t walk_key(uint64_t seed, uint64_t k) {{ return mix(mix(seed ^ UINT64_C({GOLDEN})) ^ k); }}
static inline int64_t pick(uint64_t key, uint64_t j, int64_t n) {{
    const uint64_t x = mix(key ^ (j * UINT64_C({GOLDEN})));
    return (int64_t)(((x >> 32) * (uint64_t)n) >> 32);
}}
"""


def _mix(z: int) -> int:
    """splitmix64's finaliser (as `mix` in the kernels' C)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def walk_key(seed: int, k: int) -> int:
    """The key of walk `k` under `seed` (both taken modulo 2^64)."""
    return _mix(_mix((seed & M64) ^ GOLDEN) ^ (k & M64))


def pick(key: int, j: int, n: int) -> int:
    """Choice `j` of the walk with this key among `n` (0 <= result < n): j = 0 chooses the initial state, j = i + 1
    the step after the walk's i-th."""
    x = _mix(key ^ ((j * GOLDEN) & M64))
    return ((x >> 32) * n) >> 32
