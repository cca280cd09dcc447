"""Lockstep's modelling language: typed state, guarded actions, invariants.

Write a protocol once as a `Spec` subclass; every engine interprets the same code:

    from lockstep.specs.lang import *

    RM = Range("rm", default=3, symmetric=True)

    class Commit(Spec):
        state = Map(RM, Enum("working", "prepared", "committed"), init="working")

        @action
        def prepare(s, r: RM):
            require(s.state[r] == "working")
            s.state[r] = "prepared"

        @invariant
        def sane(s):
            return ForAll(RM, lambda r: s.state[r] != "committed")

Rules that follow from "one spec, several interpreters" (the functions run on terms, not
on Python values):

- guards are `require(cond, ...)`, not `if`; conditional values are `If(c, a, b)`;
- boolean logic is `And/Or/Not/Implies` (or `&`, `|`, `~`), not `and/or/not`;
- membership is `s.field.contains(x)`, not `x in s.field`; sets are values:
  `s.f = s.f.add(x)`;
- temporal properties (`@temporal` returning `eventually(P)`, `leads_to(P, Q)`, ...) and
  fairness (`@action(fairness="weak")`) are described in `lockstep.specs.lang.temporal`;
- Python control flow over *parameters* (`for r in RM`, `if p == 0` on an action's
  parameter) is fine: parameters are concrete while a spec is built.

A misuse fails when the spec is loaded, naming the line and the fix.

Message-passing protocols are written with `lockstep.specs.lang.actors` (processes with local state and
handlers, a network, crashes and Byzantine processes); they compile to a spec like any other.
"""

from .errors import Location, SpecError
from .params import Param
from .program import Program
from .spec import (
    Assert,
    Spec,
    action,
    build_program,
    constraint,
    declared_params,
    initial,
    invariant,
    require,
    witness,
)
from .temporal import Temporal, always_eventually, eventually, eventually_always, leads_to, temporal
from .terms import And, Card, Count, Exists, ForAll, If, Implies, Max, Min, Not, Or, Sum, Term
from .types import ANY, Bool, Enum, Int, Map, OneOf, Option, Range, Record, RecordValue, Seq, Set, Union, Var

__all__ = [
    "ANY", "And", "Assert", "Bool", "Card", "Count", "Enum", "Exists", "ForAll", "If", "Implies", "Int",
    "Location", "Map", "Max", "Min", "Not", "OneOf", "Option", "Or", "Param", "Program", "Range", "Record",
    "RecordValue", "Seq", "Set", "Spec", "SpecError", "Sum", "Term", "Union", "Var", "action", "build_program",
    "constraint", "declared_params", "initial", "invariant", "require", "witness",
    "Temporal", "always_eventually", "eventually", "eventually_always", "leads_to", "temporal",
]
