"""Sequential models that histories are checked against, and how to name one on the command line.

A model says, for a state and one operation with its observed output, whether the operation could
have produced that output there and, if so, the state after it: `step(state, op) -> state | None`
(`op.output` is `UNKNOWN` when nobody saw the outcome; the step then only applies the effect, and
where even that is impossible the search takes the operation not to have happened, as Knossos does
with `:info`). `op.value` is what the operation did as its completion reports it (Knossos' `complete`).
States must be hashable. `partition(ops)` splits a history into independent sub-histories (by key)
that are checked separately (P-compositionality); the default keeps one.

A model of your own is a small Python class: either `step(state, op) -> (legal, new_state)`, or —
for a deterministic object — `apply(state, f, key, value) -> (new_state, output)`, with an `init()`
(or an `initial` attribute) and optionally `partition_key(op)`. `--model path/to/file.py:Class`.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
from collections.abc import Callable, Iterable
from typing import Any

from ..safeio import code_file
from .edn import Keyword
from .history import Operation

NIL = None


class ModelError(ValueError):
    """A model that cannot be loaded or an operation a model does not know; the message says why."""


class Model:
    """The base class: a name, an initial state, a step, and optionally a partition by key."""

    name = "model"
    operations: tuple[str, ...] = ()  # the `f`s this model knows (empty: any)
    observers: tuple[str, ...] = ()  # the `f`s that never change the state (reads), for explanations

    def init(self) -> Any:
        raise NotImplementedError

    def step(self, state: Any, op: Operation) -> Any:
        """The state after `op`, or None if `op` cannot have returned its output in `state`."""
        raise NotImplementedError

    def partition(self, ops: list[Operation]) -> list[list[Operation]]:
        return [ops]

    def is_observer(self, op: Operation) -> bool:
        """Whether `op` only reads the state (an explanation may leave it out)."""
        return op.f in self.observers

    def malformed(self, op: Operation) -> str | None:
        """What is wrong with `op`'s value for this model, or None."""
        return None

    def check_ops(self, ops: Iterable[Operation]) -> None:
        """Refuse operations the model does not know or cannot apply, naming the first (ModelError)."""
        for op in ops:
            if self.operations and op.f not in self.operations:
                raise ModelError(f"{op.where}: operation {op.f!r} is not one of the {self.name} model's "
                                 f"({', '.join(self.operations)}); choose another --model")
            problem = self.malformed(op)
            if problem:
                raise ModelError(f"{op.where}: {op.f} {problem}")


# The built-in models' states are never None, so None can mean "illegal" (user states are wrapped).
ILLEGAL = None


class Register(Model):
    """A read/write register, initially nil; operations with a `key` act on that key's own register (the history
    is partitioned by key, as Jepsen's independent keys)."""

    name = "register"
    operations = ("read", "write")
    observers = ("read",)

    def init(self) -> Any:
        return ("v", NIL)

    def partition(self, ops: list[Operation]) -> list[list[Operation]]:
        return _by_key(ops, lambda op: op.key)

    def step(self, state: Any, op: Operation) -> Any:
        if op.f == "write":
            return ("v", op.value)
        if op.unknown or op.output == state[1]:
            return state
        return ILLEGAL


class CasRegister(Model):
    """A register with compare-and-set, initially nil (Porcupine's etcd model, Knossos' cas-register).

    `cas [from to]` returns true (the register held `from`, and now holds `to`) or false (it did not);
    with an unknown output it takes effect exactly when the register held `from`. Operations with a `key` act on
    that key's own register (the history is partitioned by key)."""

    name = "cas-register"
    operations = ("read", "write", "cas")
    observers = ("read",)

    def init(self) -> Any:
        return ("v", NIL)

    def partition(self, ops: list[Operation]) -> list[list[Operation]]:
        return _by_key(ops, lambda op: op.key)

    def step(self, state: Any, op: Operation) -> Any:
        f, v = op.f, state[1]
        if f == "read":
            return state if op.unknown or op.output == v else ILLEGAL
        if f == "write":
            return ("v", op.value)
        frm, to = op.value
        matches = v == frm
        if op.unknown or bool(op.output) == matches:
            return ("v", to) if matches else state
        return ILLEGAL

    def malformed(self, op: Operation) -> str | None:
        if op.f == "cas" and not (isinstance(op.value, tuple) and len(op.value) == 2):
            return f"needs a value [from to], not {op.value!r}"
        return None


