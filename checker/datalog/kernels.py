"""The Datalog evaluator's innermost passes in C: sorting codes (deduplication, merging a relation's new rows),
an index's offset table, expanding probes into their matches (joins) and the best value per group
(aggregation). The same passes as `lockstep.checker.datalog.relations.NUMPY`, with the same results; and one
numpy has not, `propagate`: a min/max recursion taken to its fixpoint in place by chaotic iteration (where
`Evaluator._propagation` finds it sound; numpy's passes evaluate it semi-naively, to the same relation).

Built once per machine through the vector engine's generated-C mechanism (`kernels.cbuild.Library`: cached per
user, loaded by descriptor) and called with ctypes. `kernels()` is numpy's set where no C compiler is found, the
build fails, or LOCKSTEP_NATIVE=never.
"""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from ..vector.kernels.cbuild import BuildError, Library, compiler
from .relations import NUMPY, Kernels, Step

SOURCE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SIGN 0x8000000000000000ULL
#define MAXBITS 10

/* a[0..n) in ascending order into out: a least-significant-digit radix sort of the values less their least
   (as unsigned, so that any int64 range fits), in as few passes of at most MAXBITS bits as the range needs
   (digits of equal width: counts small enough for the first-level cache); a pass over a digit every value
   shares is skipped, and values already in order are copied.
   Returns 0, or -1 when out of memory. */
int sort_i64(const int64_t *a, int64_t n, int64_t *out) {
    if (n <= 0) return 0;
    uint64_t lo = (uint64_t)a[0] ^ SIGN, hi = lo;
    int ascending = 1;
    for (int64_t i = 1; i < n; i++) {
        uint64_t u = (uint64_t)a[i] ^ SIGN;
        if (u < lo) lo = u;
        if (u > hi) hi = u;
        ascending &= a[i - 1] <= a[i];
    }
    uint64_t span = hi - lo;
    int width = 0;
    while (width < 64 && (span >> width) != 0) width++;
    if (width == 0 || ascending) { memmove(out, a, sizeof(int64_t) * (size_t)n); return 0; }
    int passes = (width + MAXBITS - 1) / MAXBITS, bits = (width + passes - 1) / passes;
    int64_t radix = (int64_t)1 << bits, digit = radix - 1;
    uint64_t *buf = malloc(sizeof(uint64_t) * (size_t)n);
    int64_t *count = calloc((size_t)passes * (size_t)radix, sizeof(int64_t));
    if (!buf || !count) { free(buf); free(count); return -1; }
    uint64_t *src = (uint64_t *)out, *dst = buf;
    for (int64_t i = 0; i < n; i++) {
        uint64_t k = ((uint64_t)a[i] ^ SIGN) - lo;
        src[i] = k;
        for (int p = 0; p < passes; p++) count[p * radix + ((k >> (p * bits)) & digit)]++;
    }
    for (int p = 0; p < passes; p++) {
        int64_t *c = count + p * radix;
        int skip = 0;
        for (int64_t d = 0; d < radix; d++) if (c[d] == n) { skip = 1; break; }
        if (skip) continue;
        int64_t sum = 0;
        for (int64_t d = 0; d < radix; d++) { int64_t t = c[d]; c[d] = sum; sum += t; }
        int shift = p * bits;
        for (int64_t i = 0; i < n; i++) {
            uint64_t k = src[i];
            dst[c[(k >> shift) & digit]++] = k;
        }
        uint64_t *t = src; src = dst; dst = t;
    }
    for (int64_t i = 0; i < n; i++) out[i] = (int64_t)((src[i] + lo) ^ SIGN);
    free(buf);
    free(count);
    return 0;
}

/* The offset table of codes in lo..lo+total-1: indptr (total + 1) and order (n), the rows of code lo + c being
   order[indptr[c]..indptr[c + 1]) in row order (a counting sort). */
