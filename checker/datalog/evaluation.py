"""Evaluate a Datalog program with its PreM sites proved first: the library entry point behind
`lockstep datalog eval` and the workers."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from lockstep.specs.datalog.analysis import Analysed, analyse
from lockstep.specs.datalog.syntax import DatalogError

from .evaluate import NotPreM, Result, evaluate
from .files import load_program
from .kernels import kernels
from .prem import Verdict, prove


def prepare(ref: str, params: Mapping[str, int] | None = None) -> tuple[Analysed, list[Verdict]]:
    """Load, analyse and prove PreM for a program (a shipped name or a `.dl` file)."""
    prog = analyse(load_program(ref), params)
    return prog, prove(prog)


def refusal(prog: Analysed, verdicts: list[Verdict]) -> NotPreM | None:
    """The error that refuses evaluation if some site is not proved (None if all are)."""
    bad = [v for v in verdicts if not v.holds]
    if not bad:
        return None
    v = bad[0]
    lines = [f"{v.aggregate}: PreM {v.status} ({v.reason})"]
    lines += [f"    {k} = {x}" for k, x in v.counterexample.items()]
    rule = v.rule
    return NotPreM("\n  ".join([f"cannot push the aggregate into the recursion of {rule.head.pred}"] + lines),
                   rule.pos, prog.program.source, None,
                   "an aggregate inside a recursion is evaluated only where PreM holds; rewrite the rule, or move "
                   "the aggregate after the recursion (a later stratum)")


def evaluate_program(prog: Analysed, verdicts: list[Verdict], inputs: Mapping[str, np.ndarray],
                     max_iterations: int | None = None,
                     progress: Callable[[str, int, int], None] | None = None) -> Result:
    """The least model, after checking that every PreM site is proved (NotPreM otherwise); the innermost passes
    compiled where a C compiler is found (`kernels`)."""
    err = refusal(prog, verdicts)
    if err is not None:
        raise err
    return evaluate(prog, inputs, {v.site: True for v in verdicts}, max_iterations, progress, kernels())


__all__ = ["DatalogError", "evaluate_program", "prepare", "refusal"]
