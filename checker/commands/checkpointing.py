"""`check --checkpoint DIR`, `--resume DIR`: the command-line side of `vector.checkpoint`."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError
from ..explicit import Options
from ..vector.checkpoint import Checkpoint, CheckpointError, stderr_say
from ..vector.search import VectorOptions

EVERY = 60.0  # seconds between checkpoints by default


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0, got {text!r}")
    return v


def add_checkpoint_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", metavar="DIR",
                   help="vector engine: write the search (frontier, visited set, parent links) to DIR at level "
                        "boundaries, so that --resume DIR can continue it")
    p.add_argument("--checkpoint-every", type=_seconds, default=EVERY, metavar="SECONDS",
                   help=f"--checkpoint: at most one checkpoint per SECONDS (default {EVERY:g}; 0: every level)")
    p.add_argument("--resume", metavar="DIR", help="continue the search checkpointed in DIR (and keep "
                                                   "checkpointing there); same spec, parameters and properties")


def checkpoint_options(args: argparse.Namespace, engine: str, vm: Any, opts: Options) -> VectorOptions | None:
    """The vector engine's options for --checkpoint/--resume (None without them)."""
    if args.checkpoint and args.resume and args.checkpoint != args.resume:
        raise UsageError("--resume DIR keeps checkpointing into DIR; drop --checkpoint or give it the same DIR")
    directory = args.resume or args.checkpoint
    if directory is None:
        return None
    flag = "--resume" if args.resume else "--checkpoint"
    if engine != "vector" or vm is None:
        raise UsageError(f"{flag} needs the vector engine, which cannot check this spec; run without {flag}")
    if opts.workers > 1:
        raise UsageError(f"{flag} runs on one process; drop --workers")
    ck = Checkpoint(directory, args.checkpoint_every, resume=bool(args.resume), deadlock=opts.deadlock,
                    say=None if args.quiet else stderr_say)
    try:
        ck.bind(vm)
    except (CheckpointError, OSError) as e:
        raise UsageError(str(e)) from None
    return VectorOptions(checkpoint=ck)
