/* Wing & Gong's linearizability search with Lowe's memoisation, for the built-in models, in C.
 *
 * The history is a doubly linked list of call and return events in real-time order. The search
 * picks a pending call before the first return, applies it to the model state and lifts it (with
 * its return) out of the list; when the first remaining event is a return it backtracks. A
 * configuration (set of linearised operations, state) already seen is not explored again.
 *
 * States and values are integers: Python interns every value of a history (equal values, equal
 * numbers), and the models compare numbers. The string models (append) intern new strings here.
 * The set of linearised operations is a bitset over the operations in call order; the cache keeps
 * it as the first operation not linearised (all before it are) and the words from there to the
 * last linearised one, so an entry stays small however long the history, and hashes it by XOR of
 * one random word per operation, updated at each step.
 *
 * An optional operation (one an explanation relaxes) may not have taken effect: the search lifts it with its
 * effect, and on the way back without it.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OP_READ = 0, OP_WRITE = 1, OP_CAS = 2, OP_SWAP = 3, OP_APPEND = 4, OP_ACQUIRE = 5, OP_RELEASE = 6 };
enum { F_UNKNOWN = 1, F_OPTIONAL = 2 };

typedef struct {
    int32_t n;               /* operations */
    int32_t nev;             /* events: a call and a return per operation */
    const int32_t *ev;       /* events in real-time order: 2 * op + (1 if a return) */
    const int8_t *kind;      /* per operation: OP_* */
    const int64_t *a, *b, *out;
    const uint8_t *flags;    /* F_UNKNOWN: the output is not known; F_OPTIONAL: it may not have happened */
    int64_t init;            /* the initial state */
    int32_t nstr;            /* strings known at the start (ids 0..nstr-1), for OP_APPEND */
    const char *sbytes;
    const int64_t *soff;     /* nstr + 1 offsets into sbytes */
    double deadline;         /* CLOCK_MONOTONIC seconds; 0: none */
    volatile int32_t *stop;  /* nonzero: stop as soon as seen */
    int64_t max_bytes;       /* the cache grows no further than this */
    int32_t *witness;        /* out: the operations of the longest linearisation of a prefix found */
} lin_problem;

typedef struct {
    int64_t steps;
    int64_t configs;         /* cache entries */
    int32_t best_events;     /* every event before this position was lifted at some point */
    int32_t witness_len;
    int32_t cache_full;
    int32_t strings;
} lin_result;

static inline uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- interned strings */

typedef struct {
    char *bytes; int64_t used, cap;
    int64_t *off; int32_t count, ocap;        /* id -> offset; off[id + 1] - off[id] is the length */
    uint64_t *hash;                           /* id -> the string's FNV-1a hash */
    int32_t *slot; uint64_t *slot_hash; int64_t nslots; /* open addressing: id + 1, 0 empty */
    int64_t mem;
} strtab;

static uint64_t fnv(uint64_t h, const char *p, int64_t len) {
    for (int64_t i = 0; i < len; i++) { h ^= (unsigned char)p[i]; h *= 0x100000001b3ULL; }
    return h;
}

static int str_grow(strtab *t) {
    int64_t ns = t->nslots ? t->nslots * 2 : 1024;
    int32_t *slot = calloc((size_t)ns, sizeof(int32_t));
    uint64_t *sh = malloc((size_t)ns * sizeof(uint64_t));
    if (!slot || !sh) { free(slot); free(sh); return -1; }
    for (int64_t i = 0; i < t->nslots; i++) {
        if (!t->slot[i]) continue;
        int64_t j = (int64_t)(t->slot_hash[i] & (uint64_t)(ns - 1));
        while (slot[j]) j = (j + 1) & (ns - 1);
        slot[j] = t->slot[i]; sh[j] = t->slot_hash[i];
    }
    free(t->slot); free(t->slot_hash);
    t->mem += (ns - t->nslots) * 12;
    t->slot = slot; t->slot_hash = sh; t->nslots = ns;
    return 0;
}

#define FNV_START 0xcbf29ce484222325ULL

