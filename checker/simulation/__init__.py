"""Random simulation of specs: random walks that check invariants, deadlocks and step failures."""

from .merge import Merge, SimResult, blocks
from .run import simulate
from .walk import Tally, tally

__all__ = ["Merge", "SimResult", "Tally", "blocks", "simulate", "tally"]
