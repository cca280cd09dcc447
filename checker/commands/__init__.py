"""Subcommands of the `lockstep` command line."""
