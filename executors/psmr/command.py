"""`lockstep run psmr`: the replicated key-value service on processes, then its history checked for
linearizability and its trace validated against the spec's rules."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

from lockstep.checker.commands.common import output_file
from lockstep.checker.errors import UsageError
from lockstep.checker.trace import shell_word

from ..faults import Crash, Faults, load_faults
from ..interrupted import interrupted_exit
from .faults import check_plan, network
from .layout import ServiceConfig

SPEC_NAMES = ("psmr", "lockstep.specs.psmr.spec:PSMR", "psmr_first_key_cg", "lockstep.specs.psmr.spec:PSMRFirstKeyCG")


def is_psmr(spec: str) -> bool:
    return spec in SPEC_NAMES


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("psmr (the replicated key-value service)")
    g.add_argument("--replicas", type=int, help="replicas (default 2)")
    g.add_argument("--workers", type=int, help="worker processes per replica, W (default 2); Datalog programs: "
                   "worker processes (default 2)")
    g.add_argument("--clients", type=int, help="client proxy processes (default 2)")
    g.add_argument("--outstanding", type=int, help="commands each client keeps in flight (default 2)")
    g.add_argument("--keys", type=int, help="keys of the store (default 8)")
    g.add_argument("--dependent", type=float, help="fraction of dependent (putall) commands (default 0.1)")
    g.add_argument("--service-ms", type=float, help="time to execute one command, in ms (default 1)")
    g.add_argument("--service", choices=("io", "cpu"), help="io: a blocking wait (default); cpu: a busy loop")
    g.add_argument("--kill-replica", metavar="R@S", help="SIGKILL replica R's workers S seconds into the run")
    g.add_argument("--history", type=output_file, metavar="FILE", help="write the clients' history (JSON lines) to FILE")
    g.add_argument("--budget", type=float, help="seconds for the linearizability check (default 60)")


def _kill(text: str | None, replicas: int) -> tuple[int, float] | None:
    if text is None:
        return None
    r, sep, at = text.partition("@")
    try:
        rep, sec = int(r), float(at)
    except ValueError:
        raise UsageError(f"--kill-replica {text!r}: expected R@SECONDS, e.g. 1@0.5") from None
    if not sep or not 0 <= rep < replicas or sec < 0:
        raise UsageError(f"--kill-replica {text!r}: R must be a replica (0..{replicas - 1}) and SECONDS >= 0")
    return rep, sec


def _plan(args: argparse.Namespace, replicas: int) -> Faults | None:
    """The run's fault plan: `--faults` (its pids are replicas; see `faults.py`) and `--kill-replica`."""
    plan = check_plan(load_faults(args.faults, replicas), args.faults) if args.faults else None
    kill = _kill(args.kill_replica, replicas)
    if kill is not None:
        plan = plan or Faults()
        plan.crashes.append(Crash(*kill))
    return plan


def _config(args: argparse.Namespace) -> ServiceConfig:
    d = ServiceConfig(clients=2, outstanding=2, keys=8)

    def given(name: str) -> int:
        v = getattr(args, name)
        return getattr(d, name) if v is None else v

    cfg = ServiceConfig(
        replicas=given("replicas"), workers=given("workers"), clients=given("clients"),
        outstanding=given("outstanding"), keys=given("keys"),
        dependent=d.dependent if args.dependent is None else args.dependent,
        service_ms=d.service_ms if args.service_ms is None else args.service_ms, service=args.service or d.service,
        seed=args.seed, cg="first_key" if "first_key" in args.spec.lower() else "keys")
    for name, lo, hi in (("replicas", 1, 8), ("workers", 1, 16), ("clients", 1, 64), ("outstanding", 1, 64),
                         ("keys", 1, 1 << 20)):
        v = getattr(cfg, name)
        if not lo <= v <= hi:
            raise UsageError(f"--{name} {v}: must be between {lo} and {hi}")
    if not 0 <= cfg.dependent <= 1:
        raise UsageError(f"--dependent {cfg.dependent}: a fraction between 0 and 1")
    if not 0 <= cfg.service_ms <= 1000:
        raise UsageError(f"--service-ms {cfg.service_ms}: between 0 and 1000")
    if cfg.keys < cfg.workers:
        raise UsageError(f"--keys {cfg.keys}: at least one key per worker ({cfg.workers})")
    if args.budget is not None and not 0 < args.budget <= 3600:
        raise UsageError(f"--budget {args.budget}: seconds for the linearizability check, above 0 and at most 3600")
    return cfg


def run_psmr_command(args: argparse.Namespace) -> int:
    from lockstep.checker.linearizability import check, load_model, read_history  # imported when a P-SMR run runs
    from lockstep.checker.validation.psmr import RunInvalid, validate_run
    from lockstep.checker.validation.runtrace import collect

    from .run import merge_history, run

    cfg = _config(args)
    plan = _plan(args, cfg.replicas)
    duration = args.duration or 2.0
    nproc = cfg.workers + 1 + cfg.replicas * cfg.workers + cfg.clients
    print(f"Running the P-SMR key-value service: {cfg.replicas} replicas x {cfg.workers} workers, {cfg.workers} "
          f"group sequencers and a hub, {cfg.clients} clients x {cfg.outstanding} in flight ({nproc} processes) for "
          f"{duration:g} s; {cfg.dependent:.0%} dependent commands, {cfg.service_ms:g} ms {cfg.service} service time"
          + (f"; faults from {args.faults}" if args.faults else ""))
    tmp = tempfile.mkdtemp(prefix="lockstep-psmr-")
    try:
        rep = run(cfg, duration, tmp, plan, progress=lambda t: print(f"progress: {t:.0f} s", file=sys.stderr, flush=True))
        print(f"  {rep.completed:,} commands completed in {rep.seconds:.2f} s: {rep.throughput:,.0f} commands/s")
        if network(plan) is not None:
            hit = rep.injected
            print(f"  faults injected: {hit['dropped']:,} messages dropped, {hit['partitioned']:,} lost to partitions, "
                  f"{hit['delayed']:,} delayed")
        for note in rep.notes:
            print(f"  note: {note}")
        hist = merge_history(rep, args.history or os.path.join(tmp, "history.jsonl"))
        if args.history:
            print(f"History written to {hist} (check it: lockstep linearizable {shell_word(hist)} --model psmr-kv)")
        if args.trace:
            collect(rep.traces, args.trace, "psmr", rep.notes)
            print(f"Trace written to {args.trace}: every process's events in its order, one JSON object per line with "
                  "its pid")
        code = 0
        if args.no_validate:
            return interrupted_exit(rep.interrupted, 0)
        t0 = time.monotonic()
        try:
            val = validate_run(rep.traces)
            print(f"Valid: {val.events:,} events of {val.commands:,} commands and {val.executions:,} executions follow "
                  f"the spec's rules ({time.monotonic() - t0:.2f} s)")
        except RunInvalid as e:
            print(f"Invalid: the run breaks the spec: {e}")
            code = 1
        v = check(read_history(hist), load_model("psmr-kv"), budget=60.0 if args.budget is None else args.budget)
        if v.verdict == "linearizable":
            print(f"Linearizable: the clients' history of {v.operations:,} operations ({v.seconds:.2f} s)")
        elif v.verdict == "unknown":
            print(f"Linearizability unknown: {v.note}")
            code = code or 3
        else:
            print(f"Not linearizable: {v.last.describe() if v.last else ''} completes an illegal prefix of "
                  f"{len(v.prefix)} operations")
            code = 1
        return interrupted_exit(rep.interrupted, code)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
