"""The population simulator's kernels: the C loops and their Python fallback give the same runs for a seed, and a
machine without a C compiler still simulates, saying so once."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from lockstep.checker.probabilistic import kernels, portable
from lockstep.checker.probabilistic.batched import Simulator
from lockstep.specs.phase_clock import PhaseClock
from tests.checker.test_probabilistic import Cyclic, Pairs
from tests.specs.test_population import Epidemic


def _trace(sim: Simulator, steps: list) -> list:
    """What a simulator holds after each step: an int runs that many interactions, "b" one batch of at most 40."""
    seen = []
    for step in steps:
        if step == "b":
            seen.append(sim.batch(40))
        else:
            sim.run(step)
        seen.append((sim.t, sim.config(), sim._state.tolist(),
                     None if sim.touched is None else sim.touched.tolist(),
                     sim._agents.tolist() if sim.method == "agents" else sim._batch))
    return seen


CASES = [  # (protocol, start, how): uint8 and uint16 agents, a randomized rule, long batches, labels beyond 32 bits
    (PhaseClock(n=400, hours=4, m=2), "spread_out", {"method": "agents"}),
    (PhaseClock(n=300, hours=4, m=70), "spread_out", {"method": "agents"}),
    (Cyclic(n=60), "lopsided", {"method": "agents"}),
    (Cyclic(n=60), "lopsided", {"method": "batched"}),
    (Cyclic(n=5000), "lopsided", {"method": "batched", "max_batch": 3}),
    (Epidemic(n=1000), "one", {"method": "batched", "track": True}),
    (PhaseClock(n=400, hours=4, m=70), "spread_out", {"method": "batched"}),
    (Pairs(n=2**33 + 5), "thirds", {"method": "batched"}),
]


@pytest.mark.parametrize("protocol,start,how", CASES, ids=lambda c: getattr(c, "__name__", None) or type(c).__name__)
def test_the_c_kernels_and_the_python_loops_give_the_same_run(protocol, start, how):
    first = protocol.start_configurations(start)[0]
    compiled = Simulator(protocol, first, seed=9, **how)
    assert isinstance(compiled._loops, kernels.Compiled)
    python = Simulator(protocol, first, seed=9, **how)
    python._loops = portable
    steps = [1, 5, "b", 700, "b", 1500]
    ours = _trace(compiled, steps)
    assert ours == _trace(python, steps)
    assert ours[-1][1] != first and sum(ours[-1][1]) == protocol.n  # the runs moved, keeping every agent


def test_the_kernels_check_the_types_they_read():
    p = PhaseClock(n=50)
    sim = Simulator(p, p.start_configurations("spread_out")[0], seed=1, method="agents")
    with pytest.raises(AssertionError):  # an int32 count vector would be read as int64 by the C loop
        sim._loops.interact(sim._agents, sim.counts.astype(np.int32), sim._out_a, sim._out_b, sim._cum, 10, sim._state)


def _simulate(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lockstep", "simulate", "phase_clock", "-p", "n=60", "--start",
                           "spread_out", "--runs", "2", "--quiet"], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=300)


def test_without_a_c_compiler_the_simulator_runs_in_python_with_the_same_results(tmp_path):
    compiled = _simulate({"LOCKSTEP_CACHE": str(tmp_path / "cache")})
    python = _simulate({"LOCKSTEP_CACHE": str(tmp_path / "cache"), "CC": str(tmp_path / "no-such-cc")})
    assert compiled.returncode == python.returncode == 0, python.stderr
    assert compiled.stderr == ""
    assert python.stderr.count("the population simulator runs in Python") == 1 and "no C compiler" in python.stderr
    assert "Traceback" not in python.stderr

    def results(out: str) -> list[str]:  # the hitting times, without the throughput of the run
        return [line.split(" (")[0] for line in out.splitlines() if "reached in" in line or "hitting time" in line]

    assert results(compiled.stdout) and results(compiled.stdout) == results(python.stdout)
