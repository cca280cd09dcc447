"""The generated pages of the manual: the command-line reference (docs/reference/cli.md), from the argument parsers
themselves, and the protocol library's index (docs/protocols/index.md), from the registry. `python -m
lockstep.checker.manual DOCS_DIR` writes both; a test keeps the committed pages current."""

from __future__ import annotations

import argparse
import os
import sys

from .cli import build_parser

WIDTH = 100  # the help text's width: fixed, so the page does not depend on the terminal it was made in


def reference() -> str:
    """The page: every command's usage and options, as `lockstep COMMAND --help` prints them."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)  # argparse wraps help to the terminal's width, read from here
    try:
        return _page(build_parser())
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _page(parser: argparse.ArgumentParser) -> str:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = ["# Command-line reference", "",
           "Every command's usage and options, as `lockstep COMMAND --help` prints them (generated from the argument "
           "parsers by `python -m lockstep.checker.manual`). Exit codes: 0 the property holds, 1 a violation, 2 a "
           "usage or input error, 3 inconclusive (a bound reached), 4 an internal error, 5 an error in the spec's own "
           "code. `--format json` prints results as JSON ([Results as JSON](../json.md)).", ""]
    for name, p in sub.choices.items():
        out += [f"## lockstep {name}", "", p.description or "", "", "```text", p.format_help().rstrip(), "```", ""]
    return "\n".join(out)


def protocols() -> str:
    """The protocol library's index: every registered spec, what it models and its parameters' defaults."""
    from .loader import spec_summaries

    out = ["# The protocol library", "",
           "Every registered spec (`lockstep list`), checked by name: `lockstep check NAME [--param k=v ...]`. The "
           "pages below this one describe the larger protocols with their papers, commands and state counts; each "
           "spec's docstring (`specs/`) cites its source and states every deviation from it.", "",
           "| spec | what it models | parameters (defaults) |", "|---|---|---|"]
    for name, doc, params in spec_summaries():
        ps = ", ".join(f"{k}={v}" for k, v in params.items())
        out.append(f"| `{name}` | {doc.replace('|', '/')} | {ps} |")
    return "\n".join(out) + "\n"


PAGES = {"reference/cli.md": reference, "protocols/index.md": protocols}


def write(docs: str) -> None:
    """Write the generated pages into the manual's directory `docs`."""
    for path, make in PAGES.items():
        with open(os.path.join(docs, path), "w", encoding="utf-8") as f:
            f.write(make())


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else "docs")
