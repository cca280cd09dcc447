"""Datalog programs and graphs as the command line names them: a shipped program or a `.dl` file, a generator
(`gnm:N:M`, ...) or an edge-list file. Files are read as every input is (`safeio`): regular files only, and no
more than a limit of bytes, counted as read."""

from __future__ import annotations

import os
from collections.abc import Iterator

from lockstep.specs.datalog.catalog import PROGRAMS
from lockstep.specs.datalog.catalog import load as load_shipped
from lockstep.specs.datalog.graphs import GENERATORS, Graph, generate, parse_edge_list
from lockstep.specs.datalog.syntax import DatalogError, Program

from ..safeio import open_input, read_bytes

MAX_PROGRAM_BYTES = 1 << 20
MAX_EDGE_LIST_BYTES = 8 << 30
MAX_EDGE_LINE = 1 << 12  # bytes in one line of an edge list (two or three integers)


def load_program(ref: str) -> Program:
    """A shipped program by name, or a program file (`*.dl`)."""
    from lockstep.specs.datalog.parser import parse  # lark: imported when a program is read

    if ref in PROGRAMS:
        return load_shipped(ref)
    if not (ref.endswith(".dl") or os.path.exists(ref)):
        raise DatalogError(f"{ref!r} is neither a shipped program ({', '.join(PROGRAMS)}) nor a .dl file")
    try:
        text = read_bytes(ref, MAX_PROGRAM_BYTES, "Datalog program").decode("utf-8")
    except OSError as e:
        raise DatalogError(f"cannot read program {ref}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise DatalogError(f"program {ref} is not UTF-8 text") from None
    return parse(text, os.path.relpath(ref) if not os.path.isabs(ref) else ref)


def load_graph(spec: str, seed: int = 0, undirected: bool = False) -> Graph:
    """An edge-list file, or a generator `KIND:ARGS` if no such file exists."""
    if os.path.exists(spec) or spec.split(":")[0] not in GENERATORS:
        return parse_edge_list(_edge_lines(spec), spec)
    return generate(spec, seed, undirected)


def _edge_lines(path: str) -> Iterator[str]:
    """The lines of an edge-list file, read as they are parsed (DatalogError if it cannot be read, is not text,
    has a line longer than MAX_EDGE_LINE or more than MAX_EDGE_LIST_BYTES)."""
    try:
        f = open_input(path)
    except OSError as e:
        raise DatalogError(f"cannot read edge list {path}: {e.strerror}") from None
    total = 0
    with f:
        for lineno, raw in enumerate(iter(lambda: f.readline(MAX_EDGE_LINE + 1), b""), 1):
            total += len(raw)
            if total > MAX_EDGE_LIST_BYTES:
                raise DatalogError(f"edge list {path} has more than the limit of {MAX_EDGE_LIST_BYTES:,} bytes")
            if len(raw) > MAX_EDGE_LINE:
                raise DatalogError(f"{path}:{lineno}: a line of more than {MAX_EDGE_LINE:,} bytes: not an edge")
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                raise DatalogError(f"edge list {path} is not text") from None
