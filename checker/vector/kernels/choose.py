"""Partial-order reduction in C: `reduction.ample.Reducer.choose` for one state, for the fused kernel.

The generated `choose(w, E, U, A, S)` takes a state's packed words and the marks the kernel made
while generating its successors (E: the enabled steps, U: those that loop or change a visible bit)
and writes in A the steps to explore; it returns how many, or -1 where the state is explored fully.
It decides exactly as `Reducer.choose` does for a batch: the literals the structure tests are read
from the words, each process's events fall into the units of the pattern of its pivot literals (the
tables `ProcessUnits.table` gives, precomputed for every pattern), the "needs" between units are
marked from a static list of rules (a disabled event's possible enablers, overflows, drops on a
duplicating network, forges, the crash budget: `Reducer._needs`, each as two conditions and up to
two events that must be enabled), each process offers its enabled invisible unit needing the fewest
others, and the smallest closure that is invisible and not everything wins (the first on ties). The
cycle proviso is the search's: it needs the visited set.
"""

from __future__ import annotations

from typing import Any

from ...reduction.ample import Reducer
from ..layout import CHUNK, Layout

DENSE_NEEDS = 2048  # words of "needs" bitsets cleared whole per state; more: only the rows a state touched


def _array(ctype: str, name: str, values: list[int]) -> str:
    body = ", ".join(str(int(v)) for v in values) or "0"
    return f"static const {ctype} {name}[] = {{{body}}};"


