"""A plain spec (no DSL): two counters, each bumped up to a bound; their sum must stay below 7."""

BOUND = 4


def init():
    yield (0, 0)


def next(state):
    a, b = state
    if a < BOUND:
        yield ("inc_a", (a + 1, b))
    if b < BOUND:
        yield ("inc_b", (a, b + 1))
    if a == BOUND and b == BOUND:
        yield ("reset", (0, 0))


invariants = {"sum_below_7": lambda s: s[0] + s[1] < 7}


class Counters:
    """The same model as a class taking parameters: counters up to `bound`, sum below `limit`."""

    def __init__(self, bound: int = 4, limit: int = 9):
        self.bound, self.limit = bound, limit
        self.invariants = {"sum_below_limit": lambda s: s[0] + s[1] < self.limit}

    def init(self):
        return [(0, 0)]

    def next(self, state):
        a, b = state
        if a < self.bound:
            yield ("inc_a", (a + 1, b))
        if b < self.bound:
            yield ("inc_b", (a, b + 1))
        if a == self.bound and b == self.bound:
            yield ("reset", (0, 0))
