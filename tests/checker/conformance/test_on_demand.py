"""Actor specs too large to trace every handler input: their steps traced as a log names them (`on_demand_program`),
each the same step as the whole program's, and conformance on such a spec (the P-SMR spec for a run's workload)."""

from __future__ import annotations

import pytest

from lockstep.checker.errors import UsageError
from lockstep.checker.loader import load_model
from lockstep.checker.validation.conformance import interpreted
from lockstep.checker.validation.conformance.mapping import ANY, MappingError, Step
from lockstep.checker.validation.conformance.spec_side import EAGER_INPUTS, SpecSide
from lockstep.executors.psmr.conformance import MAPPING
from lockstep.specs.lang.actors.spec import handler_inputs, on_demand_program
from lockstep.specs.psmr.commands import Command
from lockstep.specs.psmr.spec import PSMR
from lockstep.specs.psmr.workload import for_workload


def reachable(model, limit: int) -> list[tuple]:
    """Up to `limit` states of the model, breadth first from its initial states."""
    seen = dict.fromkeys(model.initial_states())
    layer = list(seen)
    while layer and len(seen) < limit:
        nxt = []
        for st in layer:
            for _, s2 in model.successors(st):
                if s2 not in seen:
                    seen[s2] = None
                    nxt.append(s2)
        layer = nxt
    return list(seen)[:limit]


@pytest.mark.parametrize("params", [{"replicas": 2, "commands": 3}, {"replicas": 2, "commands": 3, "crashes": 1}])
def test_each_step_traced_on_demand_is_the_whole_programs(params):
    """Every delivery and timeout of P-SMR (3 commands), traced alone, has the successors of the same step of the
    program built whole, in 400 reachable states; the initial states, crashes and invariants are the same."""
    model = load_model("psmr", params)
    prog = model.prog
    lazy = on_demand_program(PSMR, params)
    assert lazy.on_demand is not None and [t.label for t in lazy.transitions] == \
        [t.label for t in prog.transitions if t.action == "crash"]
    assert [p.name for p in lazy.invariants] == [p.name for p in prog.invariants]
    states = reachable(model, 400)
    steps = [t for t in prog.transitions if t.action in ("deliver", "timeout")]
    assert len(steps) > 100
    enabled = 0
    for t in steps:
        traced = lazy.on_demand.step(t.action, tuple(t.args))
        assert traced is not None and traced.label == t.label
        for st in states:
            want = interpreted.run(prog, t, st)
            assert interpreted.run(lazy, traced, st) == want, (t.label, st)
            enabled += want is not None
    assert enabled > 500  # the states exercise the steps


def instance(n: int) -> type:
    """P-SMR for two clients of n commands each on 8 keys (puts and a putall)."""
    return for_workload([[Command("put", i % 8, i + 1) for i in range(n)],
                         [Command("putall", None, 7)] + [Command("get", i % 8) for i in range(n - 1)]], 8)


def test_a_spec_too_large_to_trace_whole_is_followed_step_by_step():
    """60 commands: more handler inputs than EAGER_INPUTS, so the spec side traces only the steps named: one
    transition per distinct step, none for a step the spec does not have; a step with an argument left open and
    unlogged internal steps are refused with the reason (they would enumerate the inputs)."""
    spec, params = instance(30), {"replicas": 2, "workers": 2, "outstanding": 2}
    assert handler_inputs(spec, params) > EAGER_INPUTS
    side = SpecSide(spec, params, MAPPING)
    assert side.on_demand is not None and side.transitions == []
    (st,) = side.model.initial_states()
    invoke = Step("timeout", (("p", 0), ("timer", "tick"), ("w", 0), ("c", 0)))
    (tid,) = side.tids(invoke, "here")
    assert side.tids(invoke, "here") == (tid,) and len(side.transitions) == 1  # traced once
    s2 = side.successor(tid, st)
    assert s2 is not None and side.violated(s2) == -1
    out_of_turn = Step("timeout", (("p", 0), ("timer", "tick"), ("w", 0), ("c", 1)))  # client 0's second command
    assert side.successor(side.tids(out_of_turn, "here")[0], st) is None
    assert side.tids(Step("timeout", (("p", 2), ("timer", "idle"), ("w", 1), ("c", 3))), "here") == ()
    with pytest.raises(MappingError, match="leaves c open"):
        side.tids(Step("timeout", (("p", 0), ("timer", "tick"), ("w", 0), ("c", ANY))), "here")
    with pytest.raises(UsageError, match="--max-internal 1"):
        side.internal_closure(st, 1)
    assert SpecSide("psmr", {"replicas": 2, "commands": 3}).on_demand is None  # a small spec is built whole
