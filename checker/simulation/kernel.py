"""Random walks in a typed spec's compiled kernel: the vector engine's fused successor function (`fused`, built
with every enabled step as a candidate) and a C loop that advances a batch of walks, one at a time, to the end.

At each state the loop records its fingerprint (the first time the walk visits it), tests the invariants and the
state constraints, then runs every transition (`gen`), counts each enabled step and takes the one `rng.pick`
chooses: the choice the Python walker (`block`) makes on the same state, since both see the enabled steps in
transition order. So walk k is the
same in C and in Python, on any number of processes, threads or Ray actors. A walk that breaks an invariant,
fails a step or (if deadlocks are checked) deadlocks stops the batch; the caller re-runs it in Python for its
trace. What the kernel counts: walks, steps, endings, enabled and taken steps per transition (so coverage per
action, message tag and timer), the fingerprints of the states each walk visited (distinct states and the
unseen mass) and a hash of each variable's values (distinct values per variable).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lockstep.specs.lang.program import Program
from lockstep.specs.lang.terms import Term
from lockstep.specs.lang.types import SetDomain

from ..model import Model
from ..typed_model import TypedModel
from ..vector.kernels.cbuild import Background, BuildError, compiler
from ..vector.kernels.fused import Fused, Unfusable
from ..vector.layout import Layout, VectorUnsupported
from .rng import C_SOURCE, GOLDEN, M64

LIMIT = 1 << 62  # the vector engine's bound on integer terms: int64 arithmetic never overflows within it
CELLS = 1 << 21  # fingerprints and variables' values one kernel call may record
CACHE = 1024  # values remembered per variable, so that a value seen again is mostly not recorded again


def _values(layout: Layout) -> str:
    """`count_values(w, vc, vo, ld, no)`: a hash of each variable's value in state `w` (its columns' bits, mixed),
    kept in a direct-mapped cache of `CACHE` per variable (`vc`) and appended to the variable's row of `vo` (`ld`
    apart; `no` counts them) when it is not there: every value at least once, a value seen again mostly not."""
    lines = ["static inline void count_values(const uint64_t *w, uint64_t *vc, uint64_t *vo, int64_t ld, int64_t *no) {",
             "    uint64_t h, *c;"]
    for i, f in enumerate(layout.prog.fields):
        cols = [c for s in range(f.base, f.base + f.count) for c in layout.slot_columns[s] if c.bits]
        lines.append(f"    h = UINT64_C({(i + 1) * GOLDEN & M64});")
        for c in cols:
            raw = f"(w[{c.word}] >> {c.shift})" if c.shift else f"w[{c.word}]"
            lines.append(f"    h = mix(h ^ ({raw} & UINT64_C({c.mask})));")
        lines += ["    if (!h) h = 1;", f"    c = vc + {i * CACHE} + (h & {CACHE - 1});",
                  f"    if (*c != h) {{ *c = h; vo[{i} * ld + no[{i}]++] = h; }}"]
    return "\n".join([*lines, "}"])


def _loop(layout: Layout, transitions: int) -> str:
    """The C walk loop over a kernel of `transitions` and states packed as `layout`."""
    words, seed = layout.words, layout.seed
    nonzero = "" if layout.exact else "\n    if (!h) h = 1;"
    return C_SOURCE + _values(layout) + f"""
