"""`check --checkpoint DIR`, `--resume DIR`, `--cluster ADDRESS` and `--bitstate BYTES`: the command-line side
of `vector.checkpoint`, `explicit.checkpoint`, `cluster` and the vector engine's bitstate visited set."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from ..errors import UsageError
from ..explicit import Options
from ..progress import Progress
from ..result import CheckResult
from ..vector.checkpoint import Checkpoint, CheckpointError, read_manifest
from ..vector.search import VectorOptions

EVERY = 60.0  # seconds between checkpoints (and cluster snapshots) by default
UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MIN_BITSTATE = 1 << 10  # bytes


def _bytes(text: str) -> int:
    """A size in bytes: a whole number, optionally with K, M, G or T (KiB, MiB, GiB, TiB)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"expected a size in bytes such as 1048576, 512M or 4G, got {text!r}")
    n = int(m.group(1)) * UNITS[m.group(2).lower()]
    if n < MIN_BITSTATE:
        raise argparse.ArgumentTypeError(f"a bitstate table of {n:,} bytes is too small: give at least 1K")
    return n


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
                   help="write the breadth-first search (frontier, visited set, parent links) to DIR at level "
                        "boundaries, so that --resume DIR can continue it (vector engine, or scalar for typed specs)")
    p.add_argument("--checkpoint-every", type=_seconds, metavar="SECONDS",
                   help=f"at most one checkpoint (with --cluster: one snapshot) per SECONDS (default {EVERY:g}; "
                        "0: every level)")
    p.add_argument("--resume", metavar="DIR", help="continue the search checkpointed in DIR (and keep "
                                                   "checkpointing there); same spec, parameters and properties")
    p.add_argument("--bitstate", type=_bytes, metavar="BYTES",
                   help="keep only BYTES of bits of the visited set (SPIN's bitstate hashing; e.g. 4G): for spaces "
                        "larger than memory; reports the expected number of states omitted (vector engine, "
                        "breadth-first, --workers 1 or 2)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="vector engine on Ray actors: local (a Ray instance started for the run), ray://HOST:PORT "
                        "(Ray Client) or HOST:PORT (a cluster's head); --workers N actors")


def check_scaling_flags(args: argparse.Namespace) -> None:
    """Refuse combinations these options do not support, before anything is built."""
    if args.bitstate is not None:
        _check_bitstate(args)
    for flag, on in (("--cluster", args.cluster), ("--checkpoint", args.checkpoint), ("--resume", args.resume)):
        if not on:
            continue
        scalar = flag != "--cluster"  # checkpoints of the scalar engine's search too
        if not scalar and args.symmetry:
            raise UsageError("--cluster does not combine with --symmetry: the Ray partitions store states as they "
                             "are generated, not canonical forms; reduce by symmetry on one machine (--workers N)")
        other = [name for name, given in (("--property", args.property), ("--dfs", args.dfs),
                                          ("--all-trees", args.all_trees),
                                          ("--engine " + args.engine,
                                           args.engine in (("smt",) if scalar else ("scalar", "explicit", "smt"))))
                 if given]
        if other:
            what = "saves a breadth-first search" if scalar else "runs the vector engine's breadth-first search"
            raise UsageError(f"{flag} {what}; it does not combine with {other[0]}")


def _check_bitstate(args: argparse.Namespace) -> None:
    other = [name for name, given in (("--workers " + str(args.workers), args.workers > 2),
                                      ("--checkpoint", args.checkpoint),
                                      ("--resume", args.resume), ("--cluster", args.cluster),
                                      ("--property", args.property), ("--dfs", args.dfs),
                                      ("--max-violations", args.max_violations), ("--coverage", args.coverage),
                                      ("--all-trees", args.all_trees),
                                      ("--engine " + args.engine, args.engine in ("scalar", "explicit", "smt")))
             if given]
    if other:
        raise UsageError(f"--bitstate runs the vector engine's breadth-first search in one process (one or two "
                         f"threads: --workers 1 or 2); it does not combine with {other[0]}")
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if args.bitstate > total:
        raise UsageError(f"--bitstate {args.bitstate:,} bytes is more than this machine's memory ({total:,} bytes); "
                         "give less")


def _say(text: str) -> None:
    print("progress: " + text, file=sys.stderr, flush=True)


