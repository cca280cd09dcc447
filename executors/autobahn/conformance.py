"""An Autobahn run validated step by step against the spec: the replicas' logs (in the event schema) projected
onto small instances of `lockstep.specs.autobahn` (each slot, each pair of consecutive cars of a lane:
`mapping.py`), each searched for a behaviour of its instance through the mapping."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lockstep.checker.safeio import create_fresh
from lockstep.checker.validation.conformance.schema import SCHEMA
from lockstep.checker.validation.conformance.spec_side import Unbuildable
from lockstep.checker.validation.origins import Origins

from ..projection import LINE, read_log
from . import mapping
from .mapping import Instance
from .validate import event_ops

MAPPING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mapping.py")


@dataclass
class StepValidation:
    """The outcome of validating a run instance by instance."""

    slots: int = 0  # consensus instances validated
    windows: int = 0  # lane instances validated
    events: int = 0  # events matched, over all instances
    seconds: float = 0.0  # searching
    build_seconds: float = 0.0  # building the instances' specs
    builds: int = 0
    failed: list[tuple[Instance, Any]] = field(default_factory=list)  # (instance, its Conformance) not valid
    skipped: list[str] = field(default_factory=list)  # stretches not validated step by step, and why
    unbuilt: int = 0  # instances whose spec cannot be built at their parameters
    notes: list[str] = field(default_factory=list)
    specs: dict[str, dict[str, int]] = field(default_factory=dict)  # a description of each spec instance built

    @property
    def exit_code(self) -> int:
        codes = [res.exit_code for _, res in self.failed]
        return 1 if 1 in codes else max(codes, default=0)

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


def validate_steps(traces: dict[int, str], n: int, byzantine: dict[int, str],
                   progress: Callable[[str], None] | None = None, origins: Origins | None = None) -> StepValidation:
    """Validate a run's logs (replica -> path) instance by instance; `byzantine` maps the Byzantine replica to its
    behaviour. RunInvalid if an op is not of its declared shape. `origins` learns where each event of the instances'
    logs comes from (their files are gone when this returns)."""
    from lockstep.checker.validation.conformance.causal import Logs
    from lockstep.checker.validation.conformance.search import Search

    logs = {pid: _read(path, n) for pid, path in sorted(traces.items())}
    out = StepValidation()
    sides: dict[tuple, Any] = {}
    tmp = tempfile.mkdtemp(prefix="lockstep-autobahn-steps-")
    try:
        for k, inst in enumerate(mapping.instances(logs, n, byzantine)):
            if inst.skipped is not None:
                if inst.skipped not in out.skipped:
                    out.skipped.append(inst.skipped)
                continue
            if not any(e for evs in inst.logs.values() for e in evs if "carry" not in e):
                continue
            key = (inst.spec, tuple(sorted(inst.params.items())))
            shape = f"{inst.spec} " + " ".join(f"{a}={b}" for a, b in sorted(inst.params.items()) if a != "offset")
            if key not in sides:
                t0 = time.monotonic()
                try:
                    sides[key], built = _side(key, progress)
                except Unbuildable as e:  # each instance of this shape is then left to the property checks
                    sides[key], built = None, False
                    out.skipped.append(f"the instances of shape {shape}: {str(e).splitlines()[0]}")
                if built:
                    out.build_seconds += time.monotonic() - t0
                    out.builds += 1
                if sides[key] is not None:
                    out.specs[shape] = inst.params
            if sides[key] is None:
                out.unbuilt += 1
                continue
            paths = _write(inst, os.path.join(tmp, f"instance-{k}"), {me: traces[pid] for me, pid in inst.sources.items()},
                           origins)
            res = Search(sides[key], Logs.open(paths)).run()
            res.model = sides[key].model
            out.seconds += res.seconds
            out.events += res.events
            if inst.name.startswith("slot"):
                out.slots += 1
            else:
                out.windows += 1
            if res.verdict != "valid":
                out.failed.append((inst, res))
            out.notes.extend(f"{inst.name}: {note}" for note in res.notes if "no end record" not in note)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _read(path: str, n: int) -> mapping.Log:
    """A replica's log, each op of its declared shape (RunInvalid naming the event otherwise)."""
    log = read_log(path)
    for e in log[1]:
        event_ops(e, n, f"{path}:{e[LINE]} (event {e.get('seq')!r:.20})")
    return log


