"""A modular phase clock in a population of named agents, every ordered pair interacting.

Population protocols (Angluin, Aspnes, Diamadi, Fischer, Peralta, "Computation in networks of
passively mobile finite-state sensors", PODC 2004): agents are finite-state, and any ordered
pair (initiator, responder) may interact at any time, updating their states by a fixed rule.
The rule here is a phase clock in the spirit of the one Angluin, Aspnes and Eisenstat use to
time their epidemics ("Fast computation by population protocols with a leader", DISC 2006):
each agent holds a phase modulo 5, and the responder moves to the next phase when it meets an
initiator in its own phase or one phase ahead, so phases chase each other round the clock.

With 8 agents every configuration is reachable: 5^8 = 390,625 distinct states, each with all
8·7 = 56 interactions enabled (21,875,000 transitions, most of them changing nothing), and
no deadlock. The Promela model in `bench/promela/` is the same machine.

Deviations from the paper: the clock is leaderless (the paper's is driven by a leader and
spreads phases by epidemic), has 5 phases rather than a number depending on the population
size, and agents are named processes (`Range`), not the counts of a counting abstraction, so
the state space is that of the agents themselves. The seeded bug `AgentClockNoWrap` forgets
the wrap-around, so a phase leaves its type; the checker reports that step.
"""

from ..lang import If, Int, Map, Param, Range, Spec, action, require

N = Param("agents", default=8, lo=2)
Agent = Range(N)
Phase = Int(0, 4)
PHASES = 5


class AgentClock(Spec):
    """Phase clock of named agents: every ordered pair may interact, phases advance modulo 5."""

    phase = Map(Agent, Phase, init=0)

    @action
    def interact(s, i: Agent, j: Agent):
        require(i != j)
        lead = (s.phase[i] - s.phase[j]) % PHASES
        s.phase[j] = If(lead <= 1, (s.phase[j] + 1) % PHASES, s.phase[j])


class AgentClockNoWrap(AgentClock):
    """Seeded bug: the responder advances without wrapping round, so phase 4 steps out of 0..4."""

    @action
    def interact(s, i: Agent, j: Agent):
        require(i != j)
        lead = (s.phase[i] - s.phase[j]) % PHASES
        s.phase[j] = If(lead <= 1, s.phase[j] + 1, s.phase[j])