def vector_options(args: argparse.Namespace, engine: str, vm: Any, opts: Options) -> VectorOptions | None:
    """The vector engine's options for --checkpoint/--resume or --bitstate (None without them)."""
    if args.bitstate is not None:
        if engine != "vector" or vm is None:
            raise UsageError("--bitstate needs the vector engine, which cannot check this spec; run without "
                             "--bitstate")
        from ..vector.kernels import BuildError, bitstate_backend

        try:
            bitstate_backend()
        except BuildError as e:
            raise UsageError(f"--bitstate runs in compiled C loops, which could not be built: {e}") from None
        return VectorOptions(bitstate=args.bitstate)
    directory = _directory(args)
    if directory is None:
        return None
    flag = "--resume" if args.resume else "--checkpoint"
    assert engine == "vector" and vm is not None, "the scalar engine's checkpoints: check_scalar_checkpointed"
    if opts.workers > 1:
        raise UsageError(f"{flag} runs on one process, or on a cluster (--cluster); drop --workers")
    return VectorOptions(checkpoint=_checkpoint(args, directory, vm, opts.deadlock, opts.por))


def checkpoint_reduced(directory: str) -> bool | None:
    """Whether the checkpoint in `directory` is of a search with partial-order reduction (None: no
    readable checkpoint there; resuming reports why)."""
    try:
        man = read_manifest(directory) if os.path.isdir(directory) else None
    except CheckpointError:
        return None
    ident = man.get("identity") if man else None
    return bool(ident.get("por")) if isinstance(ident, dict) else None


def _directory(args: argparse.Namespace) -> str | None:
    if args.checkpoint and args.resume and args.checkpoint != args.resume:
        raise UsageError("--resume DIR keeps checkpointing into DIR; drop --checkpoint or give it the same DIR")
    return args.resume or args.checkpoint


def check_scalar_checkpointed(args: argparse.Namespace, model: Any, opts: Options, progress: Progress) -> CheckResult:
    """`check --checkpoint/--resume` on the scalar engine (chosen, or forced by the spec)."""
    from ..explicit import no_cyclic_gc
    from ..explicit.checkpoint import ExplicitCheckpoint
    from ..explicit.search import _Search
    from ..typed_model import TypedModel

    flag = "--resume" if args.resume else "--checkpoint"
    if not isinstance(model, TypedModel):
        raise UsageError(f"{flag}: {model.name} is a plain spec, whose states are Python objects, which Lockstep "
                         "never writes to disk as pickles; checkpoints are of typed specs (Spec, ActorSpec)")
    if opts.workers > 1:
        raise UsageError(f"{flag} with the scalar engine runs on one process; drop --workers")
    if args.coverage:
        raise UsageError(f"{flag} does not combine with --coverage (its counts are not checkpointed)")
    directory = _directory(args)
    assert directory is not None
    if args.resume and _engine_of(directory) == "vector":
        raise UsageError(f"{directory} holds a checkpoint of the vector engine; resume it without --engine "
                         "scalar/explicit")
    ck = ExplicitCheckpoint(directory, args.checkpoint_every, resume=bool(args.resume), deadlock=opts.deadlock,
                            por=opts.por, say=None if args.quiet else _say)
    try:
        ck.bind(model)
    except (CheckpointError, OSError) as e:
        raise UsageError(str(e)) from None
    search = _Search(model, opts, progress)
    search.checkpoint = ck
    try:
        with no_cyclic_gc():
            return search.run()
    except CheckpointError as e:
        raise UsageError(str(e)) from None
    finally:
        progress.close()


def _engine_of(directory: str) -> str | None:
    """The engine whose checkpoint `directory` holds (None: no readable checkpoint there)."""
    try:
        man = read_manifest(directory) if os.path.isdir(directory) else None
    except CheckpointError:
        return None
    ident = man.get("identity") if man else None
    if not isinstance(ident, dict):
        return None
    return "explicit" if ident.get("engine") == "explicit" else "vector"


def _checkpoint(args: argparse.Namespace, directory: str, vm: Any, deadlock: bool, por: bool = False) -> Checkpoint:
    if args.resume and _engine_of(directory) == "explicit":
        raise UsageError(f"{directory} holds a checkpoint of the scalar engine; resume it with --engine explicit "
                         "(and --symmetry if it was written with it), on one machine")
    ck = Checkpoint(directory, args.checkpoint_every, resume=bool(args.resume), deadlock=deadlock,
                    say=None if args.quiet else _say, por=por)
    try:
        ck.bind(vm)
    except (CheckpointError, OSError) as e:
        raise UsageError(str(e)) from None
    return ck


def check_on_cluster(args: argparse.Namespace, engine: str, vm: Any, opts: Options, params: dict[str, int],
                     progress: Progress) -> CheckResult:
    """`check --cluster ADDRESS`: the vector engine partitioned over Ray actors."""
    from ..cluster import ClusterError, ClusterSearch, check_address, portable_ref

    if engine != "vector" or vm is None:
        raise UsageError("--cluster needs the vector engine, which cannot check this spec; run without --cluster")
    directory = _directory(args)
    ck = _checkpoint(args, directory, vm, opts.deadlock) if directory else None
    spec = portable_ref(args.spec)
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
