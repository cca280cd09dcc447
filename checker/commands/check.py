"""`lockstep check SPEC`: explore a spec and report whether its properties hold."""

from __future__ import annotations

import argparse
import sys

from lockstep.api import CLI_NAMES, CheckChoices, CheckPlan, plan_check

from ..errors import UsageError
from ..explicit import Options
from ..loader import parse_params
from ..progress import NoProgress, Progress, stderr_say
from ..rounds import FORCE_LIMIT
from ..trace import follow_up
from ..vector import choice
from .common import (
    add_full_argument,
    add_spec_arguments,
    depth_text,
    load_typed,
    natural,
    output_file,
    positive,
    print_violation,
    report,
    write_text,
)
from .json_result import add_format_argument
from .scaling import (
    EVERY,
    add_scaling_arguments,
    check_on_cluster,
    check_scalar_checkpointed,
    check_scaling_flags,
    checkpoint_reduced,
    vector_options,
)

NAME = "check"
HELP = "model-check a spec: invariants, deadlocks, step failures and temporal properties"
SMT_DEPTH = 10  # --engine smt without --depth
GRAPH_LIMIT = 1000  # --dump-graph without --graph-limit


class Either(argparse.BooleanOptionalAction):
    """`--x` or `--no-x`: giving both is refused (exit 2), not decided by whichever comes last."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        seen = getattr(namespace, f"{self.dest}_flag", None)
        if seen is not None and seen != option_string:
            parser.error(f"{seen} and {option_string} exclude each other: give one of them")
        setattr(namespace, f"{self.dest}_flag", option_string)
        super().__call__(parser, namespace, values, option_string)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_spec_arguments(p)
    p.add_argument("--invariant", action="append", default=[], metavar="NAME",
                   help="check only this invariant (repeatable; default: all)")
    p.add_argument("--property", action="append", default=[], metavar="NAME",
                   help="check this temporal property (repeatable), under the spec's fairness")
    p.add_argument("--fairness", action="append", default=[], metavar="ACTION=KIND",
                   help="with --property: make an action or family weakly or strongly fair, or not fair "
                        "(KIND is weak, strong or none; repeatable)")
    p.add_argument("--no-deadlock", action="store_true", help="do not report states without successors")
    p.add_argument("--symmetry", action="store_true", help="reduce by the spec's symmetric Ranges")
    p.add_argument("--por", action=Either, default=None,
                   help="partial-order reduction of actor specs (default: on for actor specs, breadth-first, one "
                        "worker or the vector engine's two, no --property; with --property, on where asked, on the "
                        "scalar engine; --no-por explores every interleaving)")
    p.add_argument("--workers", type=positive, metavar="N",
                   help="worker processes (breadth-first only; default 1); with --cluster, Ray actors "
                        "(default one per CPU of the cluster)")
    p.add_argument("--max-depth", type=natural, metavar="D", help="explore at most D steps from an initial state")
    p.add_argument("--max-states", type=positive, metavar="S", help="store at most S distinct states")
    p.add_argument("--dfs", action="store_true", help="depth-first instead of breadth-first")
    p.add_argument("--engine", choices=choice.ENGINES, default="auto",
                   help="explicit-state search: auto (default; vector for typed specs, scalar for plain ones), "
                        "vector, scalar (= explicit); or smt, bounded model checking with z3")
    p.add_argument("--depth", type=natural, metavar="K",
                   help=f"--engine smt: look for violations within K steps (default {SMT_DEPTH})")
    p.add_argument("--out", type=output_file, metavar="FILE", help="write the counterexample trace (JSON, ITF) to FILE")
    p.add_argument("--no-shorten", action="store_true",
                   help="keep a counterexample found with partial-order reduction or --dfs as found (default: a "
                        "breadth-first search without them, within a budget, shortens it to a shortest one)")
    p.add_argument("--max-violations", type=positive, metavar="K",
                   help="go on past invariant violations and report up to K that differ in the property or the last "
                        "action; with --out FILE each is saved to FILE-1.json, FILE-2.json, ... (scalar engine, "
                        "breadth-first, one worker)")
    p.add_argument("--coverage", type=output_file, metavar="FILE",
                   help="count how often each action is enabled (scalar engine, no partial-order reduction) and "
                        "write it as JSON to FILE")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    add_format_argument(p)
    add_full_argument(p)
    p.add_argument("--dump-graph", type=output_file, metavar="FILE.dot",
                   help="write the state graph (Graphviz DOT), the counterexample in red; for small instances")
    p.add_argument("--graph-limit", type=positive, metavar="N",
                   help=f"--dump-graph: refuse graphs of more than N states (default {GRAPH_LIMIT})")
    add_scaling_arguments(p)
    p.add_argument("--tree", metavar="GEN", help="tree specs: check on this tree "
                                                 "(random:N, path:N, star:N, binary:DEPTH, edges:0-1,1-2,...)")
    p.add_argument("--seed", type=natural, help="with --tree random:N: the seed of the random tree (default 0)")
    p.add_argument("--all-trees", type=positive, metavar="N",
                   help="tree specs: check every non-isomorphic tree with up to N nodes and every initiator")
    p.add_argument("--force", action="store_true", help=f"allow --all-trees beyond {FORCE_LIMIT} nodes")


def refuse_unused(args: argparse.Namespace) -> None:
    """Refuse options that modify another option not given (each would be ignored), then fill in their defaults."""
    for given, flag, needs in ((args.seed is not None and not (args.tree or "").startswith("random:"), "--seed",
                                "--tree random:N (the seed of the random tree)"),
                               (args.graph_limit is not None and not args.dump_graph, "--graph-limit", "--dump-graph"),
                               (args.force and args.all_trees is None, "--force", "--all-trees N"),
                               (args.checkpoint_every is not None and not (args.checkpoint or args.resume or args.cluster),
                                "--checkpoint-every", "--checkpoint DIR, --resume DIR or --cluster")):
        if given:
            raise UsageError(f"{flag} applies to {needs}, which is not given: drop {flag}")
    args.seed = 0 if args.seed is None else args.seed
    args.graph_limit = GRAPH_LIMIT if args.graph_limit is None else args.graph_limit
    args.checkpoint_every = EVERY if args.checkpoint_every is None else args.checkpoint_every


def run(args: argparse.Namespace) -> int:
    args.cluster_workers, args.workers = args.workers, args.workers or 1
    refuse_unused(args)
    check_scaling_flags(args)
    if args.all_trees is not None:
        return check_all_trees(args)
    if args.engine == "smt":
        return check_smt(args)
    if args.depth is not None:
        raise UsageError("--depth bounds the SMT engine (--engine smt); the explicit engine's bound is --max-depth")
    params = _tree_params(args, parse_params(args.param))
    if not args.quiet:  # building a large instance takes a while: say what is being built first
        print(f"progress: building {args.spec}" + "".join(f" {k}={v}" for k, v in params.items()), file=sys.stderr,
              flush=True)
    plan = plan_check(args.spec, choices(args), CLI_NAMES, engine=args.engine, invariants=args.invariant or None,
                      deadlock=not args.no_deadlock, max_depth=args.max_depth, max_states=args.max_states,
                      properties=args.property, fairness=args.fairness, params=params)
    if args.property:
        return _check_properties(args, plan)
    model, opts, engine = plan.model, plan.opts, plan.engine
    coverage = None
    if args.coverage:
        from ..coverage import Coverage

        coverage = Coverage()
        coverage.count_enabled(model)
    graph = dump_graph_first(args, model)
    ps = ", ".join(f"{k}={v}" for k, v in model.params.items())
    mode = "depth-first" if args.dfs else "breadth-first"
    print(f"Checking {model.name}" + (f" ({ps})" if ps else "") +
          f": {engine} {mode}, {opts.workers} worker{'s' if opts.workers > 1 else ''}"
          + (", symmetry reduction" if args.symmetry else "") + (", partial-order reduction" if opts.por else ""))
    invs = ", ".join(model.invariant_names) or "none"
    print(f"  invariants: {invs}; deadlock: {'checked' if opts.deadlock else 'not checked'}")
    progress = NoProgress() if args.quiet else Progress()
    if args.cluster:
        res = check_on_cluster(args, engine, plan.vm, opts, params, progress)
    elif engine == "scalar" and (args.checkpoint or args.resume):
        res = check_scalar_checkpointed(args, model, opts, progress)
    else:
        res = plan.run(progress, vector_options(args, engine, plan.vm, opts))
    if coverage is not None:  # what the search for a shorter counterexample enables is not counted
        from collections import Counter

        coverage.enabled = coverage.taken = Counter(coverage.enabled)

    def shortening(steps: int) -> None:
        if not args.quiet:
            print(f"progress: looking for a counterexample shorter than {steps} steps (breadth-first, without the "
                  "reduction)", file=sys.stderr, flush=True)

    plan.conclude(res, not args.no_shorten, shortening)
    report(res, args.out, model, args.full)
    if coverage is not None:
        coverage.print(model, exhaustive=res.verdict == "holds")
        coverage.save(model, args.coverage, command="check", verdict=res.verdict, distinct=res.distinct)
        print(f"  coverage written to {args.coverage}")
    write_graph(args, model, graph, res)
    code = res.exit_code if res.violation is not None else _check_witnesses(args, res, plan)
    record_check(args, res, model, opts, engine)
    return code


def record_check(args: argparse.Namespace, res, model, opts: Options, engine: str) -> None:
    """Fill the JSON report (`--format json`) of an explicit-state check."""
    from .json_result import check_fields, of

    if (rep := of(args)) is None:
        return
    rep.update(**check_fields(res, model),
               checked={"invariants": list(model.invariant_names), "deadlock": opts.deadlock,
                        "properties": list(args.property)},
               options={"engine": engine, "workers": opts.workers, "dfs": opts.dfs, "max_depth": opts.max_depth,
                        "max_states": opts.max_states, "symmetry": args.symmetry, "por": opts.por,
                        "max_violations": opts.max_violations},
               trace=args.out if args.out and (res.violation is not None or any(w.found for w in res.witnesses))
               else None)


def _check_witnesses(args: argparse.Namespace, res, plan: CheckPlan) -> int:
    """Search for each `@witness` (exit 1 if one is unreachable, 3 if one is not reached within the bounds);
    with --out, save the trace that reaches a witness (one file per witness if there are several)."""
    from .common import print_trace

    model = plan.model
    plan.search_witnesses(res, not args.no_shorten)
    if not res.witnesses:
        return res.exit_code
    print(f"\nWitnesses: {', '.join(w.name for w in res.witnesses)}")
    reached = [w for w in res.witnesses if w.found]
    for w in res.witnesses:
        if w.found:
            steps = len(w.trace.steps) - 1
            print(f"  witness {w.name} reached in {steps} step{'s' if steps != 1 else ''}:")
            print_trace(w.trace, model, args.full)
            if args.out:
                out = args.out if len(reached) == 1 else witness_file(args.out, w.name)
                w.trace.save(out)
                print(f"  Trace written to {out} (replay it: {follow_up('replay', out, w.trace.spec)})")
        elif w.found is False:
            print(f"  witness {w.name} is unreachable: no reachable state satisfies it "
                  f"({w.result.distinct:,} states) — the spec may check less than it seems")
        elif w.failed:
            print(f"  witness {w.name} failed to evaluate: {w.result.violation.message}")
            print_trace(w.trace, model, args.full)
        else:
            print(f"  witness {w.name} not reached within the bounds ({w.result.cut})")
    sys.stdout.flush()
    return res.exit_code


def witness_file(out: str, name: str) -> str:
    """Where --out FILE saves witness `name`'s trace when there are several: FILE's stem, `.name`, its suffix."""
    import os

    stem, ext = os.path.splitext(out)
    return f"{stem}.{name}{ext or '.json'}"


def choices(args: argparse.Namespace) -> CheckChoices:
    """The options of the command line that the API's rules look at (`lockstep.api.check_rules`)."""
    resume = getattr(args, "resume", None)
    full = args.por is None and bool(resume) and checkpoint_reduced(resume) is False
    return CheckChoices(dfs=args.dfs, workers=args.workers, fairness=bool(args.fairness),
                        properties=bool(args.property), symmetry=args.symmetry,
                        max_violations=args.max_violations or 1, shorten=not args.no_shorten, por=args.por,
                        cluster=bool(getattr(args, "cluster", None)), checkpoint=bool(getattr(args, "checkpoint", None)),
                        resume=bool(resume), resume_full=resume if full else "", coverage=bool(args.coverage))


