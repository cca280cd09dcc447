"""The Python API: what the command line does, on spec classes, objects, modules or names.

Every function takes the spec as a `Spec` subclass, a plain spec (an object or module with
`init()` and `next(state)`, or a class of them), or a name as `lockstep check` takes it (a
registered name, `module:Object`, `file.py[:Object]`); spec parameters are keyword arguments.
Bad input raises `SpecError` (the spec itself), `LoadError` (it cannot be found or built),
`TraceError` (a trace) or `UsageError` (options that do not fit together).
"""

from __future__ import annotations

import inspect
from typing import Any

from lockstep.checker.errors import UsageError
from lockstep.checker.explicit import Options
from lockstep.checker.loader import LoadError, load_model, model_of, reference
from lockstep.checker.model import Model
from lockstep.checker.progress import NoProgress, Progress
from lockstep.checker.result import CheckResult

SpecLike = Any  # a Spec subclass, a plain spec (class, object or module), or a name


def model(spec: SpecLike, *, symmetry: bool = False, invariants: list[str] | None = None, **params: int) -> Model:
    """The model the engines explore: `spec` built for `params`."""
    if isinstance(spec, str):
        return load_model(spec, params, symmetry=symmetry, invariants=invariants)
    if isinstance(spec, Model):
        if params or symmetry or invariants:
            raise UsageError("a built model takes no parameters, symmetry or invariants: pass the spec instead")
        return spec
    if not (inspect.isclass(spec) or inspect.ismodule(spec) or callable(getattr(spec, "next", None))):
        raise LoadError(f"{spec!r} is not a spec: pass a Spec subclass, a plain spec with init() and next(state), "
                        "or a spec's name")
    return model_of(spec, reference(spec), params, symmetry, invariants)


def check(spec: SpecLike, *, engine: str = "auto", invariants: list[str] | None = None, deadlock: bool = True,
          max_depth: int | None = None, max_states: int | None = None, symmetry: bool = False, workers: int = 1,
          dfs: bool = False, progress: bool = False, **params: int) -> CheckResult:
    """Explore every reachable state (within the bounds) and report whether the invariants hold and no
    step fails or deadlocks; `engine` is "auto", "vector" or "scalar" (as `lockstep check --engine`).
    The result's `violation.trace` is the shortest counterexample (breadth-first)."""
    from lockstep.checker.vector import choice

    if engine not in ("auto", "vector", "scalar", "explicit"):
        raise UsageError(f"engine {engine!r}: use auto, vector or scalar (the symbolic engine is lockstep.bmc)")
    if workers < 1:
        raise UsageError(f"workers={workers}: at least one worker")
    m = model(spec, symmetry=symmetry, invariants=invariants, **params)
    opts = Options(deadlock=deadlock, max_depth=max_depth, max_states=max_states, dfs=dfs, workers=workers)
    chosen, vm, why = choice.choose(engine, m, opts)
    res = choice.run(chosen, m, vm, opts, Progress() if progress else NoProgress())
    if why and chosen != engine:
        res.notes.append(why)
    res.model = m
    return res


def _typed(spec: SpecLike, what: str, invariants: list[str] | None = None, **params: int) -> Any:
    from lockstep.checker.typed_model import TypedModel

    m = model(spec, invariants=invariants, **params)
    if not isinstance(m, TypedModel):
        raise LoadError(f"{m.name} is a plain spec (init/next): {what} needs a Spec subclass, whose actions "
                        "the symbolic interpreter can read")
    return m


def bmc(spec: SpecLike, *, depth: int = 10, invariants: list[str] | None = None, deadlock: bool = True,
        **params: int) -> Any:
    """Bounded model checking with z3 (as `lockstep check --engine smt --depth`): every run of at most
    `depth` steps; returns a `BmcResult` (`verdict`, `complete`, `violation` with its trace)."""
    from lockstep.checker.smt.bmc import bmc as run_bmc

    if depth < 0:
        raise UsageError(f"depth={depth}: a depth is at least 0")
    m = _typed(spec, "bmc", invariants, **params)
    return run_bmc(m, depth, deadlock=deadlock)


def prove(spec: SpecLike, invariant: str, *, assumed: list[str] | None = None, k: int = 1, **params: int) -> Any:
    """Prove `invariant` by k-induction with z3, strengthened with the `assumed` invariants (as
    `lockstep prove`); returns a `ProofResult` (`verdict`: proved, refuted, not inductive or unknown,
    `trace`: the counterexample or the counterexample to induction)."""
    from lockstep.checker.smt.induction import prove as run_prove

    if k < 1:
        raise UsageError(f"k={k}: the induction depth is at least 1")
    return run_prove(_typed(spec, "prove", **params), invariant, list(assumed or []), k)


def simulate(spec: SpecLike, *, runs: int = 1000, depth: int = 100, seed: int = 1, deadlock: bool = True,
             workers: int = 1, invariants: list[str] | None = None, **params: int) -> Any:
    """`runs` random walks of at most `depth` steps (as `lockstep simulate`), checking the invariants,
    deadlocks and failing steps at every state; returns a `SimResult` (`violation`, `distinct`,
    `coverage`, ...). The same seed gives the same first violation for any number of workers."""
    from lockstep.checker.simulation.walk import simulate as walk

    for name, v, least in (("runs", runs, 1), ("depth", depth, 1), ("workers", workers, 1), ("seed", seed, 0)):
        if v < least:
            raise UsageError(f"{name}={v}: at least {least}")
    return walk(model(spec, invariants=invariants, **params), runs, depth, seed, deadlock, workers)


def replay(trace: Any, *, spec: SpecLike | None = None, **params: int) -> Any:
    """Re-run a trace (a `Trace` or a trace file) step by step against its spec — `spec` if given, else
    the registered spec the trace names (a trace never chooses code: a file path in it is refused);
    returns a `ReplayResult`, raises `TraceError` at the first step the spec cannot reproduce."""
    from lockstep.checker.replay import replay as run_replay
    from lockstep.checker.trace import Trace

    t = trace if isinstance(trace, Trace) else Trace.load(str(trace))
    ref = spec if spec is None or isinstance(spec, str) else reference(spec)
    return run_replay(t, spec=ref, params=params or None)
