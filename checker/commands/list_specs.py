"""`lockstep list`: the registered specs, their parameters and what they model."""

from __future__ import annotations

import argparse

from lockstep.specs.registry import SPECS

from ..loader import LoadError, spec_summary

NAME = "list"
HELP = "list the registered specs"


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    width = max(map(len, SPECS)) + 2
    for name in sorted(SPECS):
        try:
            doc, params = spec_summary(name)
        except LoadError as e:
            doc, params = f"(cannot load: {e})", {}
        ps = " ".join(f"{k}={v}" for k, v in params.items())
        print(f"{name:<{width}}{doc}" + (f"  [{ps}]" if ps else ""))
    return 0
