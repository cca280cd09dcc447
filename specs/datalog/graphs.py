"""Input graphs for Datalog programs: SNAP-style edge-list files and networkx generators, as int64 columns.

An edge-list file has one edge per line, `FROM TO` or `FROM TO WEIGHT`, separated by spaces or tabs;
lines starting with `#` or `%` are comments (as in the SNAP collection). A generator is named
`KIND:ARGS`: `gnm:N:M` (M random directed edges on N nodes), `gnp:N:P`, `grid:R:C`, `path:N`,
`cycle:N`, `star:N`, `complete:N`, `ba:N:M` (Barabási–Albert), `tree:N` (uniform random tree); with
`--undirected` each edge is listed once as generated, without it a generator's undirected graph gives
both directions. Weights come from the file, or are drawn uniformly from `LO:HI` with the seed, or are 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from .syntax import DatalogError

MAX_GENERATED_EDGES = 50_000_000


@dataclass
class Graph:
    """Edges as columns (src, dst, and weight if known), and where they came from."""

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    origin: str

    @property
    def edges(self) -> int:
        return len(self.src)

    def columns(self, arity: int, weights: tuple[int, int] | None = None, seed: int = 0) -> tuple[np.ndarray, str | None]:
        """The edges as an (edges, arity) array for a program's edge relation of that arity (2 or 3), and a
        note saying where weights came from when the graph had none."""
        if arity == 2:
            return np.stack([self.src, self.dst], axis=1), None
        if arity != 3:
            raise DatalogError(f"the program's edge relation has {arity} columns; a graph gives 2 (from, to) or 3 "
                               "(from, to, weight)")
        note = None
        w = self.weight
        if weights is not None:
            lo, hi = weights
            w = np.random.default_rng(seed).integers(lo, hi + 1, size=self.edges, dtype=np.int64)
            note = f"weights drawn uniformly from {lo}..{hi} (seed {seed})"
        elif w is None:
            w = np.ones(self.edges, dtype=np.int64)
            note = "the graph has no weights: every edge weighs 1 (use --weights LO:HI for random ones)"
        return np.stack([self.src, self.dst, w], axis=1), note

    def to_networkx(self, directed: bool = True) -> nx.Graph:
        g = nx.DiGraph() if directed else nx.Graph()
        if self.weight is None:
            g.add_edges_from(zip(self.src.tolist(), self.dst.tolist()))
        else:
            g.add_weighted_edges_from(zip(self.src.tolist(), self.dst.tolist(), self.weight.tolist()))
        return g


def parse_edge_list(lines: Iterable[str], where: str) -> Graph:
    """The graph of a SNAP-style edge list's lines (DatalogError naming `where` and the line if it is malformed);
    files are read by the caller (`lockstep.checker.datalog.files`)."""
    rows: list[list[int]] = []
    width = None
    chunks = []
    try:
        for lineno, line in enumerate(lines, 1):
            s = line.strip()
            if not s or s[0] in "#%":
                continue
            parts = s.split()
            if width is None:
                width = len(parts)
                if width not in (2, 3):
                    raise DatalogError(f"{where}:{lineno}: expected 'FROM TO' or 'FROM TO WEIGHT', got {len(parts)} "
                                       "fields")
            if len(parts) != width:
                raise DatalogError(f"{where}:{lineno}: {len(parts)} fields, but the first edge has {width}",
                                   hint="give every edge the same number of fields")
            try:
                rows.append([int(p) for p in parts])
            except ValueError:
                raise DatalogError(f"{where}:{lineno}: {s!r} is not a line of integers",
                                   hint="node ids and weights are integers") from None
            if len(rows) >= 1 << 20:
                chunks.append(np.asarray(rows, dtype=np.int64))
                rows = []
    except OverflowError:
        raise DatalogError(f"{where}: a value does not fit in 64 bits") from None
    if rows:
        chunks.append(np.asarray(rows, dtype=np.int64))
    if not chunks:
        raise DatalogError(f"edge list {where} has no edges")
    a = np.concatenate(chunks)
    return Graph(a[:, 0].copy(), a[:, 1].copy(), a[:, 2].copy() if a.shape[1] == 3 else None, where)


GENERATORS = {
    "gnm": ("N:M", 2), "gnp": ("N:P", 2), "grid": ("R:C", 2), "path": ("N", 1), "cycle": ("N", 1), "star": ("N", 1),
    "complete": ("N", 1), "ba": ("N:M", 2), "tree": ("N", 1),
}


def generate(spec: str, seed: int = 0, undirected: bool = False) -> Graph:
    """A graph from a networkx generator named `KIND:ARGS` (see the module docstring)."""
    kind, _, rest = spec.partition(":")
    if kind not in GENERATORS:
        raise DatalogError(f"unknown graph generator {kind!r}", hint="use " + ", ".join(f"{k}:{v[0]}" for k, v in
                                                                                      GENERATORS.items()))
    form, nargs = GENERATORS[kind]
    args = rest.split(":") if rest else []
    if len(args) != nargs:
        raise DatalogError(f"graph {spec!r}: {kind} takes {form}", hint=f"e.g. {kind}:{':'.join(['100'] * nargs)}")
    try:
        nums = [float(a) if kind == "gnp" and i == 1 else int(a) for i, a in enumerate(args)]
    except ValueError:
        raise DatalogError(f"graph {spec!r}: {form} must be numbers") from None
    if any(x < 0 for x in nums):
        raise DatalogError(f"graph {spec!r}: sizes must be non-negative")
    n = int(nums[0])
    estimate = {"gnm": nums[-1], "gnp": n * n * (nums[-1] if kind == "gnp" else 0), "complete": n * n,
                "grid": 2 * n * (nums[-1] if len(nums) > 1 else 1), "ba": n * nums[-1]}.get(kind, n)
    if estimate * 2 > MAX_GENERATED_EDGES:
        raise DatalogError(f"graph {spec!r} would have about {int(estimate):,} edges, more than the limit of "
                           f"{MAX_GENERATED_EDGES // 2:,}", hint="write it to an edge-list file instead")
    if kind == "gnm":
        g = nx.gnm_random_graph(n, int(nums[1]), seed=seed, directed=True)
    elif kind == "gnp":
        if not 0 <= nums[1] <= 1:
            raise DatalogError(f"graph {spec!r}: P is a probability")
        g = nx.fast_gnp_random_graph(n, nums[1], seed=seed, directed=True)
    elif kind == "grid":
        g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, int(nums[1])))
    elif kind == "path":
        g = nx.path_graph(n)
    elif kind == "cycle":
        g = nx.cycle_graph(n)
    elif kind == "star":
        g = nx.star_graph(max(n - 1, 0))
    elif kind == "complete":
        g = nx.complete_graph(n)
    elif kind == "ba":
        if not 1 <= int(nums[1]) < max(n, 2):
            raise DatalogError(f"graph {spec!r}: ba:N:M needs 1 <= M < N")
        g = nx.barabasi_albert_graph(n, int(nums[1]), seed=seed)
    else:
        g = nx.random_labeled_tree(n, seed=seed) if n else nx.empty_graph(0)
    edges = np.asarray(list(g.edges()), dtype=np.int64).reshape(-1, 2)
    if not g.is_directed() and not undirected:
        edges = np.concatenate([edges, edges[:, ::-1]])
    return Graph(edges[:, 0].copy(), edges[:, 1].copy(), None, spec)