class KeyValue(Model):
    """A map from keys to strings, each initially "" (Porcupine's kv model): get, put, append.

    Partitioned by key: each key's sub-history is checked on its own."""

    name = "kv"
    operations = ("get", "put", "append")
    observers = ("get",)

    def init(self) -> Any:
        return ""

    def step(self, state: Any, op: Operation) -> Any:
        f = op.f
        if f == "get":
            return state if op.unknown or (op.output if op.output is not None else "") == state else ILLEGAL
        if f == "put":
            return op.value
        return state + op.value

    def partition(self, ops: list[Operation]) -> list[list[Operation]]:
        return _by_key(ops, lambda op: op.key)

    def malformed(self, op: Operation) -> str | None:
        if op.f != "get" and not isinstance(op.value, str):
            return f"needs a string value, not {op.value!r}"
        return None


class KeyValueWhole(KeyValue):
    """The key-value model over the whole map, not partitioned (Porcupine's kvNoPartitionModel)."""

    name = "kv-whole"

    def init(self) -> Any:
        return frozenset()

    def step(self, state: Any, op: Operation) -> Any:
        cur = dict(state)
        new = KeyValue.step(self, cur.get(op.key, ""), op)
        if new is ILLEGAL:
            return ILLEGAL
        if new == cur.get(op.key, ""):
            return state
        cur[op.key] = new
        return frozenset(cur.items())

    def partition(self, ops: list[Operation]) -> list[list[Operation]]:
        return [ops]


class SwapKeyValue(Model):
    """The P-SMR key-value service (`lockstep.specs.psmr.commands`): integer values, initially 0; get(k);
    put(k, v) returns the value it replaced; putall(v) writes every key and returns 0.

    A state is (the value of every key not written since the last putall, the keys written since).
    Partitioned by key when the history has no putall (which touches every key)."""

    name = "psmr-kv"
    operations = ("get", "put", "putall")
    observers = ("get",)

    def init(self) -> Any:
        return (0, frozenset())

    def step(self, state: Any, op: Operation) -> Any:
        base, written = state
        if op.f == "putall":
            return (op.value, frozenset()) if op.unknown or op.output == 0 else ILLEGAL
        cur = dict(written).get(op.key, base)
        if not op.unknown and op.output != cur:
            return ILLEGAL
        if op.f == "get":
            return state
        rest = frozenset(kv for kv in written if kv[0] != op.key)
        return (base, rest | {(op.key, op.value)})

    def partition(self, ops: list[Operation]) -> list[list[Operation]]:
        if any(op.f == "putall" for op in ops):
            return [ops]
        return _by_key(ops, lambda op: op.key)


class Mutex(Model):
    """A lock, initially free (Knossos' mutex): `acquire` succeeds only when free, `release` only when held
    (by anyone); values are not looked at."""

    name = "mutex"
    operations = ("acquire", "release")

    def init(self) -> Any:
        return False

    def step(self, state: Any, op: Operation) -> Any:
        if op.f == "acquire":
            return True if not state else ILLEGAL
        return False if state else ILLEGAL


class MultiRegister(Model):
    """Registers named by keys, each initially nil, under transactions (Knossos' multi-register): the only
    operation is `txn`, whose value is a sequence of micro-operations `[f k v]` applied in order, `f` being
    `read` (legal when `v` is nil — the value is not known — or equals k's current value) or `write`
    (k := v). One transaction may touch many keys, so the history is not partitioned.

    A state is the frozenset of (key, value) pairs of the keys whose value is not nil."""

    name = "multi-register"
    operations = ("txn",)

    def init(self) -> Any:
        return frozenset()

    def step(self, state: Any, op: Operation) -> Any:
        cur = dict(state)
        for f, k, v in op.value:
            if _micro(f) == "read":
                if v is not None and v != cur.get(k):
                    return ILLEGAL
            elif v is None:
                cur.pop(k, None)
            else:
                cur[k] = v
        return frozenset(cur.items())

    def is_observer(self, op: Operation) -> bool:
        return all(_micro(m[0]) == "read" for m in op.value)

    def malformed(self, op: Operation) -> str | None:
        if not isinstance(op.value, tuple):
            return f"needs a value [[f k v] ...] (micro-operations), not {op.value!r}"
        for m in op.value:
            if not (isinstance(m, tuple) and len(m) == 3 and _micro(m[0]) in ("read", "write")):
                return f"has a micro-operation {m!r} that is not [read k v] or [write k v]"
        return None


