"""The vector engine over a Ray cluster: the frontier and the visited set partitioned by fingerprint
over actors (`partition`), sequenced level by level by a driver (`driver`) that keeps the verdict,
the counts and the counterexample of one process; random walks shared among actors by blocks
(`walkers`), with the result of one process."""

from __future__ import annotations

from .connect import ClusterError, check_address, portable_ref
from .driver import ClusterSearch
from .walkers import ClusterSimulation

__all__ = ["ClusterError", "ClusterSearch", "ClusterSimulation", "check_address", "portable_ref"]
