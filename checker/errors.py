"""Errors a command reports as one line and exit code 2 (see `cli`)."""


class UsageError(Exception):
    """A command-line argument is wrong in a way argparse cannot see."""
