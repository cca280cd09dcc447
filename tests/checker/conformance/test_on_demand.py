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


def test_one_order_decides_where_the_caller_says_every_order_has_the_same_verdict(tmp_path):
    """`Search(one_order=True)` (the P-SMR window's search): the relay's genuine logs are valid in the first order
    consistent with happens-before; a tampered receive is invalid there, explained at its event, without a search
    over the other orders, and the report says which order was decided on."""
    from lockstep.checker.validation.conformance.run import report, validate_logs
    from tests.checker.conformance.test_search import MAPPING as RELAY_MAPPING
    from tests.checker.conformance.test_search import RELAY, relay_logs

    good = tmp_path / "good"
    good.mkdir()
    res = validate_logs(relay_logs(good), RELAY, {}, RELAY_MAPPING, max_internal=1, one_order=True)
    assert res.verdict == "valid" and res.events == 5 and not res.searched_orders
    res = validate_logs(relay_logs(tmp_path, receive=(1, 3)), RELAY, {}, RELAY_MAPPING, max_internal=1, one_order=True)
    assert res.verdict == "invalid" and not res.searched_orders and res.failed_event.action == "receive"
    assert res.frontier and all(f.taken == {"0": 2, "1": 1} for f in res.frontier)  # the states after three events
    for entry in res.frontier:
        (cand,) = entry.candidates
        assert cand.event.args == {"v": 3}
        assert any("receive(v=3) is not enabled: the guard conjunct `s.chan.head() == v`" in r for r in cand.reasons)
    lines = report(res, res.model)
    assert lines[0] == ("Invalid: no behaviour of the spec matches the logs: 3 events matched in an order consistent "
                        "with happens-before (the mapping's steps at different nodes commute: every such order gives "
                        "this verdict), and the next event cannot be taken")
