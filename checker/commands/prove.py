"""`lockstep prove SPEC --invariant NAME`: prove an invariant by (k-)induction with z3."""

from __future__ import annotations

import argparse
import sys

from ..loader import parse_params
from ..progress import stderr_say
from ..trace import follow_up
from .common import add_full_argument, add_spec_arguments, load_typed, output_file, positive, print_trace
from .json_result import add_format_argument, of

NAME = "prove"
HELP = "prove that an invariant holds in every reachable state (k-induction with z3)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_spec_arguments(p)
    p.add_argument("--invariant", required=True, metavar="NAME", help="the invariant to prove")
    p.add_argument("--with", dest="assumed", action="append", default=[], metavar="INV2,INV3",
                   help="strengthen it with these invariants (proved together with it; repeatable)")
    p.add_argument("--k", type=positive, default=1, metavar="K", help="induction depth (default 1: plain induction)")
    p.add_argument("--out", type=output_file, metavar="FILE",
                   help="write the counterexample (or counterexample to induction) to FILE")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    add_format_argument(p)
    add_full_argument(p)


def run(args: argparse.Namespace) -> int:
    from ..smt.induction import NOT_INDUCTIVE, PROVED, REFUTED, prove

    model = load_typed(args.spec, parse_params(args.param), "prove")
    assumed = [n.strip() for item in args.assumed for n in item.split(",") if n.strip()]
    ps = ", ".join(f"{k}={v}" for k, v in model.params.items())
    how = "induction" if args.k == 1 else f"{args.k}-induction"
    print(f"Proving {args.invariant} of {model.name}" + (f" ({ps})" if ps else "") + f" by {how}"
          + (f", strengthened with {', '.join(assumed)}" if assumed else ""))
    res = prove(model, args.invariant, assumed, args.k, say=stderr_say(args.quiet))
    if res.verdict == PROVED:
        print(f"\nProved: {args.invariant} holds in every reachable state ({res.reason}).")
    elif res.verdict == REFUTED:
        print(f"\nRefuted: {res.reason}.")
    elif res.verdict == NOT_INDUCTIVE:
        print(f"\nNot inductive: {res.reason}. This is no violation: the first state need not be reachable.")
        print("Strengthen the invariant (--with) so that it excludes that state, or try a larger --k.")
    else:
        print(f"\nUnknown: {res.reason}.")
    if res.trace is not None:
        steps = len(res.trace.steps) - 1
        kind = "Counterexample" if res.verdict == REFUTED else "Counterexample to induction"
        print(f"{kind} ({steps} step{'s' if steps != 1 else ''}):")
        print_trace(res.trace, model, args.full)
        if args.out:
            res.trace.save(args.out)
            print(f"Trace written to {args.out} (replay it: {follow_up('replay', args.out, res.trace.spec)})")
    print(f"  {res.seconds:.2f} s")
    sys.stdout.flush()
    if (rep := of(args)) is not None:
        steps = None if res.trace is None else len(res.trace.steps) - 1
        rep.update(verdict=res.verdict, spec=model.name, params=dict(model.params),
                   checked={"invariant": args.invariant, "with": assumed, "k": args.k}, seconds=res.seconds,
                   counts={"trace_steps": steps}, options={"k": args.k}, notes=[res.reason] if res.reason else None,
                   trace=args.out if args.out and res.trace is not None else None)
    return res.exit_code
