"""The vector engine: breadth-first search a frontier at a time, with numpy.

A batch of states is a 2-D array of packed words (`layout`); every transition of the spec
runs once over the whole batch (`compile`), the visited set is a numpy table of 64-bit
fingerprints (`visited`), and frontiers and parent links spill to disk when memory runs low
(`spool`). Verdicts, counts and counterexamples are those of the scalar engine
(`lockstep.checker.explicit`); `search` explains how, and `workers` partitions a search over
processes.
"""

from __future__ import annotations

from typing import Any

from ..explicit.search import Options
from ..progress import NoProgress, Progress
from ..result import CheckResult
from .layout import VectorUnsupported
from .search import VectorModel, VectorOptions, VectorSearch

__all__ = ["VectorModel", "VectorOptions", "VectorUnsupported", "check_vector"]


def check_vector(model: Any, opts: Options, progress: Progress | None = None,
                 vopts: VectorOptions | None = None) -> CheckResult:
    """Explore a typed model with the vector engine; the same verdict and counts as `explicit.check`."""
    if opts.dfs:
        raise VectorUnsupported("depth-first search runs on the scalar engine")
    vm = model if isinstance(model, VectorModel) else VectorModel(model)
    progress = progress or NoProgress()
    vopts = vopts or VectorOptions()
    if opts.workers > 2:
        from .workers import check_workers

        return check_workers(vm, opts, progress, vopts)
    search = VectorSearch(vm, opts, progress, vopts)
    search.use_threads(opts.workers, judge_cores=True)
    try:
        return search.run()
    finally:
        search.close()
        progress.close()