def dump_graph_first(args: argparse.Namespace, model):
    """With --dump-graph: the state graph, built (or refused as too large) before the search."""
    if not args.dump_graph:
        return None
    from ..render.graph import state_graph

    return state_graph(model, args.graph_limit)


def write_graph(args: argparse.Namespace, model, graph, res) -> None:
    """Write the --dump-graph file, with the counterexample marked."""
    if graph is None:
        return
    from ..render.graph import mark_trace, to_dot

    v = res.violation
    if v is not None:
        mark_trace(graph, model, v.trace)
    write_text(args.dump_graph, to_dot(graph, model, v.message if v is not None else None))
    print(f"State graph written to {args.dump_graph}: {graph_counts(len(graph), graph.number_of_edges(), res)}")


def graph_counts(states: int, edges: int, res) -> str:
    """The graph's counts, said against the search's: the graph holds every reachable state, the search's count
    differs only where it stopped early or reduced, and says why."""
    plural = "s" if edges != 1 else ""
    text = f"{states:,} states (every reachable one) and {edges:,} edge{plural} (pairs of states a step joins)"
    if states == res.distinct:
        return text
    why = ("it stops at the first violation" if res.violation is not None
           else f"it stopped early: {res.cut}" if res.cut else "it explores a reduced state space")
    if any(n.startswith("partial-order reduction:") for n in res.notes) and res.violation is None:
        why = "partial-order reduction explores fewer interleavings"
    return f"{text}; the search stored {res.distinct:,} ({why})"


