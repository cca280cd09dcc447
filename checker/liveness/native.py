"""The liveness graph algorithms in C: reachability inside a region, the fair strongly connected components
(Streett check) and the nearest target, over the compact graph's arrays (`graph.StateGraph`).

Built once per machine through the vector engine's generated-C mechanism (`kernels.cbuild.Library`: cached
per user, loaded by descriptor) and called with ctypes, which releases the GIL. `library()` is None where no C
compiler is found, the build fails, or LOCKSTEP_NATIVE=never; `scc` then runs the same algorithms in Python.
"""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from ..vector.kernels.cbuild import BuildError, Library, compiler

SOURCE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WEAK 1
#define STRONG 2

static inline int32_t cons_of(const int32_t *lab, const int32_t *lcons, int64_t e) {
    int32_t l = lab[e];
    return l < 0 ? -1 : lcons[l];
}

/* 1 in out[u] where a fairness constraint is enabled in state u (a step of it, or one listed as extra). */
void fair_enabled(int64_t n, const int64_t *off, const int32_t *lab, const int32_t *lcons,
                  const int64_t *xoff, const int32_t *xcons, uint8_t *out) {
    for (int64_t u = 0; u < n; u++) {
        uint8_t any = xoff[u + 1] > xoff[u];
        for (int64_t e = off[u]; !any && e < off[u + 1]; e++)
            any = cons_of(lab, lcons, e) >= 0;
        out[u] = any;
    }
}

/* States reachable from `starts` through states of the region (starts included): seen[u] = 1. How many. */
int64_t reach_within(int64_t n, const int64_t *off, const int32_t *tgt, const uint8_t *region,
                     const int64_t *starts, int64_t ns, uint8_t *seen) {
    int64_t *queue = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!queue) return -1;
    int64_t head = 0, tail = 0;
    for (int64_t k = 0; k < ns; k++) {
        int64_t s = starts[k];
        if (!seen[s]) { seen[s] = 1; queue[tail++] = s; }
    }
    while (head < tail) {
        int64_t u = queue[head++];
        for (int64_t e = off[u]; e < off[u + 1]; e++) {
            int64_t v = tgt[e];
            if (region[v] && !seen[v]) { seen[v] = 1; queue[tail++] = v; }
        }
    }
    free(queue);
    return tail;
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The target nearest to an initial state, a stem counted from each start's depth then one per step inside
   `within`: the states of each distance are taken in ascending order, and a state's predecessor is the first
   of the previous distance with a step to it (pred/pedge: the state and the step's position; -1 at a start,
   which keeps its depth). Starts are distinct.
   Returns the target, or -1 (out of memory: -2). */
int64_t nearest(int64_t n, const int64_t *off, const int32_t *tgt, const uint8_t *within,
                const int64_t *starts, const int64_t *sdepth, int64_t ns, const uint8_t *target,
                int64_t *pred, int64_t *pedge, int64_t *dist) {
    int64_t maxd = 0, nc = 0, result = -1;
    for (int64_t k = 0; k < ns; k++) if (sdepth[k] > maxd) maxd = sdepth[k];
    int64_t *cur = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *nxt = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *keys = malloc(sizeof(int64_t) * (size_t)(ns + 1));  /* the starts by depth (counting sort) */
    int64_t *bstart = calloc((size_t)(maxd + 2), sizeof(int64_t));
    int64_t *fill = malloc(sizeof(int64_t) * (size_t)(maxd + 1));
    if (!cur || !nxt || !keys || !bstart || !fill) { result = -2; goto done; }
    for (int64_t u = 0; u < n; u++) dist[u] = -1;
    for (int64_t k = 0; k < ns; k++) bstart[sdepth[k] + 1]++;
    for (int64_t b = 0; b <= maxd; b++) bstart[b + 1] += bstart[b];
    for (int64_t b = 0; b <= maxd; b++) fill[b] = bstart[b];
    for (int64_t k = 0; k < ns; k++) keys[fill[sdepth[k]]++] = starts[k];
    for (int64_t k = 0; k < ns; k++) {
        int64_t s = starts[k];
        if (dist[s] < 0 || sdepth[k] < dist[s]) { dist[s] = sdepth[k]; pred[s] = -1; pedge[s] = -1; }
    }
    for (int64_t d = 0;; d++) {
        /* the states at distance d: those reached from distance d - 1 (in cur), then the starts of depth d */
        if (d <= maxd) {
            for (int64_t k = bstart[d]; k < bstart[d + 1]; k++) {
                int64_t s = keys[k];
                if (dist[s] == d && pred[s] == -1) cur[nc++] = s;
            }
        }
        if (nc == 0) {
            if (d >= maxd) break;
            continue;
        }
        qsort(cur, (size_t)nc, sizeof(int64_t), cmp64);
        for (int64_t k = 0; k < nc; k++)
            if (target[cur[k]]) { result = cur[k]; goto done; }
        int64_t nn = 0;
        for (int64_t k = 0; k < nc; k++) {
            int64_t u = cur[k];
            for (int64_t e = off[u]; e < off[u + 1]; e++) {
                int64_t v = tgt[e];
                if (within[v] && (dist[v] < 0 || dist[v] > d + 1)) { dist[v] = d + 1; pred[v] = u; pedge[v] = e; nxt[nn++] = v; }
            }
        }
        int64_t *t = cur; cur = nxt; nxt = t; nc = nn;
    }
done:
    free(cur); free(nxt); free(keys); free(bstart); free(fill);
    return result;
}