class ChooseSource:
    """The C of `choose` for one reducer and packing (`text`); `scratch_bytes` is what it needs per thread."""

    def __init__(self, red: Reducer, layout: Layout, literal: Any):
        self.red, self.layout, self.literal = red, layout, literal
        s = red.s
        self.T = red.ntrans
        self.NU = s.nunits
        self.NW = max(1, -(-self.NU // 64))
        self.lits: dict[tuple, int] = {}
        self.conds: dict[str, int] = {"1": 0}
        self.text = self._build()

    # -- literals and conditions --------------------------------------------------------------
    def _lit(self, lit: tuple) -> str:
        if lit not in self.lits:
            self.lits[lit] = len(self.lits)
        return f"L[{self.lits[lit]}]"

    def _lit_code(self, lit: tuple) -> str:
        kind, slot = lit[0], lit[1]
        cols = self.layout.slot_columns[slot]
        if kind == "bit":
            i = lit[2]
            c = cols[i // CHUNK]
            return f"(uint8_t)((w[{c.word}] >> {c.shift + i % CHUNK}) & 1)"
        c = cols[0]
        raw = f"((int64_t)((w[{c.word}] >> {c.shift}) & UINT64_C({c.mask})) + {self.literal(c.lo)})"
        if kind == "eq":
            return f"(uint8_t)({raw} == {self.literal(lit[2])})"
        return f"(uint8_t)({raw} > 0)"

    def _cond(self, code: str) -> int:
        if code not in self.conds:
            self.conds[code] = len(self.conds)
        return self.conds[code]

    def _alive(self, send: Any) -> int:
        parts = [f"!{self._lit(k)}" for k in send.kills]
        if send.inputs:
            parts.append("(" + " || ".join(self._lit(x) for x in send.inputs) + ")")
        return self._cond(" && ".join(parts) or "1")

    # -- rules ------------------------------------------------------------------------------------
    def _rules(self) -> list[tuple[int, int, int, int, int, int]]:
        """(src event, dst event, condition, condition, event enabled or -1, event enabled or -1): under them
        the unit of src needs the unit of dst (`Reducer._needs`)."""
        red, s = self.red, self.red.s
        out = []
        for c, env, (absent, negate), crash in s.waits:
            code = f"!{self._lit(absent)}" if negate else self._lit(absent)
            if crash is not None:
                code += f" && !{self._lit(crash)}"
            cw = self._cond(code)
            for p, send in s.producers[env]:
                out.append((c, p, cw, self._alive(send), -1, -1))
        for c, envs in red.overflows:
            for env in envs:
                for p, send in s.producers.get(env, ()):
                    out.append((c, p, self._alive(send), 0, c, -1))
        for d, env in red.redrops:
            for p, send in s.producers[env]:
                a = self._alive(send)
                out.append((d, p, a, 0, d, -1))
                out.append((p, d, a, 0, d, p))
        for tid, consumers, forged, full in red.forges:
            cf = self._cond(f"!{self._lit(forged)} && {self._lit(full)}")
            for c in consumers:
                out.append((tid, c, cf, 0, -1, -1))
        for tid, _p in red.crash_binding:
            for other, _r in red.crash_binding:
                if other != tid:
                    out.append((tid, other, 0, 0, tid, other))
        return out

    def _rule_code(self, rules: list[tuple[int, int, int, int, int, int]]) -> list[str]:
        """The rules as straight-line code, grouped under their first condition (most are false at a state, and
        a branch of its own per rule predicts better than one loop over them all)."""
        groups: dict[int, list[tuple]] = {}
        for r in rules:
            groups.setdefault(r[2], []).append(r)
        out = []
        for ca, rs in sorted(groups.items()):
            inner = []
            for src, dst, _ca, cb, ea, eb in rs:
                test = [f"C[{cb}]"] if cb else []
                test += [f"E[{e}]" for e in (ea, eb) if e >= 0]
                stmt = f"MARK({src}, {dst});"
                inner.append(f"        if ({' && '.join(test)}) {stmt}" if test else f"        {stmt}")
            out += ([f"    if (C[{ca}]) {{", *inner, "    }"] if ca else [x[4:] for x in inner])
        return out

    def _build(self) -> str:
        red, s = self.red, self.red.s
        T, NU, NW = self.T, self.NU, self.NW
        lines: list[str] = []
        rules = self._rules()
        units: list[str] = []
        bases, b = [], 0
        for q, pu in enumerate(s.processes):
            bases.append(b)
            if not pu.k:
                continue
            pattern = " | ".join(f"({self._lit(p)} << {i})" for i, p in enumerate(pu.pivots)) or "0"
            table = [int(x) for pat in range(1 << len(pu.pivots)) for x in pu.table(pat)]
            lines.append(_array("uint16_t", f"UNIT{q}", table))
            lines.append(_array("int32_t", f"TIDS{q}", [int(t) for t in pu.tids]))
            units += [f"    {{ const uint16_t *tb = UNIT{q} + ({pattern}) * {pu.k};",
                      f"      for (int i = 0; i < {pu.k}; i++) S->unit[TIDS{q}[i]] = {b} + tb[i]; }}"]
            b += pu.k
        nl = max(len(self.lits), 1)
        conds = sorted(self.conds.items(), key=lambda kv: kv[1])
        nc = len(conds)
        dense = NU * NW <= DENSE_NEEDS
        mark = (["#define MARK(a, b) do { const int32_t us = S->unit[a], ud = S->unit[b]; if (us != ud)"
                 " S->needs[us][ud >> 6] |= (uint64_t)1 << (ud & 63); } while (0)"] if dense else
                ["#define MARK(a, b) do { const int32_t us = S->unit[a], ud = S->unit[b]; if (us != ud) {"
                 " if (!S->touched[us]) { S->touched[us] = 1; S->list[S->ntouched++] = us; }"
                 " S->needs[us][ud >> 6] |= (uint64_t)1 << (ud & 63); } } while (0)"])
        lines += mark
        rule_lines = self._rule_code(rules)
        procs = [(bases[q], pu.k) for q, pu in enumerate(s.processes) if pu.k]
        lines.append(_array("int32_t", "PBASE", [p for p, _k in procs]))
        lines.append(_array("int32_t", "PK", [k for _p, k in procs]))
        always = [int(x) for x in red.always_visible]
        lines.append(_array("uint8_t", "AVIS", always))
        lit_lines = [f"    L[{i}] = {self._lit_code(lit)};" for lit, i in sorted(self.lits.items(), key=lambda kv: kv[1])]
        cond_lines = [f"    C[{i}] = {code};" for code, i in conds if i]
        np_ = len(procs)
        return "\n".join([
            f"#define POR_T {T}",
            f"#define POR_NU {NU}",
            f"#define POR_NW {NW}",
            f"#define POR_NP {max(np_, 1)}",
            f"#define POR_NR {len(rules)}",
            "static inline int64_t bits64(uint64_t x) { int64_t c = 0; while (x) { x &= x - 1; c++; } return c; }",
            "typedef struct {",
            "    int32_t unit[POR_T]; int32_t cnt[POR_NU]; uint8_t bad[POR_NU]; uint8_t touched[POR_NU];",
            "    int32_t list[POR_NU]; int32_t ntouched; int32_t stack[POR_NU]; int32_t cu[POR_NU];",
            "    uint64_t needs[POR_NU][POR_NW]; uint64_t reach[POR_NP][POR_NW];",
            "} PorScratch;",
            *lines,
            "static int32_t choose(const uint64_t *w, const uint8_t *E, const uint8_t *U, const int32_t *el, int32_t ne,",
            "                      uint8_t *A, PorScratch *S) {",
            "    /* el[0..ne): the enabled steps, in order; S->cnt and S->bad are zero on entry and on return */",
            "    if (ne <= 1 || POR_NU < 2) return -1;",
            f"    uint8_t L[{nl}], C[{nc}];",
            *lit_lines,
            "    C[0] = 1;",
            *cond_lines,
            *units,
            "    int32_t ncu = 0;",
            "    for (int i = 0; i < ne; i++) {",
            "        const int32_t t = el[i], u = S->unit[t];",
            "        if (!S->cnt[u]) S->cu[ncu++] = u;",
            "        S->cnt[u]++; S->bad[u] |= U[t] | AVIS[t];",
            "    }",
            *(["    memset(S->needs, 0, sizeof S->needs);"] if dense else
              ["    for (int i = 0; i < S->ntouched; i++) { const int32_t u = S->list[i]; S->touched[u] = 0;"
               " memset(S->needs[u], 0, sizeof S->needs[u]); }",
               "    S->ntouched = 0;"]),
            *rule_lines,
            "    int best = -1; int64_t best_size = INT64_MAX;",
            "    for (int q = 0; q < POR_NP; q++) {",
            "        int seed = -1; int64_t score = INT64_MAX;",
            "        for (int j = 0; j < ncu; j++) {  /* the process's enabled invisible unit needing fewest others */",
            "            const int32_t u = S->cu[j];",
            "            if (u < PBASE[q] || u >= PBASE[q] + PK[q] || S->bad[u]) continue;",
            "            int64_t deg = 0;",
            f"            {'' if dense else 'if (S->touched[u]) '}for (int k = 0; k < POR_NW; k++)"
            " deg += bits64(S->needs[u][k]);",
            "            const int64_t sc = deg * (1 << 20) + S->cnt[u];",
            "            if (sc < score || (sc == score && u < seed)) { score = sc; seed = u; }",
            "        }",
            "        if (seed < 0) continue;",
            "        uint64_t *reach = S->reach[q];",
            "        memset(reach, 0, sizeof S->reach[q]);",
            "        reach[seed >> 6] |= (uint64_t)1 << (seed & 63);",
            "        int top = 0; S->stack[top++] = seed;",
            "        int64_t size = 0; int hit = 0;",
            "        while (top) {",
            "            const int32_t u = S->stack[--top];",
            "            size += S->cnt[u]; hit |= S->bad[u];",
            *([] if dense else ["            if (!S->touched[u]) continue;"]),
            "            for (int k = 0; k < POR_NW; k++) {",
            "                uint64_t x = S->needs[u][k] & ~reach[k];",
            "                reach[k] |= x;",
            "                while (x) { S->stack[top++] = k * 64 + __builtin_ctzll(x); x &= x - 1; }",
            "            }",
            "        }",
            "        if (!hit && size < ne && size < best_size) { best_size = size; best = q; }",
            "    }",
            "    int32_t amp = -1;",
            "    if (best >= 0) {",
            "        amp = 0;",
            "        const uint64_t *reach = S->reach[best];",
            "        for (int i = 0; i < ne; i++) {",
            "            const int32_t t = el[i], u = S->unit[t];",
            "            A[t] = (reach[u >> 6] >> (u & 63)) & 1;",
            "            amp += A[t];",
            "        }",
            "    }",
            "    for (int j = 0; j < ncu; j++) { S->cnt[S->cu[j]] = 0; S->bad[S->cu[j]] = 0; }",
            "    return amp;",
            "}",
        ]) + "\n"