_SIDES: dict[tuple, Any] = {}  # the spec instances built in this process (a run's slots share a few shapes)
MAX_SIDES = 16


def _side(key: tuple, progress: Callable[[str], None] | None) -> tuple[Any, bool]:
    """The spec instance (spec, params) with the mapping, and whether it was built now."""
    from lockstep.checker.validation.conformance.spec_side import SpecSide

    hit = _SIDES.get(key)
    if hit is not None:
        return hit, False
    spec, params = key
    if progress is not None:
        progress(f"building {spec} " + " ".join(f"{a}={b}" for a, b in params))
    if len(_SIDES) >= MAX_SIDES:
        _SIDES.pop(next(iter(_SIDES)))
    hit = _SIDES[key] = SpecSide(spec, dict(params), MAPPING)
    return hit, True


def _write(inst: Instance, directory: str, sources: dict[int, str], origins: Origins | None) -> list[str]:
    """The instance's logs, one per replica (its id in the instance), in the event schema; `origins` learns the line
    of the replica's log (`sources`, by the instance's ids) each event comes from."""
    os.makedirs(directory)
    paths = []
    for node, events in sorted(inst.logs.items()):
        path = os.path.join(directory, f"replica-{node}.jsonl")
        lines: list[int | None] = [None]
        with create_fresh(path) as f:
            f.write(json.dumps({"schema": SCHEMA, "node": node, "instance": inst.name}) + "\n")
            seq = 0
            for e in events:
                if "carry" in e:
                    continue
                seq += 1
                lines.append(e.get(LINE))
                f.write(json.dumps({"node": node, "seq": seq, **{k: v for k, v in e.items() if k != LINE}},
                                   separators=(",", ":")) + "\n")
            if inst.ended.get(node):
                f.write(json.dumps({"node": node, "end": True}) + "\n")
        if origins is not None and node in sources:
            origins.add(path, sources[node], lines)
        paths.append(path)
    return paths


def print_steps(val: StepValidation, origins: Origins | None = None) -> int:
    """Print a step-by-step validation's outcome, each event named by its place in the user's file (`origins`); its
    exit code (0 valid, 1 not, 3 a log cut short or inconclusive)."""
    from lockstep.checker.validation.conformance.run import report

    origins = origins or Origins()
    what = f"{val.slots} slot(s) and {val.windows} lane window(s) of two cars"
    speed = (f"{val.seconds:.2f} s, {val.rate:,.0f} events/s; building the spec {val.builds} time(s) "
             f"{val.build_seconds:.1f} s")
    if not val.failed and val.unbuilt and not val.slots + val.windows:
        print(f"Step by step (through executors/autobahn/mapping.py): none of the {val.unbuilt} instances could be "
              "validated, the spec cannot be built at their shape (the property checks above cover the run)")
    elif not val.failed:
        print(f"Step by step (through executors/autobahn/mapping.py): the {val.events:,} events of {what} are behaviours "
              f"of the spec ({speed})")
    else:
        inst, res = val.failed[0]
        print(f"Step by step (through executors/autobahn/mapping.py): {len(val.failed)} of the {val.slots + val.windows} "
              f"instances ({what}) are not behaviours of the spec; the first, {inst.name} ({inst.spec} "
              + " ".join(f"{k}={v}" for k, v in inst.params.items()) + "):")
        for line in report(res, res.model):
            print(origins.relocate(f"  {line}"))
    for name in val.specs:
        print(f"  instance: {name}")
    for why in val.skipped[:5]:
        print(origins.relocate(f"  not validated step by step: {why}"))
    if len(val.skipped) > 5:
        print(f"  ... and {len(val.skipped) - 5} more not validated step by step")
    for note in val.notes[:5]:
        print(origins.relocate(f"  note: {note}"))
    return val.exit_code