void offsets(const int64_t *codes, int64_t n, int64_t lo, int64_t total, int64_t *indptr, int64_t *order) {
    memset(indptr, 0, sizeof(int64_t) * (size_t)(total + 1));
    for (int64_t i = 0; i < n; i++) indptr[codes[i] - lo]++;
    int64_t sum = 0;
    for (int64_t c = 0; c < total; c++) { int64_t t = indptr[c]; indptr[c] = sum; sum += t; }
    for (int64_t i = 0; i < n; i++) order[indptr[codes[i] - lo]++] = i;
    memmove(indptr + 1, indptr, sizeof(int64_t) * (size_t)total);
    indptr[0] = 0;
}

/* The offset table of codes in lo..lo+total-1 (indptr, as `offsets`) and up to two columns of the rows (a, b; NULL:
   none) gathered into a_out, b_out in its order, the rows of code lo + c at indptr[c]..indptr[c + 1] - 1. */
void group_rows(const int64_t *codes, int64_t n, int64_t lo, int64_t total, int64_t *indptr, const int64_t *a,
                int64_t *a_out, const int64_t *b, int64_t *b_out) {
    memset(indptr, 0, sizeof(int64_t) * (size_t)(total + 1));
    for (int64_t i = 0; i < n; i++) indptr[codes[i] - lo]++;
    int64_t sum = 0;
    for (int64_t c = 0; c < total; c++) { int64_t t = indptr[c]; indptr[c] = sum; sum += t; }
    for (int64_t i = 0; i < n; i++) {
        int64_t p = indptr[codes[i] - lo]++;
        if (a) a_out[p] = a[i];
        if (b) b_out[p] = b[i];
    }
    memmove(indptr + 1, indptr, sizeof(int64_t) * (size_t)total);
    indptr[0] = 0;
}

/* (probe, position) of every position start[i]..stop[i]-1 of every probe i, in probe order. */
void expand(const int64_t *probes, const int64_t *start, const int64_t *stop, int64_t k, int64_t *left,
            int64_t *pos) {
    int64_t j = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t p = probes[i];
        for (int64_t q = start[i]; q < stop[i]; q++) { left[j] = p; pos[j] = q; j++; }
    }
}

/* Two ascending runs of distinct codes merged (merged: the union, fresh: the codes of b not in a). How many
   fresh; the union's length in *nmerged. */
int64_t merge_sorted(const int64_t *a, int64_t na, const int64_t *b, int64_t nb, int64_t *merged, int64_t *fresh,
                     int64_t *nmerged) {
    int64_t i = 0, j = 0, m = 0, f = 0;
    while (i < na && j < nb) {  /* without branches: the runs interleave unpredictably */
        int64_t x = a[i], y = b[j];
        int lt = x < y, gt = y < x;
        merged[m++] = lt ? x : y;
        fresh[f] = y;
        f += gt;
        i += !gt;
        j += !lt;
    }
    while (i < na) merged[m++] = a[i++];
    while (j < nb) { fresh[f++] = b[j]; merged[m++] = b[j++]; }
    *nmerged = m;
    return f;
}

/* The codes of b not in a (two ascending runs of distinct codes) into fresh; how many. */
int64_t fresh_sorted(const int64_t *a, int64_t na, const int64_t *b, int64_t nb, int64_t *fresh) {
    int64_t i = 0, j = 0, f = 0;
    while (i < na && j < nb) {  /* without branches, as merge_sorted */
        int64_t x = a[i], y = b[j];
        int lt = x < y, gt = y < x;
        fresh[f] = y;
        f += gt;
        i += !gt;
        j += !lt;
    }
    while (j < nb) fresh[f++] = b[j++];
    return f;
}

/* A join and an aggregate at once: each probe (key pkey[i], when it lies in klo..klo+ksize-1) meets the rows
   indptr[c]..indptr[c+1]-1 of an offset table; each match proposes, for group g = (its key) - glo, a value; the
   key and the value are each read from the probe (gkey_p, val_p: one per probe) or the matched row (gkey_r,
   val_r: one per position, in the table's order). The group table (table, has: an absent group's value is
   the worst, INT64_MAX for min and INT64_MIN for max) keeps the best value; the
   groups whose value improved are listed in changed (once each, mark set) in ascending order. How many. */
