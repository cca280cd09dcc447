/* Two-phase commit with weak fairness, as specs/examples/two_phase.py (TLA+ Examples TwoPhase) and its
   property every_rm_decides, for SPIN's acceptance search under weak fairness (pan -a -f).
   SPIN's weak fairness is per process, so each action instance is a process of its own: one d_step per
   step, enabled exactly where the action changes the state (TLA+'s <<A>>_vars, which is what the spec's
   weak fairness is about); the state is the spec's state (the processes' counters never change).
   RM (1..12) is set on the command line: spin -DRM=5 -a two_phase_live.pml
   rm_state: 0 working, 1 prepared, 2 committed, 3 aborted; tm_state: 0 init, 1 committed, 2 aborted;
   tm_prepared and the Prepared messages are bitmasks over the RMs. */

#ifndef RM
#define RM 3
#endif
#define ALL ((1 << RM) - 1)
#define BIT(r) (1 << (r))

byte rm_state[RM];
byte tm_state;
unsigned tm_prepared : 12;
unsigned prepared_msgs : 12;
bool commit_msg;
bool abort_msg;

proctype tm_rcv_prepared(byte r) {
  do :: d_step { tm_state == 0 && (prepared_msgs & BIT(r)) && !(tm_prepared & BIT(r)) -> tm_prepared = tm_prepared | BIT(r) } od
}
proctype tm_commit() { do :: d_step { tm_state == 0 && tm_prepared == ALL -> tm_state = 1; commit_msg = true } od }
proctype tm_abort() { do :: d_step { tm_state == 0 -> tm_state = 2; abort_msg = true } od }
proctype rm_prepare(byte r) {
  do :: d_step { rm_state[r] == 0 -> rm_state[r] = 1; prepared_msgs = prepared_msgs | BIT(r) } od
}
proctype rm_choose_to_abort(byte r) { do :: d_step { rm_state[r] == 0 -> rm_state[r] = 3 } od }
proctype rm_rcv_commit_msg(byte r) { do :: d_step { commit_msg && rm_state[r] != 2 -> rm_state[r] = 2 } od }
proctype rm_rcv_abort_msg(byte r) { do :: d_step { abort_msg && rm_state[r] != 3 -> rm_state[r] = 3 } od }

init {
  byte r;
  atomic {
    run tm_commit();
    run tm_abort();
    do
    :: r < RM -> run tm_rcv_prepared(r); run rm_prepare(r); run rm_choose_to_abort(r); run rm_rcv_commit_msg(r);
                 run rm_rcv_abort_msg(r); r++
    :: else -> break
    od
  }
}

#define DECIDED(r) (RM <= (r) || rm_state[(r) % RM] >= 2)
#define ALL_DECIDED (DECIDED(0) && DECIDED(1) && DECIDED(2) && DECIDED(3) && DECIDED(4) && DECIDED(5) && \
                     DECIDED(6) && DECIDED(7) && DECIDED(8) && DECIDED(9) && DECIDED(10) && DECIDED(11))

ltl every_rm_decides { <> ALL_DECIDED }
