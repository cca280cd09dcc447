"""Symmetry canonicalisation in C: `Symmetry.canonical` of one packed state, for the fused kernel.

The generated `canon(w)` rewrites a state's words in place into its orbit's representative, as
`vector.symmetry.BatchSymmetry` does for a batch (and so exactly as the scalar engine's
`Symmetry.canonical`): each symmetric range's movable ids get their signatures (the atoms of each
process read into key words, most significant first), are sorted stably by them (ties by id), and the
sorting permutation is applied; where ties leave several images (loose or moving slots, and a loose
atom that does not hold its least value), every ordering of the tied processes is applied and the least
image, compared field by field in slot order (a set's chunks from the most significant), is kept.

Applying a permutation touches only the fields that mention a symmetric range: a Map level keyed by
ids is read through the inverse permutation, a value naming ids is mapped by a generated function of
its domain (records, unions, options, sequences and sets inside values through their mixed-radix
indices), and a set of elements naming ids is rebuilt from its set bits, each moved to its image. The
field tables are static arrays and the loops generic, so the code grows with the number of domains,
not of slots.
"""

from __future__ import annotations

from lockstep.specs.lang.types import (
    Domain,
    OptionDomain,
    RangeDomain,
    RecordDomain,
    SeqDomain,
    SetDomain,
    UnionDomain,
)

from ...symmetry import mentions_sym
from ..layout import CHUNK
from ..symmetry import BatchSymmetry

GROUP_TABLES = 5040  # groups of at most this many permutations have their value images tabulated
MAX_TABLE = 1 << 24  # entries of those tables at most (4 bytes each); beyond, images are computed
UNROLL = 4096  # signature parts times ids up to which the signatures are read by straight-line code


def _array(ctype: str, name: str, values: list[int]) -> str:
    body = ", ".join(str(int(v)) for v in values) or "0"
    return f"static const {ctype} {name}[] = {{{body}}};"


def _u64(name: str, values: list[int]) -> str:
    body = ", ".join(f"UINT64_C({int(v)})" for v in values) or "0"
    return f"static const uint64_t {name}[] = {{{body}}};"


