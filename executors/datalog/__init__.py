"""Datalog programs on stale-synchronous worker processes."""
