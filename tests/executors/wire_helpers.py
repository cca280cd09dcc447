"""Test helpers for the authenticated wire: a member's own connection (with the run's secret), and a stranger's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass

from lockstep.executors.wire import CHALLENGE, IDS, LENGTH, TAG, Credentials, Endpoint, connect


async def insider(creds: Credentials, me: int, port: int, server_id: int) -> Endpoint:
    """An authenticated connection as member `me` of the run (as if from one of its processes)."""
    ep = await connect(port, creds.as_member(me), server_id, on_frame=lambda _ep, _body: None)
    await asyncio.wait_for(ep.ready, 5)
    assert ep.session is not None, "the connection was not authenticated"
    return ep


async def stranger(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    """A plain connection, as anyone on the machine can open: (reader, writer, the challenge it was sent)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    challenge = await asyncio.wait_for(reader.readexactly(CHALLENGE), 5)
    return reader, writer, challenge


async def until(happened: Callable[[], bool], what: str, deadline: float = 120.0) -> None:
    """Wait for something a node does (checked every few milliseconds), failing with `what` after a deadline that
    only a broken run reaches."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while not happened():
        assert loop.time() < end, f"{what}: not within {deadline:g} s"
        await asyncio.sleep(0.005)


async def closed_by_node(reader: asyncio.StreamReader) -> bytes:
    """Wait until the node closes a connection (a reset, when it leaves bytes unread, counts); what it sent first."""
    try:
        return await asyncio.wait_for(reader.read(), 120)
    except ConnectionResetError:
        return b""


def trace_lines(path: str) -> list[dict]:
    """The events a process has written so far (a run with `durable` traces writes each through)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()  # read once: a line iterator would go on past a line being written and yield its rest
    return [json.loads(line) for line in text.split("\n")[:-1]]


def forged_opening(client: int, server: int) -> bytes:
    """An opening frame claiming to be member `client`, with a tag made without the run's secret."""
    return LENGTH.pack(IDS.size + TAG) + IDS.pack(client, server) + b"\x00" * TAG


def raw(body: bytes) -> bytes:
    """A length-prefixed frame without any authentication."""
    return LENGTH.pack(len(body)) + body


@dataclass
class Peer:
    """A stand-in for an authenticated connection, for calling a process's `on_frame` directly."""

    peer: int


class Control:
    """A stand-in for a process's control connection to the runner: it records what the process sends."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def send(self, obj: dict) -> None:
        self.sent.append(obj)
