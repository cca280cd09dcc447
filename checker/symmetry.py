"""Symmetry reduction for symmetric `Range`s: each state is replaced by its orbit's representative.

The representative of a state is the least (as a tuple) of its images under the
permutations that sort the processes by a permutation-invariant *signature* (the values the
state holds at that process's own slots). Any state of the orbit yields the same candidate
images, so the representative is exact: two states get the same one iff a permutation maps
one to the other. When every slot that mentions a symmetric range is captured by the
signatures (e.g. `Map(Proc, Enum)`, `Set(Proc)`, sets of messages with one `Proc` field),
all sorting permutations give the same image and one suffices; otherwise the ties are
enumerated.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import permutations, product
from typing import Any

from lockstep.specs.lang.program import Program
from lockstep.specs.lang.types import (
    Domain,
    MapDomain,
    OptionDomain,
    RangeDomain,
    RecordDomain,
    SeqDomain,
    SetDomain,
    UnionDomain,
    bits,
)


def _mentions_sym(dom: Domain, syms: list[RangeDomain]) -> bool:
    return any(dom.mentions(r) for r in syms)


class _IndexMaps:
    """Per-permutation maps of value indices for domains that mention symmetric ranges."""

    def __init__(self, syms: list[RangeDomain]):
        self.syms = syms
        self.cache: dict[tuple, dict[int, list[int] | None]] = {}

    def index_map(self, dom: Domain, sigma: dict[int, tuple], memo: dict[int, list[int] | None]) -> list[int] | None:
        """new_index = table[old_index] for values of `dom` under `sigma` (None: identity)."""
        key = id(dom)
        if key in memo:
            return memo[key]
        table: list[int] | None
        if isinstance(dom, RangeDomain):
            table = list(sigma[id(dom)]) if id(dom) in sigma else None
        elif not _mentions_sym(dom, self.syms):
            table = None
        elif isinstance(dom, RecordDomain):
            subs = [self.index_map(d, sigma, memo) for d in dom.field_doms]
            table = []
            for i in range(dom.size):
                j = 0
                for d, s, sub in zip(dom.field_doms, dom.strides, subs):
                    x = (i // s) % d.size
                    j += (sub[x] if sub else x) * s
                table.append(j)
        elif isinstance(dom, UnionDomain):
            table = []
            for m in dom.member_doms:
                sub = self.index_map(m, sigma, memo)
                off = dom.offsets[m.type.name]
                table.extend(off + (sub[i] if sub else i) for i in range(m.size))
        elif isinstance(dom, OptionDomain):
            sub = self.index_map(dom.inner, sigma, memo)
            table = [0] + [1 + (sub[i] if sub else i) for i in range(dom.inner.size)]
        elif isinstance(dom, SeqDomain):
            sub = self.index_map(dom.elem, sigma, memo)
            table = None if sub is None else [_permuted_seq(dom, i, sub) for i in range(dom.size)]
        elif isinstance(dom, SetDomain):
            table = None  # sets are handled bit by bit (see _value_fn)
        else:
            table = None
        memo[key] = table
        return table


def _permuted_seq(dom: SeqDomain, i: int, sub: list[int]) -> int:
    """The index of sequence number i with each element's index mapped through `sub`."""
    k = 0
    while dom.offsets[k + 1] <= i:
        k += 1
    body, n, out = i - dom.offsets[k], dom.elem.size, dom.offsets[k]
    for p in dom.powers[:k]:
        out += sub[body % n] * p
        body //= n
    return out


