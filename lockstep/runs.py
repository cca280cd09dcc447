"""Runs of real processes and their validation, as Python calls: `lockstep.run` and `lockstep.validate`.

`lockstep run` and `lockstep validate` print what these compute: the command line parses its options,
calls `fault_plan`, the model's runner and `validate_merged`, and prints the results.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from lockstep.checker.errors import UsageError
from lockstep.checker.loader import LoadError, reference, resolve
from lockstep.checker.trace import TraceError, shell_word, trusted_spec
from lockstep.checker.validation.runtrace import MergedRun, Mismatch

VALID, VIOLATION, INVALID, INCOMPLETE, NOT_VALIDATED = "valid", "violation", "invalid", "incomplete", "not validated"
_EXIT = {VALID: 0, VIOLATION: 1, INVALID: 1, INCOMPLETE: 3, NOT_VALIDATED: 1}


@dataclass
class ValidationResult:
    """Whether a recorded run is a behaviour of its spec that keeps the invariants.

    `verdict` is "valid" (every recorded step is a step of the spec and the invariants hold after each;
    `incomplete` says why a tail was not validated, e.g. a process was killed), "violation" (an invariant
    fails, or a handler fails as the spec's step does: `violation`, at `event`), "invalid" (an event is not a
    step of the spec: `mismatch` says which and why) or "incomplete" (the trace file is cut short)."""

    verdict: str
    model: str  # the system model of the run: "actors", "rounds" or "population"
    spec: str  # the spec it was validated against
    params: dict[str, Any]
    events: int  # steps checked: handler events (actors, rounds) or interactions (population)
    seconds: float
    violation: str | None = None  # the invariant that fails, or the handler failure
    event: dict[str, Any] | None = None  # the event after which it fails (actors), if known
    mismatch: str | None = None  # why the run is not a behaviour of the spec, and where
    incomplete: str | None = None  # why the events after some point are not validated
    notes: list[str] = field(default_factory=list)
    build_seconds: float = 0.0  # building the validator (a population protocol's rule table)
    kept_path: bool = False  # a population run's configurations were kept (`trace`)
    result: Any = field(default=None, repr=False)  # the validator's own outcome, with every detail

    @property
    def exit_code(self) -> int:
        """As `lockstep validate`: 0 valid, 1 violation or invalid, 3 incomplete."""
        return _EXIT[self.verdict]

    @property
    def trace(self) -> Any:
        """A population run validated with `configurations=True`: the configurations it passed through, as an
        ITF trace of the protocol's counting-abstraction spec (`lockstep.replay` re-checks it); else None."""
        from lockstep.checker.validation.population import PopulationValidation, configuration_trace

        if not (self.kept_path and isinstance(self.result, PopulationValidation)):
            return None
        return configuration_trace(self.result, self.spec)

    @property
    def valid(self) -> bool:
        return self.verdict == VALID


@dataclass
class RunResult:
    """What a run of real processes did, and its validation (None if nothing was recorded or validated)."""

    model: str  # "actors", "rounds" or "population"
    spec: str
    spec_name: str
    params: dict[str, int]
    seconds: float  # wall-clock time of the whole call
    counts: dict[str, int]  # totals over the processes: events, sent, rejected, deferred, lost (actors); ...
    stats: dict[int, dict[str, Any]]  # per process, as each reported it when it stopped
    trace: str | None  # the merged run trace (JSON lines; `lockstep validate` reads it)
    notes: list[str] = field(default_factory=list)
    validation: ValidationResult | None = None
    validation_error: str | None = None  # the trace could not be validated (why)
    problems: list[str] = field(default_factory=list)  # rounds specs: the outcome checked on the graph
    finished: bool = True  # rounds specs: every node terminated
    report: Any = field(default=None, repr=False)  # the runner's own report

    @property
    def verdict(self) -> str:
        """The validation's verdict; "not validated" without one; "violation" if the outcome check failed."""
        if self.validation is None:
            return NOT_VALIDATED
        if self.validation.verdict == VALID and self.problems:
            return VIOLATION
        if self.validation.verdict == VALID and not self.finished:
            return INCOMPLETE
        return self.validation.verdict

    @property
    def exit_code(self) -> int:
        """As `lockstep run`: 0 valid (or not asked to validate), 1 violation or invalid, 3 incomplete."""
        if self.validation is None and self.validation_error is None:
            return 0 if self.finished else 3
        return _EXIT[self.verdict]

    @property
    def valid(self) -> bool:
        return self.verdict == VALID


