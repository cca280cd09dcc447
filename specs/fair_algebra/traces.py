"""Aczel traces of a command: enumerated up to a depth, and printed.

A trace is written from its initial state, one `-k-> σ'` per step (k is π or ε), then `✓`
(terminated), `↯` (aborted) or `…` (incomplete: a feasible prefix); an infinite, ultimately
periodic trace is written `stem (loop)^ω`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator

from .semantics import CommandAutomaton

ENDS = {"done": " ✓", "abort": " ↯", "prefix": " …"}


def show_word(word: list[Hashable], end: str, loop: list[Hashable] | None = None) -> str:
    """A trace as text: `0 -π-> 1 -ε-> 1 ✓`, or `0 -π-> 1 (-ε-> 1)^ω` for an infinite one."""
    first = word[0]
    text = str(first[1])
    text += "".join(f" -{k}-> {s}" for k, s in word[1:])
    if end == "infinite" and loop is not None:
        return text + " (" + " ".join(f"-{k}-> {s}" for k, s in loop) + ")^ω"
    return text + ENDS[end]


def enumerate_traces(a: CommandAutomaton, depth: int) -> list[tuple[str, list, list | None]]:
    """Every complete trace (✓ or ↯) with at most `depth` steps, every infeasible one (a prefix that no
    trace continues, shown with …), and every infinite trace stem·loop^ω with |stem| + |loop| ≤ depth
    whose loop repeats a configuration through an accepting step."""
    found = list(_explore(a, depth))
    continued: set[tuple] = set()
    for end, word, loop in found:
        full = word + (loop or [])
        continued.update(tuple(full[:k]) for k in range(1, len(full) + (end != "prefix")))
    return [(end, word, loop) for end, word, loop in found
            if end != "more" and (end != "prefix" or tuple(word) not in continued)]


def _explore(a: CommandAutomaton, depth: int) -> Iterator[tuple[str, list, list | None]]:
    seen: set[str] = set()
    stack: list[tuple[list, list, list]] = [([letter], [config], []) for letter, config in reversed(a.initial())]
    while stack:
        word, configs, marks = stack.pop()
        c = configs[-1]
        if a.aborts(c):
            yield from _new(seen, ("abort", word, None))
            continue
        steps = a.steps(c)
        if a.done(c):
            yield from _new(seen, ("done", word, None))
        elif not steps:
            yield from _new(seen, ("prefix", word, None))
        for i in range(len(configs) - 1):
            if configs[i] == c and any(marks[i:]):
                yield from _new(seen, ("infinite", word[:i + 1], word[i + 1:]))
        if len(word) - 1 >= depth:
            if steps:
                yield ("more", word, None)  # continues beyond the depth: not an infeasible prefix
            continue
        for letter, c2, m in reversed(steps):
            stack.append((word + [letter], configs + [c2], marks + [m]))


def _new(seen: set[str], item: tuple[str, list, list | None]) -> Iterator[tuple[str, list, list | None]]:
    end, word, loop = item
    key = show_word(word, end, loop)
    if key not in seen:
        seen.add(key)
        yield item
