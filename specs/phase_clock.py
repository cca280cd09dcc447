"""A loosely-stabilizing leaderless phase clock with O(log n) states per agent.

Source: P. Berenbrink, F. Biermeier, C. Hahn, D. Kaaser, "Loosely-Stabilizing Phase Clocks and
the Adaptive Majority Problem", SAND 2022, LIPIcs 221, paper 7 (arXiv 2106.13002). Claims
modelled: a leaderless clock with O(log n) states that, from an arbitrary configuration,
becomes synchronous within O(n log n) interactions and then stays synchronous for poly(n)
parallel time.
Measured on this model (`python -m bench.population_claims`, tables in `docs/population.md`):
recovery in O(log n) parallel time for n = 10² … 10⁶; a holding time exponential in m and, along
m = c·log₂ n for n = 10² … 10⁵, a power of n whose degree grows with c (about ½ at c = ¾, about
1 at c = 1), so polynomial in n; the default m = 2⌈log₂ n⌉ holds beyond what can be measured.

The paper's own rules, constants and definition of a synchronous configuration were not
available to us, so this is the closest documented construction, stated here in full:

- Ticking is the leaderless phase clock of Alistarh, Aspnes and Gelashvili (SODA 2018): in
  every interaction the agent that is behind (the initiator when both are equal) advances its
  counter by one — the power-of-two-choices process, whose spread stays O(log n) for poly(n)
  steps. Counters live on a cycle of M = hours · m values (m "minutes" per hour), so an hour is
  about m parallel time units and the clock outputs the hour ⌊c / m⌋.
- Restoring synchrony: two agents whose counters are more than one hour (m) apart on the cycle
  are *far*; the one with the smaller counter adopts the other's (a maximum epidemic, as in the
  resynchronisation of the Kaaser–Lohmann clock, PODC 2024). Far pairs exist only outside
  synchronous configurations.
- A configuration is *synchronized* when all counters lie on one arc of length m of the cycle
  (equivalently, since hours ≥ 4, no two agents are far): at most two consecutive hours are
  shown at any time.

Deviations and gaps filled (all of them ours, not the paper's):
1. The ticking and resynchronisation rules above replace the paper's unavailable rules.
2. The paper's notion of a synchronous configuration is replaced by the arc definition above.
3. Constants: `m` defaults to max(2, 2⌈log₂ n⌉) minutes per hour (0 selects that default) and
   `hours` to 4; the paper's constants are unknown. The protocol is non-uniform: it is given
   ⌈log₂ n⌉ through m, as the O(log n)-state bound suggests the paper's clock is.
4. The rule is asymmetric in the initiator only when both counters are equal (the initiator
   ticks); the paper's scheduler is the same (uniform ordered pairs of distinct agents).

Seeded bug `PhaseClockNoResync`: far agents ignore each other. Agents alone on the cycle and
pairwise far then never interact again — a silent, unsynchronized configuration — so from
such configurations the clock never synchronizes (probability 0). At the default parameters
(n = 3, m = 4, 16 counter values) three agents at 5, 10 and 15 are such a configuration:
`lockstep check phase_clock_buggy` reports it as a deadlock (exit 1), and `lockstep analyze
phase_clock_buggy --measure reach` finds the start configurations that never synchronize (exit 1);
`lockstep check phase_clock` holds (816 configurations, none silent).
"""

from __future__ import annotations

import math

from .lang import Int, Param
from .lang.population import ALL, Population, predicate, start


def default_minutes(n: int) -> int:
    """Minutes per hour when not given: 2·⌈log₂ n⌉, at least 2."""
    return max(2, 2 * math.ceil(math.log2(n)))


def clock_step(u: int, v: int, M: int, m: int, resync: bool = True) -> tuple[int, int]:
    """One interaction of counters u (initiator) and v (responder) on a cycle of M values."""
    ahead = (v - u) % M  # how far v is ahead of u
    if min(ahead, M - ahead) > m:  # far apart
        if not resync:
            return u, v
        return (v, v) if u < v else (u, u)  # the smaller counter adopts the larger one
    if ahead <= m:  # v is ahead of u (or equal): u is behind and ticks
        return (u + 1) % M, v
    return u, (v + 1) % M


def spread(values: list[int], M: int) -> int:
    """Length of the shortest arc of a cycle of M values that holds every value."""
    values = sorted(values)
    gaps = [b - a for a, b in zip(values, values[1:])] + [values[0] + M - values[-1]]
    return M - max(gaps)


class PhaseClock(Population):
    """Loosely-stabilizing phase clock (two-choices ticking, maximum epidemic when far apart)."""

    n = Param("n", default=3, lo=2, doc="number of agents")
    hours = Param("hours", default=4, lo=4, doc="hours per cycle of the clock")
    m = Param("m", default=0, lo=0, doc="minutes per hour; 0 picks max(2, 2*ceil(log2 n))")

    resync = True

    def setup(self) -> None:
        self.m = self.m or default_minutes(self.n)
        self.M = self.hours * self.m

    def agent(self):
        return Int(0, self.M - 1)

    def delta(self, u: int, v: int) -> tuple[int, int]:
        return clock_step(u, v, self.M, self.m, self.resync)

    def output(self, q: int) -> int:
        return q // self.m

    @predicate
    def synchronized(self, c) -> bool:
        """All counters lie on one arc of length m of the cycle."""
        return spread(c.present(), self.M) <= self.m

    @start
    def every_configuration(self):
        """Every configuration of n agents (the adversary's choice)."""
        return ALL

    @start
    def zero(self):
        """All agents at counter 0: synchronized."""
        return {0: self.n}

    @start
    def spread_out(self):
        """Agents spaced evenly around the whole cycle: the farthest from synchronized."""
        counts: dict[int, int] = {}
        for i in range(self.n):
            q = i * self.M // self.n
            counts[q] = counts.get(q, 0) + 1
        return counts

    @start
    def split(self):
        """Half of the agents at 0, half half-way round the cycle."""
        half = self.n // 2
        return {0: self.n - half, self.M // 2: half}


class PhaseClockNoResync(PhaseClock):
    """Seeded bug: the phase clock without its resynchronisation rule (far agents ignore each other)."""

    resync = False
