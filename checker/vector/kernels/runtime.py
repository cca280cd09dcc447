"""The vector engine's loops in C: `portable`'s functions, same signatures and results, one pass each.

numpy's whole-array passes cost a trip through memory per operation; these loops make one trip for
what the search does per candidate successor: fingerprint it in the scalar engine's order (frontier
row, then transition) and insert it into the visited table if absent, in that order, so the first
occurrence of a state is the one kept without a deduplication pass; the table slot of the candidate
a few places ahead is prefetched, so that many probes are in flight at once. The table is linear probing over
a uint64 array, 0 marking an empty slot, home slot `(key >> 32) * capacity >> 32` (any capacity below
2^32; homes are monotone in the key). `MIX` is splitmix64's finaliser, as `layout._mix_array`.

The same loops are built a second time over a bitstate table (`bitstate_library`, SPIN's supertrace): the
table operations `table_add`, `table_has` and `table_prefetch` are the only difference.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .cbuild import Library

PRELUDE = r"""
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#define PREFETCH 32
static inline uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
static inline int64_t home(uint64_t key, uint64_t cap) { return (int64_t)(((key >> 32) * cap) >> 32); }
static inline int add_key(uint64_t *table, uint64_t cap, uint64_t k) {
    int64_t p = home(k, cap);
    for (;;) {
        uint64_t v = table[p];
        if (v == k) return 0;
        if (v == 0) { table[p] = k; return 1; }
        if (++p == (int64_t)cap) p = 0;
    }
}
"""

KEYS = r"""
static inline int has_exact(const uint64_t *table, uint64_t cap, uint64_t k) {
    int64_t p = home(k, cap);
    for (;;) {
        const uint64_t v = table[p];
        if (v == k) return 1;
        if (v == 0) return 0;
        if (++p == (int64_t)cap) p = 0;
    }
}
"""

EXACT = r"""
/* The visited table holds the keys themselves (linear probing). */
static inline int table_add(uint64_t *t, uint64_t cap, uint64_t k) { return add_key(t, cap, k); }
static inline int table_has(const uint64_t *t, uint64_t cap, uint64_t k) { return has_exact(t, cap, k); }
static inline void table_prefetch(const uint64_t *t, uint64_t cap, uint64_t k) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(&t[home(k, cap)], 1);
#endif
}
"""

BITSTATE = r"""
/* A bitstate table: word 0 counts the bits set, words 1..cap-1 hold the bits; a key is stored as HASHES bits,
   each at a hash of it reduced to the table by multiply-shift. The key is mixed first (an exact layout's key is
   the packed state itself, not random), then each hash mixes that with its own offset. A key is new when any of
   its bits was clear: a key whose bits were all set by others is taken for visited. */
#define HASHES 3
static inline uint64_t bit_of(uint64_t key, int i, uint64_t nbits) {
    const uint64_t x = mix(mix(key ^ UINT64_C(0xD6E8FEB86659FD93)) + (uint64_t)(i + 1) * UINT64_C(0x9E3779B97F4A7C15));
    return (uint64_t)(((unsigned __int128)x * nbits) >> 64);
}
static inline int table_add(uint64_t *t, uint64_t cap, uint64_t k) {
    const uint64_t nbits = (cap - 1) * 64;
    int fresh = 0;
    for (int i = 0; i < HASHES; i++) {
        const uint64_t b = bit_of(k, i, nbits), m = UINT64_C(1) << (b & 63);
        uint64_t *w = &t[1 + (b >> 6)];
        if (!(*w & m)) { *w |= m; t[0]++; fresh = 1; }
    }
    return fresh;
}
static inline int table_has(const uint64_t *t, uint64_t cap, uint64_t k) {
    const uint64_t nbits = (cap - 1) * 64;
    for (int i = 0; i < HASHES; i++) {
        const uint64_t b = bit_of(k, i, nbits);
        if (!(t[1 + (b >> 6)] & (UINT64_C(1) << (b & 63)))) return 0;
    }
    return 1;
}
static inline void table_prefetch(const uint64_t *t, uint64_t cap, uint64_t k) {
#if defined(__GNUC__) || defined(__clang__)
    const uint64_t nbits = (cap - 1) * 64;
    for (int i = 0; i < HASHES; i++) __builtin_prefetch(&t[1 + (bit_of(k, i, nbits) >> 6)], 1);
#endif
}
"""

BODY = r"""
void fingerprints(const uint64_t *words, int64_t ld, int64_t nw, int64_t n, uint64_t seed, int exact, uint64_t *out) {
    for (int64_t r = 0; r < n; r++) {
        uint64_t h = mix(words[r] ^ seed);
        for (int64_t w = 1; w < nw; w++) h = mix(h ^ words[w * ld + r]);
        if (!exact && h == 0) h = 1;
        out[r] = h;
    }
}