/* The id of the string x ++ y (y may be empty), whose hash is h, interned; -1 when out of memory. */
static int64_t str_intern(strtab *t, const char *x, int64_t xl, const char *y, int64_t yl, uint64_t h) {
    if (t->count >= INT32_MAX - 2) return -1;  /* (states are 32-bit in the cache) */
    if (2 * ((int64_t)t->count + 1) > t->nslots && str_grow(t)) return -1;
    int64_t j = (int64_t)(h & (uint64_t)(t->nslots - 1));
    while (t->slot[j]) {
        if (t->slot_hash[j] == h) {
            int32_t id = t->slot[j] - 1;
            int64_t o = t->off[id], l = t->off[id + 1] - o;
            if (l == xl + yl && !memcmp(t->bytes + o, x, (size_t)xl) && !memcmp(t->bytes + o + xl, y, (size_t)yl))
                return id;
        }
        j = (j + 1) & (t->nslots - 1);
    }
    if (t->used + xl + yl > t->cap) {
        int64_t nc = t->cap ? t->cap : 4096;
        while (nc < t->used + xl + yl) nc *= 2;
        /* x or y may point into the old buffer: copy through the new one */
        char *nb = malloc((size_t)nc);
        if (!nb) return -1;
        memcpy(nb, t->bytes, (size_t)t->used);
        if (x >= t->bytes && x < t->bytes + t->cap) x = nb + (x - t->bytes);
        if (y >= t->bytes && y < t->bytes + t->cap) y = nb + (y - t->bytes);
        free(t->bytes);
        t->mem += nc - t->cap;
        t->bytes = nb; t->cap = nc;
    }
    if (t->count + 2 > t->ocap) {
        int32_t no = t->ocap ? t->ocap * 2 : 1024;
        int64_t *o = realloc(t->off, (size_t)no * sizeof(int64_t));
        if (!o) return -1;
        t->off = o;
        uint64_t *hs = realloc(t->hash, (size_t)no * sizeof(uint64_t));
        if (!hs) return -1;
        t->hash = hs;
        t->mem += (int64_t)(no - t->ocap) * 16;
        t->ocap = no;
    }
    memmove(t->bytes + t->used, x, (size_t)xl);
    memmove(t->bytes + t->used + xl, y, (size_t)yl);
    int32_t id = t->count++;
    t->off[id] = t->used;
    t->hash[id] = h;
    t->used += xl + yl;
    t->off[id + 1] = t->used;
    t->slot[j] = id + 1; t->slot_hash[j] = h;
    return id;
}

static void str_free(strtab *t) { free(t->bytes); free(t->off); free(t->hash); free(t->slot); free(t->slot_hash); }

/* The id of string x ++ string y (ids), hashed from x's hash and y's bytes only. -1 when out of memory. */
static int64_t str_append(strtab *t, int64_t x, int64_t y) {
    int64_t xl = t->off[x + 1] - t->off[x], yl = t->off[y + 1] - t->off[y];
    return str_intern(t, t->bytes + t->off[x], xl, t->bytes + t->off[y], yl, fnv(t->hash[x], t->bytes + t->off[y], yl));
}

/* ---------------------------------------------------------------- the cache of configurations */

/* One slot of the table (32 bytes, aligned: one cache line holds two): the configuration's hash (its upper
 * half, whose top bits pick the slot) and state, and its set of linearised operations as a window (first word, word
 * count): up to two words held in the slot, more in the arena (data[0]: offset). */
typedef struct { uint32_t tag; int32_t state; uint32_t lw, cnt; uint64_t data[2]; } slot;
#define EMPTY UINT32_MAX

typedef struct {
    slot *slots; int64_t nslots, count; int shift;  /* the slot of tag t: t >> shift */
    uint64_t *arena; int64_t used, cap;
    int64_t mem, max_bytes;
    int full;
} cache;

static int cache_grow(cache *c) {
    int64_t ns = c->nslots ? c->nslots * 2 : 4096;
    int shift = c->nslots ? c->shift - 1 : 32 - 12;
    if (shift < 0 || c->mem + ns * (int64_t)sizeof(slot) > c->max_bytes) return -1;
    slot *t;
    if (posix_memalign((void **)&t, 64, (size_t)ns * sizeof(slot))) return -1;
    for (int64_t i = 0; i < ns; i++) t[i].cnt = EMPTY;
    for (int64_t i = 0; i < c->nslots; i++) {
        if (c->slots[i].cnt == EMPTY) continue;
        int64_t j = c->slots[i].tag >> shift;
        while (t[j].cnt != EMPTY) j = (j + 1) & (ns - 1);
        t[j] = c->slots[i];
    }
    free(c->slots);
    c->mem += (ns - c->nslots) * (int64_t)sizeof(slot);
    c->slots = t; c->nslots = ns; c->shift = shift;
    return 0;
}

