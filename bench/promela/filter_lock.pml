/* The filter lock (Peterson 1981), as specs/examples/filter_lock.py, for SPIN.
   One process runs every action of every process as one indivisible d_step (one step per
   assignment, one for the wait's test over all other processes), so SPIN's states are exactly
   the spec's states. N (2..8) is set on the command line: spin -DN=5 -a filter_lock.pml
   pc: 0 idle, 1 set_level, 2 set_victim, 3 wait, 4 cs. */

#ifndef N
#define N 3
#endif

byte pc[N];
byte j[N];
byte level[N];
byte victim[N];

/* process k (if it exists and is not p) is below p's level */
#define BELOW(k, p) (k == p || k >= N || level[k % N] < j[p])
#define ALONE(p) (BELOW(0, p) && BELOW(1, p) && BELOW(2, p) && BELOW(3, p) && \
                  BELOW(4, p) && BELOW(5, p) && BELOW(6, p) && BELOW(7, p))
#define IN_CS(k) (k < N && pc[k % N] == 4)
#define MUTEX (IN_CS(0) + IN_CS(1) + IN_CS(2) + IN_CS(3) + IN_CS(4) + IN_CS(5) + IN_CS(6) + IN_CS(7) <= 1)

#define PROC(p) \
  :: d_step { pc[p] == 0 -> j[p] = 1; pc[p] = 1 } \
  :: d_step { pc[p] == 1 -> level[p] = j[p]; pc[p] = 2 } \
  :: d_step { pc[p] == 2 -> victim[j[p]] = p; pc[p] = 3 } \
  :: d_step { pc[p] == 3 && (ALONE(p) || victim[j[p]] != p) -> \
              if \
              :: j[p] >= N - 1 -> j[p] = 0; pc[p] = 4 \
              :: else -> j[p] = j[p] + 1; pc[p] = 1 \
              fi; \
              assert(MUTEX) } \
  :: d_step { pc[p] == 4 -> level[p] = 0; pc[p] = 0 }

active proctype filter_lock()
{
  do
  PROC(0)
  PROC(1)
#if N > 2
  PROC(2)
#endif
#if N > 3
  PROC(3)
#endif
#if N > 4
  PROC(4)
#endif
#if N > 5
  PROC(5)
#endif
#if N > 6
  PROC(6)
#endif
#if N > 7
  PROC(7)
#endif
  od
}
