"""`lockstep datalog`: recursive Datalog with aggregates — list and show programs, prove PreM, evaluate."""

from __future__ import annotations

import argparse
import sys
import time

from lockstep.specs.datalog.catalog import PROGRAMS, program_text
from lockstep.specs.datalog.graphs import GENERATORS
from lockstep.specs.datalog.semantics import Divergence
from lockstep.specs.datalog.syntax import DatalogError

from ..datalog.evaluation import evaluate_program, prepare
from ..datalog.files import load_graph, load_program
from ..datalog.graph_options import check_graph_options
from ..datalog.prem import Verdict
from ..datalog.termination import check_termination
from ..errors import UsageError
from ..loader import parse_params
from ..safeio import replacing
from .common import natural, output_file, positive

NAME = "datalog"
HELP = "recursive Datalog with aggregates: list and show programs, prove PreM with z3, evaluate on a graph"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="datalog_command", metavar="ACTION")
    sub.required = True
    ls = sub.add_parser("list", help="the shipped programs")
    ls.set_defaults(action=_list)
    show = sub.add_parser("show", help="print a program's text")
    show.add_argument("program", metavar="PROGRAM", help="a shipped program (see `lockstep datalog list`) or a .dl file")
    show.set_defaults(action=_show)
    prem = sub.add_parser("prem", help="prove, per rule and aggregate, that the aggregates may be pushed into the "
                                       "recursion (PreM): exit 0 proved, 1 refuted, 3 undecided",
                          description="For every rule that reads an aggregated predicate inside its own recursion, "
                                      "prove γ(T(I)) = γ(T(γ(I))) for all interpretations with z3, or print the "
                                      "counterexample interpretation z3 finds.")
    prem.add_argument("program", metavar="PROGRAM")
    _params(prem)
    prem.set_defaults(action=_prem)
    term = sub.add_parser("terminates", help="check that an SSP spec terminates under every schedule (exit 0), or "
                                             "show the run that cycles, gets stuck or diverges (exit 1)",
                          description="Explore every state of an SSP evaluation (e.g. ssp_sssp) and check that no "
                                      "run cycles or stops before every worker has detected termination.")
    term.add_argument("spec", metavar="SPEC", help="an SSP spec: ssp_sssp, ssp_cc, ssp_reach, or module:Class")
    term.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                      help="set a spec parameter, e.g. -p s=0 -p graph=2 (repeatable)")
    term.add_argument("--max-states", type=positive, default=2_000_000, metavar="N")
    term.set_defaults(action=_terminates)
    ev = sub.add_parser("eval", help="evaluate a program on a graph in this process (semi-naive, numpy)")
    ev.add_argument("program", metavar="PROGRAM")
    graph_arguments(ev)
    _params(ev)
    ev.add_argument("--relation", metavar="PRED", help="the relation to print or write (default: the last one derived)")
    ev.add_argument("--show", type=natural, default=10, metavar="K", help="print the first K rows (default 10)")
    ev.add_argument("--out", type=output_file, metavar="FILE", help="write the relation's rows to FILE (one per line)")
    ev.add_argument("--max-iterations", type=positive, metavar="N",
                    help="report divergence after N rounds of a recursion (sweeps, for one the compiled engine "
                         "propagates in place; default: see the evaluator)")
    ev.set_defaults(action=_eval)


def _params(p: argparse.ArgumentParser) -> None:
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="set a program parameter declared with .param (repeatable)")


def graph_arguments(p: argparse.ArgumentParser) -> None:
    """The options that say which graph a program runs on (shared with `lockstep run`)."""
    p.add_argument("--graph", "--edges", dest="graph", metavar="GRAPH", required=False,
                   help="an edge-list file (FROM TO [WEIGHT] per line) or a generator: "
                        + ", ".join(f"{k}:{v[0]}" for k, v in GENERATORS.items()))
    p.add_argument("--weights", type=weight_range, metavar="LO:HI",
                   help="draw edge weights uniformly from LO..HI (default: the file's, or 1)")
    p.add_argument("--seed", type=natural, default=0, help="seed of generated graphs and weights (default 0)")
    p.add_argument("--undirected", action="store_true",
                   help="generators: list each undirected edge once (default: both directions)")


def weight_range(text: str) -> tuple[int, int]:
    lo, sep, hi = text.partition(":")
    try:
        a, b = int(lo), int(hi)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not LO:HI with integers, e.g. 1:10") from None
    if not sep or a > b:
        raise argparse.ArgumentTypeError(f"{text!r}: give LO:HI with LO <= HI, e.g. 1:10")
    return a, b


