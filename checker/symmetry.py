"""Symmetry reduction for symmetric `Range`s: each state is replaced by its orbit's representative.

Permutations move the *movable* ids of each symmetric range (all but its `fixed` ones). A state
is split into *atoms*: a slot, or one bit of a set slot whose elements mention a symmetric range.
An atom that names no movable id is left alone by every permutation; one that names exactly one
(`rm_state[r]`, bit `Prepared(r)` of a message set, bit `r` of `tm_prepared`, an envelope between
`r` and a fixed process) describes that process and is part of its *signature*; one that names
several (an envelope between two movable processes) relates processes (*loose*); and a slot whose
value names process ids (`turn`, a leader) changes value under permutations (*moving*).

The representative of a state is the least (as a tuple) of its images under the permutations
that sort the movable ids by signature. Any state of the orbit yields the same candidate images,
so the representative is exact: two states get the same one iff a permutation maps one to the
other. All sorting permutations give the same image, so one suffices, when there are no loose or
moving slots (`unary`: `Map(Proc, Enum)`, `Set(Proc)`, sets of messages with one `Proc` field),
or in a state whose loose atoms all hold their type's least value (an empty channel between any two
processes); otherwise the orderings of tied processes are enumerated. A process's signature lists
its atoms in the order of their images under the swap of that process with the first movable id,
so that corresponding atoms of two processes stand at the same place.
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


def mentions_sym(dom: Domain, syms: list[RangeDomain]) -> bool:
    return any(dom.mentions(r) for r in syms)


def ids_in(dom: Domain, i: int, syms: list[RangeDomain]) -> list[tuple[int, int]]:
    """(id of the range, id) for each value of a symmetric range inside value number `i` of `dom`."""
    if not mentions_sym(dom, syms):
        return []
    if isinstance(dom, RangeDomain):
        return [(id(dom), i)]
    if isinstance(dom, RecordDomain):
        return [x for d, s in zip(dom.field_doms, dom.strides) for x in ids_in(d, (i // s) % d.size, syms)]
    if isinstance(dom, UnionDomain):
        m = dom.member_of_index(i)
        return ids_in(m, i - dom.offsets[m.type.name], syms)
    if isinstance(dom, OptionDomain):
        return [] if i == 0 else ids_in(dom.inner, i - 1, syms)
    if isinstance(dom, SeqDomain):
        k = 0
        while dom.offsets[k + 1] <= i:
            k += 1
        body, n = i - dom.offsets[k], dom.elem.size
        return [x for p in dom.powers[:k] for x in ids_in(dom.elem, (body // p) % n, syms)]
    if isinstance(dom, SetDomain):
        return [x for b in bits(i) for x in ids_in(dom.elem, b, syms)]
    return []


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
        elif not mentions_sym(dom, self.syms):
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
        elif isinstance(dom, SetDomain):  # a set inside a value: its bitmask is the index
            sub = self.index_map(dom.elem, sigma, memo)
            table = None if sub is None else [sum(1 << sub[b] for b in bits(m)) for m in range(dom.size)]
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
        self.movable: dict[int, tuple[int, ...]] = {id(r): r.movable for r in self.syms}
        self._movable_sets = {rid: frozenset(mv) for rid, mv in self.movable.items()}
        self.maps = _IndexMaps(self.syms)
        self._slot_keys: list[tuple[tuple, list[Domain]]] = []  # (key path, key domains) per slot
        for f in prog.fields:
            keydoms = key_domains(f.dom)
            for key, _dom in f.leaves():
                self._slot_keys.append((tuple(d.index(k) for d, k in zip(keydoms, key)), keydoms))
        self._strides = _slot_strides(prog)
        self._appliers: dict[tuple, Callable[[tuple], tuple]] = {}
        self._build_signatures()

    # -- atoms and signatures ---------------------------------------------------------------
    def _build_signatures(self) -> None:
        """Classify the atoms (module docstring): `sig_parts[id(r)][i]` are the (slot, bit) atoms of process
        i (bit -1: the whole slot), `loose` the atoms naming several movable ids, `moving` the slots whose
        values name process ids."""
        prog, syms = self.prog, self.syms
        owned: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.loose: list[tuple[int, int]] = []
        self.moving: list[int] = []
        elem_ids: dict[int, list[list[tuple[int, int]]]] = {}
        for s, dom in enumerate(prog.slot_doms):
            keyidx, keydoms = self._slot_keys[s]
            if not mentions_sym(dom, syms) and not any(mentions_sym(d, syms) for d in keydoms):
                continue
            key_ids = [x for d, k in zip(keydoms, keyidx) for x in ids_in(d, k, syms)]
            if isinstance(dom, SetDomain) and mentions_sym(dom.elem, syms):
                table = elem_ids.get(id(dom.elem))
                if table is None:
                    table = elem_ids[id(dom.elem)] = [ids_in(dom.elem, u, syms) for u in range(dom.elem.size)]
                for u, ids in enumerate(table):
                    self._classify(owned, (s, u), key_ids + ids)
            elif mentions_sym(dom, syms):
                self.moving.append(s)
            else:
                self._classify(owned, (s, -1), key_ids)
        self.unary = not self.loose and not self.moving
        self.sig_parts: dict[int, dict[int, list[tuple[int, int]]]] = {}
        for r in syms:
            mv = self.movable[id(r)]
            self.sig_parts[id(r)] = {i: self._in_reference_order(r, i, owned.get((id(r), i), [])) for i in mv}
        self._loose_tests = self._zero_tests()

    def _classify(self, owned: dict, atom: tuple[int, int], ids: list[tuple[int, int]]) -> None:
        named = {(rid, i) for rid, i in ids if i in self._movable_sets[rid]}
        if len(named) == 1:
            owned.setdefault(named.pop(), []).append(atom)
        elif named:
            self.loose.append(atom)

    def _in_reference_order(self, r: RangeDomain, i: int, atoms: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Process i's atoms, ordered by their images under the swap of i with the first movable id."""
        first = self.movable[id(r)][0]
        if i == first:
            return sorted(atoms)
        swap = list(range(r.size))
        swap[i], swap[first] = first, i
        sigma, memo = {id(r): tuple(swap)}, {}
        return sorted(atoms, key=lambda a: self._atom_image(a, sigma, memo))

    def _atom_image(self, atom: tuple[int, int], sigma: dict[int, tuple], memo: dict) -> tuple[int, int]:
        s, b = atom
        keyidx, keydoms = self._slot_keys[s]
        newkey = []
        for d, k in zip(keydoms, keyidx):
            t = self.maps.index_map(d, sigma, memo)
            newkey.append(t[k] if t else k)
        if b >= 0:
            t = self.maps.index_map(self.prog.slot_doms[s].elem, sigma, memo)
            b = t[b] if t else b
        return self._slot_of(s, newkey), b

    def _zero_tests(self) -> list[tuple[int, int, Any]]:
        """(slot, bit mask or -1, least value) per slot holding loose atoms: a state whose loose atoms all
        hold their least value has one image under all sorting permutations."""
        masks: dict[int, int] = {}
        for s, b in self.loose:
            masks[s] = -1 if b < 0 else masks.get(s, 0) | (1 << b)
        doms = self.prog.slot_doms
        return [(s, m, doms[s].rep_of_index(0) if m < 0 else 0) for s, m in sorted(masks.items())]

    def all_loose_least(self, st: tuple) -> bool:
        """Whether every loose atom of `st` holds its least value (so ties need not be enumerated)."""
        for s, m, zero in self._loose_tests:
            if (st[s] != zero) if m < 0 else (st[s] & m):
                return False
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
        if not mentions_sym(dom, self.syms):
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
    def sorting_perm(self, r: RangeDomain, order: list[int]) -> tuple:
        """The permutation of `r` sending the movable ids `order` to the movable ids in increasing order."""
        perm = list(range(r.size))
        for i, k in zip(order, self.movable[id(r)]):
            perm[i] = k
        return tuple(perm)

    def canonical(self, st: tuple) -> tuple:
        one = self.unary or (not self.moving and self.all_loose_least(st))
        ranges, choices = [], []
        for r in self.syms:
            mv = self.movable[id(r)]
            if len(mv) < 2:
                continue
            sigs = sorted((self._signature(st, r, i), i) for i in mv)
            ranges.append(id(r))
            if one:
                choices.append([self.sorting_perm(r, [i for _, i in sigs])])
                continue
            groups, start = [], 0
            for k in range(1, len(mv) + 1):
                if k == len(mv) or sigs[k][0] != sigs[start][0]:
                    groups.append([i for _, i in sigs[start:k]])
                    start = k
            choices.append([self.sorting_perm(r, [i for g in combo for i in g])
                            for combo in product(*(permutations(g) for g in groups))])
        if not ranges:
            return st
        best = None
        for combo in product(*choices):
            img = self.applier(dict(zip(ranges, combo)))(st)
            if best is None or img < best:
                best = img
        return best

    def generators(self) -> list[dict[int, tuple]]:
        """Permutations generating each range's group of movable ids: a transposition and a cycle."""
        gens = []
        for r in self.syms:
            mv = self.movable[id(r)]
            if len(mv) < 2:
                continue
            swap = list(range(r.size))
            swap[mv[0]], swap[mv[1]] = mv[1], mv[0]
            gens.append({id(r): tuple(swap)})
            if len(mv) > 2:
                cycle = list(range(r.size))
                for k, i in enumerate(mv):
                    cycle[i] = mv[(k + 1) % len(mv)]
                gens.append({id(r): tuple(cycle)})
        return gens


def key_domains(dom: Domain) -> list[Domain]:
    out = []
    while isinstance(dom, MapDomain):
        out.append(dom.key)
        dom = dom.val
    return out


def _slot_strides(prog: Program) -> list[tuple[int, list[int]]]:
    """(field base, stride per key level) for each slot, to recompute a slot from a key path."""
    out = []
    for f in prog.fields:
        keydoms = key_domains(f.dom)
        strides = []
        acc = 1
        for d in reversed(keydoms):
            strides.append(acc)
            acc *= d.size
        strides.reverse()
        out.extend([(f.base, strides)] * f.count)
    return out
