"""The vector engine: breadth-first search a frontier at a time, with numpy.

A batch of states is a 2-D array of packed words (`layout`); every transition of the spec
runs once over the whole batch (`compile`), the visited set is a numpy table of 64-bit
fingerprints (`visited`), and frontiers and parent links spill to disk when memory runs low
(`spool`). Verdicts, counts and counterexamples are those of the scalar engine
(`checker.explicit`); `search` explains how.
"""

from .layout import VectorUnsupported
from .search import VectorModel, VectorOptions, check_vector

__all__ = ["VectorModel", "VectorOptions", "VectorUnsupported", "check_vector"]
