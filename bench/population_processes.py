"""Population runs on processes: interactions per second with n agent processes and a scheduler.

Runs the phase clock (`specs/phase_clock.py`) on 16 agent processes over TCP on 127.0.0.1, with
tracing off and on, validates the traced run, and runs the same interactions in one process
(the scheduler's pairs and the same rule table, no sockets) for scale. Prints a table; the
ratio column is against the untraced run of the same invocation.

    .venv/bin/python bench/population_processes.py [--agents 16] [--interactions 20000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from lockstep.checker.loader import load_protocol
from lockstep.checker.validation.population import validate_population
from lockstep.checker.validation.runtrace import load
from lockstep.executors.population.run import run_population
from lockstep.specs.lang.population.agents import Rules, agent_rng, draw, initial_agents, pairs


def in_process(spec: str, params: dict[str, int], interactions: int, seed: int) -> float:
    """Seconds for the same interactions applied one after another in this process."""
    protocol = load_protocol(spec, params)
    rules = Rules(protocol)
    agents = initial_agents(protocol, None, seed)
    rngs = [agent_rng(seed, p) for p in range(protocol.n)]
    t0 = time.perf_counter()
    for _, (i, r) in zip(range(interactions), pairs(seed, protocol.n)):
        a, b = agents[i], agents[r]
        d = draw(rngs[r])
        agents[i], agents[r] = rules.pick(a, b, d if rules.randomized(a, b) else None)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="phase_clock")
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--interactions", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    params, k = {"n": args.agents}, args.interactions
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.jsonl")
        for tracing in (False, True):
            rep = run_population(args.spec, params, k, args.seed, trace=path if tracing else None, tracing=tracing)
            rows.append(("processes, untraced" if not tracing else "processes, traced", rep.completed, rep.rate))
        merged = load(path)
        t0 = time.perf_counter()
        res = validate_population(merged)
        secs = time.perf_counter() - t0
    local = in_process(args.spec, params, k, args.seed)
    rows.append(("one process, no sockets", k, k / local))
    base = rows[0][2]
    print(f"{args.spec}, {args.agents} agent processes and a scheduler, {k:,} interactions per run, "
          f"{os.cpu_count()} cores")
    print(f"{'run':<26}{'interactions':>14}{'per second':>12}{'ratio':>8}")
    for name, n, rate in rows:
        print(f"{name:<26}{n:>14,}{rate:>12,.0f}{rate / base:>8.2f}")
    print(f"validation of the traced run: {res.interactions:,} interactions in {secs:.2f} s = "
          f"{res.interactions / secs:,.0f} interactions/s")


if __name__ == "__main__":
    main()
