"""The runner's start-up on a slow machine: it waits as long as processes keep starting, and when one does not
start it says what is slow."""

from __future__ import annotations

import asyncio
import multiprocessing

import pytest

from lockstep.executors.cluster import Cluster
from tests.executors import slow_start


class SlowCluster(Cluster):
    """Processes that say hello `delays[pid]` seconds late (never, for None)."""

    def __init__(self, delays: list[float | None], start_timeout: float):
        super().__init__("slow", {}, len(delays), None)
        self.delays = delays
        self.start_timeout = start_timeout

    def process_for(self, pid: int, restore: bool):
        return slow_start.main, {"delay": self.delays[pid], "control_port": self.control_port}, f"slow-{pid}"


def start_and_stop(cluster: Cluster) -> None:
    async def scenario() -> None:
        try:
            await cluster.start()
            await cluster.stop()
        finally:
            cluster.close()

    asyncio.run(scenario())


def test_start_up_waits_as_long_as_processes_keep_starting():
    """Five processes starting a second apart take longer than the bound, but none waits the bound after another."""
    cluster = SlowCluster([0.0, 1.0, 2.0, 3.0, 4.0], start_timeout=2.5)
    start_and_stop(cluster)
    assert all(m.bye is not None for m in cluster.members.values())
    assert multiprocessing.active_children() == []


def test_a_process_that_does_not_start_is_named_with_what_is_slow():
    cluster = SlowCluster([None], start_timeout=2.0)
    with pytest.raises(RuntimeError) as err:
        start_and_stop(cluster)
    text = str(err.value)
    assert text.startswith("process 0 did not start: no process said hello for 2 s")
    assert "(0 of 1 started; 1 still starting, using" in text and "s of CPU each on average" in text
    assert "load average" in text
    assert multiprocessing.active_children() == []
