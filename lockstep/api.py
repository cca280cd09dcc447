"""The Python API: what the command line does, on spec classes, objects, modules or names.

Every function takes the spec as a `Spec` subclass, a plain spec (an object or module with
`init()` and `next(state)`, or a class of them), or a name as `lockstep check` takes it (a
registered name, `module:Object`, `file.py[:Object]`); spec parameters are keyword arguments.
Bad input raises `SpecError` (the spec itself), `LoadError` (it cannot be found or built, or a fault
plan is unusable), `TraceError` (a trace) or `UsageError` (options that do not fit together). The
`lockstep` command computes what these functions compute, and prints it.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lockstep.checker.errors import UsageError
from lockstep.checker.explicit import Options
from lockstep.checker.loader import LoadError, load_model, model_of, reference
from lockstep.checker.model import Model
from lockstep.checker.progress import NoProgress, Progress
from lockstep.checker.result import CheckResult

if TYPE_CHECKING:
    from lockstep.runs import RunResult, ValidationResult, run, validate

_RUNS = ("RunResult", "ValidationResult", "run", "validate")  # from `lockstep.runs`, imported on first use


def __getattr__(name: str) -> Any:
    if name in _RUNS:
        import lockstep.runs

        return getattr(lockstep.runs, name)
    raise AttributeError(f"module 'lockstep.api' has no attribute {name!r}")


__all__ = ["CheckResult", "RunResult", "ValidationResult", "bmc", "check", "model", "prove", "replay", "run",
           "simulate", "validate"]

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
          dfs: bool = False, por: bool | None = None, witnesses: bool = True, properties: list[str] | None = None,
          fairness: dict[str, str] | None = None, progress: bool = False, shorten: bool = True,
          max_violations: int = 1, **params: int) -> CheckResult:
    """Explore every reachable state (within the bounds) and report whether the invariants hold and no
    step fails or deadlocks, as `lockstep check` does; `engine` is "auto", "vector" or "scalar" (as
    `--engine`), `por` partial-order reduction of actor specs (None: on where it applies, as the command's
    default; True: required). The result's `violation.trace` is a shortest counterexample: breadth-first,
    and when partial-order reduction or `dfs` found it, shortened by a breadth-first search without them
    (`shorten=False` keeps it as found; `violation.note` says what was done). `max_violations` K > 1 goes on
    past invariant violations and keeps up to K that differ in the property or the last action
    (`violations`, first first; scalar engine, breadth-first, one worker, no reduction by partial order).
    Without a violation, `witnesses` holds one `WitnessResult` per `@witness` of the spec (`found`, `trace`).
    `properties` names temporal properties (`@temporal`) to decide on the whole state graph, under the
    spec's fairness with `fairness` overrides ({action or family: "weak", "strong" or "none"}), as
    `lockstep check --property --fairness`; a violation's trace is then a lasso. The graph is built by the
    vector engine on typed specs (on two threads with `workers=2`), by the scalar engine on plain ones; with
    `symmetry=True` over canonical representatives, where every permutation keeps the fairness and the properties
    (the lasso is then lifted to the spec's own states)."""
    if engine not in ("auto", "vector", "scalar", "explicit"):
        raise UsageError(f"engine {engine!r}: use auto, vector or scalar (the symbolic engine is lockstep.bmc)")
    if workers < 1:
        raise UsageError(f"workers={workers}: at least one worker")
    if max_violations < 1:
        raise UsageError(f"max_violations={max_violations}: at least 1")
    given = CheckChoices(dfs=dfs, workers=workers, fairness=bool(fairness), properties=bool(properties),
                         symmetry=symmetry, max_violations=max_violations, shorten=shorten, por=por)
    plan = plan_check(spec, given, API_NAMES, engine=engine, invariants=invariants, deadlock=deadlock,
                      max_depth=max_depth, max_states=max_states, properties=properties or [],
                      fairness=[f"{k}={v}" for k, v in (fairness or {}).items()], params=params)
    res = plan.conclude(plan.run(Progress() if progress else NoProgress()), shorten)
    if witnesses:
        plan.search_witnesses(res, shorten)
    return res


@dataclass
class CheckPlan:
    """A check decided before it runs, by the rules written once in this module: the model, the search's options,
    the engine chosen (with its prepared vector model), the temporal properties and fairness if any, and the notes
    on what differs from what was asked. `lockstep.check` and `lockstep check` both plan with `plan_check`, run
    and conclude with these methods; the command adds the runs only it offers (cluster, checkpoints, bitstate)."""

    model: Model
    opts: Options
    engine: str
    vm: Any
    notes: list[str]
    properties: list[Any] = field(default_factory=list)
    fairness: Any = None

    def run(self, progress: Any, vopts: Any = None) -> CheckResult:
        """The search, on the engine chosen (`vopts`: the vector engine's options, from the command line)."""
        from lockstep.checker.vector import choice

        if self.properties:
            from lockstep.checker.liveness import check_properties

            return check_properties(self.model, self.properties, self.fairness, self.opts, progress, self.engine,
                                    self.vm)
        return choice.run(self.engine, self.model, self.vm, self.opts, progress, vopts)

    def conclude(self, res: CheckResult, shorten: bool = True, before_shortening: Any = None) -> CheckResult:
        """`res` with the plan's notes, its counterexample shortened where the search may have found a longer one
        than a shortest (`before_shortening(steps)` is called first, with the found counterexample's steps), its
        depth counted one way, and its model."""
        res.notes.extend(self.notes)
        shorten_violation(res, self.model, self.engine, self.vm, self.opts, shorten, before_shortening)
        res.settle_depth()
        res.model = self.model
        return res

    def search_witnesses(self, res: CheckResult, shorten: bool = True) -> None:
        """Without a violation, search each `@witness` of the spec into `res.witnesses`."""
        from lockstep.checker.witnesses import search_witnesses

        if res.violation is None and not self.properties:
            res.witnesses = search_witnesses(self.model, self.engine, replace(self.opts, max_violations=1), shorten)


def plan_check(spec: SpecLike, given: CheckChoices, names: OptionNames, *, engine: str = "auto",
               invariants: list[str] | None = None, deadlock: bool = True, max_depth: int | None = None,
               max_states: int | None = None, properties: list[str] | None = None, fairness: list[str] | None = None,
               params: dict[str, int] | None = None) -> CheckPlan:
    """Apply every rule on the options `given` (named in messages as `names` spells them), build the model and
    choose the engine and the reductions: the check `lockstep.check` and `lockstep check` then run."""
    from lockstep.checker.temporal import parse_overrides
    from lockstep.checker.vector import choice

    check_rules(given, names)
    if given.coverage and (engine == "vector" or properties or given.workers > 1):
        raise UsageError(f"{names.coverage} counts steps in the scalar engine, one worker, without {names.properties}; "
                         f"drop {names.engine} vector, {names.workers} or {names.properties}")
    m = model(spec, symmetry=given.symmetry, invariants=invariants, **(params or {}))
    if properties:
        from lockstep.checker.liveness import choose_engine

        props, fair = temporal(m, properties, parse_overrides(list(fairness or [])))
        if given.por:
            liveness_por(m, props, fair, names)
        chosen, vm, why = choose_engine(engine, m, given.workers, bool(given.por))
        opts = Options(deadlock=deadlock, max_depth=max_depth, max_states=max_states, workers=given.workers,
                       por=bool(given.por))
        return CheckPlan(m, opts, chosen, vm, notes_on(engine, chosen, why, None), props, fair)
    requested = "scalar" if given.coverage else engine  # counting steps runs the scalar engine
    asked, several_note = several_engine(requested, given.max_violations, several_blockers(given, names),
                                         names.max_violations)
    chosen, vm, why = choice.choose(asked, m, Options(dfs=given.dfs))
    use_por, por_note = por_choice(m, given.por, por_blockers(given, names, chosen), names.por)
    opts = Options(deadlock=deadlock, max_depth=max_depth, max_states=max_states, dfs=given.dfs, workers=given.workers,
                   por=use_por, max_violations=given.max_violations)
    return CheckPlan(m, opts, chosen, vm, notes_on(requested, chosen, why or several_note, por_note))


@dataclass(frozen=True)
class OptionNames:
    """How an interface names the options of a check, for its messages: the API's keywords or the command line's
    flags. The rules that combine them are written once (`check_rules`, `por_blockers`, `several_blockers`)."""

    dfs: str
    workers: str
    fairness: str
    properties: str
    symmetry: str
    max_violations: str
    no_shorten: str
    por: str
    cluster: str = "cluster"
    checkpoint: str = "checkpoint"
    resume: str = "resume"
    coverage: str = "coverage"
    engine: str = "engine"


API_NAMES = OptionNames(dfs="dfs=True", workers="workers", fairness="fairness", properties="properties",
                        symmetry="symmetry=True", max_violations="max_violations", no_shorten="shorten=False",
                        por="por=True")
CLI_NAMES = OptionNames(dfs="--dfs", workers="--workers", fairness="--fairness", properties="--property",
                        symmetry="--symmetry", max_violations="--max-violations", no_shorten="--no-shorten",
                        por="--por", cluster="--cluster", checkpoint="--checkpoint", resume="--resume",
                        coverage="--coverage", engine="--engine")


@dataclass(frozen=True)
class CheckChoices:
    """The options of a check that the rules look at, whichever interface they were given through (the command
    line's scaling options, which the API has not, default to off)."""

    dfs: bool = False
    workers: int = 1
    fairness: bool = False
    properties: bool = False
    symmetry: bool = False
    max_violations: int = 1
    shorten: bool = True
    por: bool | None = None
    cluster: bool = False
    checkpoint: bool = False
    resume: bool = False
    resume_full: str = ""  # the directory of a checkpoint of the search without partial-order reduction, resumed
    coverage: bool = False


def check_rules(c: CheckChoices, names: OptionNames) -> None:
    """Every rule on how a check's options combine: a UsageError naming the options as `names` spells them."""
    if c.dfs and c.workers > 1:
        raise UsageError(f"{names.dfs} runs on one worker; drop {names.workers} or {names.dfs}")
    if c.fairness and not c.properties:
        raise UsageError(f"{names.fairness} applies to temporal properties; name one with {names.properties}")
    if not c.properties:
        return
    for given, option, why in (
            (c.dfs, names.dfs, "temporal properties are checked on the whole state graph, built breadth-first"),
            (c.max_violations > 1, names.max_violations, "a temporal property's counterexample is one lasso"),
            (not c.shorten, names.no_shorten, "a temporal property's counterexample is a lasso of the whole state "
                                              "graph, not shortened")):
        if given:
            raise UsageError(f"{option} is not available with {names.properties}: {why}; drop {option}")
    if c.por:
        for given, option, why in (
                (c.workers > 1, names.workers, "the reduced state graph is built by the scalar engine, on one worker"),
                (c.symmetry, names.symmetry, "the two reductions are not combined for temporal properties")):
            if given:
                raise UsageError(f"{names.por} with {names.properties} and {option}: {why}; drop one of them")


def por_blockers(c: CheckChoices, names: OptionNames, engine: str) -> list[tuple[bool, str, str]]:
    """The options given that exclude partial-order reduction on the chosen `engine`, each with why, for
    `por_choice`. The vector engine's two workers are two threads of one search, which apply its cycle proviso
    between batches; more workers, or the scalar engine's, are processes that each expand every event."""
    return [(c.dfs, names.dfs, "its cycle proviso is the breadth-first one"),
            (c.max_violations > 1, names.max_violations, SEVERAL_POR),
            (c.workers > (2 if engine == "vector" else 1), names.workers,
             "it runs on one worker, or on the vector engine's two"),
            (c.cluster, names.cluster, "the partitioned search expands every event"),
            (c.coverage, names.coverage, "it counts every interleaving"),
            (bool(c.resume_full), names.resume, f"the checkpoint in {c.resume_full} is of the full search")]


def several_blockers(c: CheckChoices, names: OptionNames) -> list[tuple[bool, str]]:
    """The options given that exclude collecting several violations, for `several_engine`."""
    return [(c.dfs, names.dfs), (c.workers > 1, names.workers), (c.cluster, names.cluster),
            (c.checkpoint, names.checkpoint), (c.resume, names.resume)]


def temporal(m: Model, names: list[str], overrides: dict[str, str] | None) -> tuple[list[Any], Any]:
    """(the temporal properties called `names`, the spec's fairness with `overrides`): SpecError for an
    unknown property or action, UsageError for fairness that symmetry reduction would not keep."""
    from lockstep.checker.temporal import fairness, select

    props, fair = [select(m, name) for name in names], fairness(m, overrides or {})
    if m.symmetry:
        from lockstep.checker.liveness.symmetric import check_fairness

        check_fairness(m, fair)
    return props, fair


def notes_on(asked: str, chosen: str, why: str | None, por_note: str | None) -> list[str]:
    """Why the engine is not the one asked for, and why partial-order reduction is off."""
    return ([why] if why and chosen != asked else []) + ([por_note] if por_note else [])


SEVERAL_POR = "it explores one interleaving of independent events, which may hide the violations the others reach"


def several_engine(engine: str, max_violations: int, blockers: list[tuple[bool, str]],
                   asked: str = "max_violations") -> tuple[str, str | None]:
    """(the engine to choose with `choice.choose`, a note why it is not the one asked for) for `max_violations`:
    beyond 1 the scalar engine's breadth-first search on one worker records violations and goes on, so a
    UsageError for the vector engine (which stops at the first) and the options in `blockers` (given, option)."""
    if max_violations <= 1:
        return engine, None
    for given, option in blockers:
        if given:
            raise UsageError(f"{asked} with {option}: several violations are collected by the scalar engine's "
                             f"breadth-first search on one worker; drop one of them")
    if engine == "vector":
        raise UsageError(f"{asked}: the vector engine stops at the first violation; several are collected by the "
                         "scalar engine (engine scalar)")
    return "scalar", ("scalar engine chosen: several violations are collected by its breadth-first search"
                      if engine == "auto" else None)


def shorten_violation(res: CheckResult, m: Model, engine: str, vm: Any, opts: Options, shorten: bool = True,
                      before: Any = None) -> None:
    """Replace a counterexample found with partial-order reduction or depth-first by a shortest one (or say
    why it is kept: the search's budget, at most `opts.max_states` states, or `shorten` False); a breadth-first
    counterexample is left as it is (a shortest one). `before(steps)` is called as the shortening starts."""
    from lockstep.checker.counterexample import Budget
    from lockstep.checker.counterexample import shorten as shortened

    v = res.violation
    if v is None or not (opts.por or opts.dfs) or (v.trace.property or {}).get("kind") == "temporal":
        return
    found_with = "partial-order reduction" if opts.por else "depth-first search"
    if not shorten:
        v.note = f"as found with {found_with}, maybe not a shortest one (not shortened)"
        return
    if before is not None:
        before(len(v.trace.steps) - 1)
    res.violation = shortened(m, v, found_with, engine, vm, Budget.within(opts.max_states)).violation


def _actor_program(prog: Any) -> bool:
    """Whether a program comes from an actor spec; the actor model is not imported to say no (a program
    built by it means it was)."""
    actors = sys.modules.get("lockstep.specs.lang.actors.spec")
    return prog is not None and actors is not None and isinstance(prog, actors.ActorProgram)


def por_choice(m: Model, por: bool | None, blockers: list[tuple[bool, str, str]],
               asked: str = "--por") -> tuple[bool, str | None]:
    """(use partial-order reduction, a note why it is off) for `por` True (required: a UsageError where it
    cannot apply), False (off) or None (on for actor specs where it applies). `blockers` are (given, option,
    why it excludes the reduction) for the options of the search that exclude it."""
    prog = getattr(m, "prog", None)
    if por is False or (por is None and not _actor_program(prog)):
        return False, None
    from lockstep.checker.reduction.actors import PorUnsupported, is_actor_program

    for on, option, why in blockers:
        if on:
            if por:
                raise UsageError(f"{asked} with {option}: {why}; drop one of them")
            return False, f"partial-order reduction off with {option}: {why}"
    try:
        if prog is None or not is_actor_program(prog):
            raise PorUnsupported(f"{m.name} is not an actor spec (ActorSpec), the only kind it applies to")
        from lockstep.checker.reduction.ample import for_model

        for_model(m)
    except PorUnsupported as e:
        if por:
            raise UsageError(f"{asked}: {e}") from None
        return False, f"partial-order reduction off: {e}"
    return True, None


def liveness_por(m: Model, props: list[Any], fair: Any, names: OptionNames) -> None:
    """Check that partial-order reduction applies to the temporal properties `props` of `m` under `fair`
    (an actor spec without state constraints): a UsageError saying why where it does not."""
    from lockstep.checker.reduction.actors import PorUnsupported
    from lockstep.checker.reduction.liveness import liveness_reduction

    try:
        liveness_reduction(m, props, fair)
    except PorUnsupported as e:
        raise UsageError(f"{names.por} with {names.properties}: {e}; drop {names.por}") from None


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
             workers: int = 1, invariants: list[str] | None = None, shorten: bool = True, **params: int) -> Any:
    """`runs` random walks of at most `depth` steps (as `lockstep simulate`), checking the invariants,
    deadlocks and failing steps at every state; returns a `SimResult` (`violation`, `distinct`, `seen`: the
    distinct states and values and the Good–Turing estimate of the unseen mass, `coverage`, ...). The same seed
    gives the same first violation for any number of workers. The violating walk is minimised, then
    shortened if a bounded breadth-first search finds a shorter counterexample (`shorten=False` keeps the
    walk as it is; `violation.note` says what was done)."""
    from lockstep.checker.simulation import simulate as walk

    for name, v, least in (("runs", runs, 1), ("depth", depth, 1), ("workers", workers, 1), ("seed", seed, 0)):
        if v < least:
            raise UsageError(f"{name}={v}: at least {least}")
    m = model(spec, invariants=invariants, **params)
    res = walk(m, runs, depth, seed, deadlock, workers)
    if shorten:
        minimise_walk(res, m)
    return res


def minimise_walk(res: Any, m: Model) -> None:
    """Replace a simulation's violating walk by its minimised (and, within the search's budget, shortest)
    counterexample."""
    from lockstep.checker.counterexample import minimise

    if res.violation is not None and res.path is not None:
        res.violation = minimise(m, res.path, res.violation).violation


def replay(trace: Any, *, spec: SpecLike | None = None, **params: int) -> Any:
    """Re-run a trace (a `Trace` or a trace file) step by step against its spec — `spec` if given, else
    the registered spec the trace names (a trace never chooses code: a file path in it is refused);
    returns a `ReplayResult`, raises `TraceError` at the first step the spec cannot reproduce."""
    from lockstep.checker.replay import replay as run_replay
    from lockstep.checker.trace import Trace

    t = trace if isinstance(trace, Trace) else Trace.load(str(trace))
    ref = spec if spec is None or isinstance(spec, str) else reference(spec)
    return run_replay(t, spec=ref, params=params or None)

