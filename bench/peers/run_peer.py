"""Run one benchmark model under a peer checker; prints one JSON line: distinct, seconds.

Usage: python run_peer.py {minicheck|musil} {two_phase|filter_lock|agent_clock} N
Run it with an interpreter that has the peer installed (musil needs Python >= 3.12).
"""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from flat_models import (  # noqa: E402
    agent_clock,
    agent_clock_actions,
    filter_lock,
    filter_lock_actions,
    two_phase,
    two_phase_actions,
)

MODELS = {"two_phase": two_phase, "filter_lock": filter_lock, "agent_clock": agent_clock}
GUARDED = {"two_phase": two_phase_actions, "filter_lock": filter_lock_actions, "agent_clock": agent_clock_actions}


def run_minicheck(init, successors, inv, n_fields: int) -> int:
    from minicheck import Protocol, check_safety

    fields = tuple(f"x{i}" for i in range(n_fields))
    proto = Protocol(name="bench", candidate=False, fields=fields, initial=init, transitions=successors,
                     invariants={"safe": lambda d: inv(tuple(d[f] for f in fields))})
    res = check_safety(proto, max_states=10**9)
    assert res["exhaustive"] and res["properties"]["safe"]["holds"], res
    return res["reachable_states"]


def run_musil(init, actions, inv) -> int:
    import musil

    model = musil.Model(init=[init], actions=[musil.Action(name, en, ap) for name, en, ap in actions],
                        invariants={"safe": inv})
    res = musil.check(model, max_states=10**9)
    assert res.ok, res
    return res.states_explored


def main() -> None:
    tool, model, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    init, successors, inv = MODELS[model](n)
    t0 = time.perf_counter()
    if tool == "minicheck":
        distinct = run_minicheck(init, successors, inv, len(init))
    else:
        distinct = run_musil(init, GUARDED[model](n), inv)
    print(json.dumps({"distinct": distinct, "generated": None, "seconds": time.perf_counter() - t0}))


if __name__ == "__main__":
    main()
