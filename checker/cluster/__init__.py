"""The vector engine over a Ray cluster: the frontier and the visited set partitioned by fingerprint
over actors (`partition`), sequenced level by level by a driver (`driver`) that keeps the verdict,
the counts and the counterexample of one process."""

from __future__ import annotations

from .driver import ClusterError, ClusterSearch, check_address

__all__ = ["ClusterError", "ClusterSearch", "check_address"]
