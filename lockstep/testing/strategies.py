"""Hypothesis strategies for the spec language: values of a type, and reachable states of a spec."""

from __future__ import annotations

from typing import Any

from lockstep.checker.model import Model
from lockstep.checker.typed_model import TypedModel
from lockstep.specs.lang.errors import SpecError
from lockstep.specs.lang.params import Binding, bound
from lockstep.specs.lang.types import Domain, MapDomain, Type


def domain_values(dom: Domain) -> Any:
    """Every value of a bound domain, shrinking towards its first (default) value."""
    from hypothesis import strategies as st

    if isinstance(dom, MapDomain):
        return st.fixed_dictionaries({k: domain_values(dom.val) for k in dom.key.values()})
    if dom.size == 1:
        return st.just(dom.value(0))
    return st.integers(0, dom.size - 1).map(dom.value)


def values(t: Type, **params: int) -> Any:
    """A strategy for the values of type `t` (`Bool`, `Int(lo, hi)`, `Enum`, `Range`, records, unions,
    options, sets, maps, ...); parameters the type depends on take `params`, else their defaults."""
    from hypothesis import strategies as st

    if not isinstance(t, Type):
        raise TypeError(f"{t!r} is not a Lockstep type")
    declared = {p.name: p for p in t.params()}
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise SpecError(f"type {t!r} has no parameter {unknown[0]!r} (its parameters: "
                        f"{', '.join(sorted(declared)) or 'none'})")
    binding = Binding(f"values({t!r})", {n: params.get(n, p.default) for n, p in declared.items()})
    with bound(binding):
        dom = t.dom(binding)
    return st.deferred(lambda: domain_values(dom))


def reachable(model: Model, max_steps: int = 20) -> Any:
    """A strategy for states of `model` reached by random walks of at most `max_steps` steps from an
    initial state (shrinking towards shorter walks and earlier choices). Typed specs give dicts of
    field values, plain specs their own states."""
    from hypothesis import strategies as st

    inits = model.initial_states()
    if not inits:
        raise SpecError(f"spec {model.name} has no initial state")
    view = model.prog.decode if isinstance(model, TypedModel) else (lambda s: s)

    @st.composite
    def walk(draw: Any) -> Any:
        s = draw(st.sampled_from(inits))
        steps = draw(st.integers(0, max_steps))
        for _ in range(steps):
            nxt = model.successors(s)
            if not nxt:
                break
            s = draw(st.sampled_from(nxt))[1]
        return view(s)

    return walk()
