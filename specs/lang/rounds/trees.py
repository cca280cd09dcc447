"""Trees as spec parameters: a labelled tree on nodes 0..n-1 is the integer `tree` (its Prüfer code).

A parameter is an integer, so a tree travels with `--param n=.. --param tree=..` through
checks, traces, replay and executor processes. `parse_tree` reads the command-line forms
(`random:N`, `path:N`, `star:N`, `edges:0-1,1-2,...`) and refuses what is not a tree.
"""

from __future__ import annotations

import networkx as nx

from ..errors import SpecError

GENERATORS = ("random:N", "path:N", "star:N", "binary:DEPTH", "edges:U-V,U-V,...")


def tree_code(tree: nx.Graph) -> int:
    """The Prüfer code of a labelled tree on 0..n-1, as one integer (base n, first entry most significant)."""
    n = tree.number_of_nodes()
    if n <= 2:
        return 0
    code = 0
    for x in nx.to_prufer_sequence(tree):
        code = code * n + x
    return code


def tree_from_code(n: int, code: int) -> nx.Graph:
    """The labelled tree on 0..n-1 whose Prüfer code is `code` (SpecError if it is out of range)."""
    if n < 1:
        raise SpecError(f"a tree needs at least one node, got n={n}", None)
    if n <= 2:
        if code != 0:
            raise SpecError(f"tree code {code} is not a tree on {n} nodes (the only code is 0)", None)
        return nx.path_graph(n)
    if not 0 <= code < n ** (n - 2):
        raise SpecError(f"tree code {code} is not a tree on {n} nodes (codes are 0..n^(n-2)-1)", None)
    seq = []
    for _ in range(n - 2):
        code, x = divmod(code, n)
        seq.append(x)
    return nx.from_prufer_sequence(seq[::-1])


def require_tree(g: nx.Graph, what: str) -> nx.Graph:
    """`g` relabelled 0..n-1 if it is a tree; otherwise a SpecError saying why not."""
    if g.number_of_nodes() == 0:
        raise SpecError(f"{what}: the graph is empty", None, "give at least one node")
    if not nx.is_connected(g):
        parts = sorted((sorted(c) for c in nx.connected_components(g)), key=len)
        raise SpecError(f"{what}: the graph is disconnected ({len(parts)} components, e.g. {parts[0][:8]})", None,
                        "the algorithm colours one connected tree; connect the components")
    if g.number_of_edges() != g.number_of_nodes() - 1:
        cycle = [u for u, _ in nx.find_cycle(g)]
        raise SpecError(f"{what}: the graph is not a tree (it has the cycle {'-'.join(map(str, cycle))})", None,
                        "remove an edge of the cycle")
    return nx.convert_node_labels_to_integers(g, ordering="sorted")


def parse_tree(text: str, seed: int = 0) -> nx.Graph:
    """A tree from its command-line description (see GENERATORS); SpecError for anything else."""
    kind, _, arg = text.partition(":")
    hint = "tree generators: " + ", ".join(GENERATORS)
    if kind == "edges":
        g = nx.Graph()
        try:
            for part in arg.split(","):
                u, v = (int(x) for x in part.split("-"))
                g.add_edge(u, v)
        except ValueError:
            raise SpecError(f"--tree {text}: cannot read the edge list; expected U-V pairs like 0-1,1-2", None,
                            hint) from None
        return require_tree(g, f"--tree {text}")
    if kind not in ("random", "path", "star", "binary"):
        raise SpecError(f"--tree {text}: unknown tree generator {kind!r}", None, hint)
    try:
        k = int(arg)
    except ValueError:
        raise SpecError(f"--tree {text}: {arg!r} is not a number", None, hint) from None
    if not 1 <= k <= (12 if kind == "binary" else 100_000):
        raise SpecError(f"--tree {text}: {k} is out of range", None, hint)
    if kind == "random":
        return nx.random_labeled_tree(k, seed=seed)
    if kind == "path":
        return nx.path_graph(k)
    if kind == "star":
        return nx.star_graph(k - 1)
    return nx.balanced_tree(2, k)


def distance2_violations(g: nx.Graph, colour: dict[int, int]) -> list[tuple[int, int]]:
    """Pairs of distinct nodes at distance 1 or 2 with the same colour (a direct check on the graph)."""
    bad = []
    for u in g.nodes:
        near = set(g.neighbors(u))
        for v in list(near):
            near.update(g.neighbors(v))
        near.discard(u)
        bad.extend((u, v) for v in near if u < v and colour.get(u) == colour.get(v))
    return sorted(bad)


def tree_params(tree: nx.Graph) -> dict[str, int]:
    """The parameters `n` and `tree` that make a tree spec run on this labelled tree."""
    return {"n": tree.number_of_nodes(), "tree": tree_code(tree)}
