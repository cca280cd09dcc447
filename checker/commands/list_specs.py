"""`lockstep list`: the registered specs, their parameters and what they model."""

from __future__ import annotations

import argparse

from lockstep.specs.registry import SPECS

from ..loader import spec_summaries
from .json_result import add_format_argument, of

NAME = "list"
HELP = "list the registered specs"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_format_argument(p, "text for people (default), or one JSON object whose `specs` lists each spec's name, "
                           "summary and parameters (docs/json.md)")


def run(args: argparse.Namespace) -> int:
    width = max(map(len, SPECS)) + 2
    specs = []
    for name, doc, params in spec_summaries():
        ps = " ".join(f"{k}={v}" for k, v in params.items())
        print(f"{name:<{width}}{doc}" + (f"  [{ps}]" if ps else ""))
        specs.append({"name": name, "summary": doc, "params": dict(params)})
    if (rep := of(args)) is not None:
        rep.update(verdict="listed", counts={"specs": len(specs)}, specs=specs)
    return 0
