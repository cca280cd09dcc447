/* The phase clock of named agents, as specs/examples/agent_clock.py, for SPIN.
   Every ordered pair (i, j), i != j, may interact: the responder j advances its phase (mod 5)
   when the initiator i is in j's phase or one ahead. One process runs each interaction as one
   indivisible d_step, so SPIN's states are exactly the spec's states. AGENTS (2..8) is set on
   the command line: spin -DAGENTS=8 -a agent_clock.pml */

#ifndef AGENTS
#define AGENTS 8
#endif

byte phase[AGENTS];

#define MEET(i, k) \
  :: d_step { i != k && i < AGENTS && k < AGENTS -> \
              if \
              :: (phase[i % AGENTS] + 5 - phase[k % AGENTS]) % 5 <= 1 -> phase[k % AGENTS] = (phase[k % AGENTS] + 1) % 5 \
              :: else -> skip \
              fi }

#define MEETS(i) MEET(i, 0) MEET(i, 1) MEET(i, 2) MEET(i, 3) MEET(i, 4) MEET(i, 5) MEET(i, 6) MEET(i, 7)

active proctype agent_clock()
{
  do
  MEETS(0)
  MEETS(1)
  MEETS(2)
  MEETS(3)
  MEETS(4)
  MEETS(5)
  MEETS(6)
  MEETS(7)
  od
}
