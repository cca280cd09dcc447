"""Random simulation of any spec (typed, actor, plain), as TLC's `-simulate`: `simulate` runs the walks in
this process, or shares them among workers by blocks (`block`, `merge`): threads where the walks run in the spec's
compiled kernel (`kernel`, which releases the GIL), forked processes where they run in Python; the same walks."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ..model import Model
from .block import Tally, tally
from .kernel import compiled_walks
from .merge import Merge, SimResult, blocks

_JOB: tuple | None = None  # (model, blocks, depth, seed, deadlock, kernel) for forked workers


def _block(i: int) -> tuple[int, Tally]:
    model, parts, depth, seed, deadlock, kernel = _JOB  # type: ignore[misc]
    return i, tally(model, parts[i], depth, seed, deadlock, kernel=kernel)


def simulate(model: Model, runs: int, depth: int, seed: int = 1, deadlock: bool = True, workers: int = 1,
             tick: Callable[[int, int], None] | None = None, say: Callable[[str], None] | None = None,
             compiled: bool = True) -> SimResult:
    """`runs` random walks of at most `depth` steps each, stopping at the first violation; the same result
    (walks, steps, states, coverage, violation) whatever the number of workers, and in the compiled kernel (unless
    `compiled` is False) as in Python. The kernel is built first (`say` is told) if it is not in the cache; the
    time is the walks'."""
    global _JOB
    kernel, where = compiled_walks(model, say) if compiled else (None, "walks run in Python (as asked)")
    began = time.monotonic()
    if workers == 1:
        merge = Merge(model, [range(runs)], depth, seed, deadlock)
        merge.add(0, tally(model, range(runs), depth, seed, deadlock, tick, kernel))
        return _noted(merge.result(time.monotonic() - began), where)
    merge = Merge(model, blocks(runs, workers), depth, seed, deadlock)
    if kernel is not None:
        with ThreadPoolExecutor(workers, thread_name_prefix="lockstep-walks") as pool:
            futures = [pool.submit(tally, model, part, depth, seed, deadlock, None, kernel) for part in merge.parts]
            for i, f in enumerate(futures):  # in block order: stop at the first violation
                merge.add(i, f.result())
                if tick is not None:
                    tick(merge.runs, merge.steps)
                if merge.done:
                    for later in futures[i + 1:]:
                        later.cancel()
                    break
        return _noted(merge.result(time.monotonic() - began), where)
    _JOB = (model, merge.parts, depth, seed, deadlock, kernel)
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for i, t in pool.imap(_block, range(len(merge.parts))):  # in block order: stop at the first violation
                merge.add(i, t)
                if tick is not None:
                    tick(merge.runs, merge.steps)
                if merge.done:
                    break
    finally:
        _JOB = None
    return _noted(merge.result(time.monotonic() - began), where)


def _noted(res: SimResult, where: str) -> SimResult:
    res.notes.insert(0, where)
    return res
