"""`lockstep run autobahn`: n = 3f+1 signed replica processes and a client load, with faults, then the run
validated against the spec's properties."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile

from lockstep.checker.errors import UsageError
from lockstep.checker.loader import parse_params
from lockstep.checker.validation.runtrace import collect

from ..interrupted import interrupted_exit
from .run import Plan, load_plan, run
from .validate import RunInvalid, validate

SPEC_NAMES = ("autobahn", "lockstep.specs.autobahn:Autobahn")


def is_autobahn(spec: str) -> bool:
    return spec in SPEC_NAMES


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("autobahn (signed replicas and a client load)")
    g.add_argument("--rate", type=int, help="client transactions per second (512 bytes each; default 20000)")


def run_autobahn_command(args: argparse.Namespace) -> int:
    params = parse_params(args.param)
    unknown = sorted(set(params) - {"f"})
    if unknown:
        raise UsageError(f"--param {unknown[0]}: `lockstep run autobahn` takes only f (the spec's bounds and quorum "
                         "parameters are for checking; the processes use the paper's quorums)")
    f = params.get("f", 1)
    if not 1 <= f <= 3:
        raise UsageError(f"--param f={f}: between 1 and 3")
    rate = 20_000 if args.rate is None else args.rate
    if not 1 <= rate <= 1_000_000:
        raise UsageError(f"--rate {rate}: between 1 and 1000000 transactions per second")
    n = 3 * f + 1
    plan = load_plan(args.faults, n) if args.faults else Plan()
    duration = args.duration or 2.0
    byz = "".join(f", replica {p} Byzantine ({b})" for p, b in plan.byzantine.items())
    print(f"Running Autobahn: {n} replicas (f={f}), ed25519-signed messages, a client at {rate:,} tx/s of 512 bytes, "
          f"for {duration:g} s" + (f", faults from {args.faults}" if args.faults else "") + byz)
    tmp = tempfile.mkdtemp(prefix="lockstep-autobahn-")
    try:
        rep = run(duration, tmp, plan, f, rate, args.seed,
                  progress=lambda t: print(f"progress: {t:.0f} s of {duration:g} s", file=sys.stderr, flush=True))
        c = rep.client
        print(f"  {c.get('acked', 0):,} of {c.get('sent', 0):,} transactions executed: {rep.throughput:,.0f} tx/s, "
              f"latency p50 {c.get('p50_ms', 0):.0f} ms, p99 {c.get('p99_ms', 0):.0f} ms")
        for p, r in sorted(rep.replicas.items()):
            st, rj = r.get("stats", {}), r.get("rejections", {})
            why = ", ".join(f"{v} {k}" for k, v in sorted(rj.items()))
            print(f"  replica {p}: {st.get('committed', 0)} slots committed, {st.get('signed', 0):,} signatures made, "
                  f"{st.get('verified', 0):,} verified, {st.get('rejected', 0)} messages rejected" + (f" ({why})" if why else ""))
        for note in rep.notes:
            print(f"  note: {note}")
        if args.trace:
            collect(rep.traces, args.trace, "autobahn", rep.notes)
            print(f"Trace written to {args.trace}: every replica's events in its order, one JSON object per line with "
                  "its pid")
        if args.no_validate or args.no_trace:
            return interrupted_exit(rep.interrupted, 0)
        try:
            val = validate(rep.traces, n, set(plan.byzantine))
        except RunInvalid as e:
            print(f"Invalid: the run breaks the spec: {e}")
            return 1
        print(f"Valid: {val.events:,} events, {val.slots} slots, {val.commits} commits and {val.votes:,} signed votes "
              "satisfy agreement, prefix-consistent logs, authentic certificates, vote-once, the lock after a commit "
              "and k = 1")
        return interrupted_exit(rep.interrupted, 0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
