"""Adaptive majority on a loosely-stabilizing phase clock: track the majority of changing inputs.

Source: P. Berenbrink, F. Biermeier, C. Hahn, D. Kaaser, "Loosely-Stabilizing Phase Clocks and
the Adaptive Majority Problem", SAND 2022, LIPIcs 221, paper 7 (arXiv 2106.13002). Claims
modelled: every agent holds input A or B, inputs change over time at rate 1/n, and if the
majority input has enough support and bias, the agents' outputs converge to it within
O(n log n) interactions and then follow it for poly(n) interactions.

The paper's rules were not available to us; this is a construction from documented parts, on
top of the phase clock of `specs/phase_clock.py` (whose docstring states its own deviations).
The clock's hours split each cycle into three stages, and every agent acts on its own hour:

- hour 0, *reset*: the agent's working opinion becomes its current input;
- hours 1 .. hours−2, *vote*: two voting agents run the three-state approximate majority of
  Angluin, Aspnes and Eisenstat (Distributed Computing 2008) on their opinions — a decided
  initiator turns an opposing responder undecided (U) and an undecided responder to its opinion;
- hour hours−1, *commit*: a decided agent copies its opinion to its output.

Inputs change: in every interaction the initiator's input flips with probability churn/n
(`churn` input changes per unit of parallel time; the default 1 is the paper's rate 1/n).

Deviations and gaps filled (all of them ours, not the paper's):
1. The reset/vote/commit stages and the use of approximate majority replace the paper's
   unavailable rules; its bias condition is not modelled beyond what approximate majority needs
   (a bias of order √n·log n).
2. The input-change model (the initiator's input flips with probability churn/n) fills the
   abstract's "rate 1/n"; the simulator can also flip chosen numbers of inputs at chosen times.
3. *Correct* means: some input value is held by a strict majority, and every agent outputs it.
4. Constants as in the phase clock (`m` minutes per hour, `hours` ≥ 4 hours per cycle).

Seeded bug `AdaptiveMajorityNoReset`: agents never reload their input at hour 0, so once the
majority has switched the opinions keep voting on stale values and the output never follows;
the exact analysis shows the probability of a correct output staying at 0.
"""

from __future__ import annotations

from fractions import Fraction

from .lang import Enum, Int, Param, Record
from .lang.population import Population, predicate, start
from .phase_clock import clock_step, default_minutes, spread

Opinion = Enum("A", "B", "U")
Side = Enum("A", "B")
FLIP = {"A": "B", "B": "A"}


class AdaptiveMajority(Population):
    """Adaptive majority: outputs track the majority of inputs that flip at rate churn/n."""

    n = Param("n", default=3, lo=2, doc="number of agents")
    hours = Param("hours", default=4, lo=4, doc="hours per cycle of the clock")
    m = Param("m", default=0, lo=0, doc="minutes per hour; 0 picks max(2, 2*ceil(log2 n))")
    churn = Param("churn", default=1, lo=0, doc="input flips per unit of parallel time (probability churn/n per interaction)")
    reset = True

    def setup(self) -> None:
        self.m = self.m or default_minutes(self.n)
        self.M = self.hours * self.m
        if self.churn > self.n:
            from .lang import SpecError

            raise SpecError(f"churn = {self.churn} exceeds n = {self.n}: the flip probability churn/n must be at most 1")

    def agent(self):
        self.Agent = Record("Agent", clock=Int(0, self.M - 1), input=Side, opinion=Opinion, output=Side)
        self._made: dict[tuple, object] = {}
        return self.Agent

    def make(self, clock: int, input: str, opinion: str, output: str):
        """The agent state with these fields (built once, then reused)."""
        key = (clock, input, opinion, output)
        q = self._made.get(key)
        if q is None:
            q = self._made[key] = self.Agent(clock=clock, input=input, opinion=opinion, output=output)
        return q

    def stage(self, clock: int) -> str:
        hour = clock // self.m
        return "reset" if hour == 0 else "commit" if hour == self.hours - 1 else "vote"

    def delta(self, u, v):
        cu, cv = clock_step(u.clock, v.clock, self.M, self.m)
        ou, ov = u.opinion, v.opinion
        if self.stage(u.clock) == "vote" and self.stage(v.clock) == "vote" and ou != "U":
            if ov == "U":
                ov = ou
            elif ov != ou:
                ov = "U"
        return self.settle(u, cu, ou), self.settle(v, cv, ov)

    def settle(self, q, clock: int, opinion: str):
        """The agent's next state: the new clock, and the stage's effect on opinion and output."""
        stage = self.stage(clock)
        if stage == "reset" and self.reset:
            opinion = q.input
        output = opinion if stage == "commit" and opinion != "U" else q.output
        return self.make(clock, q.input, opinion, output)

    def input(self, q):
        return q.input

    def output(self, q):
        return q.output

    def with_input(self, q, x):
        return self.make(q.clock, x, q.opinion, q.output)

    def input_change(self, x):
        return {FLIP[x]: Fraction(self.churn, self.n)}

    def majority(self, c) -> str | None:
        a = c.count(lambda q: q.input == "A")
        return "A" if 2 * a > c.n else "B" if 2 * a < c.n else None

    @predicate
    def correct(self, c) -> bool:
        """A strict majority of inputs exists and every agent outputs it."""
        x = self.majority(c)
        return x is not None and c.count(lambda q: q.output == x) == c.n

    @predicate
    def synchronized(self, c) -> bool:
        """The clocks are synchronized (as in the phase clock)."""
        return spread(sorted({q.clock for q in c.present()}), self.M) <= self.m

    @start
    def switched(self):
        """Clocks synchronized in the middle of a vote; two thirds of the inputs are A, but every
        opinion and output is still B (the majority has just switched)."""
        b = self.n // 3
        return {self.make(self.m, "A", "B", "B"): self.n - b, self.make(self.m, "B", "B", "B"): b}

    @start
    def settled(self):
        """Clocks synchronized at 0, two thirds of the inputs A, every output A."""
        b = self.n // 3
        return {self.Agent(clock=0, input="A", opinion="A", output="A"): self.n - b,
                self.Agent(clock=0, input="B", opinion="B", output="A"): b}


class AdaptiveMajorityNoReset(AdaptiveMajority):
    """Seeded bug: adaptive majority whose agents never reload their input (no reset stage)."""

    reset = False
