"""`lockstep algebra`: refinement, traces and laws of the fair synchronous concurrent program algebra."""

from __future__ import annotations

import argparse

from ..algebra import DEFAULT_LIMIT, check_refines
from .common import natural, output_file, positive, write_text

REFUTE_FACTOR = 5  # a law expected to be false gets this many times the examples to find its counterexample
NAME = "algebra"
HELP = "commands of the fair synchronous concurrent program algebra: refinement, traces, laws"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="algebra_command", metavar="ACTION")
    sub.required = True
    r = sub.add_parser("refines", help="decide C ⊑ D: every trace of D is a trace of C",
                       description="Decide C ⊑ D exactly: every trace of D (finite, terminated, aborted or infinite "
                                   "and fair) is a trace of C, up to C's aborts.")
    r.add_argument("spec", metavar="C", help="the abstract command, e.g. 'chaos'")
    r.add_argument("impl", metavar="D", help="the concrete command, e.g. 'skip'")
    _states(r)
    r.add_argument("--limit", type=positive, default=DEFAULT_LIMIT, metavar="N",
                   help="word classes the infinite-trace check may store before it gives up (exit 3)")
    r.set_defaults(action=_refines)
    t = sub.add_parser("traces", help="list the traces of C up to a depth")
    t.add_argument("command", metavar="C")
    _states(t)
    t.add_argument("--depth", type=natural, metavar="K", help="at most K steps (required: most commands have "
                                                              "infinitely many traces)")
    t.set_defaults(action=_traces)
    law = sub.add_parser("laws", help="check the algebra's laws on generated commands and print the table")
    law.add_argument("--states", type=positive, default=1, metavar="N", help="Σ = {0..N-1} (default 1)")
    law.add_argument("--examples", type=positive, default=20, metavar="E", help="generated examples per law")
    law.add_argument("--leaves", type=positive, default=3, metavar="L", help="leaves per generated command")
    law.add_argument("--law", action="append", default=[], metavar="NAME", help="check only this law (repeatable)")
    law.add_argument("--out", type=output_file, metavar="FILE", help="also write the table (Markdown) to FILE")
    law.set_defaults(action=_laws)


def _states(p: argparse.ArgumentParser) -> None:
    p.add_argument("--states", type=positive, default=2, metavar="N", help="the state space Σ = {0..N-1} (default 2)")


def run(args: argparse.Namespace) -> int:
    return args.action(args)


def _refines(args: argparse.Namespace) -> int:
    from lockstep.specs.fair_algebra.syntax import parse  # lark, and its grammar, only when the command runs

    spec, impl = parse(args.spec, args.states), parse(args.impl, args.states)
    r = check_refines(spec, impl, args.states, args.limit)
    print(f"Σ = {{0..{args.states - 1}}}: " + r.describe())
    v = r.verdict
    if r.holds:
        print(f"  exact: {v.pairs:,} (trace prefix, state set) pairs for finite traces, "
              f"{v.graphs:,} word classes for infinite traces")
        return 0
    if r.holds is None:
        print(f"  no counterexample found before the limit; raise --limit (now {args.limit:,}) to go further")
        return 3
    return 1


def _traces(args: argparse.Namespace) -> int:
    from ..errors import UsageError

    if args.depth is None:
        raise UsageError("lockstep algebra traces needs --depth K: a command may have infinitely many traces, so the "
                         "listing must be bounded (e.g. --depth 3)")
    from lockstep.specs.fair_algebra.semantics import CommandAutomaton, Semantics
    from lockstep.specs.fair_algebra.syntax import parse
    from lockstep.specs.fair_algebra.traces import enumerate_traces, show_word

    command = parse(args.command, args.states)
    auto = CommandAutomaton(Semantics(args.states), command)
    counts = {"done": 0, "abort": 0, "infinite": 0, "prefix": 0}
    print(f"Traces of {command} over Σ = {{0..{args.states - 1}}} with at most {args.depth} steps "
          "(✓ terminated, ↯ aborted, … infeasible beyond this point, stem (loop)^ω infinite):")
    for end, word, loop in enumerate_traces(auto, args.depth):
        counts[end] += 1
        print("  " + show_word(word, end, loop))
    print(f"{counts['done']} terminated, {counts['abort']} aborted, {counts['prefix']} infeasible, "
          f"{counts['infinite']} infinite (bounded by depth {args.depth})")
    return 0


def _laws(args: argparse.Namespace) -> int:
    from lockstep.proofs.fair_algebra_laws import LAWS, check_law, table

    from ..errors import UsageError

    laws = LAWS
    if args.law:
        known = {law.name: law for law in LAWS}
        missing = [n for n in args.law if n not in known]
        if missing:
            raise UsageError(f"no law named {missing[0]!r} (laws: {', '.join(known)})")
        laws = [known[n] for n in args.law]
    results = []
    for law in laws:
        examples = args.examples if law.expect else REFUTE_FACTOR * args.examples
        r = check_law(law, n=args.states, examples=examples, max_leaves=args.leaves)
        print(f"  {'ok ' if r.ok else 'BAD'} {law.name}: {r.outcome}", flush=True)
        results.append(r)
    text = table(results)
    if args.out:
        write_text(args.out, text)
        print(f"table written to {args.out}")
    bad = [r.law.name for r in results if not r.ok]
    print(f"{len(results) - len(bad)} of {len(results)} laws as expected" + (f"; unexpected: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0
