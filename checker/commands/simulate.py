"""`lockstep simulate SPEC`: random walks of any spec that check its invariants, deadlocks and steps
(`simulate_walks`); for a population protocol, batched simulation, hitting times with confidence
intervals, a statistical check of a time bound, and a plot of one run."""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import TYPE_CHECKING

from lockstep.specs.lang.population import ALL, Population

from ..errors import UsageError
from ..loader import LoadError, parse_params, resolve
from ..probabilistic import smc
from ..probabilistic.batched import AGENT_LIMIT, BATCH_CAP, Simulator, auto_method
from . import json_result
from .analyze import load_population, target_name
from .common import add_spec_arguments, natural, output_file, positive

if TYPE_CHECKING:
    from ..simulation import SimResult

NAME = "simulate"
HELP = ("random simulation: walks that check invariants, deadlocks and steps (any spec); population protocols: "
        "hitting times with confidence intervals, statistical checks, plots")
POPULATION_ONLY = ("start", "target", "leave", "time", "sequential", "within", "plot", "confidence", "prob",
                   "claim_confidence")
WITHIN_ONLY = ("prob", "claim_confidence")  # the claim --within tests
WALK_ONLY = ("depth", "workers", "out", "no_deadlock", "invariant", "coverage", "cluster", "no_shorten")


def fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError(f"{v} is not strictly between 0 and 1")
    return v


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not v > 0 or math.isinf(v):
        raise argparse.ArgumentTypeError(f"{v} is not a positive number")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_spec_arguments(p)
    p.add_argument("--start", metavar="NAME", help="start configuration (default: the protocol's first concrete start)")
    p.add_argument("--target", metavar="PREDICATE", help="the set of configurations to reach (default: the first predicate)")
    p.add_argument("--leave", action="store_true",
                   help="measure how long the target holds: the time until it is first false (a holding time)")
    p.add_argument("--runs", type=positive, metavar="R",
                   help="independent runs (default 1000 walks; population protocols: 20)")
    p.add_argument("--depth", type=natural, metavar="D", help="steps per walk (default 100; not for population protocols)")
    p.add_argument("--workers", type=positive, metavar="N",
                   help="worker processes sharing the walks (default 1); with --cluster, Ray actors (default one "
                        "per CPU of the cluster)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="share the walks among Ray actors: local (a Ray instance started for the run), "
                        "ray://HOST:PORT (Ray Client) or HOST:PORT (a cluster's head); same result as one process")
    p.add_argument("--invariant", action="append", metavar="NAME", help="check only this invariant (repeatable)")
    p.add_argument("--no-deadlock", action="store_true", default=None, help="a walk may end in a state without steps")
    p.add_argument("--out", type=output_file, metavar="FILE", help="write the first violation's trace (JSON, ITF) to FILE")
    p.add_argument("--no-shorten", action="store_true",
                   help="report the violating walk as it is (default: minimised, then shortened by a bounded "
                        "breadth-first search)")
    p.add_argument("--coverage", type=output_file, metavar="FILE",
                   help="write per-action coverage (enabled / taken) as JSON to FILE")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    json_result.add_format_argument(p)
    p.add_argument("--time", type=positive_float, metavar="T",
                   help="parallel time (interactions / n) allowed per run (default 20·ln n + 50)")
    p.add_argument("--seed", type=natural, default=1, help="random seed (default 1)")
    p.add_argument("--sequential", action="store_true",
                   help="one interaction per step, so hitting times are exact to the interaction (slow for large n)")
    p.add_argument("--confidence", type=fraction, help="confidence of the reported intervals (default 0.95)")
    p.add_argument("--within", type=positive_float, metavar="C",
                   help="test the claim: the target is reached within C·n·ln n interactions with probability ≥ --prob")
    p.add_argument("--prob", type=fraction, help="probability for --within (default 0.99)")
    p.add_argument("--claim-confidence", type=fraction, metavar="Q",
                   help="confidence of the --within verdict (default 0.999)")
    p.add_argument("--plot", type=output_file, metavar="FILE.png", help="plot the outputs of one run over parallel time")


def concrete_start(protocol: Population, name: str | None) -> tuple[str, list[tuple[int, ...]]]:
    """The first start that names concrete configurations (simulation cannot start from ALL)."""
    names = [name] if name else protocol.start_names()
    for nm in names:
        got = protocol.start_configurations(nm)
        if got is not ALL:
            return nm, got
    which = f"start {name}" if name else f"every start of {protocol.name}"
    raise LoadError(f"{which} is 'every configuration', which cannot be simulated; choose a concrete start "
                    f"(its starts: {', '.join(protocol.start_names())})")


