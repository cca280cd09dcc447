"""The compiled search (`kernel.c`) for the built-in models: a history encoded as integer arrays, searched in C.

Every value of a (sub-)history is interned as a number (equal values, equal numbers), so the models
compare numbers; the key-value model's strings are interned again in C as appends build new ones.
A model is encoded here only when its class is exactly a built-in one (a subclass may change `step`),
and psmr-kv only for a part with no putall. The library is built once per machine with the system's
C compiler (`checker.vector.kernels.cbuild`); without one, or for other models, the Python search runs.
ctypes releases the GIL for the call, so parts searched on threads run on all cores.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from .history import UNKNOWN, Operation
from .models import CasRegister, KeyValue, Model, Mutex, Register, SwapKeyValue
from .wgl import Outcome

READ, WRITE, CAS, SWAP, APPEND, ACQUIRE, RELEASE = range(7)
UNKNOWN_FLAG, OPTIONAL_FLAG = 1, 2
NEVER = -1  # an output no state equals


class _Problem(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int32), ("nev", ctypes.c_int32), ("ev", ctypes.c_void_p), ("kind", ctypes.c_void_p),
                ("a", ctypes.c_void_p), ("b", ctypes.c_void_p), ("out", ctypes.c_void_p), ("flags", ctypes.c_void_p),
                ("init", ctypes.c_int64), ("nstr", ctypes.c_int32), ("sbytes", ctypes.c_void_p), ("soff", ctypes.c_void_p),
                ("deadline", ctypes.c_double), ("stop", ctypes.POINTER(ctypes.c_int32)), ("max_bytes", ctypes.c_int64),
                ("witness", ctypes.c_void_p)]


class _Result(ctypes.Structure):
    _fields_ = [("steps", ctypes.c_int64), ("configs", ctypes.c_int64), ("best_events", ctypes.c_int32),
                ("witness_len", ctypes.c_int32), ("cache_full", ctypes.c_int32), ("strings", ctypes.c_int32)]


@dataclass
class Encoded:
    """One (sub-)history as the kernel reads it."""

    ops: list[Operation]
    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray
    out: np.ndarray
    unknown: np.ndarray
    init: int
    strings: list[bytes] | None = None


class Interner(dict):
    """Numbers for values: equal values (Python's ==), equal numbers."""

    def __call__(self, v: Any) -> int:
        i = self.get(v)
        if i is None:
            i = self[v] = len(self)
        return i


def _register(ops: list[Operation]) -> Encoded:
    val = Interner()
    init = val(None)
    n = len(ops)
    kind, a, b, out = [0] * n, [0] * n, [0] * n, [0] * n
    for k, op in enumerate(ops):
        f = op.f
        if f == "read":
            o = op.output
            if o is not UNKNOWN:
                x = val.get(o)
                out[k] = val(o) if x is None else x
        elif f == "write":
            v = op.value
            x = val.get(v)
            kind[k], a[k] = WRITE, val(v) if x is None else x
        else:
            kind[k], a[k], b[k], out[k] = CAS, val(op.value[0]), val(op.value[1]), int(bool(op.output))
    return _arrays(ops, kind, a, b, out, init)


def _kv(ops: list[Operation]) -> Encoded:
    val = Interner()
    init = val("")
    n = len(ops)
    kind, a, out = [0] * n, [0] * n, [0] * n
    for k, op in enumerate(ops):
        f = op.f
        if f == "get":
            o = op.output
            if o is not UNKNOWN:
                o = "" if o is None else o
                out[k] = val(o) if isinstance(o, str) else NEVER
        else:
            kind[k], a[k] = (WRITE if f == "put" else APPEND), val(op.value)
    enc = _arrays(ops, kind, a, [0] * n, out, init)
    enc.strings = [s.encode("utf-8", "surrogatepass") for s in val]
    return enc


def _swap(ops: list[Operation]) -> Encoded:
    val = Interner()
    init = val(0)
    n = len(ops)
    kind, a, out = [0] * n, [0] * n, [0] * n
    for k, op in enumerate(ops):
        if op.f == "get":
            kind[k] = READ
        else:
            kind[k], a[k] = SWAP, val(op.value)
        if op.output is not UNKNOWN:
            out[k] = val(op.output)
    return _arrays(ops, kind, a, [0] * n, out, init)


def _mutex(ops: list[Operation]) -> Encoded:
    kind = [ACQUIRE if op.f == "acquire" else RELEASE for op in ops]
    z = [0] * len(ops)
    return _arrays(ops, kind, z, z, z, 0)


def _arrays(ops: list[Operation], kind: list[int], a: list[int], b: list[int], out: list[int], init: int) -> Encoded:
    return Encoded(ops, np.array(kind, np.int8), np.array(a, np.int64), np.array(b, np.int64), np.array(out, np.int64),
                   np.array([op.output is UNKNOWN for op in ops], np.uint8), init)


def encoder(model: Model, ops: list[Operation]) -> Callable[[list[Operation]], Encoded] | None:
    """How to encode (sub-)histories of `ops` for the kernel, or None if the model has no compiled form."""
    t = type(model)
    if t is Register or t is CasRegister:
        return _register
    if t is KeyValue:
        return _kv
    if t is Mutex:
        return _mutex
    if t is SwapKeyValue and not any(op.f == "putall" for op in ops):
        return _swap
    return None


def event_order(ops: list[Operation]) -> np.ndarray:
    """Events in real-time order as 2 * index + (1 for a return), as `wgl.event_order` (calls before returns at
    one position, ties in index order)."""
    n = len(ops)
    keys = np.empty(2 * n, np.int64)
    keys[0::2] = np.fromiter((op.call for op in ops), np.int64, n) * 2
    keys[1::2] = np.fromiter((op.ret for op in ops), np.int64, n) * 2 + 1
    return np.argsort(keys, kind="stable").astype(np.int32)  # the call of i is 2i, its return 2i + 1


_LIB: Any = None
_LIB_ERROR: str | None = None
_LOCK = threading.Lock()


def library() -> Any:
    """The loaded kernel, or None (`unavailable()` says why): built on first use, once per machine."""
    global _LIB, _LIB_ERROR
    with _LOCK:
        if _LIB is None and _LIB_ERROR is None:
            if os.environ.get("LOCKSTEP_NO_NATIVE"):
                _LIB_ERROR = "LOCKSTEP_NO_NATIVE is set"
                return None
            from lockstep.checker.vector.kernels.cbuild import BuildError, Library

            try:
                lib = Library(resources.files(__package__).joinpath("kernel.c").read_text(encoding="utf-8"),
                              "lockstep_linearizability").load()
            except (BuildError, OSError) as e:
                _LIB_ERROR = str(e)
                return None
            lib.lin_search.argtypes = [ctypes.POINTER(_Problem), ctypes.POINTER(_Result)]
            lib.lin_search.restype = ctypes.c_int
            _LIB = lib
        return _LIB


def unavailable() -> str | None:
    """Why the compiled search cannot run here (None when it can)."""
    library()
    return _LIB_ERROR


_MEMORY_CAP: int | None = None


def memory_cap() -> int:
    """Bytes one search's cache may take: a quarter of the memory available when first asked, between 256 MiB and
    8 GiB."""
    global _MEMORY_CAP
    if _MEMORY_CAP is None:
        try:
            with open("/proc/meminfo", encoding="ascii") as fh:
                avail = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("MemAvailable:"))
        except (OSError, StopIteration, ValueError):
            avail = 4 << 30
        _MEMORY_CAP = max(256 << 20, min(8 << 30, avail // 4))
    return _MEMORY_CAP


def search(enc: Encoded, deadline: float | None, stop: ctypes.c_int32, optional: Collection[int] = (),
           max_bytes: int | None = None) -> Outcome:
    """Search one encoded (sub-)history; `stop` set to nonzero from another thread ends it (code -1); code -2: the
    memory ran out. `optional`: operations that may not have taken effect."""
    lib = library()
    n = len(enc.ops)
    flags = enc.unknown.copy()
    if len(optional):
        flags[np.fromiter(optional, np.int64, len(optional))] |= OPTIONAL_FLAG
    ev = event_order(enc.ops)
    witness = np.zeros(max(n, 1), np.int32)
    p = _Problem(n, len(ev), ev.ctypes.data, enc.kind.ctypes.data, enc.a.ctypes.data, enc.b.ctypes.data,
                 enc.out.ctypes.data, flags.ctypes.data, enc.init, 0, None, None, deadline or 0.0,
                 ctypes.pointer(stop), max_bytes or memory_cap(), witness.ctypes.data)
    if enc.strings is not None:
        sb = b"".join(enc.strings)
        soff = np.zeros(len(enc.strings) + 1, np.int64)
        np.cumsum([len(s) for s in enc.strings], out=soff[1:])
        buf = ctypes.create_string_buffer(sb, max(len(sb), 1))
        p.nstr, p.sbytes, p.soff = len(enc.strings), ctypes.addressof(buf), soff.ctypes.data
    r = _Result()
    code = lib.lin_search(ctypes.byref(p), ctypes.byref(r))
    return Outcome(code, r.steps, r.best_events, witness[:r.witness_len].tolist(), r.configs, bool(r.cache_full))