/* One match's value v for group g: kept if better than the group's (an absent group's is the worst value,
   so has[g] is read only at a tie). */
#define OFFER(g, v, better)                                                      \
    do {                                                                         \
        int64_t g_ = (g), v_ = (v), t_ = table[g_];                              \
        if ((better) || (v_ == t_ && !has[g_])) {                                \
            has[g_] = 1;                                                         \
            table[g_] = v_;                                                      \
            if (!mark[g_]) { mark[g_] = 1; changed[m++] = g_; }                  \
        }                                                                        \
    } while (0)
#define AHEAD 16  /* matches ahead whose group's entry is fetched into the cache */

/* The matches of the probes whose group key is read from the matched rows and value from the probe (the
   common shape: cc(Y, min<Z>) <- cc(X, Z), link(X, Y)), groups fetched ahead. */
#define ROWKEY_LOOP(better)                                                                  \
    for (int64_t i = 0; i < np; i++) {                                                       \
        int64_t c = pkey[i] - klo;                                                           \
        if (c < 0 || c >= ksize) continue;                                                   \
        int64_t v = val_p[i], q1 = indptr[c + 1];                                            \
        for (int64_t q = indptr[c]; q < q1; q++) {                                           \
            if (q + AHEAD < nrows) __builtin_prefetch(&table[gkey_r[q + AHEAD] - glo], 1);   \
            OFFER(gkey_r[q] - glo, v, better);                                               \
        }                                                                                    \
    }

int64_t join_best(const int64_t *pkey, int64_t np, int64_t klo, int64_t ksize, const int64_t *indptr,
                  int64_t nrows, const int64_t *gkey_p, const int64_t *gkey_r, const int64_t *val_p,
                  const int64_t *val_r, int64_t glo, int is_min, int64_t *table, uint8_t *has, uint8_t *mark,
                  int64_t *changed) {
    int64_t m = 0;
    if (gkey_r && val_p) {
        if (is_min) { ROWKEY_LOOP(v_ < t_) } else { ROWKEY_LOOP(v_ > t_) }
    } else {
        for (int64_t i = 0; i < np; i++) {
            int64_t c = pkey[i] - klo;
            if (c < 0 || c >= ksize) continue;
            for (int64_t q = indptr[c]; q < indptr[c + 1]; q++)
                OFFER((gkey_p ? gkey_p[i] : gkey_r[q]) - glo, val_p ? val_p[i] : val_r[q],
                      is_min ? v_ < t_ : v_ > t_);
        }
    }
    if (sort_i64(changed, m, changed) != 0) return -1;
    for (int64_t k = 0; k < m; k++) mark[changed[k]] = 0;
    return m;
}

/* A recursive min/max relation p(G, V) (dense: table/has over groups glo..glo+ngroups-1, as in join_best) taken
   to its fixpoint in place, by chaotic iteration. Each of the nrules rules joins p(X, _) on its group X with a
   fixed relation's offset table (keys from klo, ksize of them) and proposes, per match, a value for a group;
   spec holds six int64 a rule: klo, ksize, indptr, key_r (the group column of the matched rows, in the table's
   order; 0: the group is X itself), val_src (0: X, 1: p's value at X, 2: the matched row's val_r) and val_r.
   The groups whose value changed since they last fired are pending (marked in pending); a sweep fires them in
   ascending order, so a group improved ahead of the sweep fires in the same sweep and one behind it in the next
   (Gauss-Seidel order). At most limit sweeps (limit < 0: no bound); how many ran, pending left set when they did
   not settle. */
#define PROPOSE(h, v, better)                                                                \
    do {                                                                                     \
        int64_t h_ = (h), v_ = (v), t_ = table[h_];                                          \
        if ((better) || (v_ == t_ && !has[h_])) {                                            \
            table[h_] = v_;                                                                  \
            has[h_] = 1;                                                                     \
            if (!pending[h_]) { pending[h_] = 1; if (h_ <= g) again = 1; }                   \
        }                                                                                    \
    } while (0)
