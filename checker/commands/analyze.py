"""`lockstep analyze SPEC`: exact Markov-chain measures of a population protocol."""

from __future__ import annotations

import argparse
import inspect
import math
import sys
import time

import numpy as np

from lockstep.specs.lang.population import Population

from ..loader import LoadError, parse_params, resolve
from ..probabilistic import analysis, dtmc, exact
from ..progress import Heartbeat, stderr_say
from .common import add_spec_arguments, positive

NAME = "analyze"
HELP = "exact analysis of a population protocol's Markov chain: reachability, hitting and holding times"

MEASURES = ("reach", "hitting-time", "holding-time", "transient")


def load_population(ref: str, params: dict[str, int]) -> Population:
    """The population protocol named by `ref`, built for `params`."""
    obj, _ = resolve(ref)
    if inspect.isclass(obj) and issubclass(obj, Population):
        return obj(**params)
    if isinstance(obj, Population):
        return obj
    raise LoadError(f"{ref} is not a population protocol: this command needs a Population subclass "
                    "(lockstep.specs.lang.population)")


def target_name(protocol: Population, name: str | None) -> str:
    """The predicate to use as target (default: the protocol's first)."""
    names = protocol.predicate_names()
    if not names:
        raise LoadError(f"{protocol.name} declares no @predicate to use as a target")
    if name is None:
        return names[0]
    if name not in names:
        raise LoadError(f"{protocol.name} has no predicate {name!r} (its predicates: {', '.join(names)})")
    return name


def steps_list(text: str) -> list[int]:
    try:
        values = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of interaction counts") from None
    if not values or values[0] < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give non-negative interaction counts, e.g. 0,100,1000")
    return values


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_spec_arguments(p)
    p.add_argument("--measure", choices=MEASURES, default="hitting-time",
                   help="reach: probability of ever reaching the target; hitting-time: expected interactions "
                        "to reach it; holding-time: expected interactions until it is left; transient: "
                        "probability of being in it after given numbers of interactions")
    p.add_argument("--target", metavar="PREDICATE", help="the set of configurations measured (default: the first predicate)")
    p.add_argument("--start", metavar="NAME", help="start configurations (default: the protocol's first start)")
    p.add_argument("--at", type=steps_list, metavar="T1,T2,...", help="interaction counts for --measure transient")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--exact", action="store_true", help="also solve in exact rational arithmetic (small chains only)")
    p.add_argument("--max-configs", type=positive, default=dtmc.DEFAULT_LIMIT, metavar="N",
                   help=f"refuse chains with more configurations (default {dtmc.DEFAULT_LIMIT:,})")


def run(args: argparse.Namespace) -> int:
    from ..errors import UsageError

    protocol = load_population(args.spec, parse_params(args.param))
    target = target_name(protocol, args.target)
    if args.measure == "transient" and not args.at:
        raise UsageError("--measure transient needs --at T1,T2,... (numbers of interactions)")
    if args.at and args.measure != "transient":
        raise UsageError(f"--at applies to --measure transient (the distribution after T interactions); --measure "
                         f"{args.measure} does not read it")
    if args.exact and args.measure not in ("hitting-time", "holding-time"):
        raise UsageError("--exact applies to --measure hitting-time and holding-time")
    ps = ", ".join(f"{k}={v}" for k, v in protocol.params.items())
    began = time.monotonic()
    print(f"building the configuration chain of {protocol.name} ({ps}) ...", file=sys.stderr, flush=True)
    say = stderr_say(args.quiet)
    with Heartbeat(say, "building the configuration chain"):
        chain = dtmc.build(protocol, args.start, args.max_configs, args.spec)
    n = protocol.n
    print(f"Analyzing {protocol.name} ({ps}): {chain.size:,} configurations of {protocol.Q} agent states "
          f"reachable from start {chain.start_name} ({len(chain.starts):,} start configuration"
          f"{'s' if len(chain.starts) != 1 else ''}), {chain.P.nnz:,} transitions, built in {time.monotonic() - began:.2f} s")
    mask = chain.mask(target)
    print(f"  target {target}: {int(mask.sum()):,} configurations")
    began = time.monotonic()
    with Heartbeat(say, f"solving for the {args.measure.replace('-', ' ')}"):
        code = MEASURE_RUNNERS[args.measure](chain, mask, target, args)
    print(f"  solved in {time.monotonic() - began:.2f} s (one interaction = 1/{n} parallel time)")
    return code


