"""A plain spec whose states hold None and floats: ITF has neither, so they are written as variants."""

from typing import NamedTuple


class State(NamedTuple):
    level: float
    last: int | None


def init():
    return [State(0.0, None)]


def next(s):
    if s.level < 1.0:
        yield "fill", State(s.level + 0.25, 1)
    if s.level > 0.0:
        yield "drain", State(s.level - 0.5 if s.level >= 0.5 else 0.0, None)


invariants = {"below_one": lambda s: s.level < 1.0}
