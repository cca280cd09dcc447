"""`lockstep run SPEC`: run a spec as real processes, inject faults, validate the trace: the options of every
system model, and the dispatch to the model's own command (`actors`, `rounds`, `population`)."""

from __future__ import annotations

import argparse
import sys

from lockstep.checker.commands.common import add_spec_arguments, natural, output_file
from lockstep.checker.errors import UsageError
from lockstep.checker.loader import parse_params

from .autobahn import command as autobahn_command
from .psmr import command as psmr_command

NAME = "run"
HELP = ("run an actor spec as one OS process per actor, a population protocol as one process per agent and a "
        "scheduler, or a Datalog program on SSP workers (TCP on 127.0.0.1), then validate the run")


def staleness(text: str) -> int:
    """Datalog programs' --staleness (their parser is imported only when the option is given)."""
    from .datalog.command import staleness as parse

    return parse(text)


def straggler(text: str) -> tuple[int, float, float]:
    """Datalog programs' --straggler W:MS[:P]."""
    from .datalog.command import straggler as parse

    return parse(text)


def weight_range(text: str) -> tuple[int, int]:
    """Datalog programs' --weights LO:HI."""
    from lockstep.checker.commands.datalog import weight_range as parse

    return parse(text)


def kill_plan(text: str) -> tuple[int, int]:
    """`P@R`: kill node P at the start of round R."""
    try:
        p, r = (int(x) for x in text.split("@"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not NODE@ROUND, e.g. 3@2") from None
    if p < 0 or r < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: the node must be >= 0 and the round >= 1")
    return p, r


def seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < v <= 3600:
        raise argparse.ArgumentTypeError(f"{v} is not between 0 and 3600 seconds")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_spec_arguments(p)
    p.add_argument("--duration", type=seconds, metavar="S", help="seconds to run an actor spec (default 2)")
    p.add_argument("--interactions", type=positive, metavar="K",
                   help="population protocols: interactions to run (default 10000)")
    p.add_argument("--start", metavar="NAME", help="population protocols: the start the agents begin in "
                                                   "(default: the protocol's first @start)")
    p.add_argument("--faults", metavar="FILE", help="a JSON fault plan: drop, duplicate, reorder, delay_ms, "
                                                    "partitions, crashes (see executors/faults.py)")
    p.add_argument("--trace", type=output_file, metavar="FILE",
                   help="write the run's trace to FILE, one JSON-lines file (not a directory): the merged trace that "
                        "`lockstep validate` reads; autobahn and psmr: every process's events, each with its pid")
    p.add_argument("--seed", type=natural, default=0,
                   help="seed for handler choices and injected faults (population protocols: the scheduler's pairs, "
                        "the start states and the agents' draws)")
    p.add_argument("--no-trace", action="store_true", help="record nothing (and so validate nothing)")
    p.add_argument("--no-validate", action="store_true", help="do not validate the merged trace")
    p.add_argument("--bug", metavar="NAME", help="autobahn and psmr: run the executor with one of its seeded "
                                                 "implementation bugs, which validation catches (refused unless it "
                                                 "names one: autobahn no_parent_poa, psmr no_barrier)")
    p.add_argument("--tree", metavar="GEN", help="rounds specs with a tree parameter: run on this tree "
                                                 "(random:N, path:N, star:N, binary:DEPTH, edges:0-1,1-2,...)")
    p.add_argument("--initiator", type=natural, metavar="P", help="rounds specs: the node that starts (default 0)")
    p.add_argument("--kill", type=kill_plan, metavar="P@R", help="rounds specs: kill node P at the start of round R")
    p.add_argument("--graph", metavar="GRAPH", help="Datalog programs: an edge-list file, a generator (gnm:N:M, grid:R:C, "
                                                   "...) or ssp:N (a graph of the SSP spec, validated against it)")
    p.add_argument("--staleness", "-s", type=staleness, metavar="S",
                   help="Datalog programs: 0 (BSP), a bound, or inf (asynchronous); default 1")
    p.add_argument("--straggler", type=straggler, metavar="W:MS[:P]",
                   help="Datalog programs: delay worker W by MS milliseconds before each iteration (with chance P)")
    p.add_argument("--weights", type=weight_range, metavar="LO:HI", help="Datalog programs: random edge weights")
    p.add_argument("--undirected", action="store_true", help="Datalog programs: generators list each edge once")
    p.add_argument("--no-check", action="store_true",
                   help="Datalog programs: do not compare the result with the sequential evaluation")
    psmr_command.add_arguments(p)  # also --workers, which Datalog programs share
    autobahn_command.add_arguments(p)


def positive(text: str) -> int:
    """A positive whole number argument."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is not a positive number")
    return v


PSMR_ONLY = ("replicas", "clients", "outstanding", "keys", "dependent", "service_ms", "service", "kill_replica",
             "history", "budget", "spec_workload")
# The kinds of run that take each option not every run takes: (attribute, kinds; the first names the option's help).
KIND_OPTIONS = [("tree", ("rounds",)), ("initiator", ("rounds",)), ("kill", ("rounds",)),
                ("interactions", ("population",)), ("start", ("population",)),
                ("duration", ("actor", "psmr", "autobahn")), ("graph", ("datalog",)), ("workers", ("datalog", "psmr")),
                ("staleness", ("datalog",)), ("straggler", ("datalog",)), ("weights", ("datalog",)),
                ("undirected", ("datalog",)), ("no_check", ("datalog",)), ("rate", ("autobahn",)), ("bug", ("autobahn", "psmr")),
                ("faults", ("actor", "population", "datalog", "psmr", "autobahn")),
                ("param", ("actor", "rounds", "population", "datalog", "autobahn")),
                ("no_trace", ("actor", "population", "datalog", "autobahn"))] + [(a, ("psmr",)) for a in PSMR_ONLY]


def check_options(args: argparse.Namespace, kind: str) -> None:
    """Refuse every option given that a run of this kind would not honour (UsageError naming the option)."""
    if args.trace and args.no_trace:
        raise UsageError("--trace FILE writes the run's trace and --no-trace records none: give one of them")
    for attr, kinds in KIND_OPTIONS:
        value = getattr(args, attr)
        if value is not None and value is not False and value != [] and kind not in kinds:
            flag = "--" + attr.replace("_", "-")
            also = f" (and {', '.join(kinds[1:])})" if len(kinds) > 1 else ""
            article = "an" if kind[0] in "aeiou" else "a"
            why = {"no_trace": ": it validates what it records; skip validation with --no-validate",
                   "param": ": its shape is set by --replicas, --workers, --clients, ...",
                   "faults": ": a rounds run takes --kill NODE@ROUND"}.get(attr, "")
            raise UsageError(f"{flag} applies to {kinds[0]} specs{also}; {args.spec} is {article} {kind} spec{why} "
                             "(see `lockstep run --help`)")


def run(args: argparse.Namespace) -> int:
    kind = ("psmr" if psmr_command.is_psmr(args.spec) else "autobahn" if autobahn_command.is_autobahn(args.spec)
            else spec_kind(args.spec))
    check_options(args, kind)
    if kind == "psmr":
        return psmr_command.run_psmr_command(args)
    if kind == "autobahn":
        return autobahn_command.run_autobahn_command(args)
    params = parse_params(args.param)
    if kind == "datalog":
        from .datalog.command import run_datalog_command

        return run_datalog_command(args, params)
    print(f"progress: building {args.spec}" + "".join(f" {k}={v}" for k, v in params.items()), file=sys.stderr,
          flush=True)
    if kind == "rounds":  # each model's runner is imported when it runs (networkx, asyncio, multiprocessing)
        from .rounds.command import run as run_rounds_spec

        return run_rounds_spec(args)
    if kind == "population":
        from .population.command import run_population_command

        return run_population_command(args, params)
    from .actors.command import run_actor_command

    return run_actor_command(args, params)


def spec_kind(ref: str) -> str:
    """"datalog", "rounds", "population" or "actor": the system model of the spec `ref` names."""
    from lockstep.runs import spec_model
    from lockstep.specs.datalog.catalog import is_program_ref  # lark and the catalogue: only to tell a program

    if is_program_ref(ref):
        return "datalog"
    kind = spec_model(ref)
    return "actor" if kind == "actors" else kind