def check_smt(args: argparse.Namespace) -> int:
    """`check --engine smt`: bounded model checking of a typed spec."""
    from ..smt.bmc import bmc

    explicit_only = {"--symmetry": args.symmetry, "--workers": args.workers > 1, "--dfs": args.dfs,
                     args.por_flag if args.por is not None else "--por": args.por is not None,
                     "--max-depth": args.max_depth is not None, "--max-states": args.max_states is not None,
                     "--dump-graph": args.dump_graph is not None, "--coverage": args.coverage is not None,
                     "--property": bool(args.property), "--no-shorten": args.no_shorten,
                     "--max-violations": args.max_violations is not None}
    given = [flag for flag, on in explicit_only.items() if on]
    if given:
        raise UsageError(f"{', '.join(given)}: only for the explicit engine; the SMT engine checks invariants, "
                         "deadlocks and step failures up to --depth K")
    model = load_typed(args.spec, _tree_params(args, parse_params(args.param)), "--engine smt",
                       invariants=args.invariant or None)
    depth = SMT_DEPTH if args.depth is None else args.depth
    ps = ", ".join(f"{k}={v}" for k, v in model.params.items())
    print(f"Checking {model.name}" + (f" ({ps})" if ps else "") + f": SMT bounded model checking to depth {depth}")
    print(f"  invariants: {', '.join(model.invariant_names) or 'none'}; "
          f"deadlock: {'not checked' if args.no_deadlock else 'checked'}; step failures: checked")
    say = stderr_say(args.quiet)
    res = bmc(model, depth, deadlock=not args.no_deadlock, say=say)
    if res.violation is not None:
        print_violation(res.violation, args.out, model, args.full)
    elif res.complete:
        print(f"\nNo violation: {res.reason}.")
    else:
        print(f"\nInconclusive: {res.reason}.")
    print(f"  searched to {depth_text(res.depth + 1)}, {res.seconds:.2f} s")  # a bound of K steps: K + 1 states
    sys.stdout.flush()
    from .json_result import of, violation_json

    if (rep := of(args)) is not None:
        rep.update(spec=model.name, params=dict(model.params), violation=violation_json(res.violation),
                   verdict="spec error" if res.exit_code == 5 else res.verdict,
                   checked={"invariants": list(model.invariant_names), "deadlock": not args.no_deadlock},
                   counts={"depth": res.depth + 1, "steps": res.depth}, seconds=res.seconds,
                   options={"engine": "smt", "depth": depth}, reductions={"symmetry": False, "partial_order": False},
                   trace=args.out if args.out and res.violation is not None else None,
                   notes=[res.reason] if res.violation is None else None)
    return res.exit_code


