"""A P-SMR run validated step by step against the spec: its processes' logs (in the event schema) searched
for a behaviour of `lockstep.specs.psmr` through `mapping.py`, for runs within the spec's bounds."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any

from ..projection import project, read_log
from .layout import ServiceConfig
from .mapping import spec_params

if TYPE_CHECKING:
    from lockstep.checker.validation.conformance.search import Conformance

MAPPING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mapping.py")
MAX_REPLICAS = MAX_WORKERS = 4  # the spec's bounds on replicas and workers


def beyond_bounds(service: ServiceConfig) -> str | None:
    """Why a run of this shape is not within the spec's bounds (None if it is)."""
    from lockstep.specs.psmr.commands import MAX_COMMANDS

    if not service.spec_commands:
        return (f"its workload is random ({service.clients} clients, {service.keys} keys), the spec's is the first N "
                f"commands of specs/psmr/commands.py from one client: run with --spec-workload N (N <= {MAX_COMMANDS})")
    if service.replicas > MAX_REPLICAS or service.workers > MAX_WORKERS:
        return f"the spec has at most {MAX_REPLICAS} replicas of {MAX_WORKERS} workers"
    return None


SILENT = frozenset({"deliver", "signalled", "released", "resume", "rejected", "fault"})  # events that are no step


def _keep(e: dict[str, Any]) -> dict[str, Any] | None:
    """An event the mapping turns into a step or a check, as it is; None for the others (arrivals of frames a
    later event takes, the barrier's frames, rejections, losses and replies after the first)."""
    if e["action"] in SILENT or (e["action"] == "reply" and not e.get("args", {}).get("first")):
        return None
    return e


def validate_steps(traces: dict[int, str], service: ServiceConfig, spec: str) -> Conformance:
    """Search the run's logs (process -> path) for a behaviour of `spec` (a registered P-SMR spec): the events the
    mapping takes as steps, each after the receipts of the frames its process acted on before it."""
    from lockstep.checker.validation.conformance.run import validate_logs

    tmp = tempfile.mkdtemp(prefix="lockstep-psmr-steps-")
    try:
        paths = []
        for pid, path in sorted(traces.items()):
            header, events, ended = read_log(path)
            if not header and not events:
                continue
            out = os.path.join(tmp, f"process-{pid}.jsonl")
            project(events, pid, out, _keep, ended, {k: header[k] for k in ("role", "at") if k in header})
            paths.append(out)
        return validate_logs(paths, spec, spec_params(service), MAPPING)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def print_steps(traces: dict[int, str], service: ServiceConfig, spec: str) -> int:
    """Validate the run step by step if it is within the spec's bounds and print the outcome; the exit code
    (0 valid or beyond the bounds, 1 not a behaviour of the spec, 3 cut short or inconclusive)."""
    from lockstep.checker.validation.conformance.run import report

    why = beyond_bounds(service)
    if why is not None:
        print(f"  step by step: not validated against the spec: {why}")
        return 0
    res = validate_steps(traces, service, spec)
    params = " ".join(f"{k}={v}" for k, v in spec_params(service).items())
    lines = report(res, res.model)
    print(f"Step by step ({spec} {params}, through executors/psmr/mapping.py): {lines[0]}")
    for line in lines[1:]:
        print(line)
    return res.exit_code
