"""The discrete-time Markov chain of a population protocol over its configurations.

States are configurations (count vectors); one step is one interaction of a uniformly random
ordered pair of distinct agents. The chain is built with numpy: every configuration gets a
64-bit linear key (Σ c[q]·r[q] mod 2⁶⁴ for random odd r), so the successor of a whole column
of configurations under one rule is a key shift and a sorted lookup. Keys are checked to be
distinct over the explored configurations, which makes every lookup exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from lockstep.specs.lang.population import ALL, Population

from ..loader import LoadError
from ..trace import shell_word

if TYPE_CHECKING:
    import scipy.sparse as sp

DEFAULT_LIMIT = 2_000_000
"""Largest number of configurations the exact analysis builds unless told otherwise."""


class TooManyConfigurations(LoadError):
    """The requested chain exceeds the configuration limit."""


@dataclass
class Chain:
    """A protocol's Markov chain: configurations (rows), transition matrix, start configurations."""

    protocol: Population
    configs: np.ndarray  # (C, Q) counts (int16 while n fits)
    P: sp.csr_matrix  # row-stochastic, self-loops included
    starts: np.ndarray  # indices of the start configurations
    start_name: str
    _keys: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0, np.uint64))
    _order: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0, np.int64))
    _r: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0, np.uint64))
    _masks: dict[str, np.ndarray] = field(repr=False, default_factory=dict)

    @property
    def size(self) -> int:
        return self.configs.shape[0]

    def mask(self, name: str) -> np.ndarray:
        """Where predicate `name` holds, per configuration."""
        if name not in self._masks:
            fn = self.protocol.predicates[name]
            view = self.protocol.view
            rows = map(np.ndarray.tolist, self.configs)  # one row at a time: a whole .tolist() is large
            self._masks[name] = np.fromiter((bool(fn(view(tuple(row)))) for row in rows), dtype=bool, count=self.size)
        return self._masks[name]

    def index_of(self, config: tuple[int, ...]) -> int:
        """The row of a configuration (KeyError if the chain does not hold it)."""
        key = np.asarray(config, dtype=np.uint64) @ self._r
        i = np.searchsorted(self._keys, key)
        if i < len(self._keys) and self._keys[i] == key:
            j = int(self._order[i])
            if tuple(self.configs[j]) == tuple(config):
                return j
        raise KeyError(config)

    def config(self, i: int) -> tuple[int, ...]:
        return tuple(int(x) for x in self.configs[i])

    def describe(self, i: int) -> str:
        return repr(self.protocol.view(self.config(i)))