class Symmetry:
    """Canonical representatives of states under the symmetric ranges of a program."""

    def __init__(self, prog: Program):
        self.prog = prog
        self.syms: list[RangeDomain] = [d for d in prog.symmetric if isinstance(d, RangeDomain)]
        self.maps = _IndexMaps(self.syms)
        self._slot_keys: list[tuple[tuple, list[Domain]]] = []  # (key path, key domains) per slot
        for f in prog.fields:
            keydoms = _key_domains(f.dom)
            for key, _dom in f.leaves():
                self._slot_keys.append((tuple(d.index(k) for d, k in zip(keydoms, key)), keydoms))
        self._strides = _slot_strides(prog)
        self._appliers: dict[tuple, Callable[[tuple], tuple]] = {}
        self._build_signatures()

    # -- signatures ---------------------------------------------------------------------
    def _build_signatures(self) -> None:
        """For each symmetric range, which slots/bits describe process i (`sig[r][i]`)."""
        prog, syms = self.prog, self.syms
        self.sig_parts: dict[int, list[list[tuple[int, int]]]] = {id(r): [[] for _ in range(r.size)] for r in syms}
        covered = True
        for s, dom in enumerate(prog.slot_doms):
            keyidx, keydoms = self._slot_keys[s]
            sym_keys = [(j, d) for j, d in enumerate(keydoms) if _mentions_sym(d, syms)]
            value_sym = _mentions_sym(dom, syms)
            if not sym_keys and not value_sym:
                continue
            if len(sym_keys) == 1 and isinstance(sym_keys[0][1], RangeDomain) and not value_sym:
                j, r = sym_keys[0]
                self.sig_parts[id(r)][keyidx[j]].append((s, -1))  # whole slot value
                continue
            if not sym_keys and isinstance(dom, SetDomain) and self._set_bits_by_owner(s, dom):
                continue
            covered = False
        self.unary = covered

    def _set_bits_by_owner(self, s: int, dom: SetDomain) -> bool:
        """Signature bits for a set whose elements name exactly one process each; False if not so."""
        elem, syms = dom.elem, self.syms
        if isinstance(elem, RangeDomain) and elem.symmetric:
            for i in range(elem.size):
                self.sig_parts[id(elem)][i].append((s, i))
            return True
        members = elem.member_doms if isinstance(elem, UnionDomain) else [elem] if isinstance(elem, RecordDomain) else None
        if members is None:
            return False
        plan = []
        for m in members:
            off = elem.offsets[m.type.name] if isinstance(elem, UnionDomain) else 0
            sym_fields = [k for k, d in enumerate(m.field_doms) if _mentions_sym(d, syms)]
            if not sym_fields:
                continue
            if len(sym_fields) != 1 or not isinstance(m.field_doms[sym_fields[0]], RangeDomain):
                return False
            plan.append((m, off, sym_fields[0]))
        for m, off, k in plan:
            r, stride = m.field_doms[k], m.strides[k]
            for u in range(m.size):
                owner = (u // stride) % r.size
                self.sig_parts[id(r)][owner].append((s, off + u))
        return True

    def _signature(self, st: tuple, r: RangeDomain, i: int) -> tuple:
        return tuple(st[s] if b < 0 else (st[s] >> b) & 1 for s, b in self.sig_parts[id(r)][i])

    # -- permutations ----------------------------------------------------------------------
    def applier(self, sigma: dict[int, tuple]) -> Callable[[tuple], tuple]:
        """A function mapping a state to its image under `sigma` (old id -> new id per range)."""
        key = tuple(sorted(sigma.items()))
        fn = self._appliers.get(key)
        if fn is None:
            fn = self._appliers[key] = self._make_applier(sigma)
        return fn

    def slot_images(self, sigma: dict[int, tuple], memo: dict | None = None) -> list[int]:
        """Where each slot goes under `sigma`."""
        memo = {} if memo is None else memo
        dest = list(range(self.prog.nslots))
        for s in range(self.prog.nslots):
            keyidx, keydoms = self._slot_keys[s]
            if keydoms:
                newkey = []
                for d, k in zip(keydoms, keyidx):
                    t = self.maps.index_map(d, sigma, memo)
                    newkey.append(t[k] if t else k)
                dest[s] = self._slot_of(s, newkey)
        return dest

    def slot_orbit(self, slots: set[int]) -> set[int]:
        """The slots that permutations of the symmetric ranges map `slots` to."""
        out = set(slots)
        images = [self.slot_images(g) for g in self.generators()]
        todo = list(out)
        while todo:
            s = todo.pop()
            for dest in images:
                if dest[s] not in out:
                    out.add(dest[s])
                    todo.append(dest[s])
        return out

    def _make_applier(self, sigma: dict[int, tuple]) -> Callable[[tuple], tuple]:
        prog = self.prog
        memo: dict[int, list[int] | None] = {}
        n = prog.nslots
        dest = self.slot_images(sigma, memo)
        value_fns = [self._value_fn(dom, sigma, memo) for dom in prog.slot_doms]
        order = [0] * n
        for s, d in enumerate(dest):
            order[d] = s
        fns = [value_fns[s] for s in order]

        def apply(st: tuple) -> tuple:
            return tuple(st[s] if f is None else f(st[s]) for s, f in zip(order, fns))

        return apply

    def _slot_of(self, s: int, newkey: list[int]) -> int:
        base, strides = self._strides[s]
        return base + sum(k * st for k, st in zip(newkey, strides))

    def _value_fn(self, dom: Domain, sigma: dict[int, tuple], memo: dict) -> Callable[[Any], Any] | None:
        if not _mentions_sym(dom, self.syms):
            return None
        if isinstance(dom, SetDomain):
            table = self.maps.index_map(dom.elem, sigma, memo)
            if table is None:
                return None

            def perm_set(mask: int, table: list[int] = table) -> int:
                out = 0
                for b in bits(mask):
                    out |= 1 << table[b]
                return out

            return perm_set
        table = self.maps.index_map(dom, sigma, memo)
        return None if table is None else table.__getitem__

    # -- canonical form -----------------------------------------------------------------------
    def canonical(self, st: tuple) -> tuple:
        choices = []
        for r in self.syms:
            sigs = [(self._signature(st, r, i), i) for i in range(r.size)]
            sigs.sort()
            if self.unary:
                choices.append([_sorting_perm([i for _, i in sigs], r.size)])
                continue
            groups, start = [], 0
            for k in range(1, r.size + 1):
                if k == r.size or sigs[k][0] != sigs[start][0]:
                    groups.append([i for _, i in sigs[start:k]])
                    start = k
            options = []
            for combo in product(*(permutations(g) for g in groups)):
                order = [i for g in combo for i in g]
                options.append(_sorting_perm(order, r.size))
            choices.append(options)
        best = None
        for combo in product(*choices):
            img = self.applier({id(r): p for r, p in zip(self.syms, combo)})(st)
            if best is None or img < best:
                best = img
        return best

    def generators(self) -> list[dict[int, tuple]]:
        """Permutations generating each symmetric group: a transposition and an n-cycle."""
        gens = []
        for r in self.syms:
            n = r.size
            if n < 2:
                continue
            swap = list(range(n))
            swap[0], swap[1] = 1, 0
            gens.append({id(r): tuple(swap)})
            if n > 2:
                gens.append({id(r): tuple((i + 1) % n for i in range(n))})
        return gens


def _sorting_perm(order: list[int], n: int) -> tuple:
    """The permutation sending order[k] to k."""
    perm = [0] * n
    for k, i in enumerate(order):
        perm[i] = k
    return tuple(perm)


def _key_domains(dom: Domain) -> list[Domain]:
    out = []
    while isinstance(dom, MapDomain):
        out.append(dom.key)
        dom = dom.val
    return out


def _slot_strides(prog: Program) -> list[tuple[int, list[int]]]:
    """(field base, stride per key level) for each slot, to recompute a slot from a key path."""
    out = []
    for f in prog.fields:
        keydoms = _key_domains(f.dom)
        strides = []
        acc = 1
        for d in reversed(keydoms):
            strides.append(acc)
            acc *= d.size
        strides.reverse()
        out.extend([(f.base, strides)] * f.count)
    return out
