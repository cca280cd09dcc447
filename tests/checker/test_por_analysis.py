"""The static analysis of partial-order reduction proves each fact (a frozen value, an identity update, a send
that can no longer happen) by testing guards as soon as their slots have values, on compiled terms: every
answer is the one an enumeration of all combinations, evaluated term by term, gives."""

from __future__ import annotations

from itertools import product

import pytest

from lockstep.checker import interpret
from lockstep.checker.loader import load_model
from lockstep.checker.reduction import actors
from lockstep.checker.reduction.actors import ActorStructure


def _exhaustive(guards, tail, fixed, reads, prog, ok) -> bool:
    """The definition: at every combination of the free slots, every term evaluates and, where the guards
    hold, `ok` of the tail's values holds."""
    free = [x for x in reads if x not in fixed]
    sizes = [prog.slot_doms[x].size for x in free]
    total = 1
    for s in sizes:
        total *= s
    if total > actors.LIMIT:
        return False
    base = list(prog.init_defaults)
    for x, v in fixed.items():
        base[x] = v
    for combo in product(*(range(s) for s in sizes)):
        st = list(base)
        for x, j in zip(free, combo):
            st[x] = prog.slot_doms[x].rep_of_index(j)
        try:
            vals = [interpret.evaluate(t, tuple(st)) for t in guards + tail]
        except interpret.EvalError:
            return False
        if all(vals[:len(guards)]) and not ok(vals[len(guards):]):
            return False
    return True


@pytest.mark.parametrize("spec, params, limit", [
    ("two_phase_commit", {}, None), ("two_phase_commit", {"ordered": 1, "capacity": 2}, None),
    ("bracha_equivocating_sender", {}, None),
    ("psmr", {"commands": 2}, 256),  # the proofs of at most 256 combinations: the definition is slow
])
def test_every_proof_of_the_analysis_is_the_exhaustive_answer(monkeypatch, spec, params, limit):
    if limit is not None:
        monkeypatch.setattr(actors, "LIMIT", limit)
    fast = actors._always
    answers = {True: 0, False: 0}

    def both(guards, tail, fixed, reads, prog, ok, facts):
        got = fast(guards, tail, fixed, reads, prog, ok, facts)
        assert got == _exhaustive(guards, tail, fixed, list(reads), prog, ok), (guards, tail, fixed)
        answers[got] += 1
        return got

    monkeypatch.setattr(actors, "_always", both)
    ActorStructure(load_model(spec, params).prog)
    assert answers[True] and answers[False]  # facts proved and facts refused alike

