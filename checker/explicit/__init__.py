"""The scalar explicit-state engine: one state at a time, in one process (`search`) or partitioned
over worker processes (`parallel`)."""

from __future__ import annotations

from ..progress import Progress
from ..result import CheckResult
from .search import Options, check_serial, no_cyclic_gc

__all__ = ["Options", "check"]


def check(model, opts: Options, progress: Progress | None = None) -> CheckResult:
    """Explore `model` exhaustively (within the bounds) and report the verdict."""
    with no_cyclic_gc():
        if opts.workers > 1:
            from .parallel import check_parallel  # (multiprocessing is imported only for several workers)

            return check_parallel(model, opts, progress)
        return check_serial(model, opts, progress)