void contains(const uint64_t *table, int64_t cap, const uint64_t *keys, int64_t n, uint8_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = (uint8_t)table_has(table, (uint64_t)cap, keys[i]);
}

int64_t insert(uint64_t *table, int64_t cap, const uint64_t *keys, int64_t n) {
    int64_t added = 0;
    for (int64_t i = 0; i < n; i++) added += table_add(table, (uint64_t)cap, keys[i]);
    return added;
}

void rehash(const uint64_t *old, uint64_t *table, int64_t cap, int64_t start, int64_t stop, int64_t *state,
            uint64_t mask, uint64_t part) {
    /* Move the keys k of old[start..stop) with (k & mask) == part (every key: mask 0) into `table`, as inserting
       each key (first empty slot from its home on) would.
       An old table read in slot order gives keys almost in order of home, so `state` follows the placing:
       the highest slot written (every slot above it is empty) and the start of the run of occupied slots
       that ends there. A key whose home is in that run or above it goes right after the run or to its home,
       with no probing and no unpredictable branch; any other key (its home before the run, or the run
       reaching the table's end) is probed for. Keys are first packed out of each block of slots without
       branches. State (-1, 0) is an empty table; the caller moves the old table's first run (which may hold
       keys wrapped around from its end) last. */
    int64_t last = state[0], run = state[1];
    uint64_t keys[256];
    for (int64_t i = start; i < stop; i += 256) {
        const int64_t end = i + 256 < stop ? i + 256 : stop;
        int64_t n = 0;
        for (int64_t j = i; j < end; j++) { const uint64_t k = old[j]; keys[n] = k; n += (k != 0) & ((k & mask) == part); }
        for (int64_t q = 0; q < n; q++) {
            const uint64_t k = keys[q];
            const int64_t h = home(k, (uint64_t)cap);
            int64_t p = h > last ? h : last + 1;
            if (h < run || p >= cap) {
                p = h;
                while (table[p]) if (++p == cap) p = 0;
                table[p] = k;
                if (p > last) last = p;  /* then p == last + 1: the run grows */
                continue;
            }
            table[p] = k;
            run = h > last + 1 ? h : run;
            last = p;
        }
    }
    state[0] = last;
    state[1] = run;
}

void serial_order(const int64_t *rows, int64_t total, const int64_t *seg_start, const int64_t *seg_tid,
                  int64_t nseg, int64_t n, int64_t *order, int64_t *tids) {
    int64_t *count = calloc((size_t)n + 1, sizeof(int64_t));
    for (int64_t j = 0; j < total; j++) count[rows[j] + 1]++;
    for (int64_t r = 0; r < n; r++) count[r + 1] += count[r];
    for (int64_t s = 0; s < nseg; s++) {
        int64_t t = seg_tid[s];
        for (int64_t j = seg_start[s]; j < seg_start[s + 1]; j++) {
            int64_t k = count[rows[j]]++;
            order[k] = j;
            tids[k] = t;
        }
    }
    free(count);
}

int64_t candidate_fps(const uint64_t *words, int64_t ld, int64_t nw, const int64_t *rows, const uint64_t *deltas,
                      int64_t dld, const int64_t *order, int64_t total, const uint8_t *allow, uint64_t seed,
                      int exact, uint64_t *fps, int64_t *ks) {
    int64_t n = 0;
    for (int64_t k = 0; k < total; k++) {
        int64_t j = order[k];
        if (allow && !allow[j]) continue;
        int moved = 0;
        for (int64_t w = 0; w < nw; w++) if (deltas[w * dld + j]) { moved = 1; break; }
        if (!moved) continue;
        int64_t r = rows[j];
        uint64_t h = mix(words[r] ^ deltas[j] ^ seed);
        for (int64_t w = 1; w < nw; w++) h = mix(h ^ (words[w * ld + r] ^ deltas[w * dld + j]));
        if (!exact && h == 0) h = 1;
        fps[n] = h;
        ks[n] = k;
        n++;
    }
    return n;
}