def build(protocol: Population, start: str | None = None, limit: int = DEFAULT_LIMIT, ref: str = "SPEC") -> Chain:
    """The chain over the configurations reachable from `start` (default: the protocol's first)."""
    init = protocol.start_configurations(start)
    name = start or protocol.start_names()[0]
    total = protocol.configuration_count()
    if init is ALL and total > limit:
        raise TooManyConfigurations(_too_many(protocol, f"has {total:,} configurations", limit, ref))
    rng = np.random.default_rng(0x5EED)
    counts = np.int16 if protocol.n <= np.iinfo(np.int16).max else np.int64  # the chain's largest array
    for _ in range(4):
        r = rng.integers(1, 2**63, size=protocol.Q, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        moves = _Moves(protocol, r)
        if init is ALL:
            configs = compositions(protocol.n, protocol.Q).astype(counts)
            starts_rows = configs
        else:
            starts_rows = np.array(init, dtype=counts)
            configs = _explore(starts_rows, moves, r, limit, protocol, ref, start)
        keys = linear_keys(configs, r)
        order = np.argsort(keys, kind="stable")
        skeys = keys[order]
        if len(skeys) < 2 or np.all(skeys[1:] != skeys[:-1]):
            break
    else:  # pragma: no cover - four independent 64-bit key collisions
        raise RuntimeError("configuration keys collided repeatedly")
    import scipy.sparse as sp  # imported when a chain is built: scipy takes a large part of a second

    chain = Chain(protocol, configs, sp.csr_matrix((0, 0)), np.empty(0, np.int64), name, skeys, order, r)
    chain.P = _matrix(chain, moves)
    start_keys = linear_keys(starts_rows, r)
    chain.starts = np.unique(order[np.searchsorted(skeys, start_keys)])
    return chain


def _too_many(protocol: Population, what: str, limit: int, ref: str, start: str | None = None) -> str:
    """The refusal of a chain too large, with the command that simulates the same protocol from the same start."""
    ps = "".join(f" -p {k}={v}" for k, v in protocol.params.items()) + (f" --start {shell_word(start)}" if start else "")
    return (f"{protocol.name} with n={protocol.n} {what}, more than the exact analysis's limit of {limit:,}; "
            f"estimate it by simulation instead (lockstep simulate {shell_word(ref)}{ps}), or raise --max-configs")


class _Moves:
    """The configuration-changing outcomes of every ordered pair of states, as flat arrays:
    pair k = a·Q + b owns effects first[k] .. first[k+1]-1."""

    def __init__(self, protocol: Population, r: np.ndarray):
        Q = protocol.Q
        self.Q = Q
        self.first = np.zeros(Q * Q + 1, dtype=np.int64)
        idx, dv, probs = [], [], []
        for a, b, effects in protocol._moves:
            self.first[a * Q + b + 1] = len(effects)
            for eff, p, _ in effects:
                pad = 4 - len(eff)  # an effect changes at most four counts; pad with (state 0, +0)
                idx.append([i for i, _ in eff] + [0] * pad)
                dv.append([d for _, d in eff] + [0] * pad)
                probs.append(float(p))
        self.first = np.cumsum(self.first)
        self.idx = np.array(idx, dtype=np.int64).reshape(len(idx), 4)  # effect e adds dv[e, j] to count idx[e, j]
        self.dv = np.array(dv, dtype=np.int64).reshape(len(dv), 4)
        self.p = np.array(probs)
        self.dkey = (self.dv.astype(np.uint64) * r[self.idx]).sum(axis=1, dtype=np.uint64)  # wraps mod 2**64
        self.nn = protocol.n * (protocol.n - 1)

    def apply(self, rows: np.ndarray, eff: np.ndarray) -> np.ndarray:
        """rows[i] changed by effect eff[i] (a new array)."""
        out = rows.copy()
        np.add.at(out, (np.arange(len(out))[:, None], self.idx[eff]), self.dv[eff].astype(out.dtype))
        return out

    def expand(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For every configuration-changing interaction enabled in `rows`: (row, effect, probability)."""
        Q = self.Q
        r_idx, states = np.nonzero(rows)
        if not len(r_idx):
            return (np.empty(0, np.int64),) * 2 + (np.empty(0),)
        width = int(np.bincount(r_idx).max())
        starts = np.searchsorted(r_idx, np.arange(rows.shape[0]))
        slot = np.arange(len(r_idx)) - starts[r_idx]
        pres = np.full((rows.shape[0], width), -1, dtype=np.int64)
        pres[r_idx, slot] = states
        a = np.repeat(pres, width, axis=1).ravel()
        b = np.tile(pres, (1, width)).ravel()
        row = np.repeat(np.arange(rows.shape[0]), width * width)
        ok = (a >= 0) & (b >= 0)
        a, b, row = a[ok], b[ok], row[ok]
        ca = rows[row, a].astype(np.int64)
        cb = rows[row, b].astype(np.int64) - (a == b)
        ok = cb > 0
        a, b, row, ca, cb = a[ok], b[ok], row[ok], ca[ok], cb[ok]
        k = a * Q + b
        lo, hi = self.first[k], self.first[k + 1]
        cnt = hi - lo
        row = np.repeat(row, cnt)
        offs = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        eff = np.repeat(lo, cnt) + offs
        w = np.repeat(ca * cb, cnt) * self.p[eff] / self.nn
        return row, eff, w


CHUNK = 20_000
"""Configurations expanded at once (bounds the memory of the vectorised expansion)."""


def linear_keys(rows: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Σ rows[i, q]·r[q] mod 2⁶⁴ per row, a block of rows at a time (a whole uint64 copy is large)."""
    out = np.empty(len(rows), dtype=np.uint64)
    for lo in range(0, len(rows), CHUNK):
        out[lo:lo + CHUNK] = rows[lo:lo + CHUNK].astype(np.uint64) @ r
    return out


def compositions(n: int, q: int) -> np.ndarray:
    """Every vector of q non-negative integers summing to n, as rows (lexicographic order)."""
    table: dict[int, np.ndarray] = {s: np.array([[s]], dtype=np.int64) for s in range(n + 1)}
    for _ in range(2, q + 1):
        nxt = {}
        for s in range(n + 1):
            blocks = []
            for k in range(s + 1):
                rest = table[s - k]
                blocks.append(np.hstack([np.full((rest.shape[0], 1), k, dtype=np.int64), rest]))
            nxt[s] = np.vstack(blocks)
        table = nxt
    return table[n]


def _explore(starts: np.ndarray, moves: _Moves, r: np.ndarray, limit: int, protocol: Population,
             ref: str, start: str | None) -> np.ndarray:
    """Breadth-first exploration of the configurations reachable from `starts`, level by level."""
    keys = linear_keys(starts, r)
    _, first = np.unique(keys, return_index=True)
    frontier = starts[np.sort(first)]
    found = [frontier]
    seen = np.sort(keys[first])
    while len(frontier):
        new_rows, new_keys = [], []
        for lo in range(0, len(frontier), CHUNK):
            block = frontier[lo:lo + CHUNK]
            row, eff, _ = moves.expand(block)
            k = linear_keys(block, r)[row] + moves.dkey[eff]  # successor keys, without building the rows
            k, first = np.unique(k, return_index=True)
            pos = np.searchsorted(seen, k)
            new = (pos >= len(seen)) | (seen[np.minimum(pos, len(seen) - 1)] != k)
            pick = first[new]
            new_rows.append(moves.apply(block[row[pick]], eff[pick]))
            new_keys.append(k[new])
        k, first = np.unique(np.concatenate(new_keys), return_index=True)
        frontier = np.vstack(new_rows)[first]
        if len(frontier):
            found.append(frontier)
            seen = np.sort(np.concatenate([seen, k]))
            if len(seen) > limit:
                raise TooManyConfigurations(_too_many(protocol, f"reaches more than {limit:,} configurations", limit, ref,
                                                      start))
    return np.vstack(found)


def _matrix(chain: Chain, moves: _Moves) -> sp.csr_matrix:
    import scipy.sparse as sp

    configs, r = chain.configs, chain._r
    keys = linear_keys(configs, r)
    rows_, cols_, vals_ = [], [], []
    for lo in range(0, chain.size, CHUNK):
        row, eff, w = moves.expand(configs[lo:lo + CHUNK])
        row += lo
        target = keys[row] + moves.dkey[eff]
        rows_.append(row)
        cols_.append(chain._order[np.searchsorted(chain._keys, target)])
        vals_.append(w)
    row, col, val = np.concatenate(rows_), np.concatenate(cols_), np.concatenate(vals_)
    out_prob = np.bincount(row, weights=val, minlength=chain.size)
    diag = np.arange(chain.size)
    P = sp.csr_matrix((np.concatenate([val, np.clip(1.0 - out_prob, 0.0, 1.0)]),
                       (np.concatenate([row, diag]), np.concatenate([col, diag]))), shape=(chain.size, chain.size))
    P.sum_duplicates()
    return P