/* The linearised set: bits, the first clear bit `lo`, the last set bit `hi` (-1: none), its XOR hash. */
typedef struct { uint64_t *w; int64_t nw, nbits, lo, hi; uint64_t zh; } bitset;

static inline void bs_set(bitset *s, int64_t b) {
    s->w[b >> 6] |= 1ULL << (b & 63);
    s->zh ^= mix((uint64_t)b);
    if (b > s->hi) s->hi = b;
    if (b == s->lo) {
        int64_t k = b >> 6;
        uint64_t m = ~s->w[k] & (~0ULL << (b & 63));
        while (!m) {
            if (++k == s->nw) { s->lo = s->nbits; return; }
            m = ~s->w[k];
        }
        int64_t lo = k * 64 + __builtin_ctzll(m);
        s->lo = lo < s->nbits ? lo : s->nbits;
    }
}

static inline void bs_clear(bitset *s, int64_t b) {
    s->w[b >> 6] &= ~(1ULL << (b & 63));
    s->zh ^= mix((uint64_t)b);
    if (b < s->lo) s->lo = b;
    if (b == s->hi) {
        int64_t k = b >> 6;
        uint64_t m = s->w[k] & ((1ULL << (b & 63)) - 1);
        while (!m && k > 0) m = s->w[--k];
        s->hi = m ? k * 64 + 63 - __builtin_clzll(m) : -1;
    }
}

/* The stored form of the set: [lo word, word count, words...]; all bits below the lo word are set. */
static inline void bs_window(const bitset *s, int64_t *lw, int64_t *cnt) {
    if (s->lo >= s->nbits) { *lw = s->nw; *cnt = 0; return; }
    int64_t l = s->lo >> 6, h = (s->hi > s->lo ? s->hi : s->lo) >> 6;
    *lw = l; *cnt = h - l + 1;
}

/* 1: inserted (a new configuration), 0: seen before, -1: not seen but not stored (the cache is full). */
static int cache_insert(cache *c, const bitset *s, int64_t state) {
    uint32_t tag = (uint32_t)((s->zh ^ mix((uint64_t)state ^ 0x5bd1e995ULL)) >> 32);
    int64_t lw, cnt;
    bs_window(s, &lw, &cnt);
    const uint64_t *w = s->w + lw;
    if (c->nslots) {
        int64_t j = tag >> c->shift;
        for (slot *e = c->slots + j; e->cnt != EMPTY; j = (j + 1) & (c->nslots - 1), e = c->slots + j) {
            if (e->tag == tag && e->state == (int32_t)state && e->lw == (uint32_t)lw && e->cnt == (uint32_t)cnt) {
                if (cnt <= 2) {
                    if ((cnt < 1 || e->data[0] == w[0]) && (cnt < 2 || e->data[1] == w[1])) return 0;
                } else if (!memcmp(c->arena + e->data[0], w, (size_t)cnt * 8)) {
                    return 0;
                }
            }
        }
    }
    if (c->full) return -1;
    if (2 * (c->count + 1) > c->nslots && cache_grow(c)) { c->full = 1; return -1; }
    int64_t j = tag >> c->shift;
    while (c->slots[j].cnt != EMPTY) j = (j + 1) & (c->nslots - 1);
    slot *e = c->slots + j;
    if (cnt > 2) {
        if (c->used + cnt > c->cap) {
            int64_t nc = c->cap ? c->cap * 2 : 1 << 16;
            while (nc < c->used + cnt) nc *= 2;
            if (c->mem + (nc - c->cap) * 8 > c->max_bytes) { c->full = 1; return -1; }
            uint64_t *a = realloc(c->arena, (size_t)nc * 8);
            if (!a) { c->full = 1; return -1; }
            c->mem += (nc - c->cap) * 8;
            c->arena = a; c->cap = nc;
        }
        memcpy(c->arena + c->used, w, (size_t)cnt * 8);
        e->data[0] = (uint64_t)c->used;
        c->used += cnt;
    } else {
        e->data[0] = cnt > 0 ? w[0] : 0;
        e->data[1] = cnt > 1 ? w[1] : 0;
    }
    e->tag = tag; e->state = (int32_t)state; e->lw = (uint32_t)lw; e->cnt = (uint32_t)cnt;
    c->count++;
    return 1;
}