/* the common shape, cc(Y, min<Z>) <- cc(X, Z), link(X, Y): each matched row's group offered X's value */
#define COPY_LOOP(better)                                                                    \
    for (int64_t q = q0; q < q1; q++) {                                                      \
        if (q + AHEAD < nrows) __builtin_prefetch(&table[key_r[q + AHEAD] - glo], 1);        \
        PROPOSE(key_r[q] - glo, here, better);                                               \
    }

int64_t propagate(int64_t nrules, const int64_t *spec, int64_t glo, int64_t ngroups, int is_min, int64_t limit,
                  int64_t *table, uint8_t *has, uint8_t *pending) {
    int again = 0;
    for (int64_t g = 0; g < ngroups && !again; g++) again = pending[g];
    int64_t sweeps = 0;
    while (again && (limit < 0 || sweeps < limit)) {
        again = 0;
        sweeps++;
        for (int64_t g = 0; g < ngroups; g++) {
            if (!pending[g]) continue;
            pending[g] = 0;
            int64_t x = g + glo, here = table[g];
            for (int64_t r = 0; r < nrules; r++) {
                const int64_t *s = spec + 6 * r;
                int64_t c = x - s[0];
                if (c < 0 || c >= s[1]) continue;
                const int64_t *indptr = (const int64_t *)(intptr_t)s[2];
                const int64_t *key_r = (const int64_t *)(intptr_t)s[3];
                const int64_t *val_r = (const int64_t *)(intptr_t)s[5];
                int64_t q0 = indptr[c], q1 = indptr[c + 1], src = s[4];
                if (key_r && src == 1) {
                    int64_t nrows = indptr[s[1]];
                    if (is_min) { COPY_LOOP(v_ < t_) } else { COPY_LOOP(v_ > t_) }
                } else {
                    for (int64_t q = q0; q < q1; q++)
                        PROPOSE(key_r ? key_r[q] - glo : g, src == 0 ? x : src == 1 ? here : val_r[q],
                                is_min ? v_ < t_ : v_ > t_);
                }
                here = table[g];
            }
        }
    }
    return sweeps;
}

/* The best (least with is_min, else greatest) value of each code in lo..lo+total-1 present, gathered in
   table (total, any content) with hit (total, zeroed); written to outc (less lo) and outv in ascending code order.
   How many. */
