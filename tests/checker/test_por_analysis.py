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



def _classes(k: int, edges: list[tuple[int, int]]) -> list[int]:
    """The definition: each event's connected component in the conflict graph, numbered by least member."""
    parent = list(range(k))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for a, b in edges:
        ra, rb = find(a), find(b)
        parent[max(ra, rb)] = min(ra, rb)
    rank: dict[int, int] = {}
    return [rank.setdefault(find(i), len(rank)) for i in range(k)]


@pytest.mark.parametrize("spec, params", [("psmr", {"commands": 2}), ("bracha_equivocating_sender", {}),
                                          ("two_phase_commit", {"crashes": 0})])
def test_the_units_of_every_pattern_are_the_components_of_its_conflicts(spec, params):
    s = ActorStructure(load_model(spec, params).prog)
    checked = 0
    for pu in s.processes:
        for pattern in range(1 << len(pu.pivots)):
            edges = list(pu.always) + [(a, b) for a, b, masks in pu.edges if any(not (pattern & m) for m in masks)]
            assert pu.table(pattern).tolist() == _classes(pu.k, edges)
            checked += 1
    assert checked > len(s.processes)  # processes with pivots: several patterns each
