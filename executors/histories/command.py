"""`lockstep harness SYSTEM...`: drive real systems with concurrent clients under a fault schedule, record their
histories and check them for linearizability; one table compares the systems.

Systems: `etcd` (a 3-node cluster, linearizable reads), `etcd-serializable` (the same with `serializable` reads,
which etcd documents may be stale), `psmr` (Lockstep's P-SMR key-value service, its own clients recording).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

from lockstep.checker.commands.common import natural
from lockstep.checker.errors import UsageError
from lockstep.checker.linearizability.report import verdict_lines
from lockstep.checker.safeio import open_input, write_text
from lockstep.checker.trace import shell_word

from .experiment import Outcome
from .schedule import PRESETS, ScheduleError, parse_schedule

NAME = "harness"
HELP = ("drive a real system (a 3-node etcd, or Lockstep's P-SMR service) with concurrent clients while a fault "
        "schedule kills, pauses and restarts nodes; record the history and check it for linearizability")
SYSTEMS = ("etcd", "etcd-serializable", "psmr")


def seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < v <= 3600:
        raise argparse.ArgumentTypeError(f"{v:g} is not between 0 and 3600 seconds")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("systems", nargs="+", choices=SYSTEMS, metavar="SYSTEM",
                   help="etcd (linearizable reads), etcd-serializable (reads with serializable=true), psmr")
    p.add_argument("--faults", default="mixed", metavar="SCHEDULE",
                   help=f"a preset ({', '.join(PRESETS)}; default mixed: kill and restart a follower, then pause "
                        "and resume the leader) or ACTION:TARGET@SECONDS,... with ACTION kill, restart, pause, resume "
                        "and TARGET leader, follower or a node number")
    p.add_argument("--duration", type=seconds, default=5.0, metavar="S", help="seconds the clients run (default 5)")
    p.add_argument("--clients", type=natural, default=5, metavar="N", help="concurrent clients (default 5)")
    p.add_argument("--keys", type=natural, default=3, metavar="K", help="keys the clients use (default 3)")
    p.add_argument("--seed", type=natural, default=0, help="seed of the clients' and the nemesis' choices")
    p.add_argument("--budget", type=seconds, default=60.0, metavar="S",
                   help="seconds for each linearizability check (default 60)")
    p.add_argument("--history-dir", metavar="DIR", help="write each history as DIR/SYSTEM.jsonl (default: a new "
                                                        "directory in the system's temporary one)")


def run(args: argparse.Namespace) -> int:
    from .etcd import EtcdError
    from .experiment import run_etcd

    if not 1 <= args.clients <= 64 or not 1 <= args.keys <= 100:
        raise UsageError("--clients must be 1..64 and --keys 1..100")
    if args.history_dir and not os.path.isdir(args.history_dir):
        raise UsageError(f"--history-dir {args.history_dir}: not a directory")
    try:
        faults = parse_schedule(args.faults, args.duration, 3)
    except ScheduleError as e:
        raise UsageError(f"--faults: {e}") from None
    outcomes: list[Outcome] = []
    keep = args.history_dir or tempfile.mkdtemp(prefix="lockstep-histories-")
    for system in args.systems:
        print(f"== {system}: {args.clients} clients on {args.keys} keys for {args.duration:g} s, faults {args.faults}",
              flush=True)
        directory = tempfile.mkdtemp(prefix=f"lockstep-{system}-")
        try:
            if system == "psmr":
                from .psmr import run_psmr

                o = run_psmr(directory, args.duration, faults, clients=args.clients, keys=args.keys, seed=args.seed,
                             budget=args.budget, progress=lambda t: print(f"  {t}", flush=True))
            else:
                try:
                    o = run_etcd(directory, args.duration, faults, clients=args.clients, keys=args.keys,
                                 serializable=system == "etcd-serializable", seed=args.seed, budget=args.budget,
                                 progress=lambda t: print(f"  {t}", flush=True))
                except EtcdError as e:
                    raise UsageError(str(e)) from None
            kept = os.path.join(keep, f"{system}.jsonl")
            with open_input(o.history) as fh:
                write_text(kept, fh.read().decode("utf-8"))
            _report(o, kept)
            outcomes.append(o)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    if len(outcomes) > 1:
        print()
        print(table(outcomes))
    sys.stdout.flush()
    codes = [o.verdict.exit_code for o in outcomes]
    return 1 if 1 in codes else 3 if 3 in codes else 0


def _report(o: Outcome, kept: str) -> None:
    print("  fault timeline:" if o.timeline else "  no faults")
    for s in o.timeline:
        print(f"    {s.describe()}")
    for note in o.notes:
        print(f"  note: {note}")
    c = o.counts
    print(f"  {c.get('ok', 0):,} calls completed ({c.get('fail', 0):,} failed, {c.get('info', 0):,} indeterminate) in "
          f"{o.seconds:.2f} s: {o.throughput:,.0f} operations/s")
    for line in verdict_lines(o.verdict):
        print(f"  {line}")
    print(f"  history: {kept}")
    if o.verdict.verdict == "not linearizable":
        print(f"  draw it: lockstep draw {shell_word(kept)} --model {o.model} --out window.html")


def table(outcomes: list[Outcome]) -> str:
    """One line per system: throughput, calls, faults, verdict."""
    rows = [("system", "ops/s", "ok", "fail", "info", "faults", "verdict")]
    for o in outcomes:
        done = [s.action for s in o.timeline if s.done]
        faults = ", ".join(f"{done.count(a)} {a}" for a in ("kill", "restart", "pause", "resume") if a in done) or "none"
        v = o.verdict
        verdict = v.verdict + (f" (window of {len(v.window)})" if v.verdict == "not linearizable" else "")
        rows.append((o.system, f"{o.throughput:,.0f}", f"{o.counts.get('ok', 0):,}", f"{o.counts.get('fail', 0):,}",
                     f"{o.counts.get('info', 0):,}", faults, verdict))
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) if k in (0, 5, 6) else cell.rjust(w) for k, (cell, w)
                               in enumerate(zip(row, widths))).rstrip() for row in rows)
