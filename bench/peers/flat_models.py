"""TwoPhase and the filter lock as flat-tuple successor functions (the shape minicheck takes)."""

from __future__ import annotations


def two_phase(n: int):
    """(initial state, successors(state) -> [(label, state)], consistent(state)) for TwoPhase with n RMs.

    State: rm_state[0..n-1] (0 working, 1 prepared, 2 committed, 3 aborted), tm_state, tm_prepared
    bitmask, msgs bitmask (bit r: Prepared(r); bit n: Commit; bit n+1: Abort)."""
    every = (1 << n) - 1
    commit, abort = 1 << n, 1 << (n + 1)

    def successors(s):
        rm, tm, prep, msgs = s[:n], s[n], s[n + 1], s[n + 2]
        out = []
        if tm == 0 and prep == every:
            out.append(("tm_commit", rm + (1, prep, msgs | commit)))
        if tm == 0:
            out.append(("tm_abort", rm + (2, prep, msgs | abort)))
        for r in range(n):
            if tm == 0 and msgs >> r & 1:
                out.append(("tm_rcv_prepared", rm + (tm, prep | 1 << r, msgs)))
            if rm[r] == 0:
                out.append(("rm_prepare", rm[:r] + (1,) + rm[r + 1:] + (tm, prep, msgs | 1 << r)))
                out.append(("rm_choose_to_abort", rm[:r] + (3,) + rm[r + 1:] + (tm, prep, msgs)))
            if msgs & commit:
                out.append(("rm_rcv_commit", rm[:r] + (2,) + rm[r + 1:] + (tm, prep, msgs)))
            if msgs & abort:
                out.append(("rm_rcv_abort", rm[:r] + (3,) + rm[r + 1:] + (tm, prep, msgs)))
        return out

    def consistent(s):
        rm = s[:n]
        return not (3 in rm and 2 in rm)

    return (0,) * n + (0, 0, 0), successors, consistent


def filter_lock(n: int):
    """(initial state, successors, mutual_exclusion) for the filter lock with n processes.

    State: pc[0..n-1] (0 idle, 1 set_level, 2 set_victim, 3 wait, 4 cs), j[..], level[..], victim[..]."""

    def successors(s):
        pcs, js, lv, vi = s[:n], s[n:2 * n], s[2 * n:3 * n], s[3 * n:]
        out = []
        for i in range(n):
            pc, j = pcs[i], js[i]
            if pc == 0:
                out.append(("enter", pcs[:i] + (1,) + pcs[i + 1:] + js[:i] + (1,) + js[i + 1:] + lv + vi))
            elif pc == 1:
                out.append(("set_level", pcs[:i] + (2,) + pcs[i + 1:] + js + lv[:i] + (j,) + lv[i + 1:] + vi))
            elif pc == 2:
                out.append(("set_victim", pcs[:i] + (3,) + pcs[i + 1:] + js + lv + vi[:j] + (i,) + vi[j + 1:]))
            elif pc == 3:
                if all(lv[k] < j for k in range(n) if k != i) or vi[j] != i:
                    top = j >= n - 1
                    out.append(("advance", pcs[:i] + ((4 if top else 1),) + pcs[i + 1:]
                                + js[:i] + ((0 if top else j + 1),) + js[i + 1:] + lv + vi))
            else:
                out.append(("leave", pcs[:i] + (0,) + pcs[i + 1:] + js + lv[:i] + (0,) + lv[i + 1:] + vi))
        return out

    def mutual_exclusion(s):
        return sum(1 for pc in s[:n] if pc == 4) <= 1

    return (0,) * (4 * n), successors, mutual_exclusion