def validate(trace: Any, *, spec: Any = None, configurations: bool = False) -> ValidationResult:
    """Check a recorded run (a merged run trace written by `lockstep run --trace` or `lockstep.run`: a path,
    or a `MergedRun`) against its spec — `spec` if given (a spec class, object, module or name), else the
    registered spec the trace names (a trace never chooses code) — as `lockstep validate` does.
    Raises `TraceError` for a trace that cannot be read or names no usable spec. With `configurations`,
    a population run's configurations are kept: the result's `trace` is their ITF trace."""
    merged = trace if isinstance(trace, MergedRun) else _load(str(trace))
    given = spec if spec is None or isinstance(spec, str) else reference(spec)
    recorded = merged.header["spec"]
    merged.header["spec"] = trusted_spec(recorded, given, merged.path)
    if merged.header["spec"] != recorded:
        merged.notes.append(f"the run was recorded with spec {recorded!r}; validated against {merged.header['spec']!r}")
    return validate_merged(merged, configurations)


def _load(path: str) -> MergedRun:
    from lockstep.checker.validation.runtrace import load

    return load(path)


def validate_merged(merged: MergedRun, keep_path: bool = False) -> ValidationResult:
    """Validate a merged run against the spec its header names (already trusted); the core of `validate`
    and of the commands `lockstep validate` and `lockstep run`. Raises TraceError for an unusable trace."""
    from lockstep.checker.validation.population import PopulationValidator, is_population_run

    h = merged.header
    t0 = time.monotonic()
    if is_population_run(merged):
        validator = PopulationValidator(merged)
        t1 = time.monotonic()
        try:
            pres = validator.validate(keep_path=keep_path)
        except Mismatch as m:
            return _invalid("population", h, m, t1, t1 - t0)
        verdict = VIOLATION if pres.violation else INCOMPLETE if pres.incomplete and pres.truncated else VALID
        return ValidationResult(verdict, "population", h["spec"], h.get("params", {}), pres.interactions,
                                time.monotonic() - t1, pres.violation, incomplete=pres.incomplete,
                                notes=list(merged.notes), build_seconds=t1 - t0, kept_path=keep_path, result=pres)
    from lockstep.checker.validation.rounds import is_rounds_trace, validate_rounds  # networkx: rounds runs only

    if is_rounds_trace(merged):
        try:
            rres = validate_rounds(merged)
        except Mismatch as m:
            return _invalid("rounds", h, m, t0)
        verdict = VIOLATION if rres.violation else INCOMPLETE if rres.incomplete and rres.truncated else VALID
        return ValidationResult(verdict, "rounds", h["spec"], h.get("params", {}), rres.events, time.monotonic() - t0,
                                rres.violation, incomplete=rres.incomplete, notes=list(merged.notes), result=rres)
    from lockstep.checker.validation.actors import validate as validate_actors

    try:
        ares = validate_actors(merged)
    except Mismatch as m:
        return _invalid("actors", h, m, t0)
    bad = ares.failure or ares.violation
    verdict = VIOLATION if bad else INCOMPLETE if ares.incomplete and ares.truncated else VALID
    return ValidationResult(verdict, "actors", h["spec"], h.get("params", {}), ares.events, time.monotonic() - t0, bad,
                            ares.violation_event if bad else ares.stopped_at, incomplete=ares.incomplete,
                            notes=list(merged.notes), result=ares)


