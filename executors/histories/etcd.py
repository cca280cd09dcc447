"""A 3-node etcd cluster on 127.0.0.1, started, faulted and stopped by the harness, and its clients.

Nodes are Debian's `etcd` (3.4) processes with their own data directories in the run's private directory,
on free ports, with mutual TLS on every client and peer connection (`tls`: the run's own authority). Clients
speak etcd's v3 API as JSON over HTTPS (the gRPC gateway; keys and values in base64): a read is a `range`
(`serializable: true` reads the node's own state, which may be stale: etcd's documented trade-off), a write
a `put`, a compare-and-set a `txn` comparing the value. A call that could not connect did not happen
(`fail`); one that timed out or lost its connection may have (`info`), as Jepsen records them.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any

from .tls import RunCerts, make_certs

START_SECONDS = 60.0  # a node not serving after this long (counted from its start) fails the run
CALL_SECONDS = 1.0  # a client call not answered after this long is indeterminate (`info`)
MAX_REPLY = 1 << 20  # bytes of one reply read at most


class EtcdError(RuntimeError):
    """The cluster could not be started or used; the message says why."""


def etcd_binary() -> str | None:
    """The etcd server (Debian's `etcd-server`), or None."""
    return shutil.which("etcd") or shutil.which("etcd", path="/usr/bin:/usr/sbin")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@dataclass
class Node:
    """One member: its name, ports, data directory, and process (None while killed)."""

    name: str
    client_port: int
    peer_port: int
    data: str
    log: str
    process: subprocess.Popen | None = None
    paused: bool = False
    member_id: str = ""


class Unsent(Exception):
    """The call never reached a node (it could not connect): it did not happen."""


class Indeterminate(Exception):
    """The call was sent but its outcome is unknown (a timeout, a lost connection, an error reply)."""


class EtcdCluster:
    """Three (or `size`) etcd members in `directory` (private to the user, created by the caller)."""

    def __init__(self, directory: str, size: int = 3, heartbeat_ms: int = 100, election_ms: int = 1000):
        binary = etcd_binary()
        if binary is None:
            raise EtcdError("etcd is not installed: apt-get install etcd-server (Debian's etcd 3.4)")
        self.binary, self.directory = binary, directory
        self.heartbeat_ms, self.election_ms = heartbeat_ms, election_ms
        self.token = f"lockstep-{os.getpid()}-{time.monotonic_ns()}"
        names = [f"n{i}" for i in range(size)]
        self.certs: RunCerts = make_certs(directory, names)
        self.nodes = [Node(n, _free_port(), _free_port(), os.path.join(directory, f"{n}.data"),
                           os.path.join(directory, f"{n}.log")) for n in names]
        self.context = ssl.create_default_context(cafile=self.certs.ca)
        self.context.load_cert_chain(self.certs.client.cert, self.certs.client.key)
        self.lock = threading.Lock()

    def _args(self, node: Node) -> list[str]:
        cluster = ",".join(f"{n.name}=https://127.0.0.1:{n.peer_port}" for n in self.nodes)
        pair = self.certs.nodes[node.name]
        client, peer = f"https://127.0.0.1:{node.client_port}", f"https://127.0.0.1:{node.peer_port}"
        return [self.binary, "--name", node.name, "--data-dir", node.data,
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", cluster, "--initial-cluster-state", "new", "--initial-cluster-token", self.token,
                "--heartbeat-interval", str(self.heartbeat_ms), "--election-timeout", str(self.election_ms),
                "--cert-file", pair.cert, "--key-file", pair.key, "--client-cert-auth", "--trusted-ca-file", self.certs.ca,
                "--peer-cert-file", pair.cert, "--peer-key-file", pair.key, "--peer-client-cert-auth",
                "--peer-trusted-ca-file", self.certs.ca]

    def _spawn(self, node: Node) -> None:
        with open(node.log, "ab") as log:
            node.process = subprocess.Popen(self._args(node), stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        node.paused = False

    def start(self, attempts: int = 3) -> None:
        """Start every member and wait until each serves a linearizable read (EtcdError after START_SECONDS). A port
        taken by someone else between choosing it and binding it makes the start fail: it is tried again on new
        ports, with new data directories, up to `attempts` times."""
        for attempt in range(attempts):
            if attempt:
                self.stop()
                for node in self.nodes:
                    node.client_port, node.peer_port = _free_port(), _free_port()
                    node.data = os.path.join(self.directory, f"{node.name}.{attempt}.data")
            for node in self.nodes:
                self._spawn(node)
            try:
                self.wait_serving(self.nodes)
                for node in self.nodes:
                    node.member_id = str(self.call(node, "/v3/maintenance/status", {})["header"]["member_id"])
                return
            except (EtcdError, Unsent, Indeterminate) as e:
                if attempt + 1 == attempts or "address already in use" not in str(e):
                    raise EtcdError(str(e)) from None

    def wait_serving(self, nodes: list[Node], seconds: float = START_SECONDS) -> None:
        """Wait until every one of `nodes` answers a linearizable read (it has joined a cluster with a leader);
        EtcdError at once if one exits, or after `seconds`."""
        deadline = time.monotonic() + seconds
        pending = list(nodes)
        while pending:
            for node in list(pending):
                if node.process is None or node.process.poll() is not None:
                    raise EtcdError(f"etcd member {node.name} exited while starting:\n{self.log_tail(node)}")
                try:
                    self.call(node, "/v3/kv/range", {"key": _b64("lockstep-ready")}, timeout=1.0)
                    pending.remove(node)
                except (Unsent, Indeterminate):
                    pass
            if pending and time.monotonic() > deadline:
                raise EtcdError(f"etcd member {pending[0].name} did not serve within {seconds:g} s:\n"
                                f"{self.log_tail(pending[0])}")
            if pending:
                time.sleep(0.05)

    def log_tail(self, node: Node, lines: int = 8) -> str:
        try:
            with open(node.log, "rb") as fh:
                fh.seek(max(0, os.path.getsize(node.log) - 4096))
                return "\n".join(fh.read().decode(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # -------------------------------------------------------------------------------------------- faults

    def kill(self, node: Node) -> None:
        if node.process is not None:
            node.process.send_signal(signal.SIGKILL)
            node.process.wait()
            node.process, node.paused = None, False

    def restart(self, node: Node) -> None:
        if node.process is None:
            self._spawn(node)

    def pause(self, node: Node) -> None:
        if node.process is not None and not node.paused:
            node.process.send_signal(signal.SIGSTOP)
            node.paused = True

    def resume(self, node: Node) -> None:
        if node.process is not None and node.paused:
            node.process.send_signal(signal.SIGCONT)
            node.paused = False

    def leader(self) -> Node | None:
        """The member the live, running members name as leader (None if they name none, or one that is down)."""
        for node in self.nodes:
            if node.process is None or node.paused:
                continue
            try:
                leader = str(self.call(node, "/v3/maintenance/status", {}, timeout=0.5).get("leader", ""))
            except (Unsent, Indeterminate):
                continue
            return next((n for n in self.nodes if n.member_id == leader), None)
        return None

    def stop(self) -> None:
        """Stop every member (SIGKILL: the run's data is thrown away, and etcd takes seconds to stop politely)."""
        for node in self.nodes:
            if node.process is not None:
                node.process.kill()
        for node in self.nodes:
            if node.process is not None:
                node.process.wait()
                node.process, node.paused = None, False

    # ------------------------------------------------------------------------------------------ the API

    def connection(self, node: Node, timeout: float = CALL_SECONDS) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", node.client_port, context=self.context, timeout=timeout)

    def call(self, node: Node, path: str, body: dict[str, Any], conn: http.client.HTTPSConnection | None = None,
             timeout: float = CALL_SECONDS) -> dict[str, Any]:
        """POST `body` to `path` on `node` (through `conn` if given); the JSON reply. Unsent: the call did not get
        out; Indeterminate: it did, and nobody knows what it did."""
        own = conn is None
        c = conn if conn is not None else self.connection(node, timeout)
        try:
            if c.sock is None:
                try:
                    c.connect()
                except OSError as e:
                    raise Unsent(str(e)) from None
            try:
                c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
                r = c.getresponse()
                data = r.read(MAX_REPLY + 1)
            except (OSError, http.client.HTTPException) as e:
                c.close()
                raise Indeterminate(f"{type(e).__name__}: {e}") from None
            if len(data) > MAX_REPLY:
                c.close()
                raise Indeterminate(f"a reply of more than {MAX_REPLY} bytes")
            try:
                reply = json.loads(data)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise Indeterminate(f"HTTP {r.status}: not JSON") from None
            if r.status != 200 or not isinstance(reply, dict):
                raise Indeterminate(f"HTTP {r.status}: {str(reply)[:200]}")
            return reply
        finally:
            if own:
                c.close()


def decode_value(kvs: Any) -> int | None:
    """The integer value of a range reply's `kvs` (None: the key does not exist)."""
    if not kvs:
        return None
    if not isinstance(kvs, list) or not isinstance(kvs[0], dict):
        raise Indeterminate(f"a range reply whose kvs is {str(kvs)[:100]}")
    raw = base64.b64decode(kvs[0].get("value", ""), validate=True).decode()
    if not raw.lstrip("-").isdigit() or len(raw) > 20:
        raise Indeterminate(f"a value that is not an integer: {raw[:40]!r}")
    return int(raw)


class EtcdClient:
    """One client: its node (the next one after a call that could not connect), and a kept-alive connection."""

    def __init__(self, cluster: EtcdCluster, index: int, serializable: bool):
        self.cluster, self.serializable = cluster, serializable
        self.node = index % len(cluster.nodes)
        self.conn: http.client.HTTPSConnection | None = None

    def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        node = self.cluster.nodes[self.node]
        if self.conn is None:
            self.conn = self.cluster.connection(node)
        try:
            return self.cluster.call(node, path, body, self.conn)
        except (Unsent, Indeterminate):
            self.conn.close()
            self.conn = None
            self.node = (self.node + 1) % len(self.cluster.nodes)  # try another node next time
            raise

    def read(self, key: str) -> int | None:
        body: dict[str, Any] = {"key": _b64(key)}
        if self.serializable:
            body["serializable"] = True
        return decode_value(self._call("/v3/kv/range", body).get("kvs"))

    def write(self, key: str, value: int) -> None:
        self._call("/v3/kv/put", {"key": _b64(key), "value": _b64(str(value))})

    def cas(self, key: str, old: int, new: int) -> bool:
        reply = self._call("/v3/kv/txn", {
            "compare": [{"key": _b64(key), "target": "VALUE", "result": "EQUAL", "value": _b64(str(old))}],
            "success": [{"request_put": {"key": _b64(key), "value": _b64(str(new))}}]})
        return bool(reply.get("succeeded", False))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
