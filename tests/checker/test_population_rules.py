"""The rule table as running agents apply it: draws choose outcomes in proportion, configuration steps are steps of next()."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

from lockstep.checker.loader import load_protocol
from lockstep.specs.lang import Enum, Param
from lockstep.specs.lang.population import Population, start
from lockstep.specs.lang.population.agents import DRAWS, Rules, StateCodec, initial_agents, pairs


class Coin(Population):
    """The initiator copies the responder with probability 1/3; otherwise the responder copies the initiator."""

    n = Param("n", default=3, lo=2)
    agent = Enum("H", "T")

    def delta(self, u, v):
        return {(v, v): Fraction(1, 3), (u, u): Fraction(2, 3)} if u != v else (u, v)

    @start
    def mixed(self):
        return {"H": 1, "T": self.n - 1}


def test_draws_split_the_range_in_proportion_to_the_probabilities():
    coin = Coin(n=3)
    rules = Rules(coin)
    h, t = coin.index["H"], coin.index["T"]
    assert rules.randomized(h, t) and not rules.randomized(h, h)
    cut = -(-DRAWS // 3)  # ceil(DRAWS / 3)
    assert rules.pick(h, t, cut - 1) == (t, t) and rules.pick(h, t, cut) == (h, h)
    assert rules.pick(h, t, DRAWS - 1) == (h, h) and rules.pick(h, t, 0) == (t, t)
    counts = Counter(rules.pick(h, t, d) for d in range(0, DRAWS, DRAWS // 3000))
    assert abs(counts[(t, t)] / sum(counts.values()) - 1 / 3) < 0.001
    assert rules.probability(h, t, (t, t)) == Fraction(1, 3) and rules.probability(h, t, (t, h)) == 0


def test_configuration_steps_are_exactly_the_steps_of_next():
    clock = load_protocol("phase_clock", {"n": 3})
    Q = clock.Q
    for c in clock.all_configurations():
        made = set()
        for a in range(Q):
            for b in range(Q):
                if c[a] == 0 or c[b] - (a == b) <= 0:
                    continue
                for a2, b2, _ in clock.outcomes[a * Q + b]:
                    step = clock.configuration_step(c, a, b, (a2, b2))
                    if step is None:
                        assert sorted((a, b)) == sorted((a2, b2))
                    else:
                        made.add(step)
        assert made == set(clock.next(c))


def test_the_schedule_is_uniform_over_ordered_pairs_of_distinct_agents():
    counts = Counter(p for _, p in zip(range(24_000), pairs(9, 4)))
    assert set(counts) == {(i, j) for i in range(4) for j in range(4) if i != j}
    assert all(abs(k - 2000) < 200 for k in counts.values())


def test_start_states_form_a_configuration_of_the_start():
    clock = load_protocol("phase_clock", {"n": 6})
    agents = initial_agents(clock, "split", seed=3)
    assert sorted(Counter(agents).items()) == [(0, 3), (clock.M // 2, 3)]
    codec = StateCodec(clock)
    assert [codec.decode(codec.json[q]) for q in agents] == agents
