"""A member of a run that takes its time to start (as on a loaded machine), for the runner's start-up tests."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from lockstep.executors.wire import RUNNER, connect, credentials, serve


def main(cfg: dict[str, Any]) -> None:
    """Start `cfg["delay"]` seconds late (never, if it is None), then say hello and stop when told."""
    if cfg["delay"] is None:
        while True:
            time.sleep(60)
    time.sleep(cfg["delay"])  # the slow start being simulated
    asyncio.run(_member(cfg["control_port"]))


async def _member(control_port: int) -> None:
    creds = credentials()
    server, port = await serve(creds, on_frame=lambda ep, body: None)
    ctl = await connect(control_port, creds, RUNNER)
    ctl.send({"op": "hello", "port": port})
    try:
        while (await ctl.read()).get("op") != "stop":
            pass
        ctl.send({"op": "bye", "stats": {}})
        await ctl.drain()
    except ConnectionError:
        pass
    finally:
        server.close()
