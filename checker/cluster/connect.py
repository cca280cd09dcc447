"""Reaching Ray: the --cluster address, a local instance started for the run or an existing cluster,
and the number of actors it can hold.

A local instance is the run's alone: its servers listen on 127.0.0.1 only (Ray's single-machine mode),
and its files (sockets, logs, spilled objects) live in a new directory that only this user can enter,
removed when it stops (not the shared, world-writable /tmp/ray)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

ADDRESS = re.compile(r"^(local|ray://[A-Za-z0-9.\-]+:\d{1,5}|[A-Za-z0-9.\-]+:\d{1,5})$")
SINGLE_MACHINE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray keeps a node on the loopback interface
LOOPBACK = ("127.0.0.1", "::1")
_private: list[str] = []  # the directory of the local instance this process started, while it runs


class ClusterError(Exception):
    """The cluster cannot run the search: Ray is missing, the address is wrong, too few CPUs."""


def check_address(address: str) -> str:
    """`local`, `ray://HOST:PORT` (Ray Client) or `HOST:PORT` (a cluster's GCS), or a ClusterError."""
    if not ADDRESS.match(address):
        raise ClusterError(f"--cluster {address!r}: expected local, ray://HOST:PORT or HOST:PORT")
    return address


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ClusterError("--cluster needs Ray: pip install 'lockstep-mc[cluster]'") from None
    return ray


@contextlib.contextmanager
def _single_machine() -> Iterator[None]:
    """Ray's single-machine mode, for importing Ray and for the processes it starts meanwhile."""
    saved = os.environ.get(SINGLE_MACHINE)
    os.environ[SINGLE_MACHINE] = "0"
    try:
        yield
    finally:
        if saved is None:
            del os.environ[SINGLE_MACHINE]
        else:
            os.environ[SINGLE_MACHINE] = saved


def start_local(cpus: int) -> Any:
    """Start a local Ray instance with `cpus` CPUs for this process alone (see the module docstring); the ray
    module. Stop it with `disconnect`."""
    with _single_machine():
        ray = import_ray()
        if ray.util.get_node_ip_address() not in LOOPBACK:
            raise ClusterError("Ray was imported in this process before a local instance could be kept on 127.0.0.1 "
                               f"(it would listen on every interface): set {SINGLE_MACHINE}=0 before importing Ray, "
                               "or start Ray yourself and give --cluster its address")
        private = tempfile.mkdtemp(prefix="lockstep-ray-")  # mode 0700: Ray's files inside are reached only through it
        try:
            ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                     _node_ip_address=LOOPBACK[0], _temp_dir=os.path.join(private, "ray"))
        except BaseException:
            shutil.rmtree(private, ignore_errors=True)
            raise
    _private[:] = [private]
    return ray


def disconnect(ray: Any) -> None:
    """Stop the Ray instance this process started (`connect` said so), and remove a local one's files."""
    ray.shutdown()
    for path in _private:
        shutil.rmtree(path, ignore_errors=True)
    _private.clear()


def connect(address: str, workers: int | None) -> tuple[Any, int, bool]:
    """(the ray module, the number of actors to start, whether this call started Ray, to be stopped with
    `disconnect`): `workers` actors, or one per CPU of the cluster. An instance already running in this
    process is used as it is."""
    started = False
    if address == "local":
        with _single_machine():
            ray = import_ray()
        if not ray.is_initialized():
            start_local(max(workers or 0, os.cpu_count() or 1))
            started = True
    else:
        ray = import_ray()
        if not ray.is_initialized():
            try:
                ray.init(address=address, log_to_driver=False, logging_level="ERROR")
            except Exception as e:  # Ray raises ConnectionError, RuntimeError, ValueError, ...
                raise ClusterError(f"cannot connect to the Ray cluster at {address}: {e}") from None
            started = True
    cpus = int(ray.cluster_resources().get("CPU", 0))
    n = workers or max(cpus, 1)
    if n > cpus:
        if started:
            disconnect(ray)
        raise ClusterError(f"--workers {n}: the Ray cluster has {cpus} CPUs; give --workers {cpus} or fewer")
    return ray, n, started


def portable_ref(spec: str) -> str:
    """The spec reference as actors load it: a spec file by its absolute path (actors run elsewhere)."""
    path, sep, obj = spec.partition(":")
    if path.endswith(".py") and os.path.exists(path):
        return os.path.abspath(path) + sep + obj
    return spec