def program_inputs(prog, args: argparse.Namespace) -> tuple[dict, list[str]]:
    """The program's input relation filled from --graph (with notes on where weights came from)."""
    names = list(prog.inputs)
    if not names:
        return {}, []
    if len(names) > 1:
        raise UsageError(f"the program has {len(names)} inputs ({', '.join(names)}); a graph fills one")
    if not args.graph:
        raise UsageError(f"the program reads {names[0]}: give --graph FILE or a generator such as --graph gnm:100:500")
    check_graph_options(args.graph, prog.arity[names[0]], args.weights, args.undirected)
    g = load_graph(args.graph, args.seed, args.undirected)
    rows, note = g.columns(prog.arity[names[0]], args.weights, args.seed)
    notes = [f"{g.edges:,} edges from {g.origin}"] + ([note] if note else [])
    return {names[0]: rows}, notes


def _list(args: argparse.Namespace) -> int:
    for name, what in PROGRAMS.items():
        print(f"  {name:<8} {what}")
    print("Show one with `lockstep datalog show NAME`; prove PreM with `lockstep datalog prem NAME`.")
    return 0


def _show(args: argparse.Namespace) -> int:
    if args.program in PROGRAMS:
        print(program_text(args.program), end="")
    else:
        print(load_program(args.program).text, end="")
    return 0


def print_verdicts(verdicts: list[Verdict]) -> None:
    for v in verdicts:
        print(f"  line {v.rule.pos.line}: {v.aggregate}: {v.status.upper()}")
        print(f"    {v.rule}")
        if v.reason:
            print(f"    {v.reason}")
        for k, x in v.counterexample.items():
            print(f"    {k:<11} = {x}" if k != "z3 model" else f"    z3 model: {x}")


def _prem(args: argparse.Namespace) -> int:
    prog, verdicts = prepare(args.program, parse_params(args.param))
    name = prog.program.source or args.program
    if not verdicts:
        print(f"{name}: no aggregate meets a recursion; nothing to prove (the program is stratified).")
        return 0
    print(f"{name}: PreM at {len(verdicts)} site(s) where an aggregate meets a recursion")
    print_verdicts(verdicts)
    if all(v.holds for v in verdicts):
        print("PreM holds: the aggregates can be pushed into the recursion (γ(lfp T) = lfp(γ∘T)).")
        return 0
    if any(v.status == "refuted" for v in verdicts):
        print("PreM fails: the program is refused for evaluation with the aggregate in the recursion.")
        return 1
    print("PreM undecided at some site.")
    return 3


def _terminates(args: argparse.Namespace) -> int:
    res = check_termination(args.spec, parse_params(args.param), args.max_states)
    counts = f"{res.states:,} states, {res.finished:,} where every worker has stopped"
    if res.verdict == "terminates":
        print(f"Terminates: every run ends with every worker stopped ({counts}).")
        return 0
    if res.verdict == "inconclusive":
        print(f"Inconclusive: {res.message} ({counts}).")
        return 3
    print(f"{res.verdict.capitalize()}: {res.message} ({counts}).")
    for i, (label, _state) in enumerate(res.path):
        mark = "  <- the cycle starts here" if res.loop is not None and i == res.loop else ""
        print(f"  {i:>3}  {label}{mark}")
    if res.loop is not None:
        print(f"  {'':>3}  (back to state {res.loop})")
    return 1


def _eval(args: argparse.Namespace) -> int:
    prog, verdicts = prepare(args.program, parse_params(args.param))
    inputs, notes = program_inputs(prog, args)
    for n in notes:
        print(f"  {n}")
    t0 = time.perf_counter()
    try:
        res = evaluate_program(prog, verdicts, inputs, args.max_iterations,
                               progress=_progress() if sys.stderr.isatty() else None)
    except Divergence as e:
        print(f"Divergence: {e}")
        return 1
    seconds = time.perf_counter() - t0
    rel = args.relation or prog.strata[-1].preds[0] if prog.strata else None
    if rel is None or rel not in res.relations:
        raise UsageError(f"no relation {rel!r}; derived: {', '.join(prog.idb)}")
    for p in prog.idb:
        rounds = res.iterations.get(p)
        print(f"  {p}: {len(res.relations[p][0]):,} rows" + (f" ({rounds} iterations)" if rounds is not None else ""))
    print(f"Evaluated in {seconds:.3f} s")
    rows = res.rows(rel)
    for r in rows[: args.show].tolist():
        print(f"  {rel}({', '.join(map(str, r))})")
    if len(rows) > args.show:
        print(f"  ... {len(rows) - args.show:,} more")
    if args.out:
        try:
            with replacing(args.out) as f:
                for r in rows.tolist():
                    f.write(" ".join(map(str, r)) + "\n")
        except OSError as e:
            raise DatalogError(f"cannot write {args.out}: {e.strerror}") from None
        print(f"Wrote {len(rows):,} rows of {rel} to {args.out}")
    return 0


def _progress():
    def show(pred: str, rounds: int, delta: int) -> None:
        print(f"\r  {pred}: iteration {rounds}, {delta:,} new facts   ", end="", file=sys.stderr, flush=True)
    return show


def run(args: argparse.Namespace) -> int:
    return args.action(args)