int64_t keep_allowed(uint64_t *fps, int64_t *ks, int64_t n, const int64_t *order, const uint8_t *allow) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (allow[order[ks[i]]]) { fps[m] = fps[i]; ks[m] = ks[i]; m++; }
    return m;
}

void gather_range(const uint64_t *cand, int64_t ldc, int64_t nw, const int64_t *keys, const int64_t *pos, int64_t lo,
                  int64_t hi, int64_t m, int64_t T1, int64_t base, int64_t tbits, uint64_t *out_words, uint64_t *links,
                  int64_t *ukeys) {
    for (int64_t i = lo; i < hi; i++) {
        int64_t j = pos[i], k = keys[j], r = k / T1, t = k % T1;
        for (int64_t w = 0; w < nw; w++) out_words[w * m + i] = cand[w * ldc + j];
        links[i] = ((uint64_t)(base + r) << tbits) | (uint64_t)t;
        ukeys[i] = (base + r) * T1 + t;
    }
}

void merge_range(const int64_t *k0, const uint64_t *f0, int64_t m0, const int64_t *k1, const uint64_t *f1, int64_t m1,
                 int64_t lo, int64_t hi, int64_t *pos, uint64_t *fps) {
    /* Outputs lo..hi of the merge of two ascending runs of distinct keys: how many of run 0 come before
       output lo (the least a whose next key follows run 1's key lo - a - 1) by bisection, then a merge from
       there; two threads each merge half of the outputs. */
    int64_t a = lo > m1 ? lo - m1 : 0, top = lo < m0 ? lo : m0;
    while (a < top) {
        const int64_t mid = (a + top) / 2;
        if (k0[mid] < k1[lo - mid - 1]) a = mid + 1; else top = mid;
    }
    int64_t b = lo - a;
    for (int64_t o = lo; o < hi; o++) {
        if (b >= m1 || (a < m0 && k0[a] < k1[b])) { pos[o] = k0[a]; fps[o] = f0[a++]; }
        else { pos[o] = k1[b]; fps[o] = f1[b++]; }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ROUTE_AVX512 1
__attribute__((target("avx512f"))) static int64_t route_avx512(const uint64_t *fps, int64_t n, uint64_t rmask,
                                                                int64_t off, int32_t *r0, int32_t *r1, int64_t *c) {
    /* `route`, 16 keys at a time: each table's positions packed in a register and stored whole (the lanes past
       the count are overwritten next), rather than packed to memory, which is slow on some processors. */
    const __m512i mask = _mm512_set1_epi64((long long)rmask), sixteen = _mm512_set1_epi32(16);
    __m512i at = _mm512_add_epi32(_mm512_set1_epi32((int)off),
                                  _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    int64_t i = 0, c0 = c[0], c1 = c[1];
    for (; i + 16 <= n; i += 16) {
        const __mmask16 lo = _mm512_test_epi64_mask(_mm512_loadu_si512((const void *)(fps + i)), mask);
        const __mmask16 hi = _mm512_test_epi64_mask(_mm512_loadu_si512((const void *)(fps + i + 8)), mask);
        const __mmask16 b = (__mmask16)(lo | (hi << 8));
        _mm512_storeu_si512((void *)(r1 + c1), _mm512_maskz_compress_epi32(b, at));
        _mm512_storeu_si512((void *)(r0 + c0), _mm512_maskz_compress_epi32((__mmask16)~b, at));
        const int64_t ones = __builtin_popcount((unsigned)b);
        c1 += ones;
        c0 += 16 - ones;
        at = _mm512_add_epi32(at, sixteen);
    }
    c[0] = c0;
    c[1] = c1;
    return i;
}
#endif

void route(const uint64_t *fps, int64_t n, uint64_t rmask, int64_t off, int32_t *r0, int32_t *r1, int64_t *counts) {
    /* The positions off + i of fps[0..n) appended to two lists by visited table, r0 where fps[i] & rmask is 0
       and r1 where it is not, from counts[0] and counts[1] on (each list has room for n more after its count):
       without branches, and 16 at a time where the processor has AVX-512. */
    int64_t c[2] = {counts[0], counts[1]}, i = 0;
#ifdef ROUTE_AVX512
    if (__builtin_cpu_supports("avx512f")) i = route_avx512(fps, n, rmask, off, r0, r1, c);
#endif
    for (; i < n; i++) {
        const int64_t b = (fps[i] & rmask) != 0;
        r0[c[0]] = (int32_t)(off + i);
        r1[c[1]] = (int32_t)(off + i);
        c[0] += 1 - b;
        c[1] += b;
    }
    counts[0] = c[0];
    counts[1] = c[1];
}

void probe(const uint64_t *table, int64_t cap, const uint64_t *level, int64_t lcap, const uint64_t *fps,
           const uint8_t *flags, const int64_t *keys, int64_t T1, const int32_t *pos, int64_t c, uint8_t *back) {
    /* The cycle proviso of a partial-order reduction, for the candidates at positions pos[0..c) (one visited
       table's): back[row] = 1 where a candidate of the row's reduced set (flag 1) is in `table` but not in
       `level`, the table of the states found at this level: it was visited at an earlier level. */
    for (int64_t q = 0; q < c; q++) {
        const int64_t i = pos[q];
        if (flags[i] != 1) continue;
        const uint64_t h = fps[i];
        if (table_has(table, (uint64_t)cap, h) && !has_exact(level, (uint64_t)lcap, h)) back[keys[i] / T1] = 1;
    }
}

int64_t insert_at(uint64_t *table, int64_t cap, int64_t *size, int64_t limit, const uint64_t *fps,
                  const int64_t *ks, const int32_t *pos, int64_t q, int64_t c, int64_t *out_k, uint64_t *out_fp,
                  int64_t *m, const uint8_t *flags, const int64_t *keys, int64_t T1, const uint8_t *back0,
                  const uint8_t *back1) {
    /* Insert the keys at positions pos[q..c) (positions q..c without `pos`) in order, each if absent,
       prefetching the slots about to be probed; stops before the table holds more than `limit` keys.
       With `flags` (a partial-order reduction), a candidate flagged 2 is left out unless the cycle proviso
       expands its row (`back0` or `back1`: `probe`'s marks for the two tables). Returns the q to go on from. */
    int64_t s = *size, j = *m;
    for (; q < c; q++) {
        const int64_t i = pos ? pos[q] : q;
        if (flags && flags[i] == 2) {
            const int64_t r = keys[i] / T1;
            if (!back0[r] && !back1[r]) continue;
        }
        if (q + PREFETCH < c) table_prefetch(table, (uint64_t)cap, fps[pos ? pos[q + PREFETCH] : q + PREFETCH]);
        const uint64_t h = fps[i];
        if (s >= limit) break;
        if (table_add(table, (uint64_t)cap, h)) { s++; out_k[j] = ks ? ks[i] : i; out_fp[j] = h; j++; }
    }
    *size = s; *m = j;
    return q;
}

int64_t insert_pair(uint64_t *t0, int64_t cap0, uint64_t *t1, int64_t cap1, int64_t *sizes, const int64_t *limits,
                    const uint64_t *fps, const int64_t *ks, int64_t n, int64_t start, int64_t *out_k, uint64_t *out_fp,
                    int64_t *m) {
    /* `insert_serial` into both tables of a two-table set in one pass: each key of fps[start..n) into table
       (key & 1), in order, each if absent (the table chosen without a branch), prefetching ahead; the new keys
       come out in serial order. Stops before either table holds more than its limit. Returns the position to
       go on from. */
    uint64_t *T[2] = {t0, t1};
    const uint64_t C[2] = {(uint64_t)cap0, (uint64_t)cap1};
    int64_t S[2] = {sizes[0], sizes[1]};
    int64_t j = *m, i = start;
    for (; i < n; i++) {
        if (i + PREFETCH < n) { const uint64_t f = fps[i + PREFETCH]; table_prefetch(T[f & 1], C[f & 1], f); }
        const uint64_t h = fps[i];
        const int p = (int)(h & 1);
        if (S[p] >= limits[p]) break;
        if (table_add(T[p], C[p], h)) { S[p]++; out_k[j] = ks ? ks[i] : i; out_fp[j] = h; j++; }
    }
    sizes[0] = S[0];
    sizes[1] = S[1];
    *m = j;
    return i;
}

int64_t insert_serial(uint64_t *table, int64_t cap, int64_t *size, int64_t limit, const uint64_t *fps,
                      const int64_t *ks, int64_t n, int64_t start, uint64_t parts_mask, uint64_t part,
                      int64_t *out_k, uint64_t *out_fp, int64_t *m, int32_t *mine) {
    /* `insert_at` over this table's keys among fps[start..n): their positions are gathered first (into
       `mine`, room for n - start, reused by the caller: a fresh buffer would cost page faults and, freed,
       other threads' TLBs), without branches, so that the insertion takes only its own keys. Returns the
       position to go on from. */
    if (!parts_mask)
        return insert_at(table, cap, size, limit, fps, ks, NULL, start, n > start ? n : start, out_k, out_fp, m, NULL,
                         NULL, 0, NULL, NULL);
    int64_t c = 0;
    for (int64_t i = start; i < n; i++) { mine[c] = (int32_t)i; c += (fps[i] & parts_mask) == part; }
    const int64_t q = insert_at(table, cap, size, limit, fps, ks, mine, 0, c, out_k, out_fp, m, NULL, NULL, 0, NULL, NULL);
    return q < c ? mine[q] : n;
}
"""

_P = ctypes.c_void_p
_I = ctypes.c_int64
_IP = ctypes.POINTER(ctypes.c_int64)
_SIGS = {
    "fingerprints": ([_P, _I, _I, _I, ctypes.c_uint64, ctypes.c_int, _P], None),
    "contains": ([_P, _I, _P, _I, _P], None),
    "insert": ([_P, _I, _P, _I], _I),
    "rehash": ([_P, _P, _I, _I, _I, _P, ctypes.c_uint64, ctypes.c_uint64], None),
    "serial_order": ([_P, _I, _P, _P, _I, _I, _P, _P], None),
    "candidate_fps": ([_P, _I, _I, _P, _P, _I, _P, _I, _P, ctypes.c_uint64, ctypes.c_int, _P, _P], _I),
    "keep_allowed": ([_P, _P, _I, _P, _P], _I),
    "gather_range": ([_P, _I, _I, _P, _P, _I, _I, _I, _I, _I, _I, _P, _P, _P], None),
    "merge_range": ([_P, _P, _I, _P, _P, _I, _I, _I, _P, _P], None),
    "insert_serial": ([_P, _I, _IP, _I, _P, _P, _I, _I, ctypes.c_uint64, ctypes.c_uint64, _P, _P, _IP, _P], _I),
    "insert_pair": ([_P, _I, _P, _I, _P, _P, _P, _P, _I, _I, _P, _P, _IP], _I),
    "insert_at": ([_P, _I, _IP, _I, _P, _P, _P, _I, _I, _P, _P, _IP, _P, _P, _I, _P, _P], _I),
    "probe": ([_P, _I, _P, _I, _P, _P, _P, _I, _P, _I, _P], None),
    "route": ([_P, _I, ctypes.c_uint64, _I, _P, _P, _P], None),
}


def _ptr(a: np.ndarray) -> int:
    assert a.flags.c_contiguous or a.ndim == 1 and a.strides[0] == a.itemsize, "a C loop needs contiguous arrays"
    return a.ctypes.data


class Runtime:
    """The C loops, with `portable`'s Python signatures."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        for name, (args, res) in _SIGS.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res

    def fingerprints(self, words: np.ndarray, seed: np.uint64, exact: bool) -> np.ndarray:
        words = np.ascontiguousarray(words)
        out = np.empty(words.shape[1], dtype=np.uint64)
        self.lib.fingerprints(_ptr(words), words.shape[1], words.shape[0], words.shape[1], int(seed), int(exact),
                              _ptr(out))
        return out

    def contains(self, table: np.ndarray, keys: np.ndarray) -> np.ndarray:
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        out = np.empty(keys.size, dtype=np.bool_)
        self.lib.contains(_ptr(table), table.size, _ptr(keys), keys.size, _ptr(out))
        return out

    def insert(self, table: np.ndarray, keys: np.ndarray) -> int:
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        return int(self.lib.insert(_ptr(table), table.size, _ptr(keys), keys.size))

    def rehash(self, old: np.ndarray, new: np.ndarray, start: int, stop: int, state: np.ndarray, mask: int = 0,
               part: int = 0) -> None:
        assert state.dtype == np.int64 and state.size == 2
        self.lib.rehash(_ptr(old), _ptr(new), new.size, start, stop, _ptr(state), mask, part)

    def serial_order(self, rows: np.ndarray, seg_start: np.ndarray, seg_tid: np.ndarray, n: int,
                     order: np.ndarray, tids: np.ndarray) -> None:
        self.lib.serial_order(_ptr(rows), rows.size, _ptr(seg_start), _ptr(seg_tid), seg_tid.size, n, _ptr(order),
                              _ptr(tids))

    def candidate_fps(self, words: np.ndarray, rows: np.ndarray, deltas: np.ndarray, order: np.ndarray,
                      allow: np.ndarray, seed: np.uint64, exact: bool) -> tuple:
        words = np.ascontiguousarray(words)
        fps = np.empty(order.size, dtype=np.uint64)
        ks = np.empty(order.size, dtype=np.int64)
        n = self.lib.candidate_fps(_ptr(words), words.shape[1], words.shape[0], _ptr(rows), _ptr(deltas),
                                   deltas.shape[1], _ptr(order), order.size, _ptr(allow) if allow.size else None,
                                   int(seed), int(exact), _ptr(fps), _ptr(ks))
        return fps, ks, int(n)

    def keep_allowed(self, fps: np.ndarray, ks: np.ndarray, n: int, order: np.ndarray, allow: np.ndarray) -> int:
        return int(self.lib.keep_allowed(_ptr(fps), _ptr(ks), n, _ptr(order), _ptr(allow)))

    def gather_range(self, cand: np.ndarray, keys: np.ndarray, pos: np.ndarray, lo: int, hi: int, T1: int,  # noqa: N803
                     base: int, tbits: int, words: np.ndarray, links: np.ndarray, ukeys: np.ndarray) -> None:
        self.lib.gather_range(_ptr(cand), cand.shape[1], cand.shape[0], _ptr(keys), _ptr(pos), lo, hi, words.shape[1], T1,
                              base, tbits, _ptr(words), _ptr(links), _ptr(ukeys))

    def merge_range(self, k0: np.ndarray, f0: np.ndarray, k1: np.ndarray, f1: np.ndarray, lo: int, hi: int,
                    pos: np.ndarray, fps: np.ndarray) -> None:
        self.lib.merge_range(_ptr(k0), _ptr(f0), k0.size, _ptr(k1), _ptr(f1), k1.size, lo, hi, _ptr(pos), _ptr(fps))

    def merge_runs(self, k0: np.ndarray, f0: np.ndarray, k1: np.ndarray, f1: np.ndarray) -> tuple[np.ndarray, ...]:
        """Two tables' new states, each in serial order, merged by position: (positions, fingerprints)."""
        pos = np.empty(k0.size + k1.size, dtype=np.int64)
        fps = np.empty(pos.size, dtype=np.uint64)
        self.merge_range(k0, f0, k1, f1, 0, pos.size, pos, fps)
        return pos, fps

    def insert_pair(self, t0: np.ndarray, t1: np.ndarray, sizes: np.ndarray, limits: np.ndarray, fps: np.ndarray,
                    ks: np.ndarray | None, n: int, start: int, out_k: np.ndarray, out_fp: np.ndarray,
                    m: int) -> tuple[int, int]:
        """Both tables of a two-table set at once (C only: `portable` inserts them one after the other):
        `sizes` (updated) and `limits` are the tables' int64 pairs; (the position to go on from, m)."""
        assert sizes.dtype == limits.dtype == np.int64 and sizes.size == limits.size == 2
        mm = ctypes.c_int64(m)
        i = self.lib.insert_pair(_ptr(t0), t0.size, _ptr(t1), t1.size, _ptr(sizes), _ptr(limits), _ptr(fps),
                                 None if ks is None else _ptr(ks), n, start, _ptr(out_k), _ptr(out_fp),
                                 ctypes.byref(mm))
        return int(i), mm.value

    def insert_serial(self, table: np.ndarray, size: int, limit: int, fps: np.ndarray, ks: np.ndarray | None, n: int,
                      start: int, parts_mask: int, part: int, out_k: np.ndarray, out_fp: np.ndarray,
                      m: int, scratch: np.ndarray | None = None) -> tuple[int, int, int]:
        sz, mm = ctypes.c_int64(size), ctypes.c_int64(m)
        mine = None
        if parts_mask:
            assert n < 1 << 31, "a batch's candidates are numbered in 32 bits"
            if scratch is None or scratch.size < n - start:
                scratch = np.empty(max(n - start, 1), dtype=np.int32)
            assert scratch.dtype == np.int32
            mine = _ptr(scratch)
        i = self.lib.insert_serial(_ptr(table), table.size, ctypes.byref(sz), limit, _ptr(fps),
                                   None if ks is None else _ptr(ks), n, start,
                                   parts_mask, part, _ptr(out_k), _ptr(out_fp), ctypes.byref(mm), mine)
        return int(i), sz.value, mm.value

    def route(self, fps: np.ndarray, rmask: int, off: int, r0: np.ndarray, r1: np.ndarray, counts: np.ndarray) -> None:
        assert fps.flags.c_contiguous and r0.dtype == r1.dtype == np.int32 and counts.dtype == np.int64
        assert min(r0.size - counts[0], r1.size - counts[1]) >= fps.size and off + fps.size < 1 << 31
        self.lib.route(_ptr(fps), fps.size, rmask, off, _ptr(r0), _ptr(r1), _ptr(counts))

    def insert_at(self, table: np.ndarray, size: int, limit: int, fps: np.ndarray, ks: np.ndarray | None,
                  pos: np.ndarray, q: int, c: int, out_k: np.ndarray, out_fp: np.ndarray,
                  m: int, por: tuple | None = None) -> tuple[int, int, int]:
        """`por`: (flags, keys, T1, back) of a partial-order reduction (see the C)."""
        assert pos.dtype == np.int32
        sz, mm = ctypes.c_int64(size), ctypes.c_int64(m)
        flags = keys = b0 = b1 = None
        t1 = 0
        if por is not None:
            f, k, t1, back = por
            assert f.dtype == back.dtype == np.uint8 and back.shape[0] == 2 and back.flags.c_contiguous
            flags, keys, b0, b1 = _ptr(f), _ptr(k), _ptr(back[0]), _ptr(back[1])
        q = self.lib.insert_at(_ptr(table), table.size, ctypes.byref(sz), limit, _ptr(fps),
                               None if ks is None else _ptr(ks), _ptr(pos), q, c, _ptr(out_k), _ptr(out_fp),
                               ctypes.byref(mm), flags, keys, t1, b0, b1)
        return int(q), sz.value, mm.value

    def probe(self, table: np.ndarray, level: np.ndarray, fps: np.ndarray, flags: np.ndarray, keys: np.ndarray,
              T1: int, pos: np.ndarray, c: int, back: np.ndarray) -> None:  # noqa: N803
        """The cycle proviso's marks for one table's candidates (see the C)."""
        assert pos.dtype == np.int32 and flags.dtype == back.dtype == np.uint8 and c <= pos.size
        self.lib.probe(_ptr(table), table.size, _ptr(level), level.size, _ptr(fps), _ptr(flags), _ptr(keys), T1,
                       _ptr(pos), c, _ptr(back))


SOURCE = PRELUDE + KEYS + EXACT + BODY
BITSTATE_SOURCE = PRELUDE + KEYS + BITSTATE + BODY


def library() -> Library:
    """The runtime's library (not yet built or loaded)."""
    return Library(SOURCE, "lockstep_runtime")


def bitstate_library() -> Library:
    """The runtime's loops over a bitstate table (not yet built or loaded)."""
    return Library(BITSTATE_SOURCE, "lockstep_bitstate")