static inline uint64_t state_fp(const uint64_t *w) {{
    uint64_t h = mix(w[0] ^ UINT64_C({seed}));
    for (int64_t k = 1; k < {words}; k++) h = mix(h ^ w[k]);{nonzero}
    return h;
}}
static inline int first_visit(uint64_t *keys, int64_t *stamp, int64_t mask, int64_t walk, uint64_t h) {{
    /* whether the walk (stamped walk + 1) visits state h for the first time: a hash set cleared by its stamps */
    for (int64_t p = (int64_t)(h & (uint64_t)mask);; p = (p + 1) & mask) {{
        if (stamp[p] != walk + 1) {{ stamp[p] = walk + 1; keys[p] = h; return 1; }}
        if (keys[p] == h) return 0;
    }}
}}
int64_t walk(const uint64_t *I, int64_t ni, uint64_t seed, int64_t first, int64_t n, int64_t depth, int deadlock,
             int checked, int constrained, uint64_t *cw, uint64_t *cfp, int64_t *ckey, int64_t *steps, int8_t *end,
             uint64_t *fps, int64_t *sizes, uint64_t *keys, int64_t *stamp, int64_t mask, int64_t *enabled,
             int64_t *taken, uint64_t *vc, uint64_t *vo, int64_t ld, int64_t *no) {{
    int64_t d = 0;
    uint64_t w[{words}];
    int64_t info[4];
    uint8_t out = 0;
    for (int64_t i = 0; i < n; i++) {{
        const uint64_t key = walk_key(seed, (uint64_t)(first + i));
        const int64_t s0 = pick(key, 0, ni);
        for (int64_t k = 0; k < {words}; k++) w[k] = I[k * ni + s0];
        uint64_t h = state_fp(w);
        int64_t j = 0, d0 = d;
        int e = 0;
        for (;;) {{
            if (first_visit(keys, stamp, mask, first + i, h)) {{
                fps[d++] = h;
                count_values(w, vc, vo, ld, no);
            }}
            if (checked && bad(w, 1, 0, 1) >= 0) {{ e = 3; break; }}
            if (constrained) {{ outside(w, 1, 0, 1, &out); if (out) {{ e = 2; break; }} }}
            if (j == depth) break;
            info[0] = 0;
            const int64_t m = gen(w, 1, 0, 1, 0, cw, {transitions}, cfp, ckey, info, NULL, NULL, NULL);
            if (info[0] == 1) {{ e = 4; break; }}
            if (!m) {{ e = deadlock ? 5 : 1; break; }}
            for (int64_t c = 0; c < m; c++) enabled[ckey[c]]++;
            const int64_t c = pick(key, (uint64_t)(j + 1), m);
            for (int64_t k = 0; k < {words}; k++) w[k] = cw[k * {transitions} + c];
            h = state_fp(w);
            taken[ckey[c]]++;
            j++;
        }}
        sizes[i] = d - d0;
        steps[i] = j;
        end[i] = (int8_t)e;
        if (e >= 3) return i + 1;
    }}
    return n;
}}
"""


def _fits(prog: Program) -> str | None:
    """Why the kernel's 64-bit arithmetic could differ from Python's on this program (None: it cannot)."""
    seen: set[int] = set()
    stack: list = [c.term for t in prog.transitions for c in t.checks]
    stack += [u for t in prog.transitions for u in t.updates.values()]
    stack += [p.term for p in (*prog.invariants, *prog.constraints)]
    while stack:
        t = stack.pop()
        if not isinstance(t, Term) or id(t) in seen:
            continue
        seen.add(id(t))
        if t.dom is not None and not isinstance(t.dom, SetDomain) and (abs(t.lo) >= LIMIT or abs(t.hi) >= LIMIT):
            return f"an expression at {t.loc} may exceed 64-bit integers"
        stack.extend(t.args)
    return None


@dataclass
class Scratch:
    """The buffers of one caller's kernel calls."""

    cw: np.ndarray  # a state's candidates (words, transitions)
    cfp: np.ndarray
    ckey: np.ndarray
    steps: np.ndarray
    end: np.ndarray
    fps: np.ndarray  # walks * (depth + 1)
    sizes: np.ndarray
    keys: np.ndarray  # a hash set of one walk's states (a power of two above twice a walk's states)
    stamp: np.ndarray
    cache: np.ndarray  # the direct-mapped caches of the variables' values
    vo: np.ndarray  # (variables, walks * (depth + 1)): values recorded
    no: np.ndarray  # how many per variable


@dataclass
class Batch:
    """What one kernel call did: `done` walks (the last one violating if `end[done - 1] >= 3`)."""

    done: int
    steps: np.ndarray  # steps of each walk
    end: np.ndarray  # how each walk ended: 0..2 as `block.ENDINGS`; 3 an invariant, 4 a step failed, 5 a deadlock
    fps: np.ndarray  # the fingerprints of the distinct states each walk visited, walk after walk
    sizes: np.ndarray  # how many of them each walk visited
    values: list[np.ndarray]  # per variable, hashes of its values: each value of a visited state at least once


