"""Symmetry reduction on packed rows: the scalar engine's canonical form, a whole batch at a time.

`BatchSymmetry(sym, layout)(words)` gives, for every row of a `(words, rows)` batch, the packing of
`Symmetry.canonical` of that row's state, so that the vector engine visits the same representatives
in the same order as the scalar engine. The steps follow `lockstep.checker.symmetry`:

- each movable process's signature is read from the packed words into one or more sortable keys
  (its atoms' raw values, most significant first; signatures wider than 63 bits are ranked);
- a stable argsort per row gives the sorting permutation (ties by id, as the scalar sort);
- where all sorting permutations give one image (no loose or moving slots, or a row whose loose
  atoms all hold their least value), that permutation is applied; otherwise the rows are grouped
  by where their ties are, and each group's candidate permutations (the orderings of tied processes)
  are applied to copies of its rows, keeping per row the least image in the scalar's tuple order.

Applying per-row permutations touches only the fields that mention a symmetric range: a Map level
keyed by process ids is gathered through the inverse permutation, and values that name processes
are remapped (range values directly, records, unions, options and sequences through their
mixed-radix indices, sets element by element: bit by bit, or as unpacked bits when many elements
move). A value's image under a row's permutation is computed arithmetically from per-row arrays of
the permutation (`_RowPerms`), or, when all ranges together have at most `GROUP_TABLES`
permutations, looked up by the permutation's number in a table of the domain (`_GroupPerms`).
Images are compared column by column in slot order, a set's chunks from the most significant,
which is how the scalar compares the slots' Python integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations, product
from math import factorial, prod

import numpy as np

from lockstep.specs.lang.types import (
    Domain,
    MapDomain,
    OptionDomain,
    RangeDomain,
    RecordDomain,
    SeqDomain,
    SetDomain,
    UnionDomain,
)

from ..symmetry import Symmetry, ids_in, key_domains, mentions_sym
from .layout import CHUNK, Layout

ROWS = 1 << 15  # rows (or row copies, one per candidate permutation) transformed at a time
SIGNATURE_ROWS = 1 << 18  # rows whose signatures are sorted at a time
BIT_LOOP = 12  # sets with more elements that permutations move are permuted as unpacked bits
GROUP_TABLES = 5040  # permutations (of all ranges together) up to which value images are tabulated


@dataclass
class _Field:
    """How one field that mentions a symmetric range is read, permuted and written back."""

    base: int  # first slot
    count: int  # slots
    chunks: int  # columns per slot (a set's chunks)
    word: np.ndarray  # per column (slot-major): the word, shift and mask
    shift: np.ndarray
    mask: np.ndarray
    val: Domain
    keys: list[tuple[Domain, int, np.ndarray]]  # per key level mentioning a range: domain, stride, key per slot
    offset: np.ndarray  # per slot: its relative slot number without those levels
    elements: np.ndarray | None  # a set of process-naming elements: the elements that permutations move
    groups: list[tuple[int, np.ndarray]]  # per word the field's columns in it
    clear: np.ndarray | None  # per chunk: the bits of the elements that stay
    bit_at: np.ndarray | None  # per element: its bit among the set's chunks unpacked to 64 bits each


class BatchSymmetry:
    """`Symmetry.canonical` over batches of packed states."""

    def __init__(self, sym: Symmetry, layout: Layout):
        self.sym, self.layout = sym, layout
        prog = sym.prog
        self.ranges = [r for r in sym.syms if len(sym.movable[id(r)]) >= 2]
        self.movable = {id(r): np.array(sym.movable[id(r)], dtype=np.int64) for r in self.ranges}
        self.keys = {id(r): self._key_plan(r) for r in self.ranges}
        self.one_image = sym.unary
        self.loose = self._word_masks(sym.loose) if not sym.moving else None
        self.fields = [self._field(f) for f in prog.fields
                       if mentions_sym(f.dom, sym.syms)]
        self.active = [np.uint64(0)] * layout.words
        for fd in self.fields:
            for w, m, s in zip(fd.word, fd.mask, fd.shift):
                self.active[w] |= np.uint64(int(m) << int(s))
        self.keep = [~a for a in self.active]
        self.group_size = prod(factorial(len(self.movable[id(r)])) for r in self.ranges)
        self.group_orders: dict | None = None  # every permutation of the group, as orders, if few enough
        if self.ranges and self.group_size <= GROUP_TABLES:
            per = [np.array(list(permutations(range(len(self.movable[id(r)])))), dtype=np.int64) for r in self.ranges]
            every = np.indices([len(o) for o in per]).reshape(len(per), -1)
            self.group_orders = {id(r): o[i] for r, o, i in zip(self.ranges, per, every)}
        self._group_tables: dict[tuple[int, bool], np.ndarray] = {}

    # -- plans ------------------------------------------------------------------------------
    def _parts(self, slot: int, bit: int) -> list[tuple[int, int, int]]:
        """(word, shift, bits) of an atom's raw value, most significant part first."""
        cols = self.layout.slot_columns[slot]
        if bit >= 0:
            c = cols[bit // CHUNK]
            return [(c.word, c.shift + bit % CHUNK, 1)]
        return [(c.word, c.shift, c.bits) for c in reversed(cols) if c.bits]

    def _key_plan(self, r: RangeDomain) -> list[list[tuple[np.ndarray, np.ndarray, np.uint64, np.uint64]]]:
        """The signatures of `r`'s movable ids as key words: per key word, its parts, each (word per id, shift
        per id, mask, place in the key); corresponding atoms of all ids are read together."""
        per_id = [[p for s, b in self.sym.sig_parts[id(r)][i] for p in self._parts(s, b)]
                  for i in self.sym.movable[id(r)]]
        words: list[list[tuple[np.ndarray, np.ndarray, np.uint64, np.uint64]]] = [[]]
        width = [0]
        for t in range(len(per_id[0])):
            nb = per_id[0][t][2]
            if width[-1] + nb > 63:
                words.append([])
                width.append(0)
            words[-1].append((np.array([p[t][0] for p in per_id], dtype=np.int64),
                              np.array([p[t][1] for p in per_id], dtype=np.uint64)[:, None],
                              np.uint64((1 << nb) - 1), np.uint64(width[-1])))
            width[-1] += nb
        # the first part is the most significant: places count down from the top of each key word
        return [[(w, sh, m, np.uint64(top - int(pl) - int(m).bit_length())) for w, sh, m, pl in kw]
                for kw, top in zip(words, width)]

    def _word_masks(self, atoms: list[tuple[int, int]]) -> list[tuple[int, np.uint64]]:
        masks = [0] * self.layout.words
        for s, b in atoms:
            for w, sh, nb in self._parts(s, b):
                masks[w] |= ((1 << nb) - 1) << sh
        return [(w, np.uint64(m)) for w, m in enumerate(masks) if m]

    def _field(self, f) -> _Field:
        lay, syms = self.layout, self.sym.syms
        cols = [c for s in range(f.base, f.base + f.count) for c in lay.slot_columns[s]]
        keydoms = key_domains(f.dom)
        strides, acc = [], 1
        for d in reversed(keydoms):
            strides.append(acc)
            acc *= d.size
        strides.reverse()
        grid = np.indices([d.size for d in keydoms]).reshape(len(keydoms), -1) if keydoms else np.zeros((0, 1), int)
        keys, offset = [], np.zeros(f.count, dtype=np.int64)
        for lv, (d, st) in enumerate(zip(keydoms, strides)):
            if mentions_sym(d, syms):
                keys.append((d, st, grid[lv].astype(np.int64)))
            else:
                offset += grid[lv] * st
        val = f.dom
        while isinstance(val, MapDomain):
            val = val.val
        elements, clear, bit_at = None, None, None
        if isinstance(val, SetDomain) and mentions_sym(val.elem, self.ranges):
            mv = {(id(r), i) for r in self.ranges for i in self.sym.movable[id(r)]}
            elements = np.array([u for u in range(val.elem.size)
                                 if any(x in mv for x in ids_in(val.elem, u, syms))], dtype=np.int64)
            stay = [(1 << CHUNK) - 1] * len(lay.slot_columns[f.base])
            for u in elements:
                stay[u // CHUNK] &= ~(1 << int(u % CHUNK))
            clear = np.array(stay, dtype=np.int64)
            u = np.arange(val.elem.size)
            bit_at = (u // CHUNK) * 64 + u % CHUNK
        word = np.array([c.word for c in cols], dtype=np.int64)
        return _Field(f.base, f.count, len(lay.slot_columns[f.base]), word,
                      np.array([c.shift for c in cols], dtype=np.uint64),
                      np.array([c.mask for c in cols], dtype=np.uint64), val, keys, offset, elements,
                      [(int(w), (word == w).nonzero()[0]) for w in np.unique(word)], clear, bit_at)

    # -- the canonical form ---------------------------------------------------------------------
    def __call__(self, words: np.ndarray) -> np.ndarray:
        """The packed canonical form of every row of `words` (a new array)."""
        out = np.array(words, dtype=np.uint64, copy=True)
        n = words.shape[1]
        if not self.ranges or not n:
            return out
        orders = {id(r): np.empty((n, len(self.movable[id(r)])), dtype=np.int64) for r in self.ranges}
        ties = np.zeros((n, sum(len(self.movable[id(r)]) - 1 for r in self.ranges)), dtype=bool)
        for start in range(0, n, SIGNATURE_ROWS):
            part = words[:, start:start + SIGNATURE_ROWS]
            at = 0
            for r in self.ranges:
                key = self._signature_keys(part, r)
                order = np.argsort(key, axis=1, kind="stable")
                orders[id(r)][start:start + part.shape[1]] = order
                srt = np.take_along_axis(key, order, axis=1)
                ties[start:start + part.shape[1], at:at + key.shape[1] - 1] = srt[:, 1:] == srt[:, :-1]
                at += key.shape[1] - 1
        tied = np.zeros(n, dtype=bool)
        if not self.one_image:
            tied = ties.any(axis=1)
            if self.loose is not None:
                spread = np.zeros(n, dtype=bool)
                for w, m in self.loose:
                    spread |= (words[w] & m) != 0
                tied &= spread
        moved = np.zeros(n, dtype=bool)
        for o in orders.values():
            moved |= (o != np.arange(o.shape[1])).any(axis=1)
        direct = (moved & ~tied).nonzero()[0]
        for start in range(0, len(direct), ROWS):
            sel = direct[start:start + ROWS]
            out[:, sel] = self._apply(words[:, sel], {rid: o[sel] for rid, o in orders.items()}, compare=False)[1]
        tied_rows = tied.nonzero()[0]
        if tied_rows.size:
            self._enumerate(out, tied_rows, orders, ties[tied_rows])
        return out

    def _signature_keys(self, words: np.ndarray, r: RangeDomain) -> np.ndarray:
        """(rows, movable ids) sortable keys: equal keys are equal signatures, and order is kept."""
        per_word = []
        for parts in self.keys[id(r)]:
            key = np.zeros((len(self.movable[id(r)]), words.shape[1]), dtype=np.uint64)
            for w, sh, mask, place in parts:
                key |= ((words[w] >> sh) & mask) << place
            per_word.append(key.T)
        if len(per_word) == 1:
            return per_word[0]
        flat = [k.ravel() for k in per_word]  # wider than a word: rank the signatures
        order = np.lexsort(flat[::-1])
        change = np.zeros(len(order), dtype=bool)
        change[0] = True
        for k in flat:
            s = k[order]
            change[1:] |= s[1:] != s[:-1]
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.cumsum(change) - 1
        return rank.reshape(per_word[0].shape)

    # -- tied processes --------------------------------------------------------------------------
    def _enumerate(self, words: np.ndarray, rows: np.ndarray, orders: dict, ties: np.ndarray) -> None:
        """Rows whose sorting permutations give different images: keep each row's least candidate image."""
        patterns, which = np.unique(ties, axis=0, return_inverse=True)
        which = which.ravel()
        for u, pattern in enumerate(patterns):
            sel = rows[which == u]
            cands = self._candidates(pattern)
            per = max(1, ROWS // len(cands))
            for start in range(0, len(sel), per):
                part = sel[start:start + per]
                m = len(part)
                perms = {}
                for r, pos in zip(self.ranges, zip(*cands)):
                    o = orders[id(r)][part]  # (m, k)
                    perms[id(r)] = o[:, np.array(pos)].reshape(m * len(cands), -1)
                cmp, img = self._apply(np.repeat(words[:, part], len(cands), axis=1), perms, compare=True)
                best = _least(cmp.reshape(len(cmp), m, len(cands)))
                words[:, part] = img[:, np.arange(m) * len(cands) + best]

    def _candidates(self, pattern: np.ndarray) -> list[tuple[list[int], ...]]:
        """Per candidate, per range: the sorted positions reordered within each group of tied processes."""
        per_range, at = [], 0
        for r in self.ranges:
            k = len(self.movable[id(r)])
            tie = pattern[at:at + k - 1]
            at += k - 1
            groups, start = [], 0
            for t in range(1, k + 1):
                if t == k or not tie[t - 1]:
                    groups.append(range(start, t))
                    start = t
            per_range.append([[i for g in combo for i in g] for combo in product(*(permutations(g) for g in groups))])
        return list(product(*per_range))

    # -- applying permutations -----------------------------------------------------------------------
    def _apply(self, words: np.ndarray, orders: dict, compare: bool) -> tuple[np.ndarray | None, np.ndarray]:
        """Each row's image under its permutation (given per range as the movable ids' sorted order):
        (the image's columns in comparison order if `compare`, the packed image)."""
        rows = words.shape[1]
        perms = _GroupPerms(self, orders) if self.group_orders is not None else _RowPerms(self, orders, rows)
        out = np.empty_like(words)
        for w in range(words.shape[0]):
            out[w] = words[w] & self.keep[w]
        cmp = []
        for fd in self.fields:
            vals = ((words[fd.word] >> fd.shift[:, None]) & fd.mask[:, None]).astype(np.int64)
            vals = vals.reshape(fd.count, fd.chunks, rows)
            if fd.keys:
                src = np.broadcast_to(fd.offset[:, None], (fd.count, rows)).copy()
                for d, stride, key in fd.keys:
                    src += perms.table(d, inverse=True)[key] * stride
                vals = np.take_along_axis(vals, src[:, None, :], axis=0)
            if fd.elements is not None:
                vals = self._permute_sets(fd, vals, perms.table(fd.val.elem, inverse=True))
            elif mentions_sym(fd.val, self.ranges):
                vals = perms.remap(fd.val, vals)
            if compare:
                cmp.append(vals[:, ::-1, :].reshape(-1, rows))
            flat = vals.reshape(-1, rows).astype(np.uint64) << fd.shift[:, None]
            for w, at in fd.groups:
                out[w] |= np.bitwise_or.reduce(flat[at], axis=0)
        return (np.concatenate(cmp) if compare else None), out

    def group_table(self, dom: Domain, inverse: bool) -> np.ndarray:
        """(values of `dom`, permutations of the group): each value's image under each permutation (or its
        inverse), for groups small enough to tabulate."""
        key = (id(dom), inverse)
        if key not in self._group_tables:
            every = _RowPerms(self, self.group_orders, self.group_size)
            self._group_tables[key] = np.ascontiguousarray(every.table(dom, inverse))
        return self._group_tables[key]

    @staticmethod
    def _permute_sets(fd: _Field, vals: np.ndarray, source: np.ndarray) -> np.ndarray:
        """Sets (count, chunks, rows) whose element j is the old element source[j] (per row); only the elements
        that permutations move change. Sets with many such elements are permuted as unpacked bits."""
        count, chunks, rows = vals.shape
        if len(fd.elements) > BIT_LOOP:
            raw = np.ascontiguousarray(vals.transpose(0, 2, 1)).view(np.uint8)  # (count, rows, 8 bytes a chunk)
            bits = np.unpackbits(raw, axis=2, bitorder="little")
            moved = np.take_along_axis(bits, fd.bit_at[source.T][None, :, :], axis=2)
            bits[:, :, fd.bit_at] = moved
            packed = np.packbits(bits, axis=2, bitorder="little").view(np.int64)
            return packed.reshape(count, rows, chunks).transpose(0, 2, 1)
        out = vals & fd.clear[None, :, None]
        cols = np.arange(rows)
        for j in fd.elements:
            src = source[j]
            if chunks == 1:
                bit = (vals[:, 0, :] >> src) & 1
            else:
                bit = (vals[:, src // CHUNK, cols] >> (src % CHUNK)) & 1
            out[:, j // CHUNK, :] |= bit << (j % CHUNK)
        return out

    def _remap(self, dom: Domain, v: np.ndarray, perms: dict) -> np.ndarray:
        """Value indices `v` (..., rows) of `dom` with the process ids they name mapped by `perms`."""
        if not mentions_sym(dom, self.ranges):
            return v
        if isinstance(dom, RangeDomain):
            p = perms[id(dom)]
            if v.shape[-1] == 1:  # the same values in every row (a table of the domain): whole rows of p
                return p[v[..., 0]]
            return p[v, np.arange(p.shape[1])]
        if isinstance(dom, RecordDomain):
            out = 0
            for d, s in zip(dom.field_doms, dom.strides):
                out = out + self._remap(d, (v // s) % d.size, perms) * s
            return out
        if isinstance(dom, UnionDomain):
            out = v
            for m in dom.member_doms:
                off = dom.offsets[m.type.name]
                inside = (v >= off) & (v < off + m.size)
                out = np.where(inside, off + self._remap(m, np.where(inside, v - off, 0), perms), out)
            return out
        if isinstance(dom, OptionDomain):
            return np.where(v == 0, 0, 1 + self._remap(dom.inner, np.maximum(v - 1, 0), perms))
        if isinstance(dom, SeqDomain):
            out, n = v, dom.elem.size
            for k in range(1, dom.max_len + 1):
                inside = (v >= dom.offsets[k]) & (v < dom.offsets[k + 1])
                body = np.where(inside, v - dom.offsets[k], 0)
                seq = dom.offsets[k]
                for p in dom.powers[:k]:
                    seq = seq + self._remap(dom.elem, (body // p) % n, perms) * p
                out = np.where(inside, seq, out)
            return out
        if isinstance(dom, SetDomain):  # a set inside a value: its bitmask is the index
            out = 0
            for e in range(dom.elem.size):
                to = self._remap(dom.elem, np.full_like(v, e), perms)
                out = out | (((v >> e) & 1) << to)
            return out
        return v


def _least(cmp: np.ndarray) -> np.ndarray:
    """For (columns, rows, candidates) images in comparison order, the index of each row's least image."""
    alive = np.ones(cmp.shape[1:], dtype=bool)
    big = np.iinfo(np.int64).max
    for c in range(cmp.shape[0]):
        v = np.where(alive, cmp[c], big)
        alive &= v == v.min(axis=1, keepdims=True)
        if not c & 7 and (alive.sum(axis=1) == 1).all():
            break
    return np.argmax(alive, axis=1)


class _RowPerms:
    """A batch's permutations as (ids, rows) arrays per range; images computed arithmetically per row."""

    def __init__(self, owner: BatchSymmetry, orders: dict, rows: int):
        self.owner, self.rows = owner, rows
        self.fwd, self.inv = {}, {}
        cols = np.arange(rows)
        for r in owner.ranges:
            mv = owner.movable[id(r)]
            old = mv[orders[id(r)]]  # (rows, k): the old id that goes to mv[t]
            f = np.broadcast_to(np.arange(r.size, dtype=np.int64)[:, None], (r.size, rows)).copy()
            b = f.copy()
            f[old.T, cols] = mv[:, None]
            b[mv[:, None], cols] = old.T
            self.fwd[id(r)], self.inv[id(r)] = f, b
        self.tables: dict[tuple[int, bool], np.ndarray] = {}

    def table(self, dom: Domain, inverse: bool) -> np.ndarray:
        """(values of `dom`, rows): the image of each value in each row."""
        key = (id(dom), inverse)
        if key not in self.tables:
            v = np.arange(dom.size)[:, None]
            self.tables[key] = np.broadcast_to(self.owner._remap(dom, v, self.inv if inverse else self.fwd),
                                               (dom.size, self.rows))
        return self.tables[key]

    def remap(self, dom: Domain, v: np.ndarray) -> np.ndarray:
        return self.owner._remap(dom, v, self.fwd)


class _GroupPerms:
    """A batch's permutations as their numbers in the (small) group; images looked up in its tables."""

    def __init__(self, owner: BatchSymmetry, orders: dict):
        self.owner = owner
        self.number = np.zeros(len(next(iter(orders.values()))), dtype=np.int64)
        for r in owner.ranges:  # Lehmer codes, in the order itertools.permutations lists them
            o = orders[id(r)]
            k = o.shape[1]
            for t in range(k):
                self.number = self.number * (k - t) + (o[:, t + 1:] < o[:, t:t + 1]).sum(axis=1)

    def table(self, dom: Domain, inverse: bool) -> np.ndarray:
        return self.owner.group_table(dom, inverse)[:, self.number]

    def remap(self, dom: Domain, v: np.ndarray) -> np.ndarray:
        return self.owner.group_table(dom, False)[v, self.number]
