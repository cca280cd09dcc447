"""Independent plain-Python models of the actor demos, for cross-checking the compiled actor specs.

They share no code with `lockstep.specs.lang.actors`: states are tuples and frozensets of envelopes, and
each handler is written out by hand. `bench.handwritten.bfs` counts as TLC does.
"""

from __future__ import annotations

from bench.handwritten import bfs


def two_phase_commit(rm: int, crashes: int = 1) -> tuple[int, int, int]:
    """(distinct, generated, depth) of two-phase commit as actors (specs/two_phase_commit.py)."""
    rms = range(1, rm + 1)

    def put(net, env):
        assert env not in net, "a second copy of an envelope in flight"
        return net | {env}

    # state: (tm_state, tm_prepared, rm_states, tm_armed, rm_armed, net, crashed)
    init = ("init", frozenset(), ("working",) * rm, True, (True,) * rm,
            frozenset((0, r, "Prepare") for r in rms), False)

    def successors(s):
        tm, prepared, rs, tm_armed, rm_armed, net, crashed = s
        out = []
        for env in net:
            src, dst, m = env
            rest = net - {env}
            if dst == 0:
                if crashed:
                    continue
                if m == "Prepared":
                    p2 = prepared | {src}
                    if tm == "init" and all(r in p2 for r in rms):
                        n2 = rest
                        for r in rms:
                            n2 = put(n2, (0, r, "Commit"))
                        out.append(("committed", p2, rs, tm_armed, rm_armed, n2, crashed))
                    else:
                        out.append((tm, p2, rs, tm_armed, rm_armed, rest, crashed))
                else:  # No
                    out.append(abort(s, rest))
            else:
                i = dst - 1
                old = rs[i]
                if m == "Prepare":
                    if old == "working":
                        out.append((tm, prepared, _set(rs, i, "prepared"), tm_armed, rm_armed,
                                    put(rest, (dst, 0, "Prepared")), crashed))
                    elif old == "aborted":
                        out.append((tm, prepared, rs, tm_armed, rm_armed, put(rest, (dst, 0, "No")), crashed))
                    else:
                        out.append((tm, prepared, rs, tm_armed, rm_armed, rest, crashed))
                else:
                    new = "committed" if m == "Commit" else "aborted"
                    out.append((tm, prepared, _set(rs, i, new), tm_armed, rm_armed, rest, crashed))
        if tm_armed and not crashed:
            out.append(abort((tm, prepared, rs, False, rm_armed, net, crashed), net))
        for i, armed in enumerate(rm_armed):
            if armed:
                old = rs[i]
                new = "aborted" if old == "working" else old
                out.append((tm, prepared, _set(rs, i, new), tm_armed, _set(rm_armed, i, new == "prepared"), net, crashed))
        if crashes and not crashed:
            out.append((tm, prepared, rs, tm_armed, rm_armed, net, True))
        return out

    def abort(s, net):
        tm, prepared, rs, tm_armed, rm_armed, _, crashed = s
        if tm != "init":
            return (tm, prepared, rs, tm_armed, rm_armed, net, crashed)
        for r in rms:
            net = put(net, (0, r, "Abort"))
        return ("aborted", prepared, rs, tm_armed, rm_armed, net, crashed)

    return bfs([init], successors)


def token_ring(n: int, tokens: int, laps: int) -> tuple[int, int, int]:
    """(distinct, generated, depth) of the token ring (specs/token_ring.py)."""
    init = ((0,) * n, frozenset(((t % n), (t % n + 1) % n, t) for t in range(tokens)))

    def successors(s):
        counted, net = s
        out = []
        for env in net:
            _, dst, t = env
            nxt = (dst, (dst + 1) % n, t)
            rest = net - {env}
            assert nxt not in rest
            out.append((_set(counted, dst, (counted[dst] + 1) % laps), rest | {nxt}))
        return out

    return bfs([init], successors)


def _set(t: tuple, i: int, v) -> tuple:
    return t[:i] + (v,) + t[i + 1:]