/* The fair strongly connected components inside `region` (Streett check): an SCC of more than one state (or
   with a step to itself) whose every weakly fair constraint enabled in all its states is taken by a step
   inside it, and every strongly fair one enabled in some state is taken; an SCC with a strongly fair
   constraint enabled but not taken loses the states enabling it and is decomposed again. With `accepting`,
   an SCC without an accepting state is dropped. comp[u]: the fair component of u (numbered from 0), or -1.
   Returns the number of components, or -1 when out of memory. */
int64_t fair_sccs(int64_t n, const int64_t *off, const int32_t *tgt, const int32_t *lab, const int32_t *lcons,
                  const int64_t *xoff, const int32_t *xcons, const uint8_t *kind, int64_t ncons,
                  const uint8_t *region, const uint8_t *accepting, int64_t *comp) {
    int64_t *part = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int32_t *low = malloc(sizeof(int32_t) * (size_t)(n + 1));
    uint8_t *onstk = calloc((size_t)(n + 1), 1);
    int64_t *stk = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *csn = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *cse = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *cur = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *cnt = calloc((size_t)(ncons + 1), sizeof(int64_t));
    int64_t *stamp = malloc(sizeof(int64_t) * (size_t)(ncons + 1));
    uint8_t *taken = calloc((size_t)(ncons + 1), 1);
    uint8_t *mark = calloc((size_t)(ncons + 1), 1);
    uint8_t *unmet = calloc((size_t)(ncons + 1), 1);
    int64_t *touched = malloc(sizeof(int64_t) * (size_t)(ncons + 1));
    int64_t pcap = n + 16, plen = 0;
    int64_t *pool = malloc(sizeof(int64_t) * (size_t)pcap);
    int64_t wcap = 64, wlen = 0;
    int64_t *work = malloc(sizeof(int64_t) * 3 * (size_t)wcap); /* (pool start, length, label) */
    int64_t result = 0;
    if (!part || !idx || !low || !onstk || !stk || !csn || !cse || !cur || !cnt || !stamp || !taken || !mark
        || !unmet || !touched || !pool || !work) { result = -1; goto out; }
    for (int64_t c = 0; c < ncons; c++) stamp[c] = -1;
    int64_t labels = 1;
    for (int64_t u = 0; u < n; u++) {
        comp[u] = -1;
        part[u] = -1;
        if (region[u]) { part[u] = 0; pool[plen++] = u; }
    }
    work[0] = 0; work[1] = plen; work[2] = 0; wlen = 1;
    while (wlen > 0) {
        wlen--;
        int64_t ps = work[3 * wlen], pl = work[3 * wlen + 1], L = work[3 * wlen + 2];
        memcpy(cur, pool + ps, sizeof(int64_t) * (size_t)pl);
        plen = ps;
        for (int64_t k = 0; k < pl; k++) idx[cur[k]] = -1;
        int32_t counter = 0;
        int64_t sp = 0;
        for (int64_t k = 0; k < pl; k++) {
            int64_t root = cur[k];
            if (part[root] != L || idx[root] >= 0) continue;
            int64_t csp = 0;
            idx[root] = low[root] = counter++; stk[sp++] = root; onstk[root] = 1;
            csn[csp] = root; cse[csp] = off[root]; csp++;
            while (csp > 0) {
                int64_t v = csn[csp - 1], e = cse[csp - 1];
                if (e < off[v + 1]) {
                    cse[csp - 1]++;
                    int64_t w = tgt[e];
                    if (part[w] != L) continue;
                    if (idx[w] < 0) {
                        idx[w] = low[w] = counter++; stk[sp++] = w; onstk[w] = 1;
                        csn[csp] = w; cse[csp] = off[w]; csp++;
                    } else if (onstk[w] && idx[w] < low[v]) {
                        low[v] = idx[w];
                    }
                    continue;
                }
                csp--;
                if (csp > 0) { int64_t p = csn[csp - 1]; if (low[v] < low[p]) low[p] = low[v]; }
                if (low[v] != idx[v]) continue;
                /* an SCC: stk[s0..sp) */
                int64_t s0 = sp;
                do { s0--; onstk[stk[s0]] = 0; } while (stk[s0] != v);
                int64_t *x = stk + s0, k2 = sp - s0;
                sp = s0;
                int64_t S = labels++;
                for (int64_t i = 0; i < k2; i++) part[x[i]] = S;
                int keep = 1;
                if (k2 == 1) {
                    keep = 0;
                    for (int64_t f = off[x[0]]; f < off[x[0] + 1]; f++) if (tgt[f] == x[0]) keep = 1;
                }
                if (keep && accepting) {
                    keep = 0;
                    for (int64_t i = 0; i < k2 && !keep; i++) keep = accepting[x[i]];
                }
                if (!keep) { for (int64_t i = 0; i < k2; i++) part[x[i]] = -1; continue; }
                int64_t nt = 0;
                for (int64_t i = 0; i < k2; i++) {
                    int64_t y = x[i];
                    for (int64_t f = off[y]; f < off[y + 1]; f++) {
                        int32_t c = cons_of(lab, lcons, f);
                        if (c < 0) continue;
                        if (!mark[c]) { mark[c] = 1; touched[nt++] = c; }
                        if (stamp[c] != y) { stamp[c] = y; cnt[c]++; }
                        if (part[tgt[f]] == S) taken[c] = 1;
                    }
                    for (int64_t f = xoff[y]; f < xoff[y + 1]; f++) {
                        int32_t c = xcons[f];
                        if (!mark[c]) { mark[c] = 1; touched[nt++] = c; }
                        if (stamp[c] != y) { stamp[c] = y; cnt[c]++; }
                    }
                }
                int weak_fail = 0, any_unmet = 0;
                for (int64_t t = 0; t < nt; t++) {
                    int64_t c = touched[t];
                    if (taken[c]) continue;
                    if (kind[c] == WEAK && cnt[c] == k2) weak_fail = 1;
                    if (kind[c] == STRONG && cnt[c] > 0) { unmet[c] = 1; any_unmet = 1; }
                }
                if (weak_fail) {
                    for (int64_t i = 0; i < k2; i++) part[x[i]] = -1;
                } else if (any_unmet) {
                    int64_t L2 = labels++, start = plen, len = 0;
                    if (plen + k2 > pcap) {
                        int64_t nc2 = 2 * pcap + k2;
                        int64_t *np2 = realloc(pool, sizeof(int64_t) * (size_t)nc2);
                        if (!np2) { result = -1; goto out; }
                        pool = np2; pcap = nc2;
                    }
                    for (int64_t i = 0; i < k2; i++) {
                        int64_t y = x[i], bad = 0;
                        for (int64_t f = off[y]; f < off[y + 1] && !bad; f++) {
                            int32_t c = cons_of(lab, lcons, f);
                            if (c >= 0 && unmet[c]) bad = 1;
                        }
                        for (int64_t f = xoff[y]; f < xoff[y + 1] && !bad; f++) if (unmet[xcons[f]]) bad = 1;
                        if (bad) { part[y] = -1; } else { part[y] = L2; pool[plen++] = y; len++; }
                    }
                    if (len > 0) {
                        if (wlen == wcap) {
                            int64_t *nw = realloc(work, sizeof(int64_t) * 3 * (size_t)(2 * wcap));
                            if (!nw) { result = -1; goto out; }
                            work = nw; wcap *= 2;
                        }
                        work[3 * wlen] = start; work[3 * wlen + 1] = len; work[3 * wlen + 2] = L2; wlen++;
                    }
                } else {
                    for (int64_t i = 0; i < k2; i++) comp[x[i]] = result;
                    result++;
                }
                for (int64_t t = 0; t < nt; t++) {
                    int64_t c = touched[t];
                    cnt[c] = 0; stamp[c] = -1; taken[c] = 0; mark[c] = 0; unmet[c] = 0;
                }
            }
        }
    }
out:
    free(part); free(idx); free(low); free(onstk); free(stk); free(csn); free(cse); free(cur); free(cnt);
    free(stamp); free(taken); free(mark); free(unmet); free(touched); free(pool); free(work);
    return result;
}

