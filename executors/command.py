"""`lockstep run SPEC`: run a spec as real processes, inject faults, validate the trace: the options of every
system model, and the dispatch to the model's own command (`actors`, `rounds`, `population`)."""

from __future__ import annotations

import argparse

from lockstep.checker.commands.common import add_spec_arguments, natural
from lockstep.checker.errors import UsageError
from lockstep.checker.loader import is_protocol, parse_params

from .actors.command import run_actor_command
from .autobahn import command as autobahn_command
from .population.command import run_population_command
from .psmr import command as psmr_command
from .rounds.command import kill_plan
from .rounds.command import run as run_rounds_spec
from .rounds.run import rounds_class

NAME = "run"
HELP = ("run an actor spec as one OS process per actor, or a population protocol as one process per agent and a "
        "scheduler (TCP on 127.0.0.1), then validate the run")


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
    p.add_argument("--trace", metavar="FILE", help="write the merged run trace (JSON lines) to FILE")
    p.add_argument("--seed", type=natural, default=0,
                   help="seed for handler choices and injected faults (population protocols: the scheduler's pairs, "
                        "the start states and the agents' draws)")
    p.add_argument("--no-trace", action="store_true", help="record nothing (and so validate nothing)")
    p.add_argument("--no-validate", action="store_true", help="do not validate the merged trace")
    p.add_argument("--tree", metavar="GEN", help="rounds specs with a tree parameter: run on this tree "
                                                 "(random:N, path:N, star:N, binary:DEPTH, edges:0-1,1-2,...)")
    p.add_argument("--initiator", type=natural, metavar="P", help="rounds specs: the node that starts (default 0)")
    p.add_argument("--kill", type=kill_plan, metavar="P@R", help="rounds specs: kill node P at the start of round R")
    psmr_command.add_arguments(p)
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


# Options that only one kind of spec takes: (attribute, flag, kind).
ONE_KIND_OPTIONS = [("tree", "--tree", "rounds"), ("initiator", "--initiator", "rounds"), ("kill", "--kill", "rounds"),
                    ("interactions", "--interactions", "population"), ("start", "--start", "population"),
                    ("duration", "--duration", "actor")]


def run(args: argparse.Namespace) -> int:
    if psmr_command.is_psmr(args.spec):
        return psmr_command.run_psmr_command(args)
    if autobahn_command.is_autobahn(args.spec):
        return autobahn_command.run_autobahn_command(args)
    kind = "rounds" if rounds_class(args.spec) is not None else "population" if is_protocol(args.spec) else "actor"
    for attr, flag, owner in ONE_KIND_OPTIONS:
        if getattr(args, attr) is not None and owner != kind:
            raise UsageError(f"{flag} applies to {owner} specs; {args.spec} is a{'n' if kind == 'actor' else ''} "
                             f"{kind} spec (see `lockstep run --help`)")
    if kind == "rounds":
        return run_rounds_spec(args)
    params = parse_params(args.param)
    if kind == "population":
        return run_population_command(args, params)
    return run_actor_command(args, params)