def _micro(f: Any) -> Any:
    """A micro-operation's name: `:read` in EDN, "read" in JSON."""
    return f.name if isinstance(f, Keyword) else f


class _UserModel(Model):
    """A user's class adapted to `Model`: `step` used as it is, or `apply` compared with the output."""

    def __init__(self, obj: Any, ref: str):
        self.obj = obj
        self.name = getattr(obj, "name", type(obj).__name__)
        self.ref = ref
        self.observers = tuple(getattr(obj, "observers", ()))
        if not (callable(getattr(obj, "step", None)) or callable(getattr(obj, "apply", None))):
            raise ModelError(f"{ref}: a model needs step(state, op) or apply(state, f, key, value)")
        if not (callable(getattr(obj, "init", None)) or hasattr(obj, "initial")):
            raise ModelError(f"{ref}: a model needs init() or an `initial` attribute")

    def init(self) -> Any:
        s = self.obj.init() if callable(getattr(self.obj, "init", None)) else self.obj.initial
        _hashable(s, self.ref)
        return (s,)  # wrapped, so that any user state (None included) differs from ILLEGAL

    def step(self, state: Any, op: Operation) -> Any:
        if callable(getattr(self.obj, "step", None)):
            r = self.obj.step(state[0], op)
            if not (isinstance(r, tuple) and len(r) == 2):
                raise ModelError(f"{self.ref}: step(state, op) must return (legal, new_state), got {r!r}")
            ok, new = r
            if not ok:
                return ILLEGAL
        else:
            new, out = self.obj.apply(state[0], op.f, op.key, op.value)
            if not op.unknown and out != op.output:
                return ILLEGAL
        _hashable(new, self.ref)
        return (new,)

    def partition(self, ops: list[Operation]) -> list[list[Operation]]:
        key = getattr(self.obj, "partition_key", None)
        return _by_key(ops, key) if callable(key) else [ops]


def _hashable(s: Any, ref: str) -> None:
    try:
        hash(s)
    except TypeError:
        raise ModelError(f"{ref}: model states must be hashable (tuples, frozensets), got {type(s).__name__}") from None


def _by_key(ops: list[Operation], key: Callable[[Operation], Any]) -> list[list[Operation]]:
    parts: dict[Any, list[Operation]] = {}
    for op in ops:
        parts.setdefault(key(op), []).append(op)
    return list(parts.values())


MODELS: dict[str, type[Model]] = {
    "register": Register,
    "cas-register": CasRegister,
    "kv": KeyValue,
    "kv-whole": KeyValueWhole,
    "mutex": Mutex,
    "multi-register": MultiRegister,
    "psmr-kv": SwapKeyValue,
}


def load_model(ref: str) -> Model:
    """A model by name (`cas-register`, ...) or a user's class as `path/to/file.py:Class` or `module:Class`."""
    if ref in MODELS:
        return MODELS[ref]()
    path, sep, attr = ref.rpartition(":")
    if not sep or not attr:
        raise ModelError(f"unknown model {ref!r}: choose one of {', '.join(MODELS)}, or name a class as "
                         "path/to/model.py:Class")
    try:
        if path.endswith(".py") or os.sep in path:
            if not os.path.isfile(path):
                raise ModelError(f"model file {path} does not exist")
            try:
                real = code_file(path, "model file")
            except OSError as e:
                raise ModelError(f"cannot load model file {path}: {e}") from None
            spec = importlib.util.spec_from_file_location(f"lockstep_user_model_{abs(hash(real))}", real)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        else:
            module = importlib.import_module(path)
    except ModelError:
        raise
    except Exception as e:
        raise ModelError(f"cannot load model {ref}: {type(e).__name__}: {e}") from None
    obj = getattr(module, attr, None)
    if obj is None:
        raise ModelError(f"{path} has no object {attr!r}")
    if inspect.isclass(obj):
        obj = obj()
    return obj if isinstance(obj, Model) else _UserModel(obj, ref)