def _is_population(ref: str) -> bool:
    obj, _ = resolve(ref)
    return isinstance(obj, Population) or (isinstance(obj, type) and issubclass(obj, Population))


def _refuse(args: argparse.Namespace, names: tuple[str, ...], what: str) -> None:
    given = [n for n in names if getattr(args, n) not in (None, False, [])]
    if given:
        flags = ", ".join("--" + n.replace("_", "-") for n in given)
        raise UsageError(f"{flags}: {what}")


def run(args: argparse.Namespace) -> int:
    if not _is_population(args.spec):
        _refuse(args, POPULATION_ONLY, f"only for population protocols, and {args.spec} is not one; "
                "random walks take --runs, --depth, --seed, --workers")
        return simulate_walks(args)
    _refuse(args, WALK_ONLY, "for random walks of a state-machine spec; a population protocol is simulated by "
            "parallel time (--time) and checked against a target (--target, --within)")
    if args.within is None:
        _refuse(args, WITHIN_ONLY, "for the claim --within C tests; without --within there is none")
    args.runs = args.runs or 20
    args.confidence = 0.95 if args.confidence is None else args.confidence
    args.prob = 0.99 if args.prob is None else args.prob
    args.claim_confidence = 0.999 if args.claim_confidence is None else args.claim_confidence
    protocol = load_population(args.spec, parse_params(args.param))
    target = target_name(protocol, args.target)
    start, configs = concrete_start(protocol, args.start)
    n = protocol.n
    nlogn = n * math.log(n)
    horizon = args.time if args.time is not None else 20 * math.log(n) + 50
    limit = max(1, int(horizon * n))
    if args.sequential:  # one interaction at a time: the agent array while it fits, batches of one beyond
        method, max_batch = ("agents", None) if n <= AGENT_LIMIT else ("batched", 1)
    else:
        method, max_batch = auto_method(n, protocol.Q), None
    every = 1 if args.sequential else max(1, n // 100)
    test = (lambda c: not protocol.holds(target, c)) if args.leave else (lambda c: protocol.holds(target, c))
    event = f"{target} left" if args.leave else f"{target} reached"
    ps = ", ".join(f"{k}={v}" for k, v in protocol.params.items())
    print(f"Simulating {protocol.name} ({ps}) from start {start}: {args.runs} runs of at most "
          f"{horizon:g} parallel time, {_method(method, max_batch)}, seed {args.seed}")
    seeds = iter(range(args.seed * 1_000_003, args.seed * 1_000_003 + 10**9))
    began = time.monotonic()
    interactions = 0

    def one_run(k: int, budget: int) -> int | None:
        nonlocal interactions
        sim = Simulator(protocol, configs[k % len(configs)], seed=next(seeds), max_batch=max_batch, method=method)
        hit = sim.run_until(test, budget, every)
        interactions += sim.t
        return hit

    times = []
    report_at = began + 3.0
    for k in range(args.runs):
        times.append(one_run(k, limit))
        if time.monotonic() >= report_at:  # long simulations show progress on stderr
            report_at = time.monotonic() + 3.0
            print(f"progress: {k + 1} of {args.runs} runs, {interactions:,} interactions, "
                  f"{time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
    hits = [t for t in times if t is not None]
    elapsed = time.monotonic() - began
    print(f"  {event} in {len(hits)} of {args.runs} runs "
          f"({interactions:,} interactions in {elapsed:.2f} s, {interactions / max(elapsed, 1e-9):,.0f} interactions/s)")
    if hits:
        mean, half = smc.mean_interval(hits, args.confidence)
        kind = "holding" if args.leave else "hitting"
        print(f"  {kind} time: mean {mean:,.1f} ± {half:,.1f} interactions at confidence {args.confidence} "
              f"= {mean / n:,.3f} ± {half / n:,.3f} parallel time = {mean / nlogn:.3f} · n ln n; "
              f"min {min(hits) / n:,.3f}, max {max(hits) / n:,.3f} parallel time")
    if not args.sequential:
        batch = f"after each batch of about {min(0.63 * math.sqrt(n), BATCH_CAP):,.0f} interactions, " \
            if method == "batched" else ""
        print(f"  (the target is tested {batch}every {every:,} interactions; --sequential gives "
              "interaction-exact times)")
    code = 0
    if args.within is not None:
        code = _claim(args, protocol, event, one_run, nlogn)
    if args.plot:
        _plot(args, protocol, target, configs[0], horizon, method, max_batch)
    if (rep := json_result.of(args)) is not None:
        mean = smc.mean_interval(hits, args.confidence)[0] / n if hits else None
        rep.update(verdict=None if args.within is not None else "measured", spec=protocol.name,
                   params=dict(protocol.params), checked={"target": target, "leave": args.leave, "start": start,
                                                          "within": args.within, "prob": args.prob},
                   counts={"runs": args.runs, "reached": len(hits), "interactions": interactions}, seconds=elapsed,
                   options={"time": horizon, "seed": args.seed, "sequential": args.sequential},
                   details={"mean_parallel_time": mean})
    return code


def _method(method: str, max_batch: int | None) -> str:
    if max_batch is not None:
        return "sequential (batches of one interaction)"
    where = "an array of agents" if method == "agents" else "the configuration, in batches"
    return f"sequential scheduler on {where}"


def _claim(args: argparse.Namespace, protocol: Population, event: str, one_run, nlogn: float) -> int:
    bound = max(1, int(args.within * nlogn))
    confidence = args.claim_confidence
    alpha = 1.0 - confidence
    counter = iter(range(10**9))
    result = smc.sprt(lambda: one_run(next(counter), bound) is not None, args.prob, (1 - args.prob) / 2,
                      alpha, alpha, max_runs=20_000)
    lo, hi = smc.clopper_pearson(result.successes, result.runs, confidence)
    claim = (f"{event} within {args.within:g}·n·ln n = {bound:,} interactions "
             f"({bound / protocol.n:,.1f} parallel time) with probability ≥ {args.prob}")
    print(f"claim: {claim}")
    print(f"  {result.successes} of {result.runs} runs succeeded; Clopper–Pearson interval at confidence "
          f"{confidence}: [{lo:.4f}, {hi:.4f}]")
    verdict = {True: "holds", False: "is rejected", None: "is undecided after 20,000 runs"}[result.holds]
    if (rep := json_result.of(args)) is not None:
        rep.update(verdict={True: "holds", False: "violation", None: "inconclusive"}[result.holds])
    print(f"  sequential probability ratio test (indifference ±{(1 - args.prob) / 2:g}, error bounds α = β = "
          f"{alpha:.3g}): the claim {verdict} at confidence {confidence}")
    return {True: 0, False: 1, None: 3}[result.holds]


def _plot(args: argparse.Namespace, protocol: Population, target: str, config: tuple[int, ...],
          horizon: float, method: str, max_batch: int | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..render.population import save_figure

    n = protocol.n
    sim = Simulator(protocol, config, seed=args.seed, max_batch=max_batch, method=method)
    samples: list[tuple[float, dict, bool]] = []
    record = lambda s: samples.append((s.t / n, s.fractions(protocol.output), protocol.holds(target, s.config())))
    record(sim)
    step = max(1, int(n * horizon / 400))
    sim.run(int(horizon * n), every=step, observe=record)
    values = sorted({k for _, f, _ in samples for k in f}, key=repr)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ts = [t for t, _, _ in samples]
    for v in values:
        ax.plot(ts, [f.get(v, 0.0) for _, f, _ in samples], label=f"output {v!r}", lw=1.2)
    held = [t for t, _, ok in samples if ok]
    if held:
        ax.fill_between(ts, 0, 1, where=[ok for _, _, ok in samples], color="0.85", step="post",
                        label=f"{target}", zorder=0)
    ps = ", ".join(f"{k}={v}" for k, v in protocol.params.items())
    ax.set(xlabel="parallel time (interactions / n)", ylabel="fraction of agents", ylim=(0, 1.02),
           title=f"{protocol.name} ({ps})")
    ax.legend(loc="upper right", fontsize=8, ncol=2 if len(values) > 6 else 1)
    fig.tight_layout()
    try:
        save_figure(fig, args.plot)
    finally:
        plt.close(fig)
    print(f"plot of one run written to {args.plot}")


def simulate_walks(args: argparse.Namespace) -> int:
    """Random walks of a typed, actor or plain spec; exit 1 with the first violation's trace (minimised unless
    --no-shorten)."""
    from lockstep.api import minimise_walk

    from ..coverage import Coverage
    from ..loader import load_model
    from ..simulation import simulate
    from .common import print_violation

    runs, depth, workers = args.runs or 1000, 100 if args.depth is None else args.depth, args.workers or 1
    if args.cluster:
        from ..cluster import ClusterError, check_address

        try:
            check_address(args.cluster)
        except ClusterError as e:
            raise UsageError(str(e)) from None
    params = parse_params(args.param)
    model = load_model(args.spec, params, invariants=args.invariant or None)
    deadlock = not args.no_deadlock
    ps = ", ".join(f"{k}={v}" for k, v in model.params.items())
    actors = f"{workers} actor{'s' if workers > 1 else ''}" if args.workers else "one actor per CPU"
    where = f"on Ray ({args.cluster}), {actors}" if args.cluster else f"{workers} worker{'s' if workers > 1 else ''}"
    print(f"Simulating {model.name}" + (f" ({ps})" if ps else "") + f": {runs:,} random walks of at most {depth} "
          f"steps, seed {args.seed}, {where}")
    print(f"  invariants: {', '.join(model.invariant_names) or 'none'}; deadlock: "
          f"{'checked' if deadlock else 'not checked'}; step failures: checked")
    began = time.monotonic()
    shown = [began + 3.0]

    def tick(done: int, steps: int) -> None:
        if time.monotonic() >= shown[0]:
            shown[0] = time.monotonic() + 3.0
            print(f"progress: {done:,} of {runs:,} walks, {steps:,} steps, {time.monotonic() - began:.0f} s",
                  file=sys.stderr, flush=True)

    if args.cluster:
        res = _on_cluster(args, model, params, runs, depth, deadlock, None if args.quiet else tick)
    else:
        res = simulate(model, runs, depth, seed=args.seed, deadlock=deadlock, workers=workers,
                       tick=None if args.quiet else tick, say=None if args.quiet else
                       lambda text: print(f"progress: {text}", file=sys.stderr, flush=True))
    if res.violation is not None and not args.no_shorten:
        if not args.quiet:
            print(f"progress: minimising the violating walk ({len(res.violation.trace.steps) - 1} steps)",
                  file=sys.stderr, flush=True)
        minimise_walk(res, model)
    if res.violation is not None:
        print_violation(res.violation, args.out, model)
        print(f"  found by walk {res.violating_walk + 1:,} (seed {args.seed})")
    else:
        print(f"\nNo violation in {res.runs:,} walks (random simulation: not a proof).")
    rate = res.steps / res.seconds if res.seconds > 0 else 0.0
    print(f"  {res.runs:,} walks, {res.steps:,} steps in {res.seconds:.2f} s ({rate:,.0f} steps/s)")
    e = res.endings
    print(f"  walks ended: {e['depth']:,} after {depth} steps, {e['deadlock']:,} without a possible step, "
          f"{e['constraint']:,} outside a state constraint")
    if res.seen is not None:
        for line in res.seen.lines():
            print(line)
    for note in res.notes:
        print(f"  {note}")
    cov: Coverage = res.coverage
    cov.print(model, exhaustive=False)
    if args.coverage:
        cov.save(model, args.coverage, command="simulate", runs=res.runs, steps=res.steps, depth=depth, seed=args.seed,
                 states=res.seen.json() if res.seen is not None else None)
        print(f"  coverage written to {args.coverage}")
    sys.stdout.flush()
    if (rep := json_result.of(args)) is not None:
        rep.update(verdict="violation" if res.violation is not None else "no violation", spec=model.name,
                   params=dict(model.params), violation=json_result.violation_json(res.violation),
                   checked={"invariants": list(model.invariant_names), "deadlock": deadlock},
                   counts={"runs": res.runs, "steps": res.steps, "distinct": res.seen.distinct if res.seen else None,
                           **{f"ended_{k}": v for k, v in res.endings.items()}},
                   seconds=res.seconds, options={"runs": runs, "depth": depth, "seed": args.seed, "workers": workers},
                   reductions={"symmetry": False, "partial_order": False}, notes=list(res.notes),
                   trace=args.out if args.out and res.violation is not None else None,
                   details={"never_enabled": cov.never_enabled(model)})
    return res.exit_code


def _on_cluster(args: argparse.Namespace, model, params: dict[str, int], runs: int, depth: int, deadlock: bool,
                tick) -> SimResult:
    """The walks shared among Ray actors (`--cluster`)."""
    from ..cluster import ClusterError, ClusterSimulation, portable_ref

    def say(text: str) -> None:
        if not args.quiet:
            print("progress: " + text, file=sys.stderr, flush=True)

    try:
        return ClusterSimulation(model, portable_ref(args.spec), params, runs, depth, args.seed, deadlock,
                                 args.cluster, args.workers, tick=tick, say=say).run()
    except ClusterError as e:
        raise UsageError(str(e)) from None
