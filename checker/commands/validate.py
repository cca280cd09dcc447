"""`lockstep validate TRACE`: check that a recorded run of real processes is a behaviour of its spec; `lockstep validate
LOG... --spec SPEC [--map MAPPING.py]`: that implementation logs in the event schema are (`validation.conformance`)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..loader import parse_params
from ..trace import TraceError, follow_up, trusted_spec
from ..validation.actors import Validation
from ..validation.population import PopulationValidation, configuration_trace, is_population_run
from ..validation.runtrace import MergedRun, is_collected, load
from .common import natural, output_file, positive

if TYPE_CHECKING:
    from lockstep.runs import ValidationResult

NAME = "validate"
HELP = ("check a run trace (from `lockstep run --trace`) against its spec, event by event; or implementation logs "
        "in the event schema (LOG... --spec SPEC [--map MAPPING.py]), by a search over the spec's behaviours")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a merged run trace (JSON lines) written by `lockstep run --trace`")
    p.add_argument("--spec", metavar="SPEC",
                   help="the spec to validate it against (needed unless the trace names a registered spec); a trace "
                        "never chooses the code that runs")
    p.add_argument("--configurations", type=output_file, metavar="FILE",
                   help="population runs: save the configurations passed through as an ITF trace of the "
                        "counting-abstraction spec (`lockstep replay FILE` re-checks it)")
    p.add_argument("logs", nargs="*", metavar="LOG",
                   help="more logs: implementation logs in the event schema, one per node (docs/conformance.md)")
    p.add_argument("--map", metavar="MAPPING.py",
                   help="logs: the refinement mapping from the logs' events and variables to the spec's (a Python file)")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="logs: a parameter of the spec (repeatable)")
    p.add_argument("--max-internal", type=natural, default=0, metavar="K",
                   help="logs: unlogged internal steps of the spec allowed before each event (default 0)")
    p.add_argument("--max-frontier", type=positive, default=None, metavar="N",
                   help="logs: give up (inconclusive, exit 3) when more than N spec states match (default 100,000)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="logs and run traces of `lockstep run --trace`: the outcome as text or JSON (docs/json.md)")


def _collected(path: str) -> bool:
    """Whether `path` reads as the processes' logs of a `lockstep run autobahn|psmr` (False if it is unreadable: the
    reader of what it claims to be says why)."""
    try:
        return is_collected(path)
    except TraceError:
        return False


def run(args: argparse.Namespace) -> int:
    from ..validation.conformance.run import is_log, run_command

    if (args.logs or args.map) and _collected(args.file):
        raise UsageError(f"{'--map' if args.map else 'a second file'} does not apply to {args.file}, the processes' logs "
                         "of a `lockstep run autobahn|psmr` (the mapping is the executor's): give the file alone")
    if args.logs or args.map or is_log(args.file):
        if args.configurations:
            raise UsageError("--configurations applies to run traces of population protocols, not to logs")
        return run_command([args.file, *args.logs], args.spec, parse_params(args.param), args.map, args.max_internal,
                           args.max_frontier, args.format == "json")
    given = [o for o, v in (("--param", args.param), ("--max-internal", args.max_internal),
                            ("--max-frontier", args.max_frontier)) if v]
    if is_collected(args.file):  # every process's log of `lockstep run autobahn|psmr`, validated as that run is
        given += [o for o, v in (("--configurations", args.configurations), ("--format json", args.format == "json"))
                  if v]
        if given:
            raise UsageError(f"{given[0]} does not apply to {args.file}, the processes' logs of a `lockstep run "
                             "autobahn|psmr` (validated against the spec's rules and step by step, as the run was)")
        from lockstep.trace import validate_recorded_run

        return validate_recorded_run(args.file, args.spec)
    if given:
        raise UsageError(f"{given[0]} applies to implementation logs; {args.file} is a run trace of `lockstep run` "
                         "(validated against the spec and parameters it records)")
    if args.format == "json":  # the text goes nowhere; the outcome is one object
        with contextlib.redirect_stdout(io.StringIO()):
            code, res, notes = _validate_run(args)
        print(json.dumps(run_json(res, notes), default=str))
        return code
    return _validate_run(args)[0]


def _validate_run(args: argparse.Namespace) -> tuple[int, ValidationResult, list[str]]:
    """Validate a run trace of `lockstep run --trace`, printing the outcome: (exit code, result, notes)."""
    from lockstep.runs import validate_merged

    merged = load(args.file)
    recorded = merged.header["spec"]
    merged.header["spec"] = trusted_spec(recorded, args.spec, args.file)
    h = merged.header
    print(f"validating {args.file}: spec {h.get('spec_name', h['spec'])} {h.get('params', {})}, "
          f"a run of {h.get('processes', '?')} processes")
    if h["spec"] != recorded:
        print(f"  note: the run was recorded with spec {recorded!r}; validating it against {h['spec']!r}, as asked")
    for note in merged.notes:
        print(f"  note: {note}")
    if args.configurations and not is_population_run(merged):
        from ..validation.rounds import is_rounds_trace  # networkx: only for runs of rounds specs

        raise TraceError("--configurations applies to runs of population protocols; this is a run of "
                         + ("a rounds spec" if is_rounds_trace(merged) else "an actor spec"))
    res = validate_merged(merged, keep_path=args.configurations is not None)
    code = print_validation(res)
    if args.configurations and res.verdict != "invalid":
        saved = configuration_trace(res.result, merged.header["spec"])
        saved.save(args.configurations)
        print(f"Configurations written to {args.configurations} "
              f"(re-check them: {follow_up('replay', args.configurations, saved.spec)})")
    return code, res, merged.notes


def run_json(res: ValidationResult, notes: list[str]) -> dict[str, Any]:
    """A run trace's validation as the JSON object `validate --format json` prints (under `details`)."""
    return {"verdict": res.verdict, "model": res.model, "spec": res.spec, "params": res.params, "events": res.events,
            "seconds": res.seconds, "violation": res.violation, "event": res.event, "mismatch": res.mismatch,
            "incomplete": res.incomplete, "notes": [*notes, *res.notes]}