class CanonSource:
    """The C of `canon` for one program's symmetry and packing (`text`), and its scratch size."""

    def __init__(self, bs: BatchSymmetry):
        self.bs = bs
        self.lines: list[str] = []
        self.maps: dict[int, str | None] = {}
        self.offsets: dict[int, int] = {}
        at = 0
        for r in bs.ranges:
            self.offsets[id(r)] = at
            at += r.size
        self.psize = max(at, 1)
        self.group = bs.group_size if bs.ranges else 1
        self.tables: dict[tuple[int, bool], tuple[int, Domain]] = {}  # (domain, inverse) -> (base, domain)
        self.table_entries = 0
        self.tabulate = self.group <= GROUP_TABLES
        self.text = self._build()

    # -- value maps ------------------------------------------------------------------------------
    def _map(self, dom: Domain) -> str | None:
        """The name of a generated function `int64_t f(int64_t v, const int64_t *P)` giving the index of value
        `v` of `dom` under the permutation table P (None: the identity)."""
        if id(dom) in self.maps:
            return self.maps[id(dom)]
        if not mentions_sym(dom, self.bs.ranges):
            self.maps[id(dom)] = None
            return None
        name = f"map{len(self.maps)}"
        self.maps[id(dom)] = name
        body: list[str] = []
        if isinstance(dom, RangeDomain):
            body.append(f"    return P[{self.offsets[id(dom)]} + v];")
        elif isinstance(dom, RecordDomain):
            body.append("    int64_t out = 0;")
            for d, s in zip(dom.field_doms, dom.strides):
                f = self._map(d)
                x = f"((v / {s}) % {d.size})"
                body.append(f"    out += {f'{f}({x}, P)' if f else x} * {s};")
            body.append("    return out;")
        elif isinstance(dom, UnionDomain):
            for m in dom.member_doms:
                f = self._map(m)
                if f is None:
                    continue
                off = dom.offsets[m.type.name]
                body.append(f"    if (v >= {off} && v < {off + m.size}) return {off} + {f}(v - {off}, P);")
            body.append("    return v;")
        elif isinstance(dom, OptionDomain):
            f = self._map(dom.inner)
            body.append(f"    return v == 0 ? 0 : 1 + {f}(v - 1, P);")
        elif isinstance(dom, SeqDomain):
            f = self._map(dom.elem)
            n = dom.elem.size
            for k in range(1, dom.max_len + 1):
                lo, hi = dom.offsets[k], dom.offsets[k + 1]
                terms = " + ".join(f"{f}((b / {p}) % {n}, P) * {p}" for p in dom.powers[:k])
                body.append(f"    if (v >= {lo} && v < {hi}) {{ const int64_t b = v - {lo}; return {lo} + {terms}; }}")
            body.append("    return v;")
        elif isinstance(dom, SetDomain):  # a set inside a value: its bitmask is the index
            f = self._map(dom.elem)
            body += ["    int64_t out = 0;",
                     f"    for (int64_t e = 0; e < {dom.elem.size}; e++) if ((v >> e) & 1) out |= (int64_t)1 << {f}(e, P);",
                     "    return out;"]
        else:
            raise AssertionError(f"no permutation map for {type(dom).__name__}")
        self.lines += [f"static int64_t {name}(int64_t v, const int64_t *P) {{", *body, "}"]
        return name

    def _image(self, dom: Domain, v: str, inverse: bool) -> str:
        """C for the image of value `v` of `dom` under the permutation (its inverse): a table lookup by the
        permutation's number where the group is tabulated, else the generated map."""
        f = self._map(dom)
        if f is None:
            return v
        if not self.tabulate:
            return f"{f}({v}, {'Pi' if inverse else 'Pf'})"
        key = (id(dom), inverse)
        if key not in self.tables:
            self.tables[key] = (self.table_entries, dom)
            self.table_entries += self.group * dom.size
        base = self.tables[key][0]
        return f"SYMTAB[{base} + p * {dom.size} + ({v})]"

    # -- the fields ------------------------------------------------------------------------------
    def _field(self, i: int, fd) -> tuple[list[str], int]:
        """Static tables and the C block applying the permutation to field `fd` (number i); how many values
        it adds to the comparison vector."""
        ch = fd.chunks
        pre = f"F{i}"
        self.lines.append(_array("int16_t", f"{pre}_W", list(fd.word)))
        self.lines.append(_array("uint8_t", f"{pre}_S", list(fd.shift)))
        self.lines.append(_u64(f"{pre}_M", list(fd.mask)))
        self.lines.append(_array("int32_t", f"{pre}_OFF", list(fd.offset)))
        src = [f"{pre}_OFF[s]"]
        for lv, (d, stride, key) in enumerate(fd.keys):
            self.lines.append(_array("int32_t", f"{pre}_K{lv}", list(key)))
            src.append(f"{self._image(d, f'{pre}_K{lv}[s]', True)} * {stride}")
        varies = self._varies(fd)
        body = [f"    if ({'1' if varies else '!varying'}) for (int64_t s = 0; s < {fd.count}; s++) {{",
                f"        const int64_t from = {' + '.join(src)};",
                f"        uint64_t v[{ch}];",
                f"        for (int c = 0; c < {ch}; c++) v[c] = (src[{pre}_W[from * {ch} + c]] >> {pre}_S[from * {ch} + c])"
                f" & {pre}_M[from * {ch} + c];"]
        if fd.elements is not None:
            image = self._image(fd.val.elem, "e", False)
            self.lines.append(_u64(f"{pre}_CL", [int(x) & ((1 << 64) - 1) for x in fd.clear]))
            body += [f"        uint64_t o[{ch}];",
                     f"        for (int c = 0; c < {ch}; c++) o[c] = v[c] & {pre}_CL[c];",
                     f"        for (int c = 0; c < {ch}; c++) {{",
                     f"            uint64_t x = v[c] & ~{pre}_CL[c];",
                     "            while (x) {",
                     f"                const int64_t e = c * {CHUNK} + __builtin_ctzll(x);",
                     "                x &= x - 1;",
                     f"                const int64_t d = {image};",
                     f"                o[d / {CHUNK}] |= (uint64_t)1 << (d % {CHUNK});",
                     "            }",
                     "        }",
                     f"        for (int c = 0; c < {ch}; c++) v[c] = o[c];"]
        elif self._map(fd.val) is not None:
            assert ch == 1
            body.append(f"        v[0] = (uint64_t){self._image(fd.val, '(int64_t)v[0]', False)};")
        body += [f"        for (int c = 0; c < {ch}; c++) out[{pre}_W[s * {ch} + c]] |= v[c] << {pre}_S[s * {ch} + c];",
                 *([f"        if (cmp) for (int c = {ch} - 1; c >= 0; c--) cmp[at++] = v[c];"] if varies else []),
                 "    }"]
        return body, fd.count * ch if varies else 0

    def _varies(self, fd) -> bool:
        """Whether the field holds loose atoms or moving slots: the only ones whose images differ between the
        orderings of tied processes (the atoms of tied processes hold the same values)."""
        sym = self.bs.sym
        slots = set(range(fd.base, fd.base + fd.count))
        return bool(slots & ({s for s, _b in sym.loose} | set(sym.moving)))

    def _signatures(self) -> list[str]:
        """C computing each range's signature keys, sorting its movable ids by them (stably) into `ord`, and
        noting ties (`ties`, `tie`) and whether the order moves any id (`moved`)."""
        bs = self.bs
        out: list[str] = []
        at = tat = 0
        for ri, r in enumerate(bs.ranges):
            k = len(bs.movable[id(r)])
            plan = bs.keys[id(r)]
            nkw = len(plan)
            parts = [(kw, [int(x) for x in w], [int(x) for x in sh.ravel()], int(mask), int(place))
                     for kw, ps in enumerate(plan) for w, sh, mask, place in ps]
            out += [f"    {{ /* range {ri}: {k} movable ids */",
                    f"        uint64_t key[{k}][{nkw}];",
                    "        memset(key, 0, sizeof key);"]
            if len(parts) * k <= UNROLL:
                for kw, ws, shs, mask, place in parts:
                    for t in range(k):
                        x = f"(w[{ws[t]}] >> {shs[t]})" if shs[t] else f"w[{ws[t]}]"
                        x = f"({x} & UINT64_C({mask}))"
                        out.append(f"        key[{t}][{kw}] |= {f'{x} << {place}' if place else x};")
            else:
                self.lines.append(_array("int16_t", f"R{ri}_W", [x for p in parts for x in p[1]]))
                self.lines.append(_array("uint8_t", f"R{ri}_S", [x for p in parts for x in p[2]]))
                self.lines.append(_u64(f"R{ri}_M", [p[3] for p in parts]))
                self.lines.append(_array("uint8_t", f"R{ri}_P", [p[4] for p in parts]))
                self.lines.append(_array("uint8_t", f"R{ri}_KW", [p[0] for p in parts]))
                out += [f"        for (int p = 0; p < {len(parts)}; p++)",
                        f"            for (int t = 0; t < {k}; t++)",
                        f"                key[t][R{ri}_KW[p]] |= ((w[R{ri}_W[p * {k} + t]] >> R{ri}_S[p * {k} + t])"
                        f" & R{ri}_M[p]) << R{ri}_P[p];"]
            out += [f"        int32_t *o = ord + {at};",
                    f"        uint8_t *ti = ties + {tat};",
                    f"        for (int t = 0; t < {k}; t++) {{  /* a stable insertion sort */",
                    "            int j = t;",
                    f"            while (j > 0 && cmp_u64(key[o[j - 1]], key[t], {nkw}) > 0) {{ o[j] = o[j - 1]; j--; }}",
                    "            o[j] = t;",
                    "        }",
                    f"        for (int t = 0; t + 1 < {k}; t++) {{",
                    f"            ti[t] = cmp_u64(key[o[t]], key[o[t + 1]], {nkw}) == 0;",
                    "            tie |= ti[t];",
                    "            moved |= o[t] != t;",
                    "        }",
                    "    }"]
            at += k
            tat += k - 1
        return out

    def _build(self) -> str:
        bs = self.bs
        lay = bs.layout
        nw = lay.words
        ranges = bs.ranges
        ks = [len(bs.movable[id(r)]) for r in ranges]
        nord, nties = max(sum(ks), 1), max(sum(k - 1 for k in ks), 1)
        for ri, r in enumerate(ranges):
            self.lines.append(_array("int32_t", f"R{ri}_MV", [int(x) for x in bs.movable[id(r)]]))
        apply_body: list[str] = []
        ncmp = 0
        for i, fd in enumerate(bs.fields):
            block, k = self._field(i, fd)
            apply_body += block
            ncmp += k
        if self.tabulate and self.table_entries > MAX_TABLE:  # too large to tabulate: compute the images
            self.tabulate, self.tables, self.table_entries, self.lines, self.maps = False, {}, 0, [], {}
            return self._build()
        self.ncmp = max(ncmp, 1)
        self.lines.append(_u64("CANON_KEEP", [int(k) for k in bs.keep]))
        vary = [0] * nw  # the bits of the fields whose images differ between orderings of tied processes
        for fd in bs.fields:
            if self._varies(fd):
                for w, m, sh in zip(fd.word, fd.mask, fd.shift):
                    vary[int(w)] |= int(m) << int(sh)
        self.lines.append(_u64("CANON_STAY", [~v & ((1 << 64) - 1) for v in vary]))
        apply_fn = ["static void sym_apply(const uint64_t *src, int64_t p, const int64_t *Pf, const int64_t *Pi,"
                    " uint64_t *out, int64_t *cmp, int varying) {",
                    "    /* the image of `src` (varying: only the varying fields, into `out` as it is), and the values",
                    "       of its varying fields in comparison order into `cmp` */",
                    "    int64_t at = 0;",
                    f"    if (!varying) for (int k = 0; k < {nw}; k++) out[k] = src[k] & CANON_KEEP[k];",
                    *apply_body, "    (void)at; (void)p; (void)Pi; (void)Pf;", "}"]
        perms = ["static void sym_perms(const int32_t *ord, int64_t *Pf, int64_t *Pi) {"]
        at = 0
        for ri, (r, k) in enumerate(zip(ranges, ks)):
            off = self.offsets[id(r)]
            perms += [f"    for (int64_t v = 0; v < {r.size}; v++) Pf[{off} + v] = Pi[{off} + v] = v;",
                      f"    for (int t = 0; t < {k}; t++) {{",
                      f"        const int64_t old = R{ri}_MV[ord[{at} + t]], to = R{ri}_MV[t];",
                      f"        Pf[{off} + old] = to; Pi[{off} + to] = old;",
                      "    }"]
            at += k
        perms.append("}")
        # a permutation's number: the Lehmer codes of the ranges' orders as one mixed-radix number
        rank = ["static int64_t sym_rank(const int32_t *ord) {", "    int64_t num = 0;"]
        at = 0
        for k in ks:
            rank += [f"    for (int t = 0; t < {k}; t++) {{",
                     "        int64_t less = 0;",
                     f"        for (int u = t + 1; u < {k}; u++) less += ord[{at} + u] < ord[{at} + t];",
                     f"        num = num * ({k} - t) + less;",
                     "    }"]
            at += k
        rank += ["    return num;", "}"]
        init = self._init(ks) if self.tabulate else ["int canon_init(void) { return 0; }"]
        if bs.one_image:
            spread = "0"
        elif bs.loose is None:
            spread = "1"
        else:
            spread = " || ".join(f"(w[{int(wd)}] & UINT64_C({int(m)}))" for wd, m in bs.loose) or "0"
        # tied: every ordering of each run of tied positions, per range (an odometer of next permutations)
        nxt = ["static int sym_next(int32_t *pos, const uint8_t *ties) {",
               "    /* the next combination of orderings of the tied runs (all ranges); 0 after the last */"]
        at, tat = sum(ks), sum(k - 1 for k in ks)
        for k in reversed(ks):
            at -= k
            tat -= k - 1
            nxt += [f"    for (int end = {k}; end > 0;) {{",
                    "        int start = end - 1;",
                    f"        while (start > 0 && ties[{tat} + start - 1]) start--;",
                    f"        if (end - start > 1 && next_perm(pos + {at} + start, end - start)) return 1;",
                    "        end = start;",
                    "    }"]
        nxt += ["    return 0;", "}"]
        number = "sym_rank" if self.tabulate else "0 * sym_rank"
        main = ["static void canon(uint64_t *w) {",
                f"    int32_t ord[{nord}];",
                f"    uint8_t ties[{nties}];",
                "    int tie = 0, moved = 0;",
                *self._signatures(),
                f"    const int tied = tie && ({spread});",
                "    if (!tied && !moved) return;",
                f"    int64_t Pf[{self.psize}], Pi[{self.psize}];",
                f"    uint64_t out[{nw}];",
                "    if (!tied) {",
                *([] if self.tabulate else ["        sym_perms(ord, Pf, Pi);"]),
                f"        sym_apply(w, {number}(ord), Pf, Pi, out, NULL, 0);",
                f"        memcpy(w, out, sizeof(uint64_t) * {nw});",
                "        return;",
                "    }",
                f"    int32_t pos[{nord}], cand[{nord}];",
                *[f"    for (int t = 0; t < {k}; t++) pos[{sum(ks[:i])} + t] = t;" for i, k in enumerate(ks)],
                f"    int64_t best[{self.ncmp}], cmp[{self.ncmp}];",
                f"    uint64_t img[{nw}], base[{nw}];",
                "    int first = 1;",
                "    do {"]
        at = 0
        for k in ks:
            main.append(f"        for (int t = 0; t < {k}; t++) cand[{at} + t] = ord[{at} + pos[{at} + t]];")
            at += k
        main += [*([] if self.tabulate else ["        sym_perms(cand, Pf, Pi);"]),
                 "        if (first) {  /* the first image whole; the others differ only in the varying fields */",
                 f"            sym_apply(w, {number}(cand), Pf, Pi, base, cmp, 0);",
                 "            memcpy(best, cmp, sizeof best); memcpy(out, base, sizeof base);",
                 f"            for (int k = 0; k < {nw}; k++) base[k] &= CANON_STAY[k];",
                 "            first = 0;",
                 "            continue;",
                 "        }",
                 "        memcpy(img, base, sizeof img);",
                 f"        sym_apply(w, {number}(cand), Pf, Pi, img, cmp, 1);",
                 f"        if (cmp_i64(cmp, best, {self.ncmp}) < 0) {{",
                 "            memcpy(best, cmp, sizeof best); memcpy(out, img, sizeof img);",
                 "        }",
                 "    } while (sym_next(pos, ties));",
                 f"    memcpy(w, out, sizeof(uint64_t) * {nw});",
                 "}"]
        helpers = [
            "static inline int cmp_u64(const uint64_t *a, const uint64_t *b, int n) {",
            "    for (int i = 0; i < n; i++) if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;",
            "    return 0;",
            "}",
            "static inline int cmp_i64(const int64_t *a, const int64_t *b, int n) {",
            "    for (int i = 0; i < n; i++) if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;",
            "    return 0;",
            "}",
            "static int next_perm(int32_t *a, int n) {",
            "    /* the next permutation in lexicographic order; 0 (and a back in ascending order) after the last */",
            "    int i = n - 2;",
            "    while (i >= 0 && a[i] >= a[i + 1]) i--;",
            "    if (i >= 0) {",
            "        int j = n - 1;",
            "        while (a[j] <= a[i]) j--;",
            "        const int32_t x = a[i]; a[i] = a[j]; a[j] = x;",
            "    }",
            "    for (int l = i + 1, h = n - 1; l < h; l++, h--) { const int32_t x = a[l]; a[l] = a[h]; a[h] = x; }",
            "    return i >= 0;",
            "}",
            "static int32_t *SYMTAB;  /* the images of values under each permutation of the group (canon_init) */",
        ]
        return "\n".join(helpers + self.lines + perms + rank + init + apply_fn + nxt + main) + "\n"

    def _init(self, ks: list[int]) -> list[str]:
        """`canon_init`, run once when the library is loaded: fills `SYMTAB` for every permutation of the group,
        unranked from its number, with the generated maps (0: done, 1: out of memory)."""
        out = ["int canon_init(void) {",
               "    if (SYMTAB) return 0;",
               f"    int32_t *t = malloc(sizeof(int32_t) * {max(self.table_entries, 1)});",
               "    if (!t) return 1;",
               f"    int64_t Pf[{self.psize}], Pi[{self.psize}];",
               f"    int32_t ord[{max(sum(ks), 1)}], digit[{max(sum(ks), 1)}];",
               f"    for (int64_t p = 0; p < {self.group}; p++) {{",
               "        int64_t rem = p;"]
        at = sum(ks)
        for k in reversed(ks):
            at -= k
            out += [f"        for (int t = {k} - 1; t >= 0; t--) {{ digit[{at} + t] = (int32_t)(rem % ({k} - t));"
                    f" rem /= {k} - t; }}"]
        at = 0
        for k in ks:
            out += [f"        {{ int32_t avail[{k}]; for (int t = 0; t < {k}; t++) avail[t] = t;",
                    f"          for (int t = 0; t < {k}; t++) {{",
                    f"              ord[{at} + t] = avail[digit[{at} + t]];",
                    f"              for (int u = digit[{at} + t]; u + 1 < {k} - t; u++) avail[u] = avail[u + 1];",
                    "          } }"]
            at += k
        out.append("        sym_perms(ord, Pf, Pi);")
        for (_key, inverse), (base, dom) in sorted(self.tables.items(), key=lambda kv: kv[1][0]):
            f = self._map(dom)
            out.append(f"        for (int64_t v = 0; v < {dom.size}; v++) t[{base} + p * {dom.size} + v] ="
                       f" (int32_t){f}(v, {'Pi' if inverse else 'Pf'});")
        out += ["    }", "    SYMTAB = t;", "    return 0;", "}"]
        return out