/* ---------------------------------------------------------------- the models */

/* The state after operation i in `state`: 1 legal, 0 illegal, -1 out of memory. */
static inline int step(const lin_problem *p, strtab *t, int32_t i, int64_t state, int64_t *next) {
    int unknown = p->flags[i] & F_UNKNOWN;
    switch (p->kind[i]) {
    case OP_READ:
        *next = state;
        return unknown || p->out[i] == state;
    case OP_WRITE:
        *next = p->a[i];
        return 1;
    case OP_CAS: {
        int match = state == p->a[i];
        *next = match ? p->b[i] : state;
        return unknown || (p->out[i] != 0) == match;
    }
    case OP_SWAP:
        *next = p->a[i];
        return unknown || p->out[i] == state;
    case OP_APPEND: {
        int64_t id = str_append(t, state, p->a[i]);
        if (id < 0) return -1;
        *next = id;
        return 1;
    }
    case OP_ACQUIRE:
        *next = 1;
        return state == 0;
    case OP_RELEASE:
        *next = 0;
        return state == 1;
    }
    return 0;
}

/* How a frame's operation was lifted: the only choice there (FORCED: undo and go on backtracking), with its effect
 * where it could also have had none (EFFECT: undo, then lift it without), or as any other choice. */
enum { LIFTED = 0, EFFECT = 1, FORCED = 2 };
typedef struct { int32_t node; int32_t how; int64_t state; } frame;

/* Whether operation i leaves every state as it is whenever it is legal (a read; a compare-and-set that failed):
 * linearised as soon as it is legal, it loses no linearisation, so the search need not try it later. */
static inline int pure(const lin_problem *p, int32_t i) {
    return p->kind[i] == OP_READ || (p->kind[i] == OP_CAS && !(p->flags[i] & F_UNKNOWN) && p->out[i] == 0);
}

