"""Random simulation over Ray actors: each actor loads the spec itself and runs blocks of walks the
driver hands out (a few in flight per actor, the lowest-numbered first); the driver merges their
tallies in block order, so the result is the one-process result for the same seed and walk count.

Only plain data crosses the network: block bounds in, counts, coverage entries, the states and values seen
(arrays of fingerprints, walk counts and hashes, or sketches) and a violating walk's number out. The driver
re-runs that walk to rebuild its trace.
An actor lost mid-run is reported and replaced; its blocks run again (a block is a pure function
of the seed and the walk numbers).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ..loader import load_model
from ..model import Model
from ..simulation import Merge, SimResult, Tally, blocks, tally
from ..simulation.block import ENDINGS
from ..simulation.kernel import compiled_walks
from ..simulation.seen import checked, value_hashers
from .connect import ClusterError, check_address, connect, disconnect
from .driver import RECOVERIES

IN_FLIGHT = 2  # blocks queued per actor, so an actor never waits for the driver


def initial_identity(model: Model) -> list[int]:
    """The number of initial states and their fingerprints' sum (every actor must build the same spec)."""
    inits = model.initial_states()
    return [len(inits), sum(model.fingerprint(s) for s in inits) & ((1 << 64) - 1)]


class Walkers:
    """One actor's model; runs blocks of walks (or directly, in tests)."""

    def __init__(self, spec: str, params: dict[str, int], invariants: list[str] | None, depth: int, seed: int,
                 deadlock: bool):
        self.model = load_model(spec, params, invariants=invariants)
        self.depth, self.seed, self.deadlock = depth, seed, deadlock
        self.kernel = compiled_walks(self.model)[0]

    def pid(self) -> int:
        return os.getpid()

    def identity(self) -> list[int]:
        """The spec's `initial_identity`, and 1 if the walks run compiled (0: in Python)."""
        return [*initial_identity(self.model), int(self.kernel is not None)]

    def run(self, start: int, stop: int) -> tuple[int, int, list[int], list[tuple[str, int, int]], dict[str, Any],
                                                  list[Any]]:
        """The tally of walks start .. stop-1, as plain values (no objects of this process's making)."""
        t = tally(self.model, range(int(start), int(stop)), self.depth, self.seed, self.deadlock, kernel=self.kernel)
        endings = [t.endings[e] for e in sorted(t.endings)]
        cov = [(k, v[0], v[1]) for k, v in sorted(t.coverage.items())]
        return t.runs, t.steps, endings, cov, t.seen, [] if t.found is None else list(t.found)


def _tally(out: Any, endings: list[str], nvars: int) -> Tally:
    """A tally from an actor's plain values, type-checked."""
    runs, steps, ends, cov, seen, found = out
    f = None
    if found:
        walk, kind, name, message, location = found
        f = (int(walk), str(kind), str(name), str(message), None if location is None else str(location))
    return Tally(int(runs), int(steps), dict(zip(endings, (int(x) for x in ends))),
                 {str(k): [int(e), int(t)] for k, e, t in cov}, checked(seen, nvars), f)


