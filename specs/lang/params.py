"""Spec parameters (`n`, `f`, number of slots): declared with defaults, bound per check."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .errors import SpecError, user_location


class Binding:
    """The parameter values of one spec instance, and the domains its types resolve to."""

    def __init__(self, spec_name: str, values: dict[str, int]):
        self.spec_name = spec_name
        self.values = dict(values)
        self.domains: dict[int, Any] = {}  # id(type) -> bound domain

    def __getitem__(self, name: str) -> int:
        try:
            return self.values[name]
        except KeyError:
            raise SpecError(
                f"spec {self.spec_name} uses parameter {name!r}, which it does not declare",
                user_location(),
                f"declare it in the spec class, e.g. {name} = Param({name!r}, default=...)",
            ) from None


_current: ContextVar[Binding | None] = ContextVar("lockstep_binding", default=None)


def current_binding() -> Binding:
    """The binding of the spec being built; an error outside of one."""
    binding = _current.get()
    if binding is None:
        raise SpecError(
            "a parameter or parameterised type was evaluated outside of a spec instance",
            user_location(),
            "use parameters inside actions, invariants or initial-state functions",
        )
    return binding


@contextmanager
def bound(binding: Binding) -> Iterator[Binding]:
    """Evaluate parameters and types against `binding` inside the block."""
    token = _current.set(binding)
    try:
        yield binding
    finally:
        _current.reset(token)


class ParamLike:
    """An integer that is known once the spec's parameters are bound."""

    def evaluate(self, binding: Binding) -> int:
        raise NotImplementedError

    def value(self) -> int:
        return self.evaluate(current_binding())

    # Used as an int (range(n), list indices, comparisons) while a spec is being built.
    def __index__(self) -> int:
        return self.value()

    def __int__(self) -> int:
        return self.value()

    def __bool__(self) -> bool:
        return bool(self.value())

    def _op(self, other: Any, fn: Callable[[int, int], int], sym: str, flip: bool = False):
        if isinstance(other, (int, ParamLike)):
            return ParamExpr(fn, sym, (other, self) if flip else (self, other))
        return NotImplemented

    def __add__(self, o):
        return self._op(o, operator.add, "+")

    def __radd__(self, o):
        return self._op(o, operator.add, "+", True)

    def __sub__(self, o):
        return self._op(o, operator.sub, "-")

    def __rsub__(self, o):
        return self._op(o, operator.sub, "-", True)

    def __mul__(self, o):
        return self._op(o, operator.mul, "*")

    def __rmul__(self, o):
        return self._op(o, operator.mul, "*", True)

    def __floordiv__(self, o):
        return self._op(o, operator.floordiv, "//")

    def __rfloordiv__(self, o):
        return self._op(o, operator.floordiv, "//", True)

    def __mod__(self, o):
        return self._op(o, operator.mod, "%")

    def __rmod__(self, o):
        return self._op(o, operator.mod, "%", True)

    def __neg__(self):
        return ParamExpr(operator.neg, "-", (self,))

    # Comparisons resolve immediately: they are only meaningful once bound.
    def __eq__(self, o):
        return self.value() == resolve(o)

    def __ne__(self, o):
        return self.value() != resolve(o)

    def __lt__(self, o):
        return self.value() < resolve(o)

    def __le__(self, o):
        return self.value() <= resolve(o)

    def __gt__(self, o):
        return self.value() > resolve(o)

    def __ge__(self, o):
        return self.value() >= resolve(o)

    __hash__ = object.__hash__


class Param(ParamLike):
    """A named integer parameter with a default, set per check with `--param name=value`."""

    def __init__(self, name: str, default: int, lo: int | None = None, hi: int | None = None, doc: str = ""):
        if not isinstance(name, str) or not name.isidentifier():
            raise SpecError(f"parameter name {name!r} is not an identifier", user_location())
        self.name = name
        self.default = default
        self.lo = lo
        self.hi = hi
        self.doc = doc
        self.location = user_location()
        self.check(default, "default")

    def check(self, value: Any, what: str = "value") -> int:
        """Validate a value for this parameter; returns it as an int."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"parameter {self.name}: {what} {value!r} is not an integer", self.location)
        if self.lo is not None and value < self.lo:
            raise SpecError(f"parameter {self.name}: {what} {value} is below its minimum {self.lo}", self.location)
        if self.hi is not None and value > self.hi:
            raise SpecError(f"parameter {self.name}: {what} {value} is above its maximum {self.hi}", self.location)
        return value

    def evaluate(self, binding: Binding) -> int:
        return binding[self.name]

    def __repr__(self) -> str:
        return self.name


class ParamExpr(ParamLike):
    """Arithmetic over parameters, evaluated once they are bound."""

    def __init__(self, fn: Callable[..., int], sym: str, args: tuple):
        self.fn = fn
        self.sym = sym
        self.args = args

    def evaluate(self, binding: Binding) -> int:
        return self.fn(*(a.evaluate(binding) if isinstance(a, ParamLike) else a for a in self.args))

    def __repr__(self) -> str:
        if len(self.args) == 1:
            return f"({self.sym}{self.args[0]!r})"
        return f"({self.args[0]!r} {self.sym} {self.args[1]!r})"


def resolve(x: Any, binding: Binding | None = None) -> Any:
    """The value of `x` under `binding` (or the current one) if it is a parameter expression."""
    if isinstance(x, ParamLike):
        return x.evaluate(binding) if binding is not None else x.value()
    return x