/* 1: linearizable, 0: not, -1: stopped (deadline or flag), -2: out of memory. */
int lin_search(const lin_problem *p, lin_result *r) {
    int32_t n = p->n, nev = p->nev, head = nev, tail = nev + 1;
    int rc = -2;
    int32_t *nxt = malloc(sizeof(int32_t) * (size_t)(nev + 2)), *prv = malloc(sizeof(int32_t) * (size_t)(nev + 2));
    int32_t *match = malloc(sizeof(int32_t) * (size_t)(nev + 1)), *bit = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int32_t *retnode = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int64_t sp = 0, wl = 0;
    frame *stack = malloc(sizeof(frame) * (size_t)(n + 1));
    bitset s = {0};
    cache c = {0};
    strtab t = {0};
    memset(r, 0, sizeof(*r));
    c.max_bytes = p->max_bytes;
    if (!nxt || !prv || !match || !bit || !retnode || !stack) goto done;
    int64_t nbits = 0, remaining = 0;
    for (int32_t k = 0; k < nev; k++) {
        int32_t e = p->ev[k], i = e >> 1;
        if (e & 1) retnode[i] = k;
        else { bit[i] = (int32_t)nbits++; remaining++; }
    }
    for (int32_t k = 0; k < nev; k++) {
        int32_t e = p->ev[k];
        match[k] = (e & 1) ? -1 : retnode[e >> 1];
    }
    s.nbits = nbits; s.nw = (nbits + 63) / 64 + 1; s.lo = 0; s.hi = -1;
    s.w = calloc((size_t)s.nw, 8);
    if (!s.w) goto done;
    if (p->nstr) {
        for (int32_t k = 0; k < p->nstr; k++) {
            int64_t len = p->soff[k + 1] - p->soff[k];
            int64_t id = str_intern(&t, p->sbytes + p->soff[k], len, "", 0, fnv(FNV_START, p->sbytes + p->soff[k], len));
            if (id != k) goto done;  /* the strings given must be distinct */
        }
    }
    nxt[head] = nev ? 0 : tail; prv[tail] = nev ? nev - 1 : head;
    for (int32_t k = 0; k < nev; k++) { prv[k] = k ? k - 1 : head; nxt[k] = k + 1 < nev ? k + 1 : tail; }
    int64_t state = p->init, steps = 0;
    int32_t entry = nxt[head];
    rc = 1;
    while (remaining > 0) {
        if ((++steps & 1023) == 0) {
            if (*p->stop) { rc = -1; break; }
            if (p->deadline > 0 && (steps & 16383) == 0 && now() > p->deadline) { rc = -1; break; }
        }
        int32_t i = -1, how = LIFTED;
        int64_t ns = state;
        if (entry < nev && !(p->ev[entry] & 1)) {
            i = p->ev[entry] >> 1;
            int ok = step(p, &t, i, state, &ns), forced = ok > 0 && pure(p, i);
            if (ok < 0) { rc = -2; break; }
            if (!ok && (p->flags[i] & (F_UNKNOWN | F_OPTIONAL))) { ns = state; ok = 1; }  /* it may not have happened */
            if (!ok) { entry = nxt[entry]; continue; }
            int optional = (p->flags[i] & F_OPTIONAL) && ns != state;
            bs_set(&s, bit[i]);
            int ins = cache_insert(&c, &s, ns);
            if (!ins && optional) { ns = state; optional = 0; ins = cache_insert(&c, &s, ns); }  /* without its effect */
            if (!ins) {
                bs_clear(&s, bit[i]);
                if (!forced) { entry = nxt[entry]; continue; }
                /* a pure operation whose configuration failed before: so does this one; backtrack */
            } else {
                how = optional ? EFFECT : forced ? FORCED : LIFTED;
            }
            if (ins) goto lift;
        }
        /* backtrack: undo the last choice, and the forced ones under it; an optional operation undone with its
         * effect is lifted again without it */
        for (;;) {
            if (sp == 0) { rc = 0; goto finished; }
            frame f = stack[--sp];
            if (sp < wl) wl = sp;
            entry = f.node; state = f.state;
            i = p->ev[entry] >> 1;
            int32_t m = match[entry];
            nxt[prv[m]] = m; prv[nxt[m]] = m;
            nxt[prv[entry]] = entry; prv[nxt[entry]] = entry;
            remaining++;
            if (f.how == EFFECT) {
                ns = state;  /* bit i is still set: the same operation, now without its effect */
                int ins = cache_insert(&c, &s, ns);
                if (ins) { how = LIFTED; goto lift; }
            }
            bs_clear(&s, bit[i]);
            entry = nxt[entry];
            if (f.how != FORCED) break;
        }
        continue;
    lift:
        stack[sp].node = entry; stack[sp].how = how; stack[sp].state = state; sp++;
        state = ns;
        {
            int32_t m = match[entry], a, b;
            a = prv[entry]; b = nxt[entry]; nxt[a] = b; prv[b] = a;
            a = prv[m]; b = nxt[m]; nxt[a] = b; prv[b] = a;
        }
        remaining--;
        int32_t first = nxt[head] == tail ? nev : nxt[head];
        if (first > r->best_events) {
            r->best_events = first;
            if (p->witness) {
                for (int64_t k = wl; k < sp; k++) p->witness[k] = p->ev[stack[k].node] >> 1;
                wl = sp; r->witness_len = (int32_t)sp;
            }
        }
        entry = nxt[head];
    }
finished:
    r->steps = steps;
    if (rc == 1) {
        r->best_events = nev;
        if (p->witness) {
            for (int64_t k = wl; k < sp; k++) p->witness[k] = p->ev[stack[k].node] >> 1;
            r->witness_len = (int32_t)sp;
        }
    }
done:
    r->configs = c.count;
    r->cache_full = c.full;
    r->strings = t.count;
    free(nxt); free(prv); free(match); free(bit); free(retnode); free(stack); free(s.w);
    free(c.slots); free(c.arena);
    str_free(&t);
    return rc;
}
