"""Bounded model checking: can a bad state be reached within K steps?

One incremental z3 solver holds the path s0 -> s1 -> ... -> sk (initial, typed, each step a
transition of the spec, every state but the last inside the state constraints). At each depth
k it asks, under an assumption literal, whether sk can be bad: an invariant false (or failing
to evaluate), a step that fails on sk, or — unless disabled — a deadlock. Depths are tried in
order, so the first counterexample is a shortest one, as with the explicit breadth-first search.

Bounded search is not a proof. After each depth without a violation the solver also asks
whether a loop-free path one step longer exists; if none does, every reachable state lies
within the depths already checked (the recurrence diameter is reached) and the verdict is
`holds`. Otherwise, at the bound, the verdict is `inconclusive`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import z3

from lockstep.specs.lang.errors import SpecError

from ..progress import Heartbeat
from ..result import HOLDS, INCONCLUSIVE, VIOLATION, Violation, exit_code
from ..typed_model import TypedModel
from .encode import DEFAULT, Encoding, Symbolic, _z, all_of, any_of, negate
from .paths import concrete_path, labelled, violation


@dataclass
class BmcResult:
    """The verdict, how deep the search went, and the counterexample if any."""

    verdict: str
    depth: int  # the deepest depth checked completely
    seconds: float
    violation: Violation | None = None
    complete: bool = False  # no loop-free path is longer than `depth`: every reachable state was checked
    reason: str = ""
    times: list[float] = field(default_factory=list)  # seconds spent at each depth

    @property
    def exit_code(self) -> int:
        return exit_code(self.verdict, self.violation)


def bmc(model: TypedModel, depth: int, deadlock: bool = True, encoding: Encoding = DEFAULT,
        say: Callable[[str], None] | None = None, completeness: bool = True) -> BmcResult:
    """Search for a violation within `depth` steps of an initial state (and, with `completeness`,
    stop early with `holds` once no longer loop-free path exists)."""
    t0 = time.monotonic()
    sym = Symbolic(model.prog, encoding)
    check_initial_functions(sym, model)
    solver = z3.Solver()
    states = [sym.state("s0")]
    solver.add(_z(sym.typed(states[0])), _z(sym.init(states[0])))
    simple = z3.Bool("loop_free")
    times: list[float] = []
    for k in range(depth + 1):
        tk = time.monotonic()
        sk = states[k]
        inside = sym.constraints(sk)
        bad = any_of(negate(sym.invariants(sk)), all_of(inside, sym.failure(sk)),
                     all_of(inside, sym.deadlock(sk)) if deadlock else False)
        lit = z3.Bool(f"bad_{k}")
        solver.add(z3.Implies(lit, _z(bad)))
        with Heartbeat(say, f"depth {k}: looking for a violation"):
            r = solver.check(lit)
        if r == z3.sat:
            path = labelled(model, concrete_path(sym, solver.model(), states))
            times.append(time.monotonic() - tk)
            return BmcResult(VIOLATION, k, time.monotonic() - t0, violation(model, path, deadlock), times=times)
        if r == z3.unknown:
            return _unknown(solver, k - 1, t0, times)
        if k == depth:
            times.append(time.monotonic() - tk)
            break
        nxt = sym.state(f"s{k + 1}")
        solver.add(_z(inside), _z(sym.step(sk, nxt)), _z(sym.typed(nxt)))
        states.append(nxt)
        r = z3.sat
        if completeness:
            for s in states[:-1]:
                solver.add(z3.Implies(simple, z3.Not(_z(sym.equal(s, nxt)))))
            with Heartbeat(say, f"depth {k}: looking for a longer loop-free path"):
                r = solver.check(simple)
        times.append(time.monotonic() - tk)
        if say is not None:
            say(f"depth {k}: no violation ({times[-1]:.2f} s)")
        if r == z3.unsat:
            return BmcResult(HOLDS, k, time.monotonic() - t0, complete=True, times=times,
                             reason=f"no loop-free path is longer than {k} steps, so every reachable state was checked")
    why = "longer loop-free paths exist" if completeness else "completeness was not checked"
    return BmcResult(INCONCLUSIVE, depth, time.monotonic() - t0, times=times,
                     reason=f"no violation within {depth} steps; {why}, so this is no proof")


def _unknown(solver: z3.Solver, depth: int, t0: float, times: list[float]) -> BmcResult:
    return BmcResult(INCONCLUSIVE, max(depth, 0), time.monotonic() - t0, times=times,
                     reason=f"z3 could not decide depth {depth + 1}: {solver.reason_unknown()}")


def check_initial_functions(sym: Symbolic, model: TypedModel) -> None:
    """Refuse a spec whose @initial functions fail on some pre-state, as the explicit engine does."""
    if not model.prog.init_transitions:
        return
    pre, fails = sym.init_failure()
    solver = z3.Solver()
    solver.add(_z(fails))
    if solver.check() == z3.sat:
        st = sym.concrete(solver.model(), pre)
        f = model._diagnose_with(model.prog.init_transitions, st)
        raise SpecError(f"initial-state function failed: {f.describe()}")