def _invalid(model: str, h: dict[str, Any], m: Mismatch, t0: float, build: float = 0.0) -> ValidationResult:
    return ValidationResult(INVALID, model, h["spec"], h.get("params", {}), 0, time.monotonic() - t0,
                            event=m.event, mismatch=m.render(), build_seconds=build, result=m)


def spec_model(ref: str) -> str:
    """"rounds", "population" or "actors": the system model of the spec `ref` names (without importing the
    models it does not use: a rounds spec has imported the rounds model already)."""
    import sys

    from lockstep.checker.loader import is_protocol

    obj, _ = resolve(ref)
    rounds = sys.modules.get("lockstep.specs.lang.rounds.spec")
    if rounds is not None and isinstance(obj, type) and issubclass(obj, rounds.RoundsSpec):
        return "rounds"
    return "population" if is_protocol(ref) else "actors"


def fault_plan(faults: Any, nproc: int, params: dict[str, int] | None = None) -> Any:
    """A fault plan (`Faults`) from a path to a JSON plan, a dict in its format or a `Faults`, checked for
    `nproc` processes and (with `params`, for actor specs) against the spec's network model; None for None."""
    from lockstep.executors.faults import Faults, check_network, load_faults, parse_faults

    if faults is None:
        return None
    if isinstance(faults, Faults):
        plan = faults
    elif isinstance(faults, dict):
        plan = parse_faults(faults, nproc)
    elif isinstance(faults, str) or hasattr(faults, "__fspath__"):
        plan = load_faults(str(faults), nproc)
    else:
        raise UsageError(f"faults={faults!r}: give a fault plan's path, a dict in its JSON format, or a Faults")
    if params is not None:
        check_network(plan, params)
    return plan


# The keywords of `run` that only some system models take (a run of another model refuses them, not ignores them).
_MODEL_OPTIONS = {"duration": ("actors",), "interactions": ("population",), "start": ("population",),
                  "initiator": ("rounds",), "faults": ("actors", "population"), "record": ("actors", "population")}


def run(spec: Any, *, faults: Any = None, trace: str | None = None, duration: float | None = None,
        interactions: int | None = None, start: str | None = None, initiator: int | None = None, seed: int = 0,
        record: bool = True, validate: bool = True, **params: int) -> RunResult:
    """Run `spec` as real OS processes over TCP on 127.0.0.1 and validate the recorded run, as `lockstep run`:
    an actor spec as one process per actor for `duration` seconds (default 2), a population protocol as one
    process per agent and a scheduler for `interactions` interactions (default 10,000; from `start`), a rounds
    spec as one process per node until each terminates (from `initiator`, default 0). `faults` is a fault plan
    (a JSON file's path, a dict, a `Faults`; actor and population runs); the merged trace is written to `trace`
    (default: a new file in the temporary directory); `record=False` records nothing (actor and population
    runs; a rounds run's outcome is read from its trace). `seed` fixes the handlers' choices and the injected
    faults. Raises `LoadError` for a spec that cannot run (or a bad fault plan), `UsageError` for options that
    do not fit the spec (one its model does not take is refused, not ignored), `SpecError` for bad parameters.
    The processes are started with multiprocessing's `spawn`, which imports the caller's main module again: in
    a script, call `run` under `if __name__ == "__main__":` (a test is fine as it is)."""
    ref = spec if isinstance(spec, str) else reference(spec)
    if not isinstance(ref, str) or not ref:
        raise LoadError(f"{spec!r} is not a spec")
    _refuse_own_runners(ref)
    if duration is not None and not 0 < duration <= 3600:
        raise UsageError(f"duration={duration}: between 0 and 3600 seconds")
    if (interactions is not None and interactions < 1) or seed < 0 or (initiator is not None and initiator < 0):
        raise UsageError("interactions must be positive, seed and initiator at least 0")
    if not record and trace is not None:
        raise UsageError("record=False records nothing, so there is no trace to write: drop trace= or record=False")
    kind = spec_model(ref)
    given = {"duration": duration is not None, "interactions": interactions is not None, "start": start is not None,
             "initiator": initiator is not None, "faults": faults is not None, "record": not record}
    for name, models in _MODEL_OPTIONS.items():
        if given[name] and kind not in models:
            raise UsageError(f"{name}={'False' if name == 'record' else '...'}: only for {' and '.join(models)} runs; "
                             f"{ref} is a {kind} spec")
    if not record and validate:
        validate = False
    began = time.monotonic()
    if kind == "population":
        return _run_population(ref, params, faults, trace, 10_000 if interactions is None else interactions, start,
                               seed, record, validate, began)
    if kind == "rounds":
        return _run_rounds(ref, params, trace, seed, initiator or 0, validate, began)
    from lockstep.executors.actors.run import actor_program
    from lockstep.executors.actors.run import run as run_processes

    prog = actor_program(ref, params)
    plan = fault_plan(faults, prog.system.proc.size, dict(prog.params))
    rep = run_processes(ref, params, 2.0 if duration is None else duration, plan, trace, seed, tracing=record)
    counts = {k: sum(s.get(k, 0) for s in rep.stats.values()) for k in ("events", "sent", "rejected", "deferred", "lost")}
    res = RunResult("actors", ref, rep.spec_name, rep.params, 0.0, counts, rep.stats, rep.trace, list(rep.notes),
                    report=rep)
    return _validated(res, rep.merged if validate else None, began)