def _check_properties(args: argparse.Namespace, plan: CheckPlan) -> int:
    model, opts = plan.model, plan.opts
    ps = ", ".join(f"{k}={v}" for k, v in model.params.items())
    print(f"Checking {model.name}" + (f" ({ps})" if ps else "") + f": {plan.engine} breadth-first, "
          + ("state graph reduced by partial order" if opts.por else "whole state graph")
          + f", {opts.workers} worker{'s' if opts.workers > 1 else ''}" + (", symmetry reduction" if model.symmetry else ""))
    for p in plan.properties:
        print(f"  property {p.name}: {p.formula}")
    print(f"  fairness: {plan.fairness.describe()}")
    print(f"  invariants: {', '.join(model.invariant_names) or 'none'}; deadlock: "
          f"{'checked' if opts.deadlock else 'not checked'}")
    progress = NoProgress() if args.quiet else Progress()
    graph = dump_graph_first(args, model)
    res = plan.conclude(plan.run(progress))
    report(res, args.out, model, args.full)
    write_graph(args, model, graph, res)
    record_check(args, res, model, opts, plan.engine)
    return res.exit_code


def check_all_trees(args: argparse.Namespace) -> int:
    """`lockstep check SPEC --all-trees N`: print the per-N table; exit 1 with a counterexample on a violation."""
    if args.tree:
        raise UsageError("--tree and --all-trees exclude each other: one tree, or all of them")
    if args.all_trees > FORCE_LIMIT and not args.force:
        raise UsageError(f"--all-trees {args.all_trees}: beyond {FORCE_LIMIT} nodes the trees multiply (1,301 with "
                         f"13 nodes, 19,320 with 16, each with every initiator); add --force to run it anyway")
    defaults = {"--engine " + args.engine: args.engine not in ("auto", "scalar", "explicit"),
                "--property": bool(args.property),
                "--symmetry": args.symmetry, "--workers": args.workers > 1, "--dfs": args.dfs,
                "--dump-graph": bool(args.dump_graph), "--max-depth": args.max_depth is not None,
                "--max-states": args.max_states is not None, "--no-deadlock": args.no_deadlock,
                "--invariant": bool(args.invariant), "--coverage": bool(args.coverage),
                "--por": args.por is not None, "--no-shorten": args.no_shorten,
                "--max-violations": args.max_violations is not None}
    given = [flag for flag, on in defaults.items() if on]
    if given:
        raise UsageError(f"--all-trees runs the explicit engine with its defaults (every invariant, deadlocks "
                         f"checked, no bound) on trees it generates; drop {', '.join(given)}")
    params = parse_params(args.param)
    if "n" in params or "tree" in params:
        raise UsageError("--all-trees chooses n and tree itself; drop --param n and --param tree")
    from ..rounds.sweep import sweep, table, tree_spec

    cls = tree_spec(args.spec)
    print(f"Checking {cls.__name__} on every tree with 2..{args.all_trees} nodes, every initiator "
          f"(explicit engine, all invariants)")
    tick = None if args.quiet else (lambda text: print("progress: " + text, file=sys.stderr, flush=True))
    res = sweep(args.spec, args.all_trees, params, tick=tick)
    print(table(res.rows))
    if res.failure is not None:
        edges = ",".join(f"{u}-{v}" for u, v in sorted(tuple(sorted(e)) for e in res.failed_tree.edges))  # type: ignore[union-attr]
        print(f"\nOn the tree edges:{edges}:")
        report(res.failure, args.out, full=args.full)
        return res.failure.exit_code
    total = sum(r.trees for r in res.rows)
    print(f"\nNo violation: {total} trees, {sum(r.runs for r in res.rows)} runs (tree, initiator); rounds within the "
          f"bound in every run (worst rounds/bound {max((r.worst_ratio for r in res.rows), default=0):.2f}); "
          f"colours used = Δ+1 in {sum(r.optimal_colourings for r in res.rows)} runs, more in "
          f"{sum(r.over for r in res.rows)}")
    return 0


def _tree_params(args: argparse.Namespace, params: dict[str, int]) -> dict[str, int]:
    """The parameters with `--tree` applied (the rounds model is imported only for a tree)."""
    if not getattr(args, "tree", None):
        return params
    from ..rounds.sweep import tree_arguments

    return tree_arguments(args, params)
