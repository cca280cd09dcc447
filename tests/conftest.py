"""Shared test helpers: run the CLI in-process and capture what it prints."""

from __future__ import annotations

import importlib
import inspect
import os
from dataclasses import dataclass

import pytest

from lockstep.checker.cli import main
from lockstep.checker.loader import resolve
from lockstep.specs.lang import Spec
from lockstep.specs.registry import SPECS

MODELS = os.path.join(os.path.dirname(__file__), "models")
REFUSED_WHEN_BUILT = {"huge_keys.py:HugeKeys"}  # too large to build, by design: the input-limit tests' business
# Specs whose every-spec comparisons take minutes each (Autobahn: the vector compiler alone takes minutes on it;
# Raft: z3 and the scalar engine on its terms, 1.7 million states at the default bounds); in those comparisons they
# run with the slow tests, and their own tests check them at small bounds by default.
SLOW_EVERYWHERE_PREFIXES = ("autobahn", "raft")


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys):
    """cli("check", "two_phase", ...) -> Run(exit code, stdout, stderr)."""

    def run(*args: str) -> Run:
        code = main(list(args))
        cap = capsys.readouterr()
        return Run(code, cap.out, cap.err)

    return run


def model_path(name: str) -> str:
    return os.path.join(MODELS, name)


def typed_spec_refs() -> list:
    """Every typed spec: the registered ones written as Spec classes (not plain init/next specs), then every Spec
    class defined in tests/models as `tests/models/FILE.py:Class` (a module that fails to import is the loader
    tests' business)."""
    refs = []
    for ref in sorted(SPECS):
        obj, _ = resolve(ref)
        if inspect.isclass(obj) and issubclass(obj, Spec):
            refs.append(ref)
    for name in sorted(os.listdir(MODELS)):
        if not name.endswith(".py") or name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"tests.models.{name[:-3]}")
        except Exception:
            continue
        refs += [f"tests/models/{name}:{n}" for n, v in vars(module).items()
                 if inspect.isclass(v) and issubclass(v, Spec) and v.__module__ == module.__name__
                 and f"{name}:{n}" not in REFUSED_WHEN_BUILT]
    return [pytest.param(r, marks=pytest.mark.slow) if r.startswith(SLOW_EVERYWHERE_PREFIXES) else r for r in refs]
