"""The text listing of a trace, used by every command that prints one (`check`, `prove`, `replay`, ...).

Step 0 shows the whole initial state; each later step shows its action and what it changed,
element by element (`rm_state[1] = "prepared"  (was "working")`, `network: + Envelope(...)`).
`full=True` shows every whole state, changed fields marked. For actor specs a whole state is shown
per process, with only the local fields that process's handlers touch. A lasso ends with the
action that closes its loop. Colour (rich) is used only on a terminal.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from ..trace import Trace
from .notation import Notation, notation_of
from .values import NONE, Change, Node, change_text, diff, fmt, from_itf, key_text

INDENT = " " * 9


def nodes(values: dict[str, Any], notation: Notation) -> dict[str, Node]:
    """A state's ITF values (one per variable) as nodes, in the trace's order."""
    return {k: from_itf(v, notation.doms.get(k)) for k, v in values.items()}


def action_text(action: dict[str, Any] | None, fallback: str = "init", notation: Notation | None = None) -> Text:
    """A step's action in the spec's notation: `deliver(src=0, dst=1, msg=Prepare())`; with an actor spec's
    `notation`, a message is named by its type as in the states (`msg=Elect(uid=0)`, not `msg=(uid=0)`)."""
    message = notation.actors.system.message if notation is not None and notation.actors is not None else None
    t = Text()
    if not action:
        t.append(fallback, "bold blue")
        return t
    t.append(str(action.get("action", fallback)), "bold blue")
    args = action.get("args") or {}
    if isinstance(args, dict) and args:
        t.append("(")
        for i, (k, v) in enumerate(args.items()):
            if i:
                t.append(", ")
            t.append(f"{k}=")
            t.append_text(fmt(from_itf(v, message if k == "msg" else None)))
        t.append(")")
    return t


def state_lines(state: dict[str, Node], notation: Notation, changed: Iterable[str] = ()) -> list[Text]:
    """A whole state, one line per variable (actor specs: one line per process first); lines holding
    a changed variable (or a process's changed entry, `field[pid]`) are marked."""
    return [_marked(line, ch) for line, ch in state_rows(state, notation, changed)]


def state_rows(state: dict[str, Node], notation: Notation, changed: Iterable[str] = ()) -> list[tuple[Text, bool]]:
    """The lines of `state_lines`, unindented, each with whether it holds a change."""
    marks = set(changed)
    out: list[tuple[Text, bool]] = []
    rest = dict(state)
    lay = notation.actors
    if lay is not None:
        per = {f: dict(state[f].items) for f in lay.local_fields if f in state and state[f].kind == "map"}
        for f in per:
            rest.pop(f, None)
        for p in lay.pids:
            key = from_itf(p)
            line = Text(f"process {p}" + (" (Byzantine)" if p in lay.byzantine else ""), "bold")
            line.append("  ")
            shown = [f for f in lay.owned.get(p, []) if f in per]
            for i, f in enumerate(shown):
                if i:
                    line.append(", ")
                line.append(f"{f} = ")
                line.append_text(fmt(per[f].get(key, NONE)))
            if not shown:
                line.append("(no local state)", "dim")
            out.append((line, any(f"{f}[{key_text(key)}]" in marks for f in shown)))
    for k, v in rest.items():
        line = Text(f"{k} = ")
        line.append_text(fmt(v))
        out.append((line, k in marks))
    return out


def model_state_lines(model: Any, state: Any) -> list[Text]:
    """A model state, whole, as `state_lines` shows it (`model` a `lockstep.checker.model.Model`)."""
    from .notation import notation_of

    notation = notation_of(model)
    return state_lines(nodes(model.encode_state(state), notation), notation)


def _marked(line: Text, changed: bool) -> Text:
    t = Text(INDENT[:-2])
    t.append("* " if changed else "  ", "bold yellow")
    t.append_text(line)
    return t


def step_lines(i: int, action: dict[str, Any] | None, prev: dict[str, Node] | None, cur: dict[str, Node],
               notation: Notation, full: bool = False, loop_here: bool = False, fallback: str = "init") -> list[Text]:
    """One step: its number and action, then what changed (or the whole state)."""
    head = Text(f"  {i:>3}  ", "dim")
    head.append_text(action_text(action, fallback, notation))
    if loop_here:
        head.append("  <- loop starts here", "bold magenta")
    out = [head]
    if prev is None:
        return out + state_lines(cur, notation)
    changes = changes_of(prev, cur)
    if full:
        return out + state_lines(cur, notation, changed_marks(prev, cur, changes))
    if not changes:
        out.append(Text(INDENT + "(no change)", "dim"))
    out.extend(Text(INDENT) + change_text(c) for c in changes)
    return out


def changes_of(prev: dict[str, Node], cur: dict[str, Node]) -> list[Change]:
    """Every per-element change from state `prev` to state `cur`."""
    return [c for k, v in cur.items() for c in diff(k, prev.get(k, v), v)]


def changed_marks(prev: dict[str, Node], cur: dict[str, Node], changes: list[Change]) -> set[str]:
    """The variables and first map entries (`field[pid]`) that `changes` touch, for `state_lines`."""
    return ({c.path.split(".")[0] for c in changes} | {k for k in cur if k in prev and prev[k] != cur[k]}
            | {_entry(c.path) for c in changes})


def _entry(path: str) -> str:
    """`rm_state[1]` of a change at `rm_state[1].x` or `rm_state[1][2]`: the first map entry of the path."""
    cut = path.find("]")
    return path[:cut + 1] if cut >= 0 else path


def trace_lines(trace: Trace, notation: Notation, full: bool = False) -> list[Text]:
    """The whole listing of a trace, with the lasso's closing step."""
    out: list[Text] = []
    prev: dict[str, Node] | None = None
    for i, s in enumerate(trace.steps):
        cur = nodes(s.state, notation)
        out += step_lines(i, s.action, prev, cur, notation, full, trace.loop == i,
                          "start" if i == 0 and (trace.property or {}).get("kind") == "induction" else "init")
        prev = cur
    out += lasso_lines(trace, notation)
    return out


def lasso_lines(trace: Trace, notation: Notation | None = None) -> list[Text]:
    """How a lasso goes on for ever: it stutters in its last state, or an action leads back to the loop's start."""
    if trace.loop is None:
        return []
    last = len(trace.steps) - 1
    action = trace.loop_action if isinstance(trace.loop_action, dict) else None  # else "stutter", or not recorded
    if trace.loop == last and action is None:
        return [Text(f"  {'':>3}  (stutters in state {last} for ever)", "magenta")]
    t = Text(f"  {'->':>3}  ", "bold magenta")
    if action:
        t.append_text(action_text(action, notation=notation))
        t.append("  ")
    t.append(f"(back to state {trace.loop}; the loop repeats for ever)", "magenta")
    return [t]


class PipeConsole(Console):
    """A rich console whose closed pipe is an ordinary `BrokenPipeError` (rich's own exits the process with
    status 1, which would read as a verdict or as a spec that called sys.exit)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def console(file: TextIO | None = None) -> Console:
    """A console that colours only a terminal (and honours NO_COLOR), and never wraps lines."""
    return PipeConsole(file=file or sys.stdout, highlight=False, soft_wrap=True, emoji=False)


def printer(file: TextIO | None = None) -> Callable[[Any], None]:
    """A `say` function printing text (rich Text or str) to `file` (default: standard output)."""
    c = console(file)

    def say(line: Any) -> None:
        c.print(line if isinstance(line, Text) else Text(str(line)))

    return say


def plain_listing(trace: Trace, model: Any = None, full: bool = False) -> str:
    """A trace's listing as plain text, for messages (assertions, exceptions) rather than a terminal."""
    return "\n".join(line.plain for line in trace_lines(trace, notation_of(model), full))
