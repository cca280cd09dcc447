"""What the commands share: spec arguments, integer options, loading a typed spec, printing a verdict."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import UsageError
from ..loader import LoadError, load_model
from ..model import Model
from ..result import CheckResult, Violation
from ..safeio import check_output, open_input
from ..safeio import write_text as safe_write_text
from ..trace import Trace, TraceError, follow_up, trusted_spec
from ..typed_model import TypedModel


def _at_least(minimum: int, what: str):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{v} is {what}")
        return v

    return parse


positive = _at_least(1, "not positive")
natural = _at_least(0, "negative")


def output_file(text: str) -> str:
    """A file the command will write: refused now (not after the work) if it is a directory, cannot be written,
    or is a symbolic link or special file of another user (`safeio.check_output`)."""
    if not text or text.endswith("/"):
        raise argparse.ArgumentTypeError(f"{text!r} names a directory; name a file to write")
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"cannot write {text}: directory {parent} does not exist")
    try:
        check_output(text)
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot write {text}: {e.strerror}") from None
    return text


def add_spec_arguments(p: argparse.ArgumentParser) -> None:
    """SPEC and --param, shared by the commands that load a spec."""
    p.add_argument("spec", metavar="SPEC", help="a registered name (see `lockstep list`), module:Object, or file.py[:Object]")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="set a spec parameter (repeatable), e.g. --param rm=5")


def trace_spec(ref: str, given: str | None) -> str:
    """The spec to read a trace file with: the one the user names, or the trace's own if it is a registered name
    (a trace file never chooses what code runs; see `trusted_spec`)."""
    return trusted_spec(ref, given, "the trace")


def read_trace_file(path: str):
    """A counterexample or simulation (ITF JSON, a `Trace`) or a merged run trace (JSON lines, a `MergedRun`)."""
    from ..validation.runtrace import load

    try:
        with open_input(path) as f:
            head = f.read(4096).decode("utf-8", errors="replace")
    except OSError as e:
        raise TraceError(f"cannot read trace {path}: {e.strerror}") from None
    first = head.lstrip().split("\n", 1)[0]
    try:
        run_header = json.loads(first).get("kind") == "run"
    except (json.JSONDecodeError, AttributeError):
        run_header = False
    return load(path) if run_header else Trace.load(path)


def typed_for_pictures(model: Model) -> TypedModel:
    """The model of a trace to draw or export: plain specs have no processes to picture."""
    if not isinstance(model, TypedModel):
        raise TraceError(f"spec {model.name} is a plain spec: only actor and rounds specs have pictures "
                         "(for a state graph: lockstep check SPEC --dump-graph FILE.dot)")
    return model


def write_text(path: str, text: str) -> None:
    """Write an output file, or a usage error that says why it cannot be written."""
    try:
        safe_write_text(path, text)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from None


def load_typed(ref: str, params: dict[str, int], what: str, invariants: list[str] | None = None):
    """The typed model named by `ref`; plain specs (init/next) are refused with a clear message."""
    model = load_model(ref, params, invariants=invariants)
    if not isinstance(model, TypedModel):
        raise LoadError(f"{model.name} is a plain spec (init/next): {what} needs a typed spec, a Spec subclass "
                        "whose actions the symbolic interpreter can read")
    return model


def add_full_argument(p: argparse.ArgumentParser) -> None:
    """--full, shared by the commands that print traces."""
    p.add_argument("--full", action="store_true", help="print whole states at every step, not only what changed")


def print_trace(trace: Trace, model: Model | None = None, full: bool = False) -> None:
    """Print a trace's listing (per-element changes; colour on a terminal)."""
    from ..render.notation import notation_of
    from ..render.text import printer, trace_lines

    sys.stdout.flush()
    say = printer()
    for line in trace_lines(trace, notation_of(model), full):
        say(line)


def print_violation(v: Violation, out: str | None, model: Model | None = None, full: bool = False) -> None:
    """Print a violation and its counterexample (a lasso: where it loops and how) and save it."""
    print("\n" + "\n".join(v.heading()))
    print_trace(v.trace, model, full)
    if out:
        v.trace.save(out)
        print(f"Trace written to {out} (replay it: {follow_up('replay', out, v.trace.spec)})")


def print_several(violations: list[Violation], out: str | None, model: Model | None = None, full: bool = False) -> None:
    """Print the violations of a search that went on past the first (`--max-violations`), each saved to its own file
    (`--out cex.json`: cex-1.json, cex-2.json, ...)."""
    from ..counterexample import numbered_file

    n = len(violations)
    print(f"\n{n} distinct violation{'s' if n != 1 else ''} (by property and last action), in the order found:")
    for i, v in enumerate(violations, start=1):
        print(f"\n[{i} of {n}]", end="")
        print_violation(v, numbered_file(out, i) if out else None, model, full)


def depth_text(depth: int) -> str:
    """A depth as every command prints it: TLC's count of states (an initial state at depth 1), then in steps."""
    steps = max(depth - 1, 0)
    return f"depth {depth} ({steps} step{'s' if steps != 1 else ''})"


def report(res: CheckResult, out: str | None, model: Model | None = None, full: bool = False) -> None:
    """Print a check's outcome (and save its counterexample, or its several ones)."""
    v = res.violation
    if res.violations:
        print_several(res.violations, out, model, full)
    elif v is not None:
        print_violation(v, out, model, full)
    elif res.verdict == "inconclusive":
        print(f"\nInconclusive: {res.cut}; no violation among the states explored.")
    elif res.bitstate_omitted is not None:
        print(f"\nNo violation among the states explored (bitstate: about {res.bitstate_omitted:.3g} states expected "
              "to be omitted).")
    else:
        print("\nNo violation: all reachable states explored.")
    rate = res.distinct / res.seconds if res.seconds > 0 else 0.0
    res.settle_depth()
    print(f"  {res.distinct:,} distinct states, {res.generated:,} generated, {depth_text(res.depth)}, "
          f"{res.seconds:.2f} s ({rate:,.0f} distinct states/s)")
    if res.queued:
        print(f"  {res.queued:,} state{'' if res.queued == 1 else 's'} left unexplored")
    for note in res.notes:
        print(f"  {note}")
    if res.fingerprinted:
        print(f"  fingerprint collision probability (optimistic, as TLC): {res.collision_probability:.1e}")
    sys.stdout.flush()
