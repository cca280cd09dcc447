/* Two-phase commit, as specs/examples/two_phase.py (TLA+ Examples TwoPhase), for SPIN.
   One process runs every action as one indivisible d_step, so SPIN's states are exactly the
   spec's states. RM (1..12) is set on the command line: spin -DRM=5 -a two_phase.pml
   rm_state: 0 working, 1 prepared, 2 committed, 3 aborted; tm_state: 0 init, 1 committed,
   2 aborted; tm_prepared and the Prepared messages are bitmasks over the RMs. */

#ifndef RM
#define RM 3
#endif
#define ALL ((1 << RM) - 1)

byte rm_state[RM];
byte tm_state;
unsigned tm_prepared : 12;
unsigned prepared_msgs : 12;
bool commit_msg;
bool abort_msg;

#define CONSISTENT \
  !((rm_state[0] == 3 || (RM > 1 && rm_state[1 % RM] == 3) || (RM > 2 && rm_state[2 % RM] == 3) || \
     (RM > 3 && rm_state[3 % RM] == 3) || (RM > 4 && rm_state[4 % RM] == 3) || (RM > 5 && rm_state[5 % RM] == 3) || \
     (RM > 6 && rm_state[6 % RM] == 3) || (RM > 7 && rm_state[7 % RM] == 3) || (RM > 8 && rm_state[8 % RM] == 3) || \
     (RM > 9 && rm_state[9 % RM] == 3) || (RM > 10 && rm_state[10 % RM] == 3) || (RM > 11 && rm_state[11 % RM] == 3)) && \
    (rm_state[0] == 2 || (RM > 1 && rm_state[1 % RM] == 2) || (RM > 2 && rm_state[2 % RM] == 2) || \
     (RM > 3 && rm_state[3 % RM] == 2) || (RM > 4 && rm_state[4 % RM] == 2) || (RM > 5 && rm_state[5 % RM] == 2) || \
     (RM > 6 && rm_state[6 % RM] == 2) || (RM > 7 && rm_state[7 % RM] == 2) || (RM > 8 && rm_state[8 % RM] == 2) || \
     (RM > 9 && rm_state[9 % RM] == 2) || (RM > 10 && rm_state[10 % RM] == 2) || (RM > 11 && rm_state[11 % RM] == 2)))

#define RM_ACTIONS(r) \
  :: d_step { tm_state == 0 && (prepared_msgs & (1 << r)) -> tm_prepared = tm_prepared | (1 << r); assert(CONSISTENT) } \
  :: d_step { rm_state[r] == 0 -> rm_state[r] = 1; prepared_msgs = prepared_msgs | (1 << r); assert(CONSISTENT) } \
  :: d_step { rm_state[r] == 0 -> rm_state[r] = 3; assert(CONSISTENT) } \
  :: d_step { commit_msg -> rm_state[r] = 2; assert(CONSISTENT) } \
  :: d_step { abort_msg -> rm_state[r] = 3; assert(CONSISTENT) }

active proctype two_phase()
{
  do
  :: d_step { tm_state == 0 && tm_prepared == ALL -> tm_state = 1; commit_msg = true; assert(CONSISTENT) }
  :: d_step { tm_state == 0 -> tm_state = 2; abort_msg = true; assert(CONSISTENT) }
  RM_ACTIONS(0)
#if RM > 1
  RM_ACTIONS(1)
#endif
#if RM > 2
  RM_ACTIONS(2)
#endif
#if RM > 3
  RM_ACTIONS(3)
#endif
#if RM > 4
  RM_ACTIONS(4)
#endif
#if RM > 5
  RM_ACTIONS(5)
#endif
#if RM > 6
  RM_ACTIONS(6)
#endif
#if RM > 7
  RM_ACTIONS(7)
#endif
#if RM > 8
  RM_ACTIONS(8)
#endif
#if RM > 9
  RM_ACTIONS(9)
#endif
#if RM > 10
  RM_ACTIONS(10)
#endif
#if RM > 11
  RM_ACTIONS(11)
#endif
  od
}
