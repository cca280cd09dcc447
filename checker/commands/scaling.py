"""`check --checkpoint DIR`, `--resume DIR` and `--cluster ADDRESS`: the command-line side of
`vector.checkpoint` and `cluster`."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..errors import UsageError
from ..explicit import Options
from ..progress import Progress
from ..result import CheckResult
from ..vector.checkpoint import Checkpoint, CheckpointError
from ..vector.search import VectorOptions

EVERY = 60.0  # seconds between checkpoints (and cluster snapshots) by default


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0, got {text!r}")
    return v


def add_scaling_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", metavar="DIR",
                   help="vector engine: write the search (frontier, visited set, parent links) to DIR at level "
                        "boundaries, so that --resume DIR can continue it")
    p.add_argument("--checkpoint-every", type=_seconds, default=EVERY, metavar="SECONDS",
                   help=f"at most one checkpoint (with --cluster: one snapshot) per SECONDS (default {EVERY:g}; "
                        "0: every level)")
    p.add_argument("--resume", metavar="DIR", help="continue the search checkpointed in DIR (and keep "
                                                   "checkpointing there); same spec, parameters and properties")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="vector engine on Ray actors: local (a Ray instance started for the run), ray://HOST:PORT "
                        "(Ray Client) or HOST:PORT (a cluster's head); --workers N actors")


def check_scaling_flags(args: argparse.Namespace) -> None:
    """Refuse combinations these options do not support, before anything is built."""
    for flag, on in (("--cluster", args.cluster), ("--checkpoint", args.checkpoint), ("--resume", args.resume)):
        if not on:
            continue
        other = [name for name, given in (("--property", args.property), ("--dfs", args.dfs),
                                          ("--symmetry", args.symmetry), ("--all-trees", args.all_trees),
                                          ("--engine " + args.engine, args.engine in ("scalar", "explicit", "smt")))
                 if given]
        if other:
            raise UsageError(f"{flag} runs the vector engine's breadth-first search; it does not combine with "
                             f"{other[0]}")


def _say(text: str) -> None:
    print("progress: " + text, file=sys.stderr, flush=True)


def checkpoint_options(args: argparse.Namespace, engine: str, vm: Any, opts: Options) -> VectorOptions | None:
    """The vector engine's options for --checkpoint/--resume (None without them)."""
    directory = _directory(args)
    if directory is None:
        return None
    flag = "--resume" if args.resume else "--checkpoint"
    if engine != "vector" or vm is None:
        raise UsageError(f"{flag} needs the vector engine, which cannot check this spec; run without {flag}")
    if opts.workers > 1:
        raise UsageError(f"{flag} runs on one process, or on a cluster (--cluster); drop --workers")
    return VectorOptions(checkpoint=_checkpoint(args, directory, vm, opts.deadlock))


def _directory(args: argparse.Namespace) -> str | None:
    if args.checkpoint and args.resume and args.checkpoint != args.resume:
        raise UsageError("--resume DIR keeps checkpointing into DIR; drop --checkpoint or give it the same DIR")
    return args.resume or args.checkpoint


def _checkpoint(args: argparse.Namespace, directory: str, vm: Any, deadlock: bool) -> Checkpoint:
    ck = Checkpoint(directory, args.checkpoint_every, resume=bool(args.resume), deadlock=deadlock,
                    say=None if args.quiet else _say)
    try:
        ck.bind(vm)
    except (CheckpointError, OSError) as e:
        raise UsageError(str(e)) from None
    return ck


def check_on_cluster(args: argparse.Namespace, engine: str, vm: Any, opts: Options, params: dict[str, int],
                     progress: Progress) -> CheckResult:
    """`check --cluster ADDRESS`: the vector engine partitioned over Ray actors."""
    from ..cluster import ClusterError, ClusterSearch, check_address

    if engine != "vector" or vm is None:
        raise UsageError("--cluster needs the vector engine, which cannot check this spec; run without --cluster")
    directory = _directory(args)
    ck = _checkpoint(args, directory, vm, opts.deadlock) if directory else None
    spec = args.spec
    path, sep, obj = spec.partition(":")
    if path.endswith(".py") and os.path.exists(path):
        spec = os.path.abspath(path) + sep + obj  # actors load the spec themselves, from their own directory
    try:
        search = ClusterSearch(vm, spec, params, Options(deadlock=opts.deadlock, max_depth=opts.max_depth,
                                                              max_states=opts.max_states),
                               progress, check_address(args.cluster), args.cluster_workers,
                               every=args.checkpoint_every, say=None if args.quiet else _say, checkpoint=ck)
        try:
            return search.run()
        finally:
            progress.close()
    except ClusterError as e:
        raise UsageError(str(e)) from None
