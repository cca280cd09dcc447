"""`PlainModel`: a spec given as `init()` and `next(state)` over hashable Python states.

For models that do not fit the typed language (terms of a process algebra, say). The
explicit engines, simulation and replay accept it; the symbolic and vector engines do not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import traceback
from collections.abc import Callable
from typing import Any

from lockstep.specs.lang.errors import Location, SpecError
from lockstep.specs.lang.names import exception_text

from .itf import encode_plain, show
from .model import Model, StepFailure

_INT = {int}


def canonical_text(v: Any) -> str:
    """A deterministic text for a plain state: like repr, but with sets and maps sorted."""
    t = type(v)
    if t is int or t is str or t is bool or v is None or t is float:
        return repr(v)
    if isinstance(v, tuple):
        if set(map(type, v)) <= _INT:  # count vectors (population configurations): the same text, at C speed
            inner = ",".join(map(str, v))
        else:
            inner = ",".join(canonical_text(x) for x in v)
        return f"{type(v).__name__}({inner})" if hasattr(v, "_fields") else f"({inner})"
    if isinstance(v, (frozenset, set)):
        return "{" + ",".join(sorted(canonical_text(x) for x in v)) + "}"
    if isinstance(v, dict):
        return "{" + ",".join(sorted(f"{canonical_text(k)}:{canonical_text(x)}" for k, x in v.items())) + "}"
    if isinstance(v, list):
        return "[" + ",".join(canonical_text(x) for x in v) + "]"
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        inner = ",".join(canonical_text(getattr(v, f.name)) for f in dataclasses.fields(v))
        return f"{type(v).__name__}({inner})"
    return repr(v)


def plain_fingerprint(v: Any) -> int:
    """64 bits of BLAKE2b over the canonical text (stable across processes and runs)."""
    digest = hashlib.blake2b(canonical_text(v).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _user_frame(e: BaseException) -> str | None:
    here = os.path.dirname(os.path.abspath(__file__))
    loc = None
    for fs in traceback.extract_tb(e.__traceback__):
        if not os.path.abspath(fs.filename).startswith(here):
            loc = f"{fs.filename}:{fs.lineno}"
    return loc


class PlainModel(Model):
    """A plain spec object: `init()`, `next(state)`, optional `invariants` and `constraint`."""

    def __init__(self, obj: Any, ref: str, name: str, params: dict[str, Any]):
        self.obj = obj
        self.ref = ref
        self.name = name
        self.params = dict(params)
        self._init: Callable = obj.init
        self._next: Callable = obj.next
        invs = getattr(obj, "invariants", None) or {}
        if not isinstance(invs, dict) or not all(callable(f) for f in invs.values()):
            raise SpecError(f"plain spec {name}: `invariants` must be a dict of name -> function(state) -> bool")
        self._invariants = list(invs.items())
        self.invariant_names = [n for n, _ in self._invariants]
        constraint = getattr(obj, "constraint", None)
        self._constraint = constraint if callable(constraint) else None
        self.constraint_names = ["constraint"] if self._constraint else []
        self.vars = ["state"]
        self._vars_known = False

    def initial_states(self) -> list:
        try:
            got = self._init()
            if got is None:
                raise _returns_none(self.name, "init()", self._init, "the initial states")
            states = list(got)
        except SpecError:
            raise
        except Exception as e:
            raise SpecError(f"plain spec {self.name}: init() raised {type(e).__name__}: {e}",
                            None, f"see {_user_frame(e) or 'the spec'}") from None
        for st in states:
            self._require_hashable(st, "init()")
        if states:
            self.learn_vars(states[0])
            self._require_conditions(states[0])
        return states

    def _predicates(self) -> list[tuple[str, Callable]]:
        return [(f"invariant {n}", fn) for n, fn in self._invariants] \
            + ([("constraint", self._constraint)] if self._constraint else [])

    def _require_conditions(self, st: Any) -> None:
        """Refuse, before any search, an invariant or constraint that returns nothing (a missing `return`, which
        would read as false: a violation, or every state outside the constraint)."""
        for what, fn in self._predicates():
            try:
                got = fn(st)
            except SpecError:
                raise
            except Exception:
                continue  # the search reports it where it happens, with the trace
            if got is None:
                raise _returns_none(self.name, what, fn)

    def learn_vars(self, st: Any) -> None:
        """Take the variable names from a state (a named tuple's or a dataclass's fields; else one, `state`)."""
        if not self._vars_known:
            self.vars = _var_names(st)
            self._vars_known = True

    def successors(self, st: Any) -> list[tuple[Any, Any]]:
        out = []
        for pair in self._next(st):
            try:
                label, t = pair
                hash(t)
            except (TypeError, ValueError):
                self._require_pair(pair)
            out.append((label, t))
        return out

    def _require_pair(self, pair: Any) -> None:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise SpecError(f"plain spec {self.name}: next(state) must yield (label, state) pairs, got {pair!r}")
        self._require_hashable(pair[1], "next()")

    def _require_hashable(self, st: Any, where: str) -> None:
        try:
            hash(st)
        except TypeError as e:
            raise SpecError(f"plain spec {self.name}: {where} produced a state that is not hashable ({e}): {st!r}",
                            None, "use tuples, frozensets and frozen dataclasses instead of lists, sets and dicts") from None

    def violated(self, st: Any) -> int:
        for i, (name, fn) in enumerate(self._invariants):
            if not (got := fn(st)):
                if got is None:
                    raise _returns_none(self.name, f"invariant {name}", fn)
                return i
        return -1

    def invariant_holds(self, name: str, st: Any) -> bool:
        for n, fn in self._invariants:
            if n == name:
                try:
                    return bool(fn(st))
                except Exception:
                    return False
        raise ValueError(f"spec {self.name} has no invariant {name!r}")

    def outside(self, st: Any) -> int:
        if self._constraint is not None and not (got := self._constraint(st)):
            if got is None:
                raise _returns_none(self.name, "constraint", self._constraint)
            return 0
        return -1

    fingerprint = staticmethod(plain_fingerprint)  # type: ignore[assignment]

    def diagnose(self, st: Any) -> StepFailure:
        try:
            got = self._next(st)
            if got is None:
                e = _returns_none(self.name, "next(state)", self._next, "the (label, state) pairs")
                return StepFailure("", "error", f"{e.message}; fix: {e.hint}", str(e.location) if e.location else None)
            for _ in got:
                pass
        except Exception as e:
            return StepFailure("", "error", exception_text(e), _user_frame(e))
        return StepFailure("", "error", "next() failed, but not when re-run", None)

    def diagnose_predicate(self, st: Any) -> StepFailure:
        for what, fn in self._predicates():
            name = what.removeprefix("invariant ")
            try:
                got = fn(st)
                if got is None:
                    raise _returns_none(self.name, what, fn)
            except SpecError as e:
                return StepFailure(name, "error", f"{e.message}; fix: {e.hint}", str(e.location) if e.location else None)
            except Exception as e:
                return StepFailure(name, "error", exception_text(e), _user_frame(e))
        return StepFailure("", "error", "a predicate failed, but not when re-run", None)

    def label(self, lid: Any) -> str:
        return lid if isinstance(lid, str) else show(lid)

    def label_json(self, lid: Any) -> dict[str, Any]:
        if isinstance(lid, str):
            return {"action": lid, "args": {}}
        return {"action": self.label(lid), "args": {}, "label": encode_plain(lid)}

    def encode_state(self, st: Any) -> dict[str, Any]:
        if self.vars == ["state"]:
            return {"state": encode_plain(st)}
        return {k: encode_plain(getattr(st, k)) for k in self.vars}

    def show_state(self, st: Any) -> dict[str, str]:
        if self.vars == ["state"]:
            return {"state": show(st)}
        return {k: show(getattr(st, k)) for k in self.vars}


def _returns_none(spec: str, what: str, fn: Callable, needed: str = "a condition") -> SpecError:
    """The error of a plain spec's function that returns None where it must return `needed`."""
    code = getattr(fn, "__code__", None)
    where = Location(code.co_filename, code.co_firstlineno) if code is not None else None
    return SpecError(f"{what} of plain spec {spec} returns None, not {needed}", where,
                     f"return {'a bool' if needed == 'a condition' else needed} (is a `return` missing?)")


def _var_names(st: Any) -> list[str]:
    if isinstance(st, tuple) and hasattr(st, "_fields"):
        return list(st._fields)
    if dataclasses.is_dataclass(st) and not isinstance(st, type):
        return [f.name for f in dataclasses.fields(st)]
    return ["state"]
