"""`python -m lockstep`: the `lockstep` command line."""

from lockstep.checker.cli import entry

entry()