def _worst(chain: dtmc.Chain, values: np.ndarray, among: np.ndarray, largest: bool = True) -> int:
    idx = np.flatnonzero(among)
    return int(idx[np.argmax(values[idx]) if largest else np.argmin(values[idx])])


def _time(x: float, n: int) -> str:
    return "infinite" if math.isinf(x) else f"{x:,.4f} interactions ({x / n:,.4f} parallel time)"


def _reach(chain: dtmc.Chain, mask: np.ndarray, target: str, args: argparse.Namespace) -> int:
    x = analysis.reach_probability(chain, mask)
    starts = np.zeros(chain.size, dtype=bool)
    starts[chain.starts] = True
    w = _worst(chain, x, starts, largest=False)
    print(f"probability of ever reaching {target}:")
    print(f"  lowest over the start configurations: {x[w]:.6g}, from {chain.describe(w)}")
    never = int((x[starts] == 0).sum())
    if x[w] < 1:
        print(f"  {int((x[starts] < 1).sum()):,} start configurations may never reach it ({never:,} never do)")
        return 1
    print("  every start configuration reaches it with probability 1")
    return 0


def _hitting(chain: dtmc.Chain, mask: np.ndarray, target: str, args: argparse.Namespace) -> int:
    n = chain.protocol.n
    h = analysis.hitting_times(chain, mask)
    starts = np.zeros(chain.size, dtype=bool)
    starts[chain.starts] = True
    w = _worst(chain, h, starts)
    print(f"expected interactions until {target}:")
    print(f"  worst start configuration: {_time(h[w], n)}, from {chain.describe(w)}")
    finite = np.isfinite(h[starts])
    if finite.any():
        print(f"  mean over the start configurations that reach it surely: {_time(float(h[starts][finite].mean()), n)}")
    if args.exact:
        he = exact.hitting_times(chain, mask)
        print(f"  exact value at the worst start: {he[w] if he[w] is not None else 'infinite'}")
    if not finite.all():
        print(f"  {int((~finite).sum()):,} start configurations reach {target} with probability below 1 "
              f"(e.g. {chain.describe(int(np.flatnonzero(starts & ~np.isfinite(h))[0]))})")
        return 1
    return 0


def _holding(chain: dtmc.Chain, mask: np.ndarray, target: str, args: argparse.Namespace) -> int:
    n = chain.protocol.n
    h = analysis.holding_times(chain, mask)
    if not mask.any():
        print(f"  no reachable configuration satisfies {target}")
        return 1
    lo, hi = _worst(chain, h, mask, largest=False), _worst(chain, h, mask)
    print(f"expected interactions until {target} is left:")
    print(f"  shortest, over the configurations in {target}: {_time(h[lo], n)}, from {chain.describe(lo)}")
    print(f"  longest: {_time(h[hi], n)}, from {chain.describe(hi)}")
    inside = [int(i) for i in chain.starts if mask[i]]
    if inside:
        print(f"  from the start configuration{'s' if len(inside) > 1 else ''} in {target}: "
              + "; ".join(_time(h[i], n) for i in inside[:5]))
    if args.exact:
        he = exact.holding_times(chain, mask)
        for i in inside[:5] or [lo]:
            print(f"  exact value from {chain.describe(i)}: {he[i] if he[i] is not None else 'infinite'}")
    return 0


def _transient(chain: dtmc.Chain, mask: np.ndarray, target: str, args: argparse.Namespace) -> int:
    n = chain.protocol.n
    pi0 = np.zeros(chain.size)
    pi0[chain.starts] = 1.0 / len(chain.starts)
    dists = analysis.transient(chain, pi0, args.at)
    print(f"probability that {target} holds after T interactions (start: uniform over the start configurations):")
    for t, d in zip(args.at, dists):
        print(f"  T = {t:>8,} ({t / n:,.2f} parallel time): {float(d @ mask):.6f}")
    return 0


MEASURE_RUNNERS = {"reach": _reach, "hitting-time": _hitting, "holding-time": _holding, "transient": _transient}