class CompiledWalks:
    """A typed spec's walk kernel, built (or found in the per-user cache) and loaded."""

    def __init__(self, model: TypedModel):
        prog = model.prog
        self.layout = Layout(prog)
        why = _fits(prog)
        if why is not None:
            raise Unfusable(why)
        self.transitions = len(prog.transitions)
        lay = self.layout
        self.fused = Fused(prog, lay, loops=True, tail=_loop(lay, max(1, self.transitions)))
        self.variables = len(prog.fields)
        self.inits = np.ascontiguousarray(lay.pack_many(model.initial_states()))
        self.checked = bool(prog.invariants)
        self.constrained = bool(prog.constraints)
        self.cached = all(lib.cached() for lib in self.fused.libraries)

    def load(self) -> None:
        """Build the kernel's libraries (each by its own compiler, at once) and load them; BuildError if one fails."""
        bg = Background(self.fused.libraries)
        bg.wait()
        if bg.error:
            raise BuildError(bg.error)
        libs = bg.result
        self.fused.bind(libs[0], libs[1:])  # type: ignore[arg-type]
        fn = libs[0].walk  # type: ignore[union-attr]
        p, i64, c = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
        fn.argtypes = [p, i64, ctypes.c_uint64, i64, i64, i64, c, c, c, *[p] * 9, i64, *[p] * 4, i64, p]
        fn.restype = i64
        self._walk = fn

    def chunk(self, depth: int) -> int:
        """Walks per kernel call."""
        return max(1, min(4096, CELLS // max(1, self.variables) // (depth + 1)))

    def scratch(self, depth: int) -> Scratch:
        """The buffers of `run` for walks of `depth` steps (one set per caller at a time: reused from call to
        call, with the cache of the variables' values seen)."""
        T, F, n = max(1, self.transitions), max(1, self.variables), self.chunk(depth)
        room = 1 << (2 * (depth + 1)).bit_length()
        return Scratch(np.empty((self.layout.words, T), dtype=np.uint64), np.empty(T, dtype=np.uint64),
                       np.empty(T, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int8),
                       np.empty(n * (depth + 1), dtype=np.uint64), np.empty(n, dtype=np.int64),
                       np.empty(room, dtype=np.uint64), np.zeros(room, dtype=np.int64),
                       np.zeros(F * CACHE, dtype=np.uint64), np.empty((F, n * (depth + 1)), dtype=np.uint64),
                       np.empty(F, dtype=np.int64))

    def run(self, first: int, n: int, depth: int, seed: int, deadlock: bool, enabled: np.ndarray,
            taken: np.ndarray, scratch: Scratch) -> Batch:
        """Walks first .. first+n-1 (n at most `chunk(depth)`; stopping after the first that violates), adding to the
        per-transition counts `enabled` and `taken` (int64 arrays), in the buffers `scratch(depth)` gave (the
        batch's arrays are views of them until the next call). Releases the GIL while it runs."""
        b = scratch
        assert enabled.dtype == taken.dtype == np.int64 and enabled.size >= self.transitions <= taken.size
        assert len(b.fps) == len(b.steps) * (depth + 1) and n <= len(b.steps)
        b.no[:] = 0
        done = int(self._walk(self.inits.ctypes.data, self.inits.shape[1], seed & M64, first, n, depth, int(deadlock),
                              int(self.checked), int(self.constrained), b.cw.ctypes.data, b.cfp.ctypes.data,
                              b.ckey.ctypes.data, b.steps.ctypes.data, b.end.ctypes.data, b.fps.ctypes.data,
                              b.sizes.ctypes.data, b.keys.ctypes.data, b.stamp.ctypes.data, len(b.keys) - 1,
                              enabled.ctypes.data, taken.ctypes.data, b.cache.ctypes.data, b.vo.ctypes.data,
                              b.vo.shape[1], b.no.ctypes.data))
        sizes = b.sizes[:done]
        return Batch(done, b.steps[:done], b.end[:done], b.fps[:int(sizes.sum())], sizes,
                     [b.vo[i, :b.no[i]].copy() for i in range(self.variables)])


def compiled_walks(model: Model, say: Callable[[str], None] | None = None) -> tuple[CompiledWalks | None, str]:
    """The model's walk kernel, loaded (built first if it is not in the cache, telling `say`), or None; and a note
    saying where the walks run and, if in Python, why. `LOCKSTEP_NATIVE=never` keeps them in Python."""
    cache = model.__dict__.get("_compiled_walks")
    if cache is not None:
        return cache
    got = _compiled_walks(model, say)
    model.__dict__["_compiled_walks"] = got
    return got


def _compiled_walks(model: Model, say: Callable[[str], None] | None) -> tuple[CompiledWalks | None, str]:
    python = "walks run in Python"
    if not isinstance(model, TypedModel):
        return None, f"{python} (a plain spec has no compiled kernel)"
    if model.symmetry:
        return None, f"{python} (with symmetry reduction)"
    if os.environ.get("LOCKSTEP_NATIVE") == "never":
        return None, f"{python} (LOCKSTEP_NATIVE=never)"
    if compiler() is None:
        return None, f"{python}: no C compiler (set CC to one) for the spec's compiled kernel"
    try:
        walks = CompiledWalks(model)
        if not walks.cached and say is not None:
            say("building the spec's compiled kernel for the walks (once: it is cached)")
        walks.load()
    except (VectorUnsupported, Unfusable) as e:
        return None, f"{python}: the spec has no compiled kernel ({e})"
    except (BuildError, OSError) as e:
        return None, f"{python}: the compiled kernel did not build or load ({e})"
    return walks, "walks run in the spec's compiled kernel (C)"
