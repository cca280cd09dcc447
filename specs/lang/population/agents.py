"""A population protocol as running agents apply it: the rule table, the random choices, the state codec.

When two agents interact, the outcome of a randomized rule is chosen by one integer `draw`,
uniform in [0, 2**53): the outcomes of the pair, in the order of `Population.outcomes`, split
that range into intervals in proportion to their probabilities, and the draw falls in one. The
responder takes one draw from its own seeded generator for every interaction it responds to
(before it knows its partner's state); a deterministic rule ignores it. The
scheduler's ordered pairs come from a generator seeded by the run's seed. Agents of a real run
and the trace validator use these same functions, so a run's seed and recorded draws name
exactly one outcome per interaction.
"""

from __future__ import annotations

import json
import random
from bisect import bisect_right
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from ..jsonvalues import from_json, to_json
from .protocol import ALL, Population

DRAW_BITS = 53
DRAWS = 1 << DRAW_BITS


def pairs(seed: int, n: int) -> Iterator[tuple[int, int]]:
    """The scheduler's interactions: uniformly random ordered pairs (initiator, responder) of distinct agents."""
    rng = random.Random(seed)
    below = rng.randrange
    while True:
        i = below(n)
        j = below(n - 1)
        yield i, j + (j >= i)


def agent_rng(seed: int, pid: int) -> random.Random:
    """The generator agent `pid` draws its random outcomes from."""
    return random.Random(f"{seed}/agent/{pid}")


def draw(rng: random.Random) -> int:
    """One draw for a randomized rule."""
    return rng.getrandbits(DRAW_BITS)


def initial_agents(protocol: Population, start: str | None, seed: int) -> list[int]:
    """The state (index) of each agent at the start of a run: a configuration of start `start`
    (for `ALL`, every agent in a uniformly random state), its agents in a seeded random order."""
    rng = random.Random(f"{seed}/start")
    got = protocol.start_configurations(start)
    if got is ALL:
        return [rng.randrange(protocol.Q) for _ in range(protocol.n)]
    config = got[rng.randrange(len(got))]
    agents = [q for q, k in enumerate(config) for _ in range(k)]
    rng.shuffle(agents)
    return agents


class StateCodec:
    """Agent states as JSON (the declared agent type's JSON form) and back, as state indices."""

    def __init__(self, protocol: Population):
        self.protocol = protocol
        self.json = [to_json(protocol.dom, q) for q in protocol.states]
        self.text = [json.dumps(j, separators=(",", ":")) for j in self.json]
        self._index = {self._key(j): i for i, j in enumerate(self.json)}

    @staticmethod
    def _key(j: Any) -> Any:
        return (type(j), j) if isinstance(j, (int, str, bool)) else json.dumps(j, sort_keys=True)

    def decode(self, j: Any, where: str = "state") -> int:
        """The index of the agent state whose JSON form is `j`; ValueError naming `where` if it is none."""
        try:
            i = self._index.get(self._key(j))
        except TypeError:
            i = None
        if i is None:
            value = from_json(self.protocol.dom, j, where)  # raises with the reason
            i = self.protocol.index[value]
        return i

    def show(self, i: int) -> str:
        return repr(self.protocol.states[i])


class Rules:
    """The outcome of each ordered pair of agent states (indices), for a given draw."""

    def __init__(self, protocol: Population):
        self.protocol = protocol
        self.Q = protocol.Q
        self.table = protocol.outcomes
        self.bounds: list[list[int] | None] = [self._bounds(outs) if len(outs) > 1 else None for outs in self.table]

    @staticmethod
    def _bounds(outs: list[tuple[int, int, Fraction]]) -> list[int]:
        """The upper ends of the draw intervals of the outcomes: ceil(cumulative probability * DRAWS)."""
        out, acc = [], Fraction(0)
        for _, _, p in outs:
            acc += p
            out.append(-(-(acc.numerator * DRAWS) // acc.denominator))
        out[-1] = DRAWS
        return out

    def randomized(self, a: int, b: int) -> bool:
        """Whether the rule for states a and b has more than one outcome (and so needs a draw)."""
        return self.bounds[a * self.Q + b] is not None

    def pick(self, a: int, b: int, draw: int | None) -> tuple[int, int]:
        """The outcome (a', b') of states a and b meeting, for `draw` (None for a deterministic rule)."""
        k = a * self.Q + b
        bounds = self.bounds[k]
        if bounds is None:
            a2, b2, _ = self.table[k][0]
            return a2, b2
        if draw is None or not 0 <= draw < DRAWS:
            raise ValueError(f"the rule for this pair is randomized and needs a draw in 0..2**{DRAW_BITS}-1, got {draw!r}")
        a2, b2, _ = self.table[k][bisect_right(bounds, draw)]
        return a2, b2

    def probability(self, a: int, b: int, out: tuple[int, int]) -> Fraction:
        """The probability that states a and b meeting give `out` (0 if it is no outcome of theirs)."""
        return sum((p for a2, b2, p in self.table[a * self.Q + b] if (a2, b2) == out), Fraction(0))

    def describe(self, a: int, b: int) -> str:
        """The pair's outcomes with their probabilities, readably."""
        s = self.protocol.states
        outs = self.table[a * self.Q + b]
        return ", ".join(f"({s[a2]!r}, {s[b2]!r})" + ("" if p == 1 else f" with probability {p}") for a2, b2, p in outs)
