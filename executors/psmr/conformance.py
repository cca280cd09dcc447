"""A P-SMR run validated step by step against the spec: its processes' logs (in the event schema) searched
for a behaviour of `lockstep.specs.psmr` through `mapping.py`, for runs within the spec's bounds."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any

from lockstep.checker.validation.origins import Origins

from ..projection import project, read_log
from .layout import MAX_RANDOM_VALUE, ServiceConfig
from .mapping import spec_params

if TYPE_CHECKING:
    from lockstep.checker.validation.conformance.search import Conformance

MAPPING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mapping.py")
MAX_REPLICAS = MAX_WORKERS = 4  # the spec's bounds on replicas and workers


def beyond_bounds(service: ServiceConfig, commands: int | None = None) -> str | None:
    """Why a run of this shape (of `commands` commands, if known) is no behaviour of any instance of the spec, so
    that it cannot be validated step by step (None if it can)."""
    from lockstep.specs.psmr.commands import MAX_COMMANDS, MAX_VALUE

    if not service.spec_commands:
        issued = f"{commands:,} commands" if commands is not None else "its commands"
        return (f"its workload is random: {issued} drawn by {service.clients} client(s) (get, put and putall on "
                f"{service.keys} keys, values up to {MAX_RANDOM_VALUE}, {service.outstanding} in flight each); the "
                f"spec's one client proxy issues, in order, the first N <= {MAX_COMMANDS} commands of the fixed workload of "
                f"specs/psmr/commands.py, on as many keys as workers, with values 0..{MAX_VALUE} (its invariants range "
                "over every order of those commands), so no instance of the spec issues this run's commands")
    if service.replicas > MAX_REPLICAS or service.workers > MAX_WORKERS:
        return (f"it has {service.replicas} replicas of {service.workers} workers; the spec has at most {MAX_REPLICAS} "
                f"replicas of {MAX_WORKERS} workers")
    return None


CHECKED = ("every event against the spec's rules (integrity, agreement, acyclic order, the barrier, execution in "
           "delivery order, dependent commands in the same order at every replica, replies equal to a sequential "
           "replay of each replica: checker/validation/psmr.py)")


SILENT = frozenset({"deliver", "signalled", "released", "resume", "rejected", "fault"})  # events that are no step


def _keep(e: dict[str, Any]) -> dict[str, Any] | None:
    """An event the mapping turns into a step or a check, as it is; None for the others (arrivals of frames a
    later event takes, the barrier's frames, rejections, losses and replies after the first)."""
    if e["action"] in SILENT or (e["action"] == "reply" and not e.get("args", {}).get("first")):
        return None
    return e


def validate_steps(traces: dict[int, str], service: ServiceConfig, spec: str, origins: Origins | None = None) -> Conformance:
    """Search the run's logs (process -> path) for a behaviour of `spec` (a registered P-SMR spec): the events the
    mapping takes as steps, each after the receipts of the frames its process acted on before it. `origins` learns
    where each event of the projected logs comes from (their files are gone when this returns)."""
    from lockstep.checker.validation.conformance.run import validate_logs

    tmp = tempfile.mkdtemp(prefix="lockstep-psmr-steps-")
    try:
        paths = []
        for pid, path in sorted(traces.items()):
            header, events, ended = read_log(path)
            if not header and not events:
                continue
            out = os.path.join(tmp, f"process-{pid}.jsonl")
            project(events, pid, out, _keep, ended, {k: header[k] for k in ("role", "at") if k in header}, origins, path)
            paths.append(out)
        return validate_logs(paths, spec, spec_params(service), MAPPING)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def print_steps(traces: dict[int, str], service: ServiceConfig, spec: str, origins: Origins | None = None,
                commands: int | None = None) -> int:
    """Validate the run step by step if some instance of the spec can have it, and print the outcome, naming each
    event by its place in the user's file (`origins`); the exit code (0 valid, or not validated step by step and
    said why, 1 not a behaviour of the spec, 3 cut short or inconclusive). `commands`: the run's, if known."""
    from lockstep.checker.validation.conformance.run import report
    from lockstep.specs.psmr.commands import MAX_COMMANDS

    why = beyond_bounds(service, commands)
    if why is not None:
        print(f"Step by step: not validated against the spec: {why}.\n  checked instead: {CHECKED}.\n  to validate "
              f"step by step, run the spec's workload: lockstep run psmr --spec-workload N (N <= {MAX_COMMANDS}, at "
              f"most {MAX_REPLICAS} replicas of {MAX_WORKERS} workers; docs/conformance.md)")
        return 0
    origins = origins or Origins()
    with origins.naming():
        res = validate_steps(traces, service, spec, origins)
    params = " ".join(f"{k}={v}" for k, v in spec_params(service).items())
    lines = report(res, res.model)
    print(origins.relocate(f"Step by step ({spec} {params}, through executors/psmr/mapping.py): {lines[0]}"))
    for line in lines[1:]:
        print(origins.relocate(line))
    return res.exit_code