/* The index of each state by fingerprint: open addressing with linear probing over (fingerprint, index + 1)
   pairs side by side in `tab` (index + 1 = 0: empty), so a probe reads one cache line; the slot of the
   fingerprint PF positions ahead is prefetched. For each of m fingerprints in order: its state's index; a new
   one (next, next + 1, ...) for a fingerprint not in the table while fewer than `limit` states are known (its
   position in newpos), else -1. Where `first` is given (`first_fps`), each of the first `start` fingerprints
   that repeats an earlier one takes that one's answer without a lookup. Returns the number of new states. */
#define PF 12
static inline uint64_t slot_of(uint64_t f, uint64_t mask) { return (f ^ (f >> 31)) & mask; }

static inline int looked_up(const int32_t *first, int64_t start, int64_t j) { return j >= start || first[j] == j; }

int64_t index_fps(uint64_t *tab, uint64_t mask, const uint64_t *fps, int64_t m, int32_t *out,
                  int64_t next, int64_t limit, int64_t *newpos, const int32_t *first, int64_t start) {
    int64_t added = 0, pf = 0;
    if (!first) start = 0;
    for (int ahead = 0; pf < m && ahead < PF; pf++)  /* the slots of the first PF lookups */
        if (looked_up(first, start, pf)) { __builtin_prefetch(&tab[2 * slot_of(fps[pf], mask)], 1); ahead++; }
    for (int64_t j = 0; j < m; j++) {
        if (!looked_up(first, start, j)) { out[j] = out[first[j]]; continue; }
        for (; pf < m; pf++)  /* and the slot of the lookup PF ahead of this one */
            if (looked_up(first, start, pf)) { __builtin_prefetch(&tab[2 * slot_of(fps[pf++], mask)], 1); break; }
        uint64_t f = fps[j], h = slot_of(f, mask);
        for (;;) {
            uint64_t v = tab[2 * h + 1];
            if (v == 0) {
                if (next + added >= limit) { out[j] = -1; break; }
                tab[2 * h] = f; tab[2 * h + 1] = (uint64_t)(next + added) + 1;
                out[j] = (int32_t)(next + added); newpos[added++] = j;
                break;
            }
            if (tab[2 * h] == f) { out[j] = (int32_t)(v - 1); break; }
            h = (h + 1) & mask;
        }
    }
    return added;
}

