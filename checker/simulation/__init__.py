"""Random simulation of specs: random walks that check invariants, deadlocks and step failures."""

from .block import Tally, tally
from .merge import Merge, SimResult, blocks
from .walk import simulate

__all__ = ["Merge", "SimResult", "Tally", "blocks", "simulate", "tally"]
