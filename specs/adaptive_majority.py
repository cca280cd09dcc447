"""Adaptive majority on a loosely-stabilizing phase clock: track the majority of changing opinions.

Source: P. Berenbrink, F. Biermeier, C. Hahn, D. Kaaser, "Loosely-Stabilizing Phase Clocks and
the Adaptive Majority Problem", SAND 2022, LIPIcs 221, paper 7 (arXiv 2106.13002). The claims
modelled, in the SAND abstract's words: "the agents have either opinion A or B or they are
undecided and agents can change their opinion at a rate of 1/n"; the goal is to keep track of
which of A and B is (momentarily) the majority; "if the majority has a support of at least
Ω(log n) agents and a sufficiently large bias is present", the outputs are correct within
O(n log n) interactions and stay correct for poly(n) interactions.
Measured on this model (`docs/population.md`): after a switch the outputs follow within one
cycle and a half (3m to 6.5m parallel time, by the phase of the switch); with support Θ(n) or
Θ(√n) they then stay correct at nearly every check over hundreds of cycles, and with support
Θ(log n) at most checks only, as the support itself fluctuates under churn.

The paper's rules were not available to us (the public copies we could reach give its title,
authors and abstract only); this is a construction from documented parts, on top of the phase
clock of `specs/phase_clock.py` (whose docstring states its own deviations). An agent's *input*
is its opinion in the paper's sense: A, B or undecided (U). The clock's hours split each cycle
into three stages, and every agent acts on its own hour:

- hour 0, *reset*: the agent's working opinion becomes its current input (A, B or U);
- hours 1 .. hours−2, *vote*: two voting agents run the three-state approximate majority of
  Angluin, Aspnes and Eisenstat (Distributed Computing 2008) on their working opinions — a
  decided initiator turns an opposing responder undecided and an undecided responder to its
  opinion. Undecided inputs are the protocol's undecided state, so a small supported majority
  spreads through the undecided agents by epidemic while A and B cancel;
- hour hours−1, *commit*: a decided agent copies its working opinion to its output.

Inputs change over time: in every interaction, with probability churn/n, the initiator's input
is redrawn from the stationary law — A with probability a/n, B with b/n, undecided otherwise —
so opinions appear and disappear at rate churn/n per interaction (the paper's 1/n for churn = 1),
and on average a agents support A and b support B at any time. The simulator can also change
chosen numbers of inputs at chosen times.

Deviations and gaps filled (all of them ours, not the paper's):
1. The reset/vote/commit stages and the use of approximate majority replace the paper's
   unavailable rules; the bias the construction needs is measured, not derived
   (`python -m bench.population_claims`; `docs/population.md`).
2. The input-change model (redraws from a stationary law with a, b supporters on average) fills
   the abstract's "rate 1/n"; the paper's adversary may choose the changes.
3. *Correct* means: one of A and B has strictly more supporters than the other, and every agent
   (undecided ones included) outputs it. Outputs are A or B; an agent outputs its last committed
   opinion.
4. Constants as in the phase clock (`m` minutes per hour, `hours` ≥ 4 hours per cycle).

Defaults (n = 3, a = 2, b = 0) are the smallest instance of the regime: the previous majority B
has lost all its supporters, A is supported by two agents, one agent is undecided, and opinions
keep appearing and disappearing. `lockstep analyze adaptive_majority --measure reach` shows the
outputs reach the new majority with probability 1 from the default start `switched`.

Seeded bug `AdaptiveMajorityNoReset`: agents never reload their input at hour 0, so once the
majority has switched the working opinions keep voting on stale values and the outputs never
follow: `lockstep analyze adaptive_majority_buggy --measure reach` exits 1 (probability 0).
"""

from __future__ import annotations

from fractions import Fraction

from .lang import Enum, Int, Param, Record, SpecError
from .lang.population import Population, predicate, start
from .phase_clock import clock_step, default_minutes, spread

Opinion = Enum("A", "B", "U")
Side = Enum("A", "B")
SIDES = ("A", "B")


