"""A verdict as text: what was found, the window that explains a violation, how far an unfinished search got."""

from __future__ import annotations

from .history import Operation
from .search import OpenPart, Verdict

SHOWN = 10  # open parts listed at most


def verdict_lines(v: Verdict) -> list[str]:
    """The verdict's lines, as `lockstep linearizable` prints them."""
    if v.verdict == "linearizable":
        return [f"Linearizable ({v.seconds:.2f} s, {v.steps:,} search steps, {v.engine} search)."]
    if v.verdict == "unknown":
        out = [f"Unknown: {v.note} ({v.seconds:.2f} s). Give more time with --budget."]
        for part in v.open[:SHOWN]:
            out.append(_open_line(part))
        if len(v.open) > SHOWN:
            out.append(f"  ... and {len(v.open) - SHOWN} more part(s) still open")
        return out
    key = f" (key {v.failing_key!r})" if v.failing_key is not None else ""
    out = [f"Not linearizable{key} ({v.seconds:.2f} s).",
           f"Shortest illegal prefix: {len(v.prefix)} operations, made illegal by the completion of",
           f"  {v.last.describe()}   [{v.last.where}]" if v.last else "  (not found)"]
    how = "that cannot be linearized together" if v.minimal else "that cannot be linearized together (not fully minimised)"
    out.append(f"Window: {len(v.window)} operation(s) of that prefix {how}, however its other operations went (each "
               "may or may not have taken effect, between its invocation and its completion; reads left out); in "
               "invocation order, ? = outcome unknown:")
    out += [f"  {op.describe():50s} [{op.where}]" for op in v.window]
    if v.note:
        out.append(f"  note: {v.note}")
    return out


def _open_line(part: OpenPart) -> str:
    key = f"key {part.key!r}: " if part.key is not None else ""
    if not part.linearized:
        return f"  still open: {key}{part.operations:,} operations, no prefix linearized yet"
    return (f"  still open: {key}{part.operations:,} operations; the longest prefix found linearizable ends at "
            f"{_short(part.until)}: every operation invoked before it is among the {len(part.linearized):,} "
            "linearized, in the order of operations " + _order(part.linearized))


def _short(op: Operation | None) -> str:
    return "its start" if op is None else f"{op.where} ({op.describe()})"


def _order(ops: list[Operation]) -> str:
    ids = [str(op.id) for op in ops]
    return " ".join(ids) if len(ids) <= 12 else " ".join(ids[:6]) + " ... " + " ".join(ids[-6:])
