"""Random simulation of specs: random walks that check invariants, deadlocks and step failures."""

from .walk import SimResult, simulate

__all__ = ["SimResult", "simulate"]