int64_t best_in_table(const int64_t *codes, const int64_t *vals, int64_t n, int64_t lo, int64_t total, int is_min,
                      int64_t *table, uint8_t *hit, int64_t *outc, int64_t *outv) {
    for (int64_t i = 0; i < n; i++) {
        int64_t c = codes[i] - lo, v = vals[i];
        if (!hit[c]) { hit[c] = 1; table[c] = v; }
        else if (is_min ? v < table[c] : v > table[c]) table[c] = v;
    }
    int64_t m = 0;
    for (int64_t c = 0; c < total; c++)
        if (hit[c]) { outc[m] = c; outv[m] = table[c]; m++; }
    return m;
}
"""

_P = ctypes.c_void_p
_I = ctypes.c_int64
_LOCK = threading.Lock()
_STATE: dict[str, object] = {}


def _ptr(a: np.ndarray) -> int:
    assert a.flags.c_contiguous and a.dtype.itemsize in (1, 8)
    return a.ctypes.data


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


class Compiled(Kernels):
    """The passes of `Kernels`, each one call into the C library."""

    joins_into_groups = True
    propagates = True

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib

    def sort(self, a: np.ndarray) -> np.ndarray:
        a = _i64(a)
        out = np.empty(len(a), dtype=np.int64)
        if self.lib.sort_i64(_ptr(a), len(a), _ptr(out)) != 0:
            raise MemoryError("sorting codes")
        return out

    def offsets(self, codes: np.ndarray, total: int, lo: int = 0) -> tuple[np.ndarray, np.ndarray]:
        codes = _i64(codes)
        indptr = np.empty(total + 1, dtype=np.int64)
        order = np.empty(len(codes), dtype=np.int64)
        self.lib.offsets(_ptr(codes), len(codes), lo, total, _ptr(indptr), _ptr(order))
        return indptr, order

    def group_rows(self, codes: np.ndarray, total: int, lo: int, cols: list[np.ndarray | None]
                   ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        assert len(cols) <= 2
        codes = _i64(codes)
        indptr = np.empty(total + 1, dtype=np.int64)
        given = [None if c is None else _i64(c) for c in cols] + [None] * (2 - len(cols))
        out = [None if c is None else np.empty(len(codes), dtype=np.int64) for c in given]
        args = []
        for c, o in zip(given, out):
            args += [None, None] if c is None else [_ptr(c), _ptr(o)]
        self.lib.group_rows(_ptr(codes), len(codes), lo, total, _ptr(indptr), *args)
        return indptr, out[:len(cols)]

    def expand(self, probes: np.ndarray, start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        probes, start, stop = _i64(probes), _i64(start), _i64(stop)
        total = int((stop - start).sum()) if len(start) else 0
        left = np.empty(total, dtype=np.int64)
        pos = np.empty(total, dtype=np.int64)
        self.lib.expand(_ptr(probes), _ptr(start), _ptr(stop), len(probes), _ptr(left), _ptr(pos))
        return left, pos

    def merge_sorted(self, old: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        old, codes = _i64(old), _i64(codes)
        merged = np.empty(len(old) + len(codes), dtype=np.int64)
        fresh = np.empty(len(codes), dtype=np.int64)
        nm = ctypes.c_int64()
        f = self.lib.merge_sorted(_ptr(old), len(old), _ptr(codes), len(codes), _ptr(merged), _ptr(fresh),
                                  ctypes.byref(nm))
        return merged[: nm.value], fresh[:f]

    def fresh_sorted(self, old: np.ndarray, codes: np.ndarray) -> np.ndarray:
        old, codes = _i64(old), _i64(codes)
        fresh = np.empty(len(codes), dtype=np.int64)
        return fresh[: self.lib.fresh_sorted(_ptr(old), len(old), _ptr(codes), len(codes), _ptr(fresh))]

    def join_best(self, probe: np.ndarray, klo: int, indptr: np.ndarray, key: tuple[bool, np.ndarray],
                  val: tuple[bool, np.ndarray], glo: int, func: str, table: np.ndarray, has: np.ndarray,
                  mark: np.ndarray) -> np.ndarray:
        """The groups improved by the matches of a join (see `join_best` in the C source): each of `key` and
        `val` is (from the probe?, column); `table`/`has` are the relation's, updated in place; `mark` (zeroed,
        one byte per group) is left zeroed."""
        probe = _i64(probe)
        cols = [_i64(c) for _, c in (key, val)]
        changed = np.empty(len(table), dtype=np.int64)
        args = []
        for (from_probe, _), c in zip((key, val), cols):
            args += [_ptr(c), None] if from_probe else [None, _ptr(c)]
        m = self.lib.join_best(_ptr(probe), len(probe), klo, len(indptr) - 1, _ptr(indptr), int(indptr[-1]), *args, glo,
                               int(func == "min"), _ptr(table), _ptr(has.view(np.uint8)), _ptr(mark), _ptr(changed))
        if m < 0:
            raise MemoryError("sorting the improved groups")
        return changed[:m]

    def propagate(self, rules: list[Step], glo: int, func: str, table: np.ndarray, has: np.ndarray,
                  pending: np.ndarray, limit: int | None) -> int:
        """A recursive min/max relation (`table`/`has`, groups from `glo`) taken to its fixpoint in place by
        chaotic iteration over its `rules` (see `propagate` in the C source); `pending` (one byte per group) marks
        the groups to fire first, and is left marking those still to fire when `limit` sweeps did not settle. How
        many sweeps ran."""
        spec = np.zeros(6 * len(rules), dtype=np.int64)
        keep = []  # the columns the spec points into, alive through the call
        for r, step in enumerate(rules):
            indptr, key, val = _i64(step.indptr), None if step.key is None else _i64(step.key), \
                None if step.val is None else _i64(step.val)
            keep += [indptr, key, val]
            spec[6 * r: 6 * r + 6] = [step.klo, len(indptr) - 1, _ptr(indptr), 0 if key is None else _ptr(key),
                                      step.source, 0 if val is None else _ptr(val)]
        sweeps = self.lib.propagate(len(rules), _ptr(spec), glo, len(table), int(func == "min"),
                                    -1 if limit is None else limit, _ptr(table), _ptr(has.view(np.uint8)),
                                    _ptr(pending))
        return int(sweeps)

    def best_in_table(self, codes: np.ndarray, vals: np.ndarray, func: str, total: int, lo: int = 0
                      ) -> tuple[np.ndarray, np.ndarray]:
        codes, vals = _i64(codes), _i64(vals)
        table = np.empty(total, dtype=np.int64)
        hit = np.zeros(total, dtype=np.uint8)
        room = min(len(codes), total)
        outc = np.empty(room, dtype=np.int64)
        outv = np.empty(room, dtype=np.int64)
        m = self.lib.best_in_table(_ptr(codes), _ptr(vals), len(codes), lo, total, int(func == "min"), _ptr(table),
                                   _ptr(hit), _ptr(outc), _ptr(outv))
        return outc[:m], outv[:m]


def compiled() -> Compiled | None:
    """The compiled passes (built on first use), or None where there is no compiler, the build failed or
    LOCKSTEP_NATIVE=never (`why()` says which)."""
    with _LOCK:
        if "kernels" in _STATE:
            return _STATE["kernels"]  # type: ignore[return-value]
        out = None
        if os.environ.get("LOCKSTEP_NATIVE", "auto") == "never":
            _STATE["why"] = "LOCKSTEP_NATIVE=never"
        elif compiler() is None:
            _STATE["why"] = "no C compiler (set CC, or install cc, gcc or clang)"
        else:
            try:
                lib = Library(SOURCE, "lockstep_datalog").load()
            except (BuildError, OSError) as e:
                _STATE["why"] = str(e)
            else:
                lib.sort_i64.argtypes = [_P, _I, _P]
                lib.sort_i64.restype = ctypes.c_int
                lib.offsets.argtypes = [_P, _I, _I, _I, _P, _P]
                lib.offsets.restype = None
                lib.group_rows.argtypes = [_P, _I, _I, _I, _P, _P, _P, _P, _P]
                lib.group_rows.restype = None
                lib.expand.argtypes = [_P, _P, _P, _I, _P, _P]
                lib.expand.restype = None
                lib.best_in_table.argtypes = [_P, _P, _I, _I, _I, ctypes.c_int, _P, _P, _P, _P]
                lib.best_in_table.restype = _I
                lib.merge_sorted.argtypes = [_P, _I, _P, _I, _P, _P, _P]
                lib.merge_sorted.restype = _I
                lib.fresh_sorted.argtypes = [_P, _I, _P, _I, _P]
                lib.fresh_sorted.restype = _I
                lib.join_best.argtypes = [_P, _I, _I, _I, _P, _I, _P, _P, _P, _P, _I, ctypes.c_int, _P, _P, _P, _P]
                lib.join_best.restype = _I
                lib.propagate.argtypes = [_I, _P, _I, _I, ctypes.c_int, _I, _P, _P, _P]
                lib.propagate.restype = _I
                out = Compiled(lib)
        _STATE["kernels"] = out
        return out


def kernels() -> Kernels:
    """The compiled passes where they can be built, else numpy's."""
    return compiled() or NUMPY


def why() -> str:
    """Why the passes run in numpy ('' when compiled, or before the first `compiled()`)."""
    return str(_STATE.get("why", ""))
