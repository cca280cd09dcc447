"""Start-up: a command imports what it uses, not what the other commands use (timings are in bench/startup.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("scipy", "sympy", "networkx", "lark", "matplotlib", "z3")


@pytest.mark.parametrize("argv", [["check", "two_phase"], ["replay", "missing.json"],
                                  ["validate", "missing.jsonl"], ["run", "phase_clock", "--no-trace",
                                                                  "--interactions", "1", "-p", "n=1"]])
def test_a_command_does_not_import_what_it_does_not_use(argv):
    code = ("import contextlib, io, sys\nfrom lockstep.checker.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            f"    main({argv!r} + ['--quiet'] * ({argv[0]!r} == 'check'))\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"lockstep {' '.join(argv)} imported {proc.stdout.strip()}"


def test_every_command_is_listed_without_importing_it():
    code = ("import sys\nfrom lockstep.checker.cli import build_parser\n"
            "p = build_parser(['--help'])\n"
            "print(sorted(p._subparsers._group_actions[0].choices))\n"
            "print(sorted(m for m in sys.modules if m.startswith('lockstep.checker.commands.')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    names, imported = proc.stdout.strip().splitlines()
    assert "'check'" in names and "'run'" in names and "'validate'" in names
    assert imported == "[]"
