"""How the vector engine packs a state into 64-bit words, and the fingerprint of a packed state.

Each slot becomes one or more *columns*: a scalar slot one column holding `value - lo` in as
few bits as its domain needs, a Set slot one column per 63 elements of its universe (its
bitmask, split). Columns are laid into words first-fit in slot order, never straddling a
word, so a batch of states is a `(words, rows)` uint64 array and a column is a shift and a
mask away.

The fingerprint of a packed state mixes its words with the splitmix64 finaliser, which is a
bijection of 64-bit integers: when a state packs into one word of at most 63 bits, distinct
states have distinct fingerprints, and no valid state has fingerprint 0 (the visited table's
empty marker).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lockstep.specs.lang.program import Program

CHUNK = 63  # set elements per column: a chunk of a bitmask stays a non-negative int64
MAX_BITS = 63  # wider scalar domains (and any intermediate beyond int64) are not vectorised

_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_M64 = (1 << 64) - 1


class VectorUnsupported(Exception):
    """The spec uses something the vector engine does not handle; the scalar engine does."""


@dataclass(frozen=True)
class Column:
    """Bits `shift..shift+bits-1` of word `word` hold slot `slot` (chunk `chunk` of a set) minus `lo`."""

    slot: int
    chunk: int
    lo: int
    bits: int
    word: int
    shift: int

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * _M1) & _M64
    z = ((z ^ (z >> 27)) * _M2) & _M64
    return z ^ (z >> 31)


def _unmix(z: int) -> int:
    """The inverse of `_mix` (each step is invertible)."""

    def unshift(x: int, s: int) -> int:
        out = x
        for _ in range(64 // s + 1):
            out = x ^ (out >> s)
        return out & _M64

    inv1, inv2 = pow(_M1, -1, 1 << 64), pow(_M2, -1, 1 << 64)
    z = unshift(z, 31)
    z = unshift((z * inv2) & _M64, 27)
    return unshift((z * inv1) & _M64, 30)


class Layout:
    """The packing of one program's states, with packing, unpacking and fingerprints."""

    def __init__(self, prog: Program):
        self.prog = prog
        self.columns: list[Column] = []
        self.slot_columns: list[list[Column]] = []
        word, used = 0, 0
        for i, dom in enumerate(prog.slot_doms):
            widths = self._widths(i, dom)
            cols = []
            for chunk, (lo, bits) in enumerate(widths):
                if used + bits > 64:
                    word, used = word + 1, 0
                cols.append(Column(i, chunk, lo, bits, word, used))
                used += bits
            self.columns.extend(cols)
            self.slot_columns.append(cols)
        self.words = word + 1
        self.bits = 64 * word + used
        self.exact = self.words == 1 and self.bits <= 63
        # the seed that maps the (invalid) word 2^63 to fingerprint 0
        self.seed = _unmix(0) ^ (1 << 63)
        self.kinds = [d.kind for d in prog.slot_doms]

    @staticmethod
    def _widths(i: int, dom) -> list[tuple[int, int]]:
        if dom.kind == "set":
            u = dom.elem.size
            return [(0, min(CHUNK, u - c)) for c in range(0, u, CHUNK)] or [(0, 0)]
        if dom.kind == "map":
            raise VectorUnsupported(f"slot {i} holds a map")  # maps are flattened by the language
        bits = (dom.hi - dom.lo).bit_length()
        if bits > MAX_BITS:
            raise VectorUnsupported(f"a field's type {dom.describe()} needs {bits} bits; at most {MAX_BITS} fit a column")
        return [(dom.lo, bits)]

    def chunks(self, slot: int) -> int:
        return len(self.slot_columns[slot])

    # -- one state ----------------------------------------------------------------------------
    def pack(self, st: tuple) -> list[int]:
        """The words of a state tuple."""
        words = [0] * self.words
        for c in self.columns:
            v = int(st[c.slot])
            if self.kinds[c.slot] == "set":
                v = (v >> (CHUNK * c.chunk)) & c.mask
            words[c.word] |= (v - c.lo) << c.shift
        return words

    def unpack(self, words: list[int]) -> tuple:
        """The state tuple of packed words (the representation the scalar engine uses)."""
        out: list = [0] * self.prog.nslots
        for c in self.columns:
            v = (int(words[c.word]) >> c.shift) & c.mask
            if self.kinds[c.slot] == "set":
                out[c.slot] |= v << (CHUNK * c.chunk)
            else:
                out[c.slot] = v + c.lo
        for i, k in enumerate(self.kinds):
            if k == "bool":
                out[i] = bool(out[i])
        return tuple(out)

    def fingerprint_words(self, words: list[int]) -> int:
        """The fingerprint of one packed state (equal to `fingerprints` on a batch holding it)."""
        return int(self.fingerprints(np.array(words, dtype=np.uint64).reshape(self.words, 1))[0])

    def fingerprint_state(self, st: tuple) -> int:
        return self.fingerprint_words(self.pack(st))

    # -- batches ------------------------------------------------------------------------------
    def pack_many(self, states: list[tuple]) -> np.ndarray:
        out = np.zeros((self.words, len(states)), dtype=np.uint64)
        for j, st in enumerate(states):
            out[:, j] = self.pack(st)
        return out

    def valid(self, words: np.ndarray) -> np.ndarray:
        """Which columns of a `(words, rows)` batch are packed states: each field's value within its type, and
        no bit set outside the fields (a bool per row; for words read from a file)."""
        ok = np.ones(words.shape[1], dtype=bool)
        used = [0] * self.words
        for c in self.columns:
            used[c.word] |= c.mask << c.shift
            dom = self.prog.slot_doms[c.slot]
            if dom.kind != "set" and dom.hi - dom.lo < c.mask:
                ok &= (words[c.word] >> np.uint64(c.shift)) & np.uint64(c.mask) <= np.uint64(dom.hi - dom.lo)
        for w in range(self.words):
            ok &= words[w] & np.uint64(~used[w] & _M64) == 0
        return ok

    def fingerprints(self, words: np.ndarray) -> np.ndarray:
        """Fingerprints of a `(words, rows)` batch; never 0 for a valid state."""
        h = _mix_array(words[0] ^ np.uint64(self.seed))
        for w in range(1, self.words):
            h ^= words[w]
            h = _mix_array(h)
        if not self.exact:
            h[h == 0] = 1  # one more possible collision, covered by the estimate
        return h


def _mix_array(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over an array (a new array; uint64 arithmetic wraps)."""
    z = z ^ (z >> np.uint64(30))
    z *= np.uint64(_M1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(_M2)
    z ^= z >> np.uint64(31)
    return z
