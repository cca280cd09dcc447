"""`lockstep run psmr`: the replicated key-value service on processes, then its history checked for
linearizability and its trace validated against the spec's rules."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from lockstep.checker.commands.common import output_file
from lockstep.checker.errors import UsageError
from lockstep.checker.trace import TraceError, shell_word
from lockstep.checker.validation.origins import Origins

from ..faults import Crash, Faults, load_faults
from ..interrupted import interrupted_exit
from .faults import check_plan, network
from .layout import BUGS, ServiceConfig

SPEC_NAMES = ("psmr", "lockstep.specs.psmr.spec:PSMR", "psmr_first_key_cg", "lockstep.specs.psmr.spec:PSMRFirstKeyCG",
              "psmr_read_wrong_group", "lockstep.specs.psmr.spec:PSMRReadWrongGroup")
SEEDED_CG = {"psmr_first_key_cg": "first_key", "psmr_read_wrong_group": "read_wrong_group",
             "lockstep.specs.psmr.spec:PSMRFirstKeyCG": "first_key",
             "lockstep.specs.psmr.spec:PSMRReadWrongGroup": "read_wrong_group"}  # the C-G each seeded spec runs


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
    g.add_argument("--spec-workload", type=int, metavar="N",
                   help="one client issues the first N commands of the spec's workload (specs/psmr/commands.py), keys "
                        "= workers: a run within the spec's bounds, validated step by step against it")


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
        seed=args.seed, cg=SEEDED_CG.get(args.spec, "keys"))
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
    if args.spec_workload is not None:
        _spec_workload(args, cfg)
    if args.bug is not None:
        if args.bug not in BUGS:
            raise UsageError(f"--bug {args.bug}: not a seeded bug of the P-SMR service (its bugs: "
                             + "; ".join(f"{k}: {v}" for k, v in BUGS.items()) + ")")
        cfg.bug = args.bug
    return cfg


def _spec_workload(args: argparse.Namespace, cfg: ServiceConfig) -> None:
    """`--spec-workload N`: one client, the spec's first N commands, keys = workers (the spec's shape)."""
    from lockstep.specs.psmr.commands import MAX_COMMANDS

    n = args.spec_workload
    if not 1 <= n <= MAX_COMMANDS:
        raise UsageError(f"--spec-workload {n}: the spec's workload has {MAX_COMMANDS} commands; give 1 to {MAX_COMMANDS}")
    for name in ("clients", "keys", "dependent"):
        if getattr(args, name) is not None:
            raise UsageError(f"--{name} does not apply with --spec-workload: the spec's workload comes from one client, "
                             "on as many keys as workers")
    if cfg.outstanding > n:
        raise UsageError(f"--outstanding {cfg.outstanding}: at most the {n} commands of the workload")
    cfg.spec_commands, cfg.clients, cfg.keys, cfg.dependent = n, 1, cfg.workers, 0.0


def validate_recorded(traces: dict[int, str], service: ServiceConfig, spec: str, origins: Origins | None = None) -> int:
    """Check a run's logs (process -> path) against the spec's rules, then step by step against an instance of the spec
    (within the run's window: `conformance.py`); print the outcomes, each place named in the user's file
    (`origins`: where the logs' lines are in it); the exit code (0 valid, 1 not, 3 a log cut short or inconclusive)."""
    from lockstep.checker.validation.psmr import RunInvalid, validate_run

    from .conformance import print_steps

    origins = origins or Origins()
    t0 = time.monotonic()
    try:
        val = validate_run(traces)
        print(f"Valid: {val.events:,} events of {val.commands:,} commands and {val.executions:,} executions follow "
              f"the spec's rules ({time.monotonic() - t0:.2f} s)")
        code = 0
    except RunInvalid as e:
        print(origins.relocate(f"Invalid: the run breaks the spec: {e}"))
        code = 1
    steps = print_steps(traces, service, spec, origins)
    return code or steps


def run_psmr_command(args: argparse.Namespace) -> int:
    from lockstep.checker.linearizability import check, load_model, read_history  # imported when a P-SMR run runs
    from lockstep.checker.validation.runtrace import collect

    from .run import merge_history, run

    cfg = _config(args)
    plan = _plan(args, cfg.replicas)
    duration = args.duration or 2.0
    nproc = cfg.workers + 1 + cfg.replicas * cfg.workers + cfg.clients
    print(f"Running the P-SMR key-value service: {cfg.replicas} replicas x {cfg.workers} workers, {cfg.workers} "
          f"group sequencers and a hub, {cfg.clients} clients x {cfg.outstanding} in flight ({nproc} processes) for "
          f"{duration:g} s; "
          + (f"the spec's first {cfg.spec_commands} commands" if cfg.spec_commands else
             f"{cfg.dependent:.0%} dependent commands")
          + f", {cfg.service_ms:g} ms {cfg.service} service time" + (f"; faults from {args.faults}" if args.faults else "")
          + (f"; seeded bug {cfg.bug}: {BUGS[cfg.bug]}" if cfg.bug else ""))
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
        origins = Origins()  # where the processes' lines are in --trace FILE, which messages then name
        for pid, path in rep.traces.items():
            origins.label(path, f"process {pid}'s log")  # without --trace: files that are gone after the run
        if args.trace:
            collect(rep.traces, args.trace, args.spec, rep.notes, origins)
            print(f"Trace written to {args.trace}: every process's log in the event schema, one JSON object per line "
                  "with its pid")
        if args.no_validate:
            return interrupted_exit(rep.interrupted, 0)
        code = validate_recorded(rep.traces, cfg, args.spec, origins)
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


def validate_collected(paths: dict[int, str], spec: str, origins: Origins | None = None) -> int:
    """`lockstep validate FILE` of a run's `--trace FILE` (split into its processes' logs, `paths`; `origins`: where
    their lines are in FILE, which messages name): the spec's rules and, within its bounds, step by step; the exit
    code. The clients' history is not in the file (`--history`)."""
    origins = origins or Origins()
    service = None
    for path in paths.values():
        with open(path, encoding="utf-8") as f:
            first = f.readline()
        where = origins.relocate(f"{path}:1")
        try:
            head = json.loads(first)
        except ValueError:
            raise TraceError(f"{where}: not a process's log (its first line is not JSON)") from None
        if isinstance(head, dict) and "service" in head:
            service = _service(head["service"], where)
            break
    if service is None:
        raise TraceError("no process's log in the file names the service's shape (its header's \"service\")")
    print(f"validating a run of {spec}: {service.replicas} replicas x {service.workers} workers, {service.clients} "
          f"client(s)" + (f", seeded bug {service.bug}" if service.bug else ""))
    code = validate_recorded(paths, service, spec, origins)
    print("  the clients' history is not in the trace: check it with lockstep linearizable HISTORY --model psmr-kv "
          "(written by --history)")
    return code


def _service(data: object, where: str) -> ServiceConfig:
    """The service's shape as a process's log records it (at `where`, file:line), each field of its declared type."""
    from dataclasses import fields

    if not isinstance(data, dict):
        raise TraceError(f"{where}: the header's service must be an object")
    kinds = {"int": int, "float": (int, float), "str": str}
    out = {}
    for f in fields(ServiceConfig):
        v = data.get(f.name)
        want = kinds[str(f.type)]
        if v is None or isinstance(v, bool) or not isinstance(v, want):
            raise TraceError(f"{where}: the header's service.{f.name} must be a{'n' if f.type == 'int' else ''} "
                             f"{f.type}, got {v!r:.40}")
        out[f.name] = v
    svc = ServiceConfig(**out)
    if (svc.bug and svc.bug not in BUGS) or (svc.cg != "keys" and svc.cg not in SEEDED_CG.values()):
        raise TraceError(f"{where}: the header names an unknown seeded bug or C-G ({svc.bug!r}, {svc.cg!r})")
    return svc