class ClusterSimulation:
    """`runs` walks of `depth` steps over `workers` Ray actors (one per CPU by default)."""

    def __init__(self, model: Model, spec: str, params: dict[str, int], runs: int, depth: int, seed: int,
                 deadlock: bool, address: str, workers: int | None,
                 tick: Callable[[int, int], None] | None = None, say: Callable[[str], None] | None = None,
                 on_block: Callable[[ClusterSimulation, int], None] | None = None):
        self.model, self.spec, self.params = model, spec, params
        self.runs, self.depth, self.seed, self.deadlock = runs, depth, seed, deadlock
        self.address, self.workers = check_address(address), workers
        self.tick, self.say, self.on_block = tick, say or (lambda text: None), on_block
        self.actors: list[Any] = []
        self.recovered = 0

    def run(self) -> SimResult:
        self.kernel, where = compiled_walks(self.model, self.say)
        ray, self.n, started = connect(self.address, self.workers)
        self.ray = ray
        self.remote = ray.remote(num_cpus=1, max_restarts=0)(Walkers)
        began = time.monotonic()
        try:
            self.actors = [self._spawn() for _ in range(self.n)]
            merge = Merge(self.model, blocks(self.runs, self.n), self.depth, self.seed, self.deadlock)
            self._drive(merge)
            res = merge.result(time.monotonic() - began)
            res.notes.append(where)
            size = len(merge.parts[0]) if merge.parts else 0
            res.notes.append(f"cluster: {self.n} Ray actors; walks in blocks of {size:,}, {merge.limit:,} of "
                             f"{len(merge.parts):,} blocks counted"
                             + (f"; {self.recovered} lost actor{'s' if self.recovered > 1 else ''} replaced"
                                if self.recovered else ""))
            return res
        finally:
            for a in self.actors:
                try:
                    ray.kill(a)
                except Exception:
                    pass
            if started:
                disconnect(ray)

    def _spawn(self) -> Any:
        m = self.model
        invs = list(m.invariant_names) if m.invariant_names else None
        a = self.remote.remote(self.spec, self.params, invs, self.depth, self.seed, self.deadlock)
        got = list(self.ray.get(a.identity.remote()))
        if got[:-1] != initial_identity(m):
            raise ClusterError("a Ray worker built this spec with other initial states; every node needs the same "
                               "lockstep version and spec files")
        if got[-1] != int(self.kernel is not None):
            here, there = ("compiled", "in Python") if self.kernel is not None else ("in Python", "compiled")
            raise ClusterError(f"a Ray worker runs the walks {there} and this process {here} (they count states by "
                               "different fingerprints): give every node a C compiler, or set LOCKSTEP_NATIVE=never "
                               "on every node")
        return a

    def _drive(self, merge: Merge) -> None:
        ray, endings = self.ray, sorted(ENDINGS)
        todo = deque(range(len(merge.parts)))
        pending: dict[Any, tuple[int, int]] = {}  # ref -> (block, actor slot)
        load = [0] * self.n

        def submit() -> None:
            for slot in range(self.n):
                while load[slot] < IN_FLIGHT and todo:
                    i = todo.popleft()
                    if not merge.needed(i):
                        todo.clear()
                        return
                    r = merge.parts[i]
                    pending[self.actors[slot].run.remote(r.start, r.stop)] = (i, slot)
                    load[slot] += 1

        submit()
        while not merge.done:
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            i, slot = pending.pop(ref)
            load[slot] -= 1
            try:
                merge.add(i, _tally(ray.get(ref), endings, len(value_hashers(self.model)[0])))
            except ray.exceptions.RayActorError as e:
                self._replace(slot, i, e, todo, pending, load)
            else:
                if self.tick is not None:
                    self.tick(merge.runs, merge.steps)
                if self.on_block is not None:
                    self.on_block(self, i)
            submit()

    def _replace(self, slot: int, i: int, e: Exception, todo: deque, pending: dict, load: list[int]) -> None:
        """Start a fresh actor in `slot`, and queue again (first) the blocks the lost one held."""
        lost = sorted([i] + [j for ref, (j, s) in list(pending.items()) if s == slot])
        for ref in [ref for ref, (_j, s) in pending.items() if s == slot]:
            del pending[ref]
        load[slot] = 0
        self.recovered += 1
        if self.recovered > RECOVERIES:
            raise RuntimeError(f"{RECOVERIES} actors lost in one run; the last: {e}") from None
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        self.say(f"cluster: an actor was lost ({why}); running its {len(lost)} block{'s' if len(lost) > 1 else ''} "
                 "of walks again on a fresh actor")
        try:
            self.ray.kill(self.actors[slot])
        except Exception:
            pass
        self.actors[slot] = self._spawn()
        todo.extendleft(reversed(lost))
