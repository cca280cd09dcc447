"""The `lockstep` command line: one subcommand per module in `COMMANDS`.

Exit codes: 0 the property holds, 1 a violation was found, 2 usage or input error,
3 inconclusive (a bound was reached), 4 internal error, 5 a spec error found while checking (the
spec's own code raised — a NameError, a TypeError, a division by zero — in a reachable state; the
trace to that step is printed and saved like a counterexample).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import sys
import traceback
from typing import NoReturn

from lockstep import __version__
from lockstep.specs.lang.errors import SpecError

from .errors import TraceError, UsageError
from .extras import missing_extra
from .loader import LoadError

COMMANDS = [
    "lockstep.checker.commands.list_specs",
    "lockstep.checker.commands.check",
    "lockstep.checker.commands.replay",
    "lockstep.checker.commands.prove",
    "lockstep.checker.commands.algebra",
    "lockstep.checker.commands.validate",
    "lockstep.executors.command",
    "lockstep.executors.histories.command",
    "lockstep.checker.commands.analyze",
    "lockstep.checker.commands.simulate",
    "lockstep.checker.commands.datalog",
    "lockstep.checker.commands.linearizable",
    "lockstep.checker.commands.draw",
    "lockstep.checker.commands.explore",
    "lockstep.checker.commands.export",
]
"""Modules defining `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`."""

INPUT_ERRORS = (SpecError, LoadError, TraceError)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given the command line, only the module of the command it names is imported
    (the others' NAME and HELP are read from their source), so a command does not pay for the others' imports.
    A command line that names a command needs only the others' names (their help is never shown then)."""
    parser = _Parser(prog="lockstep", description="Specify, model-check and run synchronization protocols.")
    parser.add_argument("--version", action="version", version=f"lockstep {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    chosen = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    sources = {name: _source(name) for name in COMMANDS}
    names = {name: _named(source) for name, source in sources.items()}
    if chosen is not None and chosen in names.values() and "-h" not in argv and "--help" not in argv:
        heads = [(name, None if named is None else (named, "")) for name, named in names.items()]
    else:
        heads = [(name, _declared(source)) for name, source in sources.items()]
    for name, head in heads:
        if head is None or argv is None or head[0] == chosen:
            mod = importlib.import_module(name)
            p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
            mod.add_arguments(p)
            p.set_defaults(run=mod.run)
        else:
            sub.add_parser(head[0], help=head[1], description=head[1])
    return parser


class _Parser(argparse.ArgumentParser):
    """argparse's parser, except that help, usage or version written into a closed pipe raises BrokenPipeError (which
    `entry` turns into exit 141, as for any other output) instead of being dropped with exit 0, and that a usage error
    of a command line asking for JSON (`--format json`) is also printed as a JSON object."""

    json_errors = False  # set by `main` for each command line: whether it asks for JSON, and the command it names
    json_command = ""

    def error(self, message: str) -> NoReturn:
        if self.json_errors:
            self.print_usage(sys.stderr)
            print(f"{self.prog}: error: {message}", file=sys.stderr)
            _print_error_json(2, message, self.json_command)
            sys.exit(2)
        super().error(message)

    def _print_message(self, message: str, file=None) -> None:
        if message:
            stream = file or sys.stderr
            stream.write(message)
            stream.flush()


def _source(module: str) -> str | None:
    """A module's source text, without importing it (None if it cannot be read)."""
    try:
        spec = importlib.util.find_spec(module)
        with open(spec.origin, encoding="utf-8") as f:  # type: ignore[union-attr, arg-type]
            return f.read()
    except (ImportError, AttributeError, OSError, TypeError):
        return None


def _named(source: str | None) -> str | None:
    """A command module's NAME, when its source sets it on one line to a plain string (else None)."""
    found = re.search(r'^NAME = "([\w-]+)"$', source or "", re.MULTILINE)
    return found.group(1) if found else None


def _declared(source: str | None) -> tuple[str, str] | None:
    """A command module's NAME and HELP, read from its source (None if they are not plain string constants
    there, or the source could not be read)."""
    import ast

    try:
        tree = ast.parse(source)  # type: ignore[arg-type]
    except (SyntaxError, TypeError, ValueError):
        return None
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in ("NAME", "HELP"):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            if isinstance(value, str):
                found[node.targets[0].id] = value
    return (found["NAME"], found["HELP"]) if len(found) == 2 else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _Parser.json_errors = _wants_json(argv)
    _Parser.json_command = next((a for a in argv if not a.startswith("-")), "")
    try:
        parser = build_parser(argv)
    except ModuleNotFoundError as e:  # a command module that imports an optional library itself
        if (missing := missing_extra(e)) is None:
            raise
        return _failed(2, missing)
    args = parser.parse_args(argv)
    if getattr(args, "format", None) == "json":
        return _run_json(args)
    return _run(args)[0]


def _run(args: argparse.Namespace) -> tuple[int, str | None]:
    """(the command's exit code, the error it ended with, if any: said on standard error)."""
    try:
        return args.run(args), None
    except (*INPUT_ERRORS, UsageError) as e:
        return 2, _said("error", str(e))
    except KeyboardInterrupt:
        return 130, _said("interrupted", None)
    except BrokenPipeError:
        raise  # the reader of our output went away: `entry` exits quietly
    except SystemExit as e:  # spec code called sys.exit(): not a verdict
        return 2, _said("error", f"the spec's code called sys.exit({e.code!r}) while it was loaded or run; nothing "
                                 "was checked (a spec must not exit the process)")
    except Exception as e:  # an optional library not installed, else a bug in Lockstep itself
        if (missing := missing_extra(e)) is not None:
            return 2, _said("error", missing)
        if os.environ.get("LOCKSTEP_DEBUG"):
            traceback.print_exc()
        return 4, _said("internal error", f"{type(e).__name__}: {e} (set LOCKSTEP_DEBUG=1 for details)")


def _said(kind: str, message: str | None) -> str:
    print(f"lockstep: {kind}" + (f": {message}" if message else ""), file=sys.stderr)
    return message or kind


def _run_json(args: argparse.Namespace) -> int:
    """Run a command for `--format json`: its text kept back, its outcome printed as one JSON object."""
    import contextlib
    import io
    import json

    from .commands.json_result import Report

    args.report = Report(args.command)
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code, error = _run(args)
    print(json.dumps(args.report.finish(code, text.getvalue(), error), indent=1, default=str))
    return code


def _wants_json(argv: list[str]) -> bool:
    """Whether a command line asks for JSON output (read before parsing, so that a usage error is JSON too)."""
    return any(a == "--format=json" or (a == "--format" and i + 1 < len(argv) and argv[i + 1] == "json")
               for i, a in enumerate(argv))


def _failed(code: int, message: str) -> int:
    """An error before the command runs: said on standard error, and as JSON where JSON is asked for."""
    _said("error", message)
    if _Parser.json_errors:
        _print_error_json(code, message, _Parser.json_command)
    return code


def _print_error_json(code: int, message: str, command: str) -> None:
    import json

    from .commands.json_result import COMMANDS, Report

    print(json.dumps(Report(command if command in COMMANDS else None).finish(code, "", message), indent=1))


def entry() -> None:
    # Before numpy loads: its OpenBLAS starts a thread per core that spins for a tenth of a second of CPU, on the
    # cores the checker's own threads use, and no command does dense linear algebra that its threads would speed up.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `lockstep list | head -1`: stop quietly, as a closed pipe stops other tools
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):  # what either still buffers is dropped, not an error at exit
            os.dup2(devnull, stream.fileno())
        sys.exit(128 + 13)  # SIGPIPE
    sys.exit(code)


if __name__ == "__main__":
    entry()
