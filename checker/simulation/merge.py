"""Walks cut into contiguous blocks, run anywhere (this process, forked workers, Ray actors), and their
tallies merged in block order up to the first block with a violation: so the walks counted, their
steps, the distinct states, the coverage and the violation are those of one process, whatever runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..coverage import Coverage, declared_keys
from ..model import Model
from ..result import Violation
from ..trace import Trace
from .block import ENDINGS, Tally, rewalk
from .seen import SeenSummary, summarise, value_hashers

BLOCK = 1000  # most walks in one block (a block is the unit of progress and of work lost with a worker)


@dataclass
class SimResult:
    """What the walks saw: their number and steps, distinct states and the unseen mass, coverage, and the first
    violation."""

    runs: int
    steps: int
    distinct: int
    seconds: float
    coverage: Coverage
    seen: SeenSummary | None = None  # distinct states and values, and the estimate of the unseen mass
    endings: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENDINGS, 0))
    violation: Violation | None = None
    violating_walk: int | None = None
    notes: list[str] = field(default_factory=list)
    path: list | None = field(default=None, repr=False)  # the violating walk's states [(None, s0), (label, s1), ...]

    @property
    def exit_code(self) -> int:
        return 1 if self.violation is not None else 0


class KeyedCoverage(Coverage):
    """Coverage summed from tallies, already folded into coverage entries."""

    def __init__(self, entries: dict[str, list[int]]):
        super().__init__()
        self.entries = entries

    def table(self, model: Model) -> dict[str, dict[str, int]]:
        out = {k: {"enabled": 0, "taken": 0} for k in declared_keys(model)}
        for k, (enabled, taken) in self.entries.items():
            out[k] = {"enabled": enabled, "taken": taken}
        return dict(sorted(out.items()))


def blocks(runs: int, workers: int) -> list[range]:
    """Contiguous blocks of walk numbers: about 8 per worker, at most BLOCK walks each."""
    size = max(1, min(BLOCK, -(-runs // (8 * workers))))
    return [range(a, min(a + size, runs)) for a in range(0, runs, size)]


class Merge:
    """The tallies of the blocks received so far, and which blocks the result still needs."""

    def __init__(self, model: Model, parts: list[range], depth: int, seed: int, deadlock: bool):
        self.model, self.parts, self.depth, self.seed, self.deadlock = model, parts, depth, seed, deadlock
        self.got: dict[int, Tally] = {}
        self.limit = len(parts)  # the blocks before this one are needed; a violation lowers it
        self.runs = self.steps = 0

    def add(self, i: int, t: Tally) -> None:
        if i in self.got:
            return
        self.got[i] = t
        self.runs += t.runs
        self.steps += t.steps
        if t.found is not None:
            self.limit = min(self.limit, i + 1)

    def needed(self, i: int) -> bool:
        return i < self.limit

    @property
    def done(self) -> bool:
        return all(i in self.got for i in range(self.limit))

    def result(self, seconds: float) -> SimResult:
        """The merged result of blocks 0 .. limit-1 (all received), the violation's trace rebuilt here."""
        entries: dict[str, list[int]] = {}
        res = SimResult(0, 0, 0, seconds, KeyedCoverage(entries))
        seen = []
        for i in range(self.limit):
            t = self.got[i]
            res.runs += t.runs
            res.steps += t.steps
            seen.append(t.seen)
            for e, n in t.endings.items():
                res.endings[e] += n
            for k, (enabled, taken) in t.coverage.items():
                acc = entries.setdefault(k, [0, 0])
                acc[0] += enabled
                acc[1] += taken
        res.seen = summarise(seen, names=value_hashers(self.model)[0])
        res.distinct = res.seen.distinct
        last = self.got[self.limit - 1].found if self.limit else None
        if last is not None:
            k, path, kind, name, message, location = rewalk(self.model, last[0], self.depth, self.seed, self.deadlock)
            if (kind, name, message) != last[1:4]:
                raise RuntimeError(f"walk {k + 1} found {last[3]!r} elsewhere but {message!r} when re-run here: "
                                   "the workers do not run the same spec")
            prop = {"kind": kind if kind in ("invariant", "deadlock") else "step", "name": name}
            trace = Trace.from_states(self.model, path, property=prop, message=message, location=location)
            res.violation = Violation(kind, name, message, location, trace)
            res.violating_walk = k
            res.path = path
        return res
