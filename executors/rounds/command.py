"""`lockstep run` for rounds specs: one process per node, a round barrier, validation, an independent check."""

from __future__ import annotations

import argparse
import sys
import time

from lockstep.checker.errors import UsageError
from lockstep.checker.loader import parse_params
from lockstep.checker.validation.rounds import report_rounds
from lockstep.specs.lang import Param
from lockstep.specs.lang.rounds.trees import parse_tree, tree_params

from ..interrupted import interrupted_exit
from .run import RoundsReport, rounds_class
from .run import run as run_rounds


def run(args: argparse.Namespace) -> int:
    """Run a rounds spec on its graph (or `--tree`); exit 0 when the run terminated, validated and checked out."""
    cls = rounds_class(args.spec)
    assert cls is not None
    if args.faults:
        raise UsageError("--faults applies to actor specs; a rounds run takes --kill NODE@ROUND")
    params = parse_params(args.param)
    initiator = 0 if args.initiator is None else args.initiator
    if args.tree:
        if not isinstance(getattr(cls, "tree", None), Param):
            raise UsageError(f"--tree: {args.spec} has no tree parameter")
        params.update(tree_params(parse_tree(args.tree, args.seed)))
    n = params.get("n", "?")
    print(f"Running {cls.__name__} on {args.tree or 'its default graph'} ({n} nodes): one process per node, "
          f"initiator {initiator}")
    rep = run_rounds(args.spec, params, args.trace, args.seed, initiator, args.kill,
                     progress=lambda r: print(f"progress: round {r}", file=sys.stderr, flush=True) if r % 10 == 0 else None)
    show(rep)
    if args.no_validate:
        return interrupted_exit(rep.interrupted, 0 if rep.finished else 3, rep.trace)
    code = report_rounds(rep.merged, time.monotonic())  # type: ignore[arg-type]
    if code:
        return interrupted_exit(rep.interrupted, code, rep.trace)
    graph = cls.network(rep.params)
    problems = cls.check_outcome(graph, rep.final) if rep.finished else []
    for p in problems:
        print(f"Outcome check failed: {p}")
    if problems:
        return 1
    if rep.finished:
        print("Outcome checked directly on the graph: " + cls.outcome_summary(graph, rep.final))
    return interrupted_exit(rep.interrupted, 0 if rep.finished else 3, rep.trace)


def show(rep: RoundsReport) -> None:
    total = {k: sum(s.get(k, 0) for s in rep.stats.values()) for k in ("broadcasts", "received", "collisions",
                                                                       "conflicts", "rejected")}
    state = "every node terminated" if rep.finished else "not every node terminated"
    print(f"  {rep.rounds} rounds, {state}; started in {rep.start_seconds:.2f} s, rounds took {rep.seconds:.2f} s")
    print(f"  {total['broadcasts']} broadcasts, {total['received']} receptions, {total['collisions']} collisions, "
          f"{total['conflicts']} conflicts, {total['rejected']} frames rejected")
    for note in rep.notes:
        print(f"  note: {note}")
    print(f"Trace written to {rep.trace}")