def _refuse_own_runners(ref: str) -> None:
    from lockstep.executors.autobahn.command import is_autobahn
    from lockstep.executors.psmr.command import is_psmr
    from lockstep.specs.datalog.catalog import is_program_ref

    if is_psmr(ref) or is_autobahn(ref) or is_program_ref(ref):
        raise UsageError(f"{ref} runs on its own executor (replicas, clients or SSP workers): use "
                         f"`lockstep run {shell_word(ref)}`")


def _validated(res: RunResult, merged: MergedRun | None, began: float) -> RunResult:
    if merged is not None:
        try:
            res.validation = validate_merged(merged)
        except TraceError as e:
            res.validation_error = str(e)
    res.seconds = time.monotonic() - began
    return res


def _run_population(ref: str, params: dict[str, int], faults: Any, trace: str | None, interactions: int,
                    start: str | None, seed: int, record: bool, validate: bool, began: float) -> RunResult:
    from lockstep.checker.loader import load_protocol
    from lockstep.executors.population.run import run_population

    protocol = load_protocol(ref, params)
    protocol.start_configurations(start)  # an unknown start is refused before anything runs
    plan = fault_plan(faults, protocol.n)
    rep = run_population(ref, params, interactions, seed, start, trace, tracing=record, faults=plan)
    counts = {"interactions": rep.completed, "rejected": sum(s.get("rejected", 0) for s in rep.stats.values())}
    res = RunResult("population", ref, rep.spec_name, rep.params, 0.0, counts, rep.stats, rep.trace, list(rep.notes),
                    report=rep)
    return _validated(res, rep.merged if validate else None, began)


def _run_rounds(ref: str, params: dict[str, int], trace: str | None, seed: int, initiator: int, validate: bool,
                began: float) -> RunResult:
    from lockstep.executors.rounds.run import rounds_class
    from lockstep.executors.rounds.run import run as run_rounds

    cls = rounds_class(ref)
    rep = run_rounds(ref, params, trace, seed, initiator)
    keys = ("broadcasts", "received", "collisions", "conflicts", "rejected")
    counts = {"rounds": rep.rounds, **{k: sum(s.get(k, 0) for s in rep.stats.values()) for k in keys}}
    res = RunResult("rounds", ref, rep.spec_name, rep.params, 0.0, counts, rep.stats, rep.trace, list(rep.notes),
                    finished=rep.finished, report=rep)
    _validated(res, rep.merged if validate else None, began)
    if res.validation is not None and res.validation.valid and rep.finished and cls is not None:
        res.problems = list(cls.check_outcome(cls.network(rep.params), rep.final))
    res.seconds = time.monotonic() - began
    return res
