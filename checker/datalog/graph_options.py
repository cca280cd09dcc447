"""Which graph options a Datalog evaluation or run honours: `--weights` and `--undirected` are refused where they would
change nothing (a program without a weight column, an edge-list file, a directed generator, a graph of the SSP
spec's catalogue), rather than ignored."""

from __future__ import annotations

import os

from lockstep.specs.datalog.graphs import GENERATORS
from lockstep.specs.datalog.syntax import DatalogError

DIRECTED = ("gnm", "gnp")  # generators whose graphs are directed: nothing for --undirected to list once


def check_graph_options(graph: str, arity: int, weights: tuple[int, int] | None, undirected: bool) -> None:
    """DatalogError naming the option that `graph` and a program's edge relation of `arity` columns would ignore."""
    kind = graph.split(":")[0]
    catalogue = kind == "ssp"
    generated = not catalogue and not os.path.exists(graph) and kind in GENERATORS
    if weights is not None and (arity != 3 or catalogue):
        why = "its graph is the SSP spec's own, weights included" if catalogue else \
            f"the program's edge relation has {arity} columns, no weight"
        raise DatalogError(f"--weights: {why}", hint="drop --weights")
    if undirected and not generated:
        what = "a graph of the SSP spec's catalogue" if catalogue else "an edge-list file lists its edges as they are"
        raise DatalogError(f"--undirected applies to generated graphs (KIND:ARGS); {graph} is not one: {what}",
                           hint="drop --undirected")
    if undirected and kind in DIRECTED:
        raise DatalogError(f"--undirected: {kind} graphs are directed, so each edge is listed once already",
                           hint="drop --undirected")
