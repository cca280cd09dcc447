"""Errors a command reports as one line and exit code 2 (see `cli`)."""


class UsageError(Exception):
    """A command-line argument is wrong in a way argparse cannot see."""


class TraceError(Exception):
    """A trace file is malformed or does not belong to the spec it names."""
