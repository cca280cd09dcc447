"""k-induction: prove that an invariant, strengthened by others, holds in every reachable state.

Let Inv be the conjunction of the goal and the assumed invariants. The proof has two parts:

- base: no path of at most k steps from an initial state reaches a state violating Inv
  (a violation found here is a real counterexample, replayable like any other);
- step: no loop-free path of k + 1 typed states, the first k satisfying Inv (and the state
  constraints), ends in a state violating Inv.

If both hold, Inv — and so the goal — holds in every reachable state. If only the step fails,
its path is a *counterexample to induction*: it starts from states that satisfy Inv but need
not be reachable, so it proves nothing against the goal; it shows which strengthening is
missing. Invariants are about states: whether a step fails is not the proof's business
(`lockstep check` reports failing steps and deadlocks).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import z3

from ..loader import LoadError
from ..progress import Heartbeat
from ..trace import Trace
from ..typed_model import TypedModel
from .bmc import check_initial_functions
from .encode import DEFAULT, Encoding, Symbolic, SymState, _z, negate
from .paths import concrete_path, first_false, labelled

PROVED, REFUTED, NOT_INDUCTIVE, UNKNOWN = "proved", "refuted", "not inductive", "unknown"
EXIT_CODES = {PROVED: 0, REFUTED: 1, NOT_INDUCTIVE: 3, UNKNOWN: 3}


@dataclass
class ProofResult:
    """The outcome of a proof attempt, with the counterexample (to the goal or to induction) if any."""

    verdict: str
    goal: str
    assumed: list[str]  # the other invariants assumed, in order
    k: int
    seconds: float
    violated: str | None = None  # the invariant the counterexample's last state violates
    trace: Trace | None = None
    reason: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]


def prove(model: TypedModel, goal: str, assumed: list[str] | None = None, k: int = 1,
          encoding: Encoding = DEFAULT, say: Callable[[str], None] | None = None) -> ProofResult:
    """Check that `goal` (with the `assumed` invariants) is k-inductive and holds initially (`say` reports
    progress while z3 works)."""
    assumed = [n for n in (assumed or []) if n != goal]
    names = [goal] + assumed
    known = model.invariant_names
    for n in names:
        if n not in known:
            raise LoadError(f"spec {model.name} has no invariant {n!r} (its invariants: {', '.join(known) or 'none'})")
    if k < 1:
        raise ValueError("k must be at least 1")
    t0 = time.monotonic()
    sym = Symbolic(model.prog, encoding)
    check_initial_functions(sym, model)

    def done(verdict: str, **kw) -> ProofResult:
        return ProofResult(verdict, goal, assumed, k, time.monotonic() - t0, **kw)

    # base: the first k steps from the initial states (k - 1 suffice for the proof; the k-th turns a
    # counterexample to induction that starts in an initial state into the real violation it is)
    solver = z3.Solver()
    states = [sym.state("b0")]
    solver.add(_z(sym.typed(states[0])), _z(sym.init(states[0])))
    for i in range(k + 1):
        lit = z3.Bool(f"bad_{i}")
        solver.add(z3.Implies(lit, _z(negate(sym.invariants(states[i], names)))))
        with Heartbeat(say, f"base case, {i} step{'s' if i != 1 else ''} from the initial states"):
            r = solver.check(lit)
        if r == z3.sat:
            path = labelled(model, concrete_path(sym, solver.model(), states))
            bad = first_false(model, names, path[-1][1])
            trace = Trace.from_states(model, path, property={"kind": "invariant", "name": bad},
                                      message=f"invariant {bad} is violated")
            return done(REFUTED, violated=bad, trace=trace,
                        reason=f"invariant {bad} is violated {i} step{'s' if i != 1 else ''} from an initial state")
        if r == z3.unknown:
            return done(UNKNOWN, reason=f"z3 could not decide the base case: {solver.reason_unknown()}")
        if i < k:
            nxt = sym.state(f"b{i + 1}")
            solver.add(_z(sym.constraints(states[i])), _z(sym.step(states[i], nxt)), _z(sym.typed(nxt)))
            states.append(nxt)

    # step: k states satisfying the invariants, then one that does not
    solver = z3.Solver()
    path_vars: list[SymState] = [sym.state(f"c{i}") for i in range(k + 1)]
    for i, st in enumerate(path_vars):
        solver.add(_z(sym.typed(st)))
        if i < k:
            solver.add(_z(sym.invariants(st, names)), _z(sym.constraints(st)), _z(sym.step(st, path_vars[i + 1])))
        for earlier in path_vars[:i]:
            solver.add(z3.Not(_z(sym.equal(earlier, st))))
    solver.add(_z(negate(sym.invariants(path_vars[k], names))))
    with Heartbeat(say, "induction step"):
        r = solver.check()
    if r == z3.unsat:
        which = f"it and {len(assumed)} strengthening invariant{'s' if len(assumed) != 1 else ''}" if assumed else "it"
        verb, pron = ("hold", "them") if assumed else ("holds", "it")
        return done(PROVED, reason=f"{which} {verb} initially and every step preserves {pron}" if k == 1 else
                    f"{which} {verb} for the first {k} steps of every run, and in the state after any {k} "
                    f"consecutive states that satisfy {pron}")
    if r == z3.unknown:
        return done(UNKNOWN, reason=f"z3 could not decide the induction step: {solver.reason_unknown()}")
    path = labelled(model, concrete_path(sym, solver.model(), path_vars))
    bad = first_false(model, names, path[-1][1])
    what = "a state" if k == 1 else f"{k} states"
    message = f"{what} satisfying {', '.join(names)} can step to one violating {bad}"
    trace = Trace.from_states(model, path, property={"kind": "induction", "name": bad, "assumed": names},
                              message=message)
    trace.steps[0].label = "start (any state satisfying the invariants)"
    return done(NOT_INDUCTIVE, violated=bad, trace=trace, reason=message)
