"""Reaching Ray: the --cluster address, a local instance started for the run or an existing cluster,
and the number of actors it can hold."""

from __future__ import annotations

import os
import re
from typing import Any

ADDRESS = re.compile(r"^(local|ray://[A-Za-z0-9.\-]+:\d{1,5}|[A-Za-z0-9.\-]+:\d{1,5})$")


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


def connect(address: str, workers: int | None) -> tuple[Any, int, bool]:
    """(the ray module, the number of actors to start, whether this call started Ray): `workers`
    actors, or one per CPU of the cluster."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        if address == "local":
            cpus = max(workers or 0, os.cpu_count() or 1)
            ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        else:
            try:
                ray.init(address=address, log_to_driver=False, logging_level="ERROR")
            except Exception as e:  # Ray raises ConnectionError, RuntimeError, ValueError, ...
                raise ClusterError(f"cannot connect to the Ray cluster at {address}: {e}") from None
        started = True
    cpus = int(ray.cluster_resources().get("CPU", 0))
    n = workers or max(cpus, 1)
    if n > cpus:
        raise ClusterError(f"--workers {n}: the Ray cluster has {cpus} CPUs; give --workers {cpus} or fewer")
    return ray, n, started


def portable_ref(spec: str) -> str:
    """The spec reference as actors load it: a spec file by its absolute path (actors run elsewhere)."""
    path, sep, obj = spec.partition(":")
    if path.endswith(".py") and os.path.exists(path):
        return os.path.abspath(path) + sep + obj
    return spec
