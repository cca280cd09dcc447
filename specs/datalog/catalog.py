"""The shipped Datalog programs, by name (program files are read by `lockstep.checker.datalog.files`)."""

from __future__ import annotations

import os

from .syntax import DatalogError, Program

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")

PROGRAMS: dict[str, str] = {
    "sssp": "single-source shortest paths (min, linear)",
    "cc": "connected components (min, linear)",
    "reach": "reachability from a source (no aggregate)",
    "apsp": "all-pairs shortest paths (min, non-linear)",
    "quiet": "a count threshold that is not PreM (refused)",
}


def program_path(name: str) -> str:
    return os.path.join(HERE, f"{name}.dl")


def program_text(name: str) -> str:
    with open(program_path(name), encoding="utf-8") as f:
        return f.read()


def is_program_ref(ref: str) -> bool:
    """Whether `ref` names a shipped program or a `.dl` file."""
    return ref in PROGRAMS or ref.endswith(".dl")


def load(name: str) -> Program:
    """A shipped program, by name."""
    from .parser import parse  # lark: imported when a program is read, not when a name is looked up

    if name not in PROGRAMS:
        raise DatalogError(f"{name!r} is not a shipped program ({', '.join(PROGRAMS)})")
    return parse(program_text(name), f"{name}.dl")
