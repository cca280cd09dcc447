"""`lockstep run PROGRAM`: a Datalog program on worker processes; print what they did and check the result."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from lockstep.checker.commands.validate import report as report_validation
from lockstep.checker.errors import UsageError
from lockstep.checker.trace import TraceError
from lockstep.checker.validation.actors import validate
from lockstep.checker.validation.runtrace import Mismatch

from ..faults import Faults, FaultsError, Straggler, load_faults
from ..interrupted import interrupted_exit
from .run import run


def staleness(text: str) -> int:
    """`--staleness`: a non-negative bound, or `inf` / `async` for unbounded."""
    if text in ("inf", "async", "-1"):
        return -1
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a staleness bound (0, 1, 2, ... or inf)") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v}: the staleness bound is 0 (BSP), a positive number, or inf")
    return v


def straggler(text: str) -> tuple[int, float, float]:
    """`--straggler W:MS[:P]`: worker W sleeps MS ms before each iteration (before each with chance P)."""
    parts = text.split(":")
    try:
        out = int(parts[0]), float(parts[1]), float(parts[2]) if len(parts) == 3 else 1.0
    except (ValueError, IndexError):
        out = None
    if len(parts) > 3 or out is None or out[0] < 0 or not 0 <= out[1] <= 60_000 or not 0 <= out[2] <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give WORKER:MILLISECONDS[:PROBABILITY], e.g. 1:20 or 1:50:0.3")
    return out


def stragglers_only(faults: Faults, where: str) -> Faults:
    """A Datalog run's fault plan: stragglers only (FaultsError for anything else it holds)."""
    other = [name for name, used in (("drop", faults.drop), ("duplicate", faults.duplicate), ("reorder", faults.reorder),
                                     ("delay_ms", faults.delay_ms[1]), ("partitions", faults.partitions),
                                     ("crashes", faults.crashes)) if used]
    if other:
        raise FaultsError(f"{where}: {other[0]!r} is not supported by a Datalog run (its workers exchange deltas "
                          "directly and detect quiescence together; only stragglers slow them)\n"
                          '  fix: keep only "stragglers", e.g. {"stragglers": [{"pid": 1, "delay_ms": 20}]}')
    return faults


def run_datalog_command(args: argparse.Namespace, params: dict[str, int]) -> int:
    workers = 2 if args.workers is None else args.workers
    if workers < 1 or workers > 64:
        raise UsageError(f"--workers {workers}: give 1 to 64 workers")
    if not args.graph:
        raise UsageError("give the graph: --graph FILE (an edge list), a generator such as gnm:1000:5000, or ssp:N "
                         "(a graph of the SSP spec's catalogue, whose runs are validated against the spec)")
    faults = stragglers_only(load_faults(args.faults, workers), args.faults) if args.faults else Faults()
    if args.straggler:
        pid, ms, chance = args.straggler
        if pid >= workers:
            raise UsageError(f"--straggler {pid}:{ms:g}: there are only workers 0..{workers - 1}")
        faults.stragglers.append(Straggler(pid, ms, chance))
    s = args.staleness if args.staleness is not None else 1
    mode = "BSP" if s == 0 else "asynchronous" if s < 0 else f"SSP(s={s})"
    print(f"Running {args.spec} on {workers} workers, {mode}, graph {args.graph}"
          + "".join(f", worker {x.pid} delayed {x.delay_ms:g} ms per iteration"
                    + (f" with chance {x.probability:g}" if x.probability < 1 else "") for x in faults.stragglers))
    tracing = False if args.no_trace else None
    rep = run(args.spec, args.graph, workers, s, params, args.weights, args.seed, args.undirected, faults,
              args.trace, tracing, check=not args.no_check,
              progress=lambda m: print(f"progress: {m}", file=sys.stderr, flush=True))
    for n in rep.notes:
        print(f"  {n}")
    for pid in sorted(rep.stats):
        st = rep.stats[pid]
        if not st:
            print(f"  worker {pid}: no report")
            continue
        print(f"  worker {pid}: {st['iterations']} iterations, {st['deltas_sent']:,} deltas sent, "
              f"{st['deltas_received']:,} received, {st['compute_s']:.3f} s computing, {st['wait_s']:.3f} s waiting")
    print(f"  {len(rep.keys):,} facts of {rep.plan.pred} in {rep.seconds:.3f} s (after {rep.startup:.1f} s starting "
          "the workers)")
    for f in rep.failures:
        print(f"  failure: {f}")
    if rep.failures:
        return 1 if any("divergence" in f for f in rep.failures) else 4
    code = 0
    if rep.interrupted is not None and not args.no_check:
        print("  not compared with the sequential fixpoint: the run was interrupted before the workers finished")
    elif not args.no_check:
        fix = rep.plan.fixpoint
        if fix is None:
            print("  the sequential evaluation diverges: nothing to compare with")
        else:
            keys = np.fromiter(fix, dtype=np.int64, count=len(fix))
            vals = np.fromiter(fix.values(), dtype=np.int64, count=len(fix))
            order = np.argsort(keys)
            same = np.array_equal(rep.plan.keys[keys[order]], rep.keys) and np.array_equal(vals[order], rep.vals)
            print("  the result equals the sequential fixpoint" if same else
                  "  MISMATCH: the result differs from the sequential fixpoint")
            code = 0 if same else 1
    if rep.trace:
        print(f"Trace written to {rep.trace}")
        if rep.spec and not args.no_validate:
            t0 = time.monotonic()
            try:
                res = validate(rep.merged)  # type: ignore[arg-type]
            except Mismatch as m:
                print("Invalid: the run is not a behaviour of the spec at " + m.render())
                return 1
            except TraceError as e:
                print(f"Not validated: {e}")
                return 1
            print(f"  validated against {rep.spec} {rep.spec_params}")
            code = max(code, report_validation(res, time.monotonic() - t0))
    return interrupted_exit(rep.interrupted, code, rep.trace)
