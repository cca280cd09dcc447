"""A plain spec whose states are named tuples: two counters, x up to 3 and y up to 2 (12 states)."""

from collections import namedtuple

State = namedtuple("State", "x y")


def init():
    return [State(0, 0)]


def next(s):
    if s.x < 3:
        yield ("inc_x", State(s.x + 1, s.y))
    if s.y < 2:
        yield ("inc_y", State(s.x, s.y + 1))
