"""Check a tree spec on every non-isomorphic tree up to N nodes and every choice of initiator.

For each tree (`networkx.nonisomorphic_trees`) the explicit engine checks the spec exhaustively
(every initiator is an initial state); then each initiator's run is followed to its end to
measure rounds against the spec's promised bound (`RoundsSpec.round_limit`) and, for specs with
a `color` field, colours used against Δ+1. The table has one row per number of nodes.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lockstep.specs.lang import Param, build_program

from ..loader import LoadError, resolve
from ..result import CheckResult
from ..typed_model import TypedModel

if TYPE_CHECKING:  # networkx and the rounds model are imported when a tree spec is used (`lockstep check` starts faster)
    import networkx as nx



@dataclass
class SizeRow:
    """The results for all trees with n nodes."""

    n: int
    trees: int = 0
    runs: int = 0  # (tree, initiator) pairs
    states: int = 0
    max_rounds: int = 0
    bound_at_max: int = 0  # the bound of the run with the most rounds
    total_rounds: int = 0
    worst_ratio: float = 0.0  # max over runs of rounds / bound
    max_colours: int = 0
    optimal_colourings: int = 0  # runs using exactly Δ+1 colours
    over: int = 0  # runs using more than Δ+1 colours
    seconds: float = 0.0

    @property
    def mean_rounds(self) -> float:
        return self.total_rounds / self.runs if self.runs else 0.0


@dataclass
class Sweep:
    rows: list[SizeRow] = field(default_factory=list)
    failed_tree: nx.Graph | None = None
    failure: CheckResult | None = None


def tree_spec(ref: str) -> type:
    """The rounds spec class named by `ref`, if it runs on a tree given as parameters `n` and `tree`."""
    from lockstep.specs.lang.rounds import RoundsSpec

    obj, _ = resolve(ref)
    if not (isinstance(obj, type) and issubclass(obj, RoundsSpec) and isinstance(getattr(obj, "tree", None), Param)):
        raise LoadError(f"{ref} is not a rounds spec with a tree parameter: --tree and --all-trees need one "
                        "(e.g. d2_coloring)")
    return obj


def sweep(ref: str, max_n: int, params: dict[str, int], say: Callable[[SizeRow], None] | None = None,
          tick: Callable[[str], None] | None = None) -> Sweep:
    """Check `ref` on every tree with 2..max_n nodes; stops at the first violation."""
    import time

    import networkx as nx

    from lockstep.specs.lang.rounds.trees import tree_params

    from ..explicit import Options, check

    cls = tree_spec(ref)
    out = Sweep()
    for n in range(2, max_n + 1):
        row = SizeRow(n)
        t0 = time.monotonic()
        for tree in nx.nonisomorphic_trees(n):
            model = TypedModel(build_program(cls, {**params, **tree_params(tree)}), ref)
            res = check(model, Options(deadlock=True))
            if res.violation is not None or res.verdict != "holds":
                out.failed_tree, out.failure = tree, res
                return out
            row.trees += 1
            row.states += res.distinct
            _measure(cls, model, tree, row)
            if tick is not None and row.trees % 100 == 0:
                tick(f"{n} nodes: {row.trees} trees checked")
        row.seconds = time.monotonic() - t0
        out.rows.append(row)
        if say is not None:
            say(row)
    return out


def _measure(cls: type, model: TypedModel, tree: nx.Graph, row: SizeRow) -> None:
    """Follow each initiator's run to its end (the spec is deterministic once started)."""
    prog = model.prog
    params = dict(prog.params)
    delta_plus_one = max(d for _, d in tree.degree) + 1
    for s in model.initial_states():
        init = prog.decode(s)
        while True:
            steps = [(model.label(lid), t) for lid, t in model.successors(s)]
            moves = [t for label, t in steps if not label.startswith("halt")]
            if not moves:
                break
            if len(moves) > 1:
                raise LoadError(f"{prog.name} is not deterministic once started: --all-trees measures one run per "
                                "initiator")
            s = moves[0]
        final = prog.decode(s)
        rounds = final["round"]
        bound = cls.round_limit(tree, init, params) or 0
        row.runs += 1
        row.total_rounds += rounds
        if rounds > row.max_rounds or (rounds == row.max_rounds and bound > row.bound_at_max):
            row.max_rounds, row.bound_at_max = rounds, bound
        if bound:
            row.worst_ratio = max(row.worst_ratio, rounds / bound)
        if "color" in final:
            used = len(set(final["color"].values()))
            row.max_colours = max(row.max_colours, used)
            row.optimal_colourings += used == delta_plus_one
            row.over += used > delta_plus_one


def table(rows: list[SizeRow]) -> str:
    """The per-N table."""
    head = (f"{'n':>3} {'trees':>6} {'runs':>6} {'states':>8} {'max rounds':>10} {'bound':>6} {'mean':>6} "
            f"{'rounds/bound':>12} {'colours = Δ+1':>14} {'> Δ+1':>6} {'s':>6}")
    lines = [head]
    for r in rows:
        lines.append(f"{r.n:>3} {r.trees:>6} {r.runs:>6} {r.states:>8} {r.max_rounds:>10} {r.bound_at_max:>6} "
                     f"{r.mean_rounds:>6.2f} {r.worst_ratio:>12.2f} {f'{r.optimal_colourings}/{r.runs}':>14} "
                     f"{r.over:>6} {r.seconds:>6.2f}")
    return "\n".join(lines)


def tree_arguments(args: argparse.Namespace, params: dict[str, int]) -> dict[str, int]:
    """The parameters with `--tree` (and `--seed`) applied, for a tree spec."""
    if not getattr(args, "tree", None):
        return params
    from lockstep.specs.lang.rounds.trees import parse_tree, tree_params

    tree_spec(args.spec)
    return {**params, **tree_params(parse_tree(args.tree, args.seed))}