/* For m fingerprints in order, each one's first position among them (j itself where it is the first) within its
   block of `block` (a power of two: repeats are mostly near one another, and a block's table stays in cache),
   found by open addressing over positions + 1 in `tab` (2 * block slots, zero on entry and on return), until
   *stop is set (read between blocks): returns how many were placed. */
int64_t first_fps(const uint64_t *fps, int64_t m, int32_t *tab, int64_t block, int32_t *first, const int64_t *stop) {
    const uint64_t mask = 2 * (uint64_t)block - 1;
    int64_t b = 0;
    for (; b < m && !__atomic_load_n(stop, __ATOMIC_RELAXED); b += block) {
        const int64_t e = b + block < m ? b + block : m;
        for (int64_t j = b; j < e; j++) {
            if (j + PF < e) __builtin_prefetch(&tab[slot_of(fps[j + PF], mask)], 1);
            const uint64_t f = fps[j];
            uint64_t h = slot_of(f, mask);
            for (;;) {
                const int32_t v = tab[h];
                if (v == 0) { tab[h] = (int32_t)(j - b + 1); first[j] = (int32_t)j; break; }
                if (fps[b + v - 1] == f) { first[j] = (int32_t)(b + v - 1); break; }
                h = (h + 1) & mask;
            }
        }
        memset(tab, 0, (mask + 1) * sizeof(int32_t));
    }
    return b < m ? b : m;
}

