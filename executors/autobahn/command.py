"""`lockstep run autobahn`: n = 3f+1 signed replica processes and a client load, with faults, then the run
validated against the spec's properties and, slot by slot and lane by lane, step by step against the spec."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile

from lockstep.checker.errors import UsageError
from lockstep.checker.loader import parse_params
from lockstep.checker.trace import TraceError
from lockstep.checker.validation.origins import Origins
from lockstep.checker.validation.runtrace import collect

from ..interrupted import interrupted_exit
from .replica import BEHAVIOURS, BUGS, MAX_K, K
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
    unknown = sorted(set(params) - {"f", "coverage", "k"})
    if unknown:
        raise UsageError(f"--param {unknown[0]}: `lockstep run autobahn` takes only f, coverage and k (the spec's bounds "
                         "and quorum parameters are for checking; the processes use the paper's quorums)")
    f = params.get("f", 1)
    if not 1 <= f <= 3:
        raise UsageError(f"--param f={f}: between 1 and 3")
    coverage = params.get("coverage", 2 * f + 1)
    if not 1 <= coverage <= 3 * f + 1:
        raise UsageError(f"--param coverage={coverage}: between 1 and n = {3 * f + 1} lanes (default 2f+1 = {2 * f + 1})")
    k = params.get("k", K)
    if not 1 <= k <= MAX_K:
        raise UsageError(f"--param k={k}: between 1 and {MAX_K} slots running at once (default {K}, the artifact's: slot s "
                         "opens once slot s-k has committed)")
    rate = 20_000 if args.rate is None else args.rate
    if not 1 <= rate <= 1_000_000:
        raise UsageError(f"--rate {rate}: between 1 and 1000000 transactions per second")
    if args.bug is not None and args.bug not in BUGS:
        raise UsageError(f"--bug {args.bug}: not a seeded bug of the Autobahn replicas (its bugs: "
                         + "; ".join(f"{k}: {v}" for k, v in BUGS.items()) + ")")
    n = 3 * f + 1
    plan = load_plan(args.faults, n) if args.faults else Plan()
    duration = args.duration or 2.0
    byz = "".join(f", replica {p} Byzantine ({b})" for p, b in plan.byzantine.items())
    buggy = min(p for p in range(n) if p not in plan.byzantine)
    bug = f"; seeded bug {args.bug} in replica {buggy}: {BUGS[args.bug]}" if args.bug else ""
    print(f"Running Autobahn: {n} replicas (f={f}, coverage {coverage}, k = {k}), ed25519-signed messages, a client at {rate:,} "
          "tx/s of 512 bytes, "
          f"for {duration:g} s" + (f", faults from {args.faults}" if args.faults else "") + byz + bug)
    tmp = tempfile.mkdtemp(prefix="lockstep-autobahn-")
    try:
        rep = run(duration, tmp, plan, f, rate, args.seed,
                  progress=lambda t: print(f"progress: {t:.0f} s of {duration:g} s", file=sys.stderr, flush=True),
                  bug=args.bug or "", coverage=coverage, k=k)
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
        origins = Origins()  # where the replicas' lines are in --trace FILE, which messages then name
        for pid, path in rep.traces.items():
            origins.label(path, f"replica {pid}'s log")  # without --trace: files that are gone after the run
        if args.trace:
            collect(rep.traces, args.trace, "autobahn", rep.notes, origins)
            print(f"Trace written to {args.trace}: every replica's log in the event schema, one JSON object per line "
                  "with its pid")
        if args.no_validate or args.no_trace:
            return interrupted_exit(rep.interrupted, 0)
        return interrupted_exit(rep.interrupted, validate_recorded(rep.traces, n, plan.byzantine, origins, coverage,
                                                                   k=k))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def validate_recorded(traces: dict[int, str], n: int, byzantine: dict[int, str], origins: Origins | None = None,
                      coverage: int | None = None, lanes: bool = True, k: int = K) -> int:
    """Check a run's logs (replica -> path; `coverage`: the replicas', None: 2f+1; `lanes=False`: a run of the baseline
    without lanes; `k`: the slots the replicas ran at once) against the spec's properties, then
    step by step against the spec, slot by slot and lane by lane (`conformance.py`); print the outcomes, each place
    named in the user's file (`origins`: where the logs' lines are in it); the exit code (0 valid, 1 not, 3 a log cut
    short or inconclusive)."""
    from .conformance import print_steps, validate_steps

    origins = origins or Origins()
    try:
        val = validate(traces, n, set(byzantine), coverage, lanes, k)
    except RunInvalid as e:
        print(origins.relocate(f"Invalid: the run breaks the spec: {e}"))
        code = 1
    else:
        print(f"Valid: {val.events:,} events, {val.slots} slots, {val.commits} commits and {val.votes:,} signed votes "
              "satisfy agreement, prefix-consistent logs, authentic certificates, vote-once, the lock after a commit, "
              + (f"k = {k} and coverage {(n - 1) // 3 * 2 + 1 if coverage is None else coverage}" if lanes
                 else f"k = {k} (the baseline without lanes: batches, no coverage)"))
        code = 0
    try:
        with origins.naming():
            steps = validate_steps(traces, n, byzantine,
                                   progress=lambda what: print(f"progress: {what}", file=sys.stderr, flush=True),
                                   origins=origins)
    except RunInvalid as e:
        print(origins.relocate(f"Invalid: a replica's log is malformed: {e}"))
        return 1
    return code or print_steps(steps, origins)


def validate_collected(paths: dict[int, str], spec: str, origins: Origins | None = None) -> int:
    """`lockstep validate FILE` of a run's `--trace FILE` (split into its replicas' logs, `paths`; `origins`: where
    their lines are in FILE, which messages name), as the run was validated; the exit code."""
    origins = origins or Origins()
    n = len(paths)
    byzantine: dict[int, str] = {}
    bugs = set()
    coverages, modes, ks = set(), set(), set()
    for pid, path in paths.items():
        with open(path, encoding="utf-8") as fh:
            first = fh.readline()
        try:
            head = json.loads(first)
        except ValueError:
            raise TraceError(origins.relocate(f"{path}:1: not a replica's log (its first line is not JSON)")) from None
        ok = isinstance(head, dict) and head.get("node") == pid and isinstance(head.get("n"), int) \
            and head.get("byzantine") in BEHAVIOURS and head.get("bug", "") in ("", *BUGS) \
            and isinstance(head.get("coverage"), int) and not isinstance(head["coverage"], bool) \
            and 1 <= head["coverage"] <= head["n"] and isinstance(head.get("lanes"), bool) \
            and isinstance(head.get("k", 1), int) and not isinstance(head.get("k"), bool) \
            and 1 <= head.get("k", 1) <= MAX_K  # a log without k: of a runtime that ran one slot at a time
        if not ok:
            raise TraceError(origins.relocate(f"{path}:1: replica {pid}'s log does not start with its header (node, n, "
                                              f"f, byzantine, bug, coverage 1..n, lanes, k 1..{MAX_K})"))
        coverages.add(head["coverage"])
        modes.add(head["lanes"])
        ks.add(head.get("k", 1))
        n = head["n"]
        if head["byzantine"]:
            byzantine[pid] = head["byzantine"]
        if head.get("bug"):
            bugs.add(head["bug"])
    if sorted(paths) != list(range(n)) or (n - 1) % 3 or not 4 <= n <= 10:
        raise TraceError(f"the file holds the logs of replicas {sorted(paths)}; a run of {n} replicas (3f+1, f <= 3) "
                         "has one per replica")
    if len(coverages) > 1 or len(modes) > 1 or len(ks) > 1:
        raise TraceError(f"the replicas' headers name different coverages {sorted(coverages)}, modes (lanes "
                         f"{sorted(modes)}) or k {sorted(ks)}; a run has one")
    print(f"validating a run of {spec}: {n} replicas" + "".join(f", replica {p} Byzantine ({b})"
                                                             for p, b in byzantine.items())
          + "".join(f", seeded bug {b}" for b in sorted(bugs)))
    return validate_recorded(paths, n, byzantine, origins, coverages.pop(), modes.pop(), ks.pop())
