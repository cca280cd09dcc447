"""Hand-written tuple-state BFS of the benchmark models: the speed baseline, and an independent
oracle for the engine's counts (it shares no code with Lockstep)."""

from __future__ import annotations


def bfs(inits, successors) -> tuple[int, int, int]:
    """(distinct, generated, depth) of a plain breadth-first search, counted as TLC does."""
    parent = {}
    generated = 0
    frontier = []
    for s in inits:
        generated += 1
        if s not in parent:
            parent[s] = None
            frontier.append(s)
    depth = 1 if frontier else 0
    while frontier:
        nxt = []
        for s in frontier:
            for t in successors(s):
                generated += 1
                if t not in parent:
                    parent[t] = s
                    nxt.append(t)
        if nxt:
            depth += 1
        frontier = nxt
    return len(parent), generated, depth


def two_phase(n: int) -> tuple[int, int, int]:
    """TwoPhase (TLA+ Examples) with n resource managers; msgs bits: Prepared(r)=r, Commit=n, Abort=n+1."""
    working, prepared, committed, aborted = range(4)
    everyone = (1 << n) - 1

    def successors(s):
        rm, tm, prep, msgs = s
        if tm == 0 and prep == everyone:
            yield (rm, 1, prep, msgs | 1 << n)
        if tm == 0:
            yield (rm, 2, prep, msgs | 1 << (n + 1))
        for r in range(n):
            if tm == 0 and msgs >> r & 1:
                yield (rm, tm, prep | 1 << r, msgs)
            if rm[r] == working:
                yield (rm[:r] + (prepared,) + rm[r + 1:], tm, prep, msgs | 1 << r)
                yield (rm[:r] + (aborted,) + rm[r + 1:], tm, prep, msgs)
            if msgs >> n & 1:
                yield (rm[:r] + (committed,) + rm[r + 1:], tm, prep, msgs)
            if msgs >> (n + 1) & 1:
                yield (rm[:r] + (aborted,) + rm[r + 1:], tm, prep, msgs)

    return bfs([((working,) * n, 0, 0, 0)], successors)


def filter_lock(n: int) -> tuple[int, int, int]:
    """The filter lock as in specs/examples/filter_lock.py: per process (pc, j); shared level, victim."""
    idle, set_level, set_victim, wait, cs = range(5)

    def successors(s):
        pcs, js, level, victim = s
        for i in range(n):
            pc, j = pcs[i], js[i]
            if pc == idle:
                yield (pcs[:i] + (set_level,) + pcs[i + 1:], js[:i] + (1,) + js[i + 1:], level, victim)
            elif pc == set_level:
                yield (pcs[:i] + (set_victim,) + pcs[i + 1:], js, level[:i] + (j,) + level[i + 1:], victim)
            elif pc == set_victim:
                yield (pcs[:i] + (wait,) + pcs[i + 1:], js, level, victim[:j] + (i,) + victim[j + 1:])
            elif pc == wait:
                if all(level[k] < j for k in range(n) if k != i) or victim[j] != i:
                    top = j >= n - 1
                    yield (pcs[:i] + ((cs if top else set_level),) + pcs[i + 1:],
                           js[:i] + ((0 if top else j + 1),) + js[i + 1:], level, victim)
            else:
                yield (pcs[:i] + (idle,) + pcs[i + 1:], js, level[:i] + (0,) + level[i + 1:], victim)

    zero = (0,) * n
    return bfs([(zero, zero, zero, zero)], successors)
