"""Shared test helpers: run the CLI in-process and capture what it prints."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from checker.cli import main

MODELS = os.path.join(os.path.dirname(__file__), "models")


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