def two_phase_actions(n: int) -> list:
    """TwoPhase as guarded actions (name, enabled(state), apply(state)), the shape musil takes."""
    every = (1 << n) - 1
    commit, abort = 1 << n, 1 << (n + 1)
    acts = [
        ("tm_commit", lambda s: s[n] == 0 and s[n + 1] == every, lambda s: s[:n] + (1, s[n + 1], s[n + 2] | commit)),
        ("tm_abort", lambda s: s[n] == 0, lambda s: s[:n] + (2, s[n + 1], s[n + 2] | abort)),
    ]
    for r in range(n):
        bit = 1 << r
        acts += [
            (f"tm_rcv_prepared_{r}", lambda s, bit=bit: s[n] == 0 and s[n + 2] & bit,
             lambda s, bit=bit: s[:n + 1] + (s[n + 1] | bit, s[n + 2])),
            (f"rm_prepare_{r}", lambda s, r=r: s[r] == 0,
             lambda s, r=r, bit=bit: s[:r] + (1,) + s[r + 1:n + 2] + (s[n + 2] | bit,)),
            (f"rm_choose_to_abort_{r}", lambda s, r=r: s[r] == 0, lambda s, r=r: s[:r] + (3,) + s[r + 1:]),
            (f"rm_rcv_commit_{r}", lambda s: s[n + 2] & commit, lambda s, r=r: s[:r] + (2,) + s[r + 1:]),
            (f"rm_rcv_abort_{r}", lambda s: s[n + 2] & abort, lambda s, r=r: s[:r] + (3,) + s[r + 1:]),
        ]
    return acts


def filter_lock_actions(n: int) -> list:
    """The filter lock as guarded actions (name, enabled(state), apply(state)), per process."""
    J, LV, VI = n, 2 * n, 3 * n  # offsets of j, level, victim
    acts = []
    for i in range(n):
        def put(s, k, v):
            return s[:k] + (v,) + s[k + 1:]

        def can_advance(s, i=i):
            j = s[J + i]
            return s[i] == 3 and (all(s[LV + k] < j for k in range(n) if k != i) or s[VI + j] != i)

        def advance(s, i=i):
            j = s[J + i]
            top = j >= n - 1
            return put(put(s, i, 4 if top else 1), J + i, 0 if top else j + 1)

        acts += [
            (f"enter_{i}", lambda s, i=i: s[i] == 0, lambda s, i=i: put(put(s, i, 1), J + i, 1)),
            (f"set_level_{i}", lambda s, i=i: s[i] == 1, lambda s, i=i: put(put(s, i, 2), LV + i, s[J + i])),
            (f"set_victim_{i}", lambda s, i=i: s[i] == 2, lambda s, i=i: put(put(s, i, 3), VI + s[J + i], i)),
            (f"advance_{i}", can_advance, advance),
            (f"leave_{i}", lambda s, i=i: s[i] == 4, lambda s, i=i: put(put(s, i, 0), LV + i, 0)),
        ]
    return acts


def agent_clock(n: int):
    """(initial state, successors, always-true invariant) for the phase clock of n named agents.

    State: phase[0..n-1] in 0..4. Every ordered pair (i, j), i != j, interacts: j advances
    (mod 5) when i's phase is j's or one ahead; otherwise the interaction changes nothing."""

    def successors(s):
        out = []
        for i in range(n):
            for j in range(n):
                if i != j:
                    pj = s[j]
                    if (s[i] - pj) % 5 <= 1:
                        out.append(("interact", s[:j] + ((pj + 1) % 5,) + s[j + 1:]))
                    else:
                        out.append(("interact", s))
        return out

    return (0,) * n, successors, lambda s: True


def agent_clock_actions(n: int) -> list:
    """The phase clock as guarded actions (name, enabled(state), apply(state)), one per ordered pair."""
    acts = []
    for i in range(n):
        for j in range(n):
            if i != j:
                def apply(s, i=i, j=j):
                    pj = s[j]
                    return s[:j] + ((pj + 1) % 5,) + s[j + 1:] if (s[i] - pj) % 5 <= 1 else s

                acts.append((f"interact_{i}_{j}", lambda s: True, apply))
    return acts