class AdaptiveMajority(Population):
    """Adaptive majority: outputs track whether A or B has more supporters as opinions come and go."""

    n = Param("n", default=3, lo=2, doc="number of agents")
    hours = Param("hours", default=4, lo=4, doc="hours per cycle of the clock")
    m = Param("m", default=0, lo=0, doc="minutes per hour; 0 picks max(2, 2*ceil(log2 n))")
    a = Param("a", default=-1, lo=-1, doc="agents supporting A on average (-1 picks n - n//3)")
    b = Param("b", default=0, lo=0, doc="agents supporting B on average")
    churn = Param("churn", default=1, lo=0,
                  doc="input redraws per unit of parallel time (probability churn/n per interaction)")
    reset = True

    def setup(self) -> None:
        self.m = self.m or default_minutes(self.n)
        self.M = self.hours * self.m
        if self.a < 0:
            self.a = self.n - self.n // 3
        if self.a + self.b > self.n:
            raise SpecError(f"{type(self).__name__}: a + b = {self.a + self.b} supporters exceed n = {self.n} agents",
                            None, "give a + b <= n (the other agents are undecided)")
        if self.churn > self.n:
            raise SpecError(f"churn = {self.churn} exceeds n = {self.n}: the redraw probability churn/n must be at most 1")
        self.law = {"A": Fraction(self.a, self.n), "B": Fraction(self.b, self.n),
                    "U": Fraction(self.n - self.a - self.b, self.n)}
        self._ticks: dict[tuple[int, int], tuple[int, int]] = {}
        self._settled: dict[tuple, object] = {}

    def agent(self):
        self.Agent = Record("Agent", clock=Int(0, self.M - 1), input=Opinion, opinion=Opinion, output=Side)
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
        tick = self._ticks.get((u.clock, v.clock))
        if tick is None:
            tick = self._ticks[(u.clock, v.clock)] = clock_step(u.clock, v.clock, self.M, self.m)
        ou, ov = u.opinion, v.opinion
        if ou != "U" and self.stage(u.clock) == "vote" and self.stage(v.clock) == "vote":
            if ov == "U":
                ov = ou
            elif ov != ou:
                ov = "U"
        return self.settle(u, tick[0], ou), self.settle(v, tick[1], ov)

    def settle(self, q, clock: int, opinion: str):
        """The agent's next state: the new clock, and the stage's effect on opinion and output."""
        key = (q, clock, opinion)
        got = self._settled.get(key)
        if got is None:
            stage = self.stage(clock)
            now = q.input if stage == "reset" and self.reset else opinion
            output = now if stage == "commit" and now != "U" else q.output
            got = self._settled[key] = self.make(clock, q.input, now, output)
        return got

    def input(self, q):
        return q.input

    def output(self, q):
        return q.output

    def with_input(self, q, x):
        return self.make(q.clock, x, q.opinion, q.output)

    def input_change(self, x):
        return {y: Fraction(self.churn, self.n) * p for y, p in self.law.items() if y != x}

    def majority(self, c) -> str | None:
        """A or B, whichever has strictly more supporters (None on a tie)."""
        a = c.count(lambda q: q.input == "A")
        b = c.count(lambda q: q.input == "B")
        return "A" if a > b else "B" if b > a else None

    @predicate
    def correct(self, c) -> bool:
        """One of A and B has strictly more supporters, and every agent outputs it."""
        x = self.majority(c)
        return x is not None and c.count(lambda q: q.output == x) == c.n

    @predicate
    def synchronized(self, c) -> bool:
        """The clocks are synchronized (as in the phase clock)."""
        return spread(sorted({q.clock for q in c.present()}), self.M) <= self.m

    def supporters(self, clock: int, opinion: str, output: str) -> dict:
        """a agents with input A, b with input B, the rest undecided, all at `clock` with this
        working opinion and output (None: the opinion equals the input)."""
        counts = {"A": self.a, "B": self.b, "U": self.n - self.a - self.b}
        return {self.make(clock, x, opinion or x, output): k for x, k in counts.items() if k}

    def winner(self) -> str:
        """The side with more supporters on average (A on a tie)."""
        return "B" if self.b > self.a else "A"

    @start
    def switched(self):
        """The majority has just switched: a agents support A and b support B (the rest are
        undecided), but every working opinion and output is still the other side's; the clocks
        are synchronized at the start of the first vote hour."""
        old = "A" if self.winner() == "B" else "B"
        return self.supporters(self.m, old, old)

    @start
    def settled(self):
        """Clocks synchronized at 0, working opinions equal to the inputs, every output the majority."""
        return self.supporters(0, None, self.winner())


class AdaptiveMajorityNoReset(AdaptiveMajority):
    """Seeded bug: adaptive majority whose agents never reload their input (no reset stage)."""

    reset = False