def print_validation(res: ValidationResult) -> int:
    """Print a validation's outcome, as each system model says it; its exit code."""
    if res.mismatch is not None:
        print(f"Invalid: the run is not a behaviour of the {'protocol' if res.model == 'population' else 'spec'} at "
              + res.mismatch)
        return 1
    if res.model == "population":
        if res.build_seconds >= 1:
            print(f"  (building the protocol's rule table took {res.build_seconds:.1f} s)")
        return report_population(res.result, res.seconds)
    if res.model == "rounds":
        from ..validation.rounds import print_rounds  # networkx: only for runs of rounds specs

        return print_rounds(res.result, res.seconds)
    return report(res.result, res.seconds)


def report(res: Validation, seconds: float) -> int:
    """Print a validation's outcome; 0 if the run is a behaviour satisfying the invariants (up to a process's
    death), 1 if not, 3 if the trace file is cut short (its end record is missing): only a prefix is known.

    (A run that is not a behaviour at all is exit code 1 too; a trace that cannot be read is 2.)"""
    rate = res.events / seconds if seconds > 0 else 0.0
    if res.failure:
        e = res.violation_event or {}
        print(f"Violation: a handler failed in process {e.get('pid')} (clock {e.get('clock')}), as the spec's "
              f"step fails there: {res.failure}")
        print(f"  the run is a behaviour of the spec up to there: {res.events} steps checked")
        return 1
    if res.violation:
        e = res.violation_event or {}
        print(f"Violation: invariant {res.violation} is violated after event "
              f"{e.get('kind')} of process {e.get('pid')} (clock {e.get('clock')})")
        print(f"  the run is a behaviour of the spec up to there: {res.events} steps checked")
        return 1
    if res.incomplete:
        e = res.stopped_at or {}
        where = f" (line {e['_line']})" if "_line" in e else ""
        verdict = "Incomplete" if res.truncated else "Valid up to where the records stop"
        print(f"{verdict}: {res.events} steps are steps of the spec and the invariants hold after each "
              f"({seconds:.2f} s, {rate:,.0f} events/s)")
        print(f"  not validated after that{where}: {res.incomplete}")
        return 3 if res.truncated else 0
    print(f"Valid: all {res.events} steps are steps of the spec and the invariants hold after each "
          f"({seconds:.2f} s, {rate:,.0f} events/s)")
    if res.dropped:
        print(f"  {res.dropped} message(s) in flight were taken as lost by the (lossy) network where a later step "
              "needed it")
    if res.overflow:
        print(f"  {res.overflow} deliveries were dropped by processes whose queue of messages waiting for an enabled "
              "handler was full (recorded as overflow; in the spec they are still in flight)")
    if res.rejected:
        print(f"  {res.rejected} frames were rejected by the processes (malformed, or not from the run)")
    return 0


def validate_population_run(merged: MergedRun) -> int:
    """Validate a population run and print the outcome (0 valid, 1 not a behaviour or an invariant fails)."""
    from lockstep.runs import validate_merged

    return print_validation(validate_merged(merged))


def report_population(res: PopulationValidation, seconds: float) -> int:
    """Print a population run's validation: interactions checked, predicates reached, the final configuration."""
    n = res.protocol.n
    rate = res.interactions / seconds if seconds > 0 else 0.0
    if res.violation:
        print(f"Violation: invariant {res.violation} is violated after interaction {res.violation_at}")
        return 1
    print(f"Valid: all {res.interactions:,} interactions are transitions of {res.protocol.name} with non-zero "
          f"probability, and the {res.configurations:,} configurations they pass through are a path of its counting "
          f"abstraction ({seconds:.2f} s, {rate:,.0f} interactions/s)")
    if res.incomplete:
        print(f"  incomplete: {res.incomplete}")
        if res.truncated:
            return 3
    for name, k in res.first_held.items():
        when = "never" if k is None else ("from the start" if k == 0 else f"first after interaction {k:,} "
                                                                           f"(parallel time {k / n:.2f})")
        now = "holds" if res.protocol.holds(name, res.final) else "does not hold"
        print(f"  {name}: {when}; {now} at the end")
    print(f"  final configuration: {res.protocol.view(res.final)}")
    return 0
