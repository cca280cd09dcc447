"""Check a tree spec on every non-isomorphic tree up to N nodes and every choice of initiator.

For each tree (`networkx.nonisomorphic_trees`) the explicit engine checks the spec exhaustively
(every initiator is an initial state); then each initiator's run is followed to its end to
measure rounds against the spec's promised bound (`RoundsSpec.round_limit`) and, for specs with
a `color` field, colours used against Δ+1. The table has one row per number of nodes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import networkx as nx

from specs.lang import Param, build_program
from specs.lang.rounds import RoundsSpec
from specs.lang.trees import parse_tree, tree_params

from .explicit import Options, check
from .loader import LoadError, parse_params, resolve
from .result import CheckResult
from .typed_model import TypedModel

FORCE_LIMIT = 12  # larger sweeps need --force (13 nodes: 1,301 trees; 16 nodes: 19,320)


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
    obj, _ = resolve(ref)
    if not (isinstance(obj, type) and issubclass(obj, RoundsSpec) and isinstance(getattr(obj, "tree", None), Param)):
        raise LoadError(f"{ref} is not a rounds spec with a tree parameter: --tree and --all-trees need one "
                        "(e.g. d2_coloring)")
    return obj


def sweep(ref: str, max_n: int, params: dict[str, int], say: Callable[[SizeRow], None] | None = None,
          tick: Callable[[str], None] | None = None) -> Sweep:
    """Check `ref` on every tree with 2..max_n nodes; stops at the first violation."""
    import time

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
    tree_spec(args.spec)
    return {**params, **tree_params(parse_tree(args.tree, args.seed))}


def check_all_trees(args: argparse.Namespace) -> int:
    """`lockstep check SPEC --all-trees N`: print the per-N table; exit 1 with a counterexample on a violation."""
    from .cli import UsageError
    from .commands.check import report

    if args.tree:
        raise UsageError("--tree and --all-trees exclude each other: one tree, or all of them")
    if args.all_trees > FORCE_LIMIT and not args.force:
        raise UsageError(f"--all-trees {args.all_trees}: beyond {FORCE_LIMIT} nodes the trees multiply (1,301 with "
                         f"13 nodes, 19,320 with 16, each with every initiator); add --force to run it anyway")
    if args.engine == "smt" or args.property or args.symmetry or args.workers > 1 or args.dfs:
        raise UsageError("--all-trees runs the explicit engine with its defaults; drop --engine smt, --property, "
                         "--symmetry, --workers and --dfs")
    params = parse_params(args.param)
    if "n" in params or "tree" in params:
        raise UsageError("--all-trees chooses n and tree itself; drop --param n and --param tree")
    cls = tree_spec(args.spec)
    print(f"Checking {cls.__name__} on every tree with 2..{args.all_trees} nodes, every initiator "
          f"(explicit engine, all invariants)")
    tick = None if args.quiet else (lambda text: print("progress: " + text, file=sys.stderr, flush=True))
    res = sweep(args.spec, args.all_trees, params, tick=tick)
    print(table(res.rows))
    if res.failure is not None:
        edges = ",".join(f"{u}-{v}" for u, v in sorted(tuple(sorted(e)) for e in res.failed_tree.edges))  # type: ignore[union-attr]
        print(f"\nOn the tree edges:{edges}:")
        report(res.failure, args.out)
        return res.failure.exit_code
    total = sum(r.trees for r in res.rows)
    print(f"\nNo violation: {total} trees, {sum(r.runs for r in res.rows)} runs (tree, initiator); rounds within the "
          f"bound in every run (worst rounds/bound {max((r.worst_ratio for r in res.rows), default=0):.2f}); "
          f"colours used = Δ+1 in {sum(r.optimal_colourings for r in res.rows)} runs, more in "
          f"{sum(r.over for r in res.rows)}")
    return 0
