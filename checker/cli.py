"""The `lockstep` command line: one subcommand per module in `COMMANDS`.

Exit codes: 0 the property holds, 1 a violation was found, 2 usage or input error,
3 inconclusive (a bound was reached), 4 internal error, 5 a spec error found while checking (the
spec's own code raised — a NameError, a TypeError, a division by zero — in a reachable state; the
trace to that step is printed and saved like a counterexample).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from lockstep import __version__
from lockstep.specs.lang.errors import SpecError

from .errors import UsageError
from .loader import LoadError
from .trace import TraceError

COMMANDS = [
    "lockstep.checker.commands.list_specs",
    "lockstep.checker.commands.check",
    "lockstep.checker.commands.replay",
    "lockstep.checker.commands.prove",
    "lockstep.checker.commands.algebra",
    "lockstep.checker.commands.validate",
    "lockstep.executors.command",
    "lockstep.checker.commands.analyze",
    "lockstep.checker.commands.simulate",
    "lockstep.checker.commands.linearizable",
    "lockstep.checker.commands.draw",
    "lockstep.checker.commands.explore",
    "lockstep.checker.commands.export",
]
"""Modules defining `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`."""

INPUT_ERRORS = (SpecError, LoadError, TraceError)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lockstep", description="Specify, model-check and run synchronization protocols.")
    parser.add_argument("--version", action="version", version=f"lockstep {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        mod = importlib.import_module(name)
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (*INPUT_ERRORS, UsageError) as e:
        print(f"lockstep: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lockstep: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug in Lockstep itself
        if os.environ.get("LOCKSTEP_DEBUG"):
            traceback.print_exc()
        print(f"lockstep: internal error: {type(e).__name__}: {e} (set LOCKSTEP_DEBUG=1 for details)", file=sys.stderr)
        return 4


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
