/* The lock of specs/examples/lock.py with every action weakly fair (`lock_weak`), and its property
   lock_used_infinitely_often ([]<> locked), for SPIN's acceptance search under weak fairness (pan -a -f).
   SPIN's weak fairness is per process; here a process's three actions exclude each other (its pc says which
   one may be enabled), so weak fairness of the process is weak fairness of each of its actions, as the spec
   declares. One d_step per step: the state is the spec's state. N (1..30) is set on the command line:
   spin -DN=12 -a lock_live.pml    pc: 0 idle, 1 waiting, 2 cs. */

#ifndef N
#define N 2
#endif

byte pc[N];
bool locked;

active [N] proctype proc() {
  do
  :: d_step { pc[_pid] == 0 -> pc[_pid] = 1 }
  :: d_step { pc[_pid] == 1 && !locked -> pc[_pid] = 2; locked = true }
  :: d_step { pc[_pid] == 2 -> pc[_pid] = 0; locked = false }
  od
}

ltl lock_used_infinitely_often { []<> locked }