/* The states of `region` that a step inside it enters from a state numbered after it, or from itself, marked in
   `out`; how many. Numbers cannot rise all the way round a cycle, so each cycle inside the region takes such a
   step: its states are reachable from these. The steps are read in order, the region only at such a step. */
int64_t back_targets(int64_t n, const int64_t *off, const int32_t *tgt, const uint8_t *region, uint8_t *out) {
    int64_t k = 0;
    for (int64_t u = 0; u < n; u++) {
        if (!region[u]) continue;
        for (int64_t e = off[u]; e < off[u + 1]; e++) {
            const int64_t w = tgt[e];
            if (w <= u && region[w] && !out[w]) { out[w] = 1; k++; }
        }
    }
    return k;
}

/* Serial keys (row * T1 + transition, ascending) of m steps split into rows and transitions, and the steps of
   each of the n rows counted into counts (zero on entry): one pass, no division. */
void split_keys(const int64_t *keys, int64_t m, int64_t T1, int64_t *rows, int32_t *tids, int64_t *counts) {
    int64_t r = 0, base = 0;
    for (int64_t j = 0; j < m; j++) {
        const int64_t k = keys[j];
        if (k >= base + T1) { r = k / T1; base = r * T1; }
        rows[j] = r; tids[j] = (int32_t)(k - base); counts[r]++;
    }
}

/* Put m (fingerprint, index) pairs into a table (growing it). */
void put_fps(uint64_t *tab, uint64_t mask, const uint64_t *fps, const int64_t *idx, int64_t m) {
    for (int64_t j = 0; j < m; j++) {
        if (j + PF < m) __builtin_prefetch(&tab[2 * slot_of(fps[j + PF], mask)], 1);
        uint64_t h = slot_of(fps[j], mask);
        while (tab[2 * h + 1]) h = (h + 1) & mask;
        tab[2 * h] = fps[j]; tab[2 * h + 1] = (uint64_t)idx[j] + 1;
    }
}
"""

_P = ctypes.c_void_p
_I = ctypes.c_int64
_LOCK = threading.Lock()
_STATE: dict[str, object] = {}


def library() -> ctypes.CDLL | None:
    """The loaded library (built on first use), or None where the algorithms run in Python."""
    with _LOCK:
        if "lib" in _STATE:
            return _STATE["lib"]  # type: ignore[return-value]
        lib = None
        if os.environ.get("LOCKSTEP_NATIVE", "auto") != "never" and compiler() is not None:
            try:
                lib = Library(SOURCE, "lockstep_liveness").load()
            except (BuildError, OSError) as e:
                _STATE["why"] = str(e)
            else:
                lib.fair_enabled.argtypes = [_I, _P, _P, _P, _P, _P, _P]
                lib.fair_enabled.restype = None
                lib.reach_within.argtypes = [_I, _P, _P, _P, _P, _I, _P]
                lib.reach_within.restype = _I
                lib.nearest.argtypes = [_I, _P, _P, _P, _P, _P, _I, _P, _P, _P, _P]
                lib.nearest.restype = _I
                lib.fair_sccs.argtypes = [_I, _P, _P, _P, _P, _P, _P, _P, _I, _P, _P, _P]
                lib.fair_sccs.restype = _I
                lib.index_fps.argtypes = [_P, _I, _P, _I, _P, _I, _I, _P, _P, _I]
                lib.index_fps.restype = _I
                lib.first_fps.argtypes = [_P, _I, _P, _I, _P, _P]
                lib.first_fps.restype = _I
                lib.put_fps.argtypes = [_P, _I, _P, _P, _I]
                lib.put_fps.restype = None
                lib.back_targets.argtypes = [_I, _P, _P, _P, _P]
                lib.back_targets.restype = _I
                lib.split_keys.argtypes = [_P, _I, _I, _P, _P, _P]
                lib.split_keys.restype = None
        _STATE["lib"] = lib
        return lib


FIRST_BLOCK = 1 << 16  # fingerprints per block of `first_fps` (a power of two), whose table has twice as many slots


def ptr(a: np.ndarray | None) -> int | None:
    """The address of a contiguous array's data (None for None)."""
    if a is None:
        return None
    assert a.flags.c_contiguous
    return a.ctypes.data
