"""Fault schedules: when to kill (SIGKILL), restart, pause (SIGSTOP) and resume (SIGCONT) which node.

A schedule is a preset — `none`, `kill`, `pause`, `mixed`, `stale` — whose times are fractions of the run,
or a list `ACTION:TARGET@SECONDS,...` with ACTION one of kill, restart, pause, resume and TARGET a node
number, `leader` or `follower` (chosen when the fault strikes: the system's leader then, or a node that is
not). A restart or resume naming `leader` or `follower` undoes the last kill or pause that named it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ACTIONS = ("kill", "restart", "pause", "resume")
UNDO = {"restart": "kill", "resume": "pause"}

# fractions of the run: (action, target, when)
PRESETS: dict[str, list[tuple[str, str, float]]] = {
    "none": [],
    "kill": [("kill", "follower", 0.25), ("restart", "follower", 0.5)],
    "pause": [("pause", "leader", 0.25), ("resume", "leader", 0.5)],
    "mixed": [("kill", "follower", 0.15), ("restart", "follower", 0.35), ("pause", "leader", 0.5),
              ("resume", "leader", 0.7)],
    # a follower paused and resumed again and again: it serves reads from its own state as soon as it wakes
    "stale": [(a, "follower", t) for k in range(4) for a, t in (("pause", 0.1 + 0.2 * k), ("resume", 0.2 + 0.2 * k))],
}

_ITEM = re.compile(r"^(kill|restart|pause|resume):(leader|follower|\d+)@(\d+(?:\.\d+)?)$")


class ScheduleError(ValueError):
    """A schedule that cannot be used; the message says why and how to write one."""


@dataclass(frozen=True)
class Fault:
    """One fault: `action` on `target` at `at` seconds after the clients start."""

    at: float
    action: str
    target: str

    def describe(self) -> str:
        return f"{self.action} {self.target} at {self.at:.2f} s"


def parse_schedule(text: str, duration: float, nodes: int) -> list[Fault]:
    """The faults of a preset or a list (see the module docstring), in time order, checked against `nodes` nodes
    and a run of `duration` seconds: every restart follows a kill of its target, every resume a pause."""
    if text in PRESETS:
        faults = [Fault(round(duration * when, 3), action, target) for action, target, when in PRESETS[text]]
    else:
        faults = []
        for item in (x.strip() for x in text.split(",") if x.strip()):
            m = _ITEM.match(item)
            if not m:
                raise ScheduleError(f"fault {item!r} is not ACTION:TARGET@SECONDS (ACTION: {', '.join(ACTIONS)}; "
                                    f"TARGET: leader, follower or a node 0..{nodes - 1}), nor is {text!r} one of "
                                    f"the presets {', '.join(PRESETS)}")
            action, target, at = m.group(1), m.group(2), float(m.group(3))
            if target.isdigit() and int(target) >= nodes:
                raise ScheduleError(f"fault {item!r}: there are nodes 0..{nodes - 1}")
            if at > duration:
                raise ScheduleError(f"fault {item!r} comes after the end of the run ({duration:g} s)")
            faults.append(Fault(at, action, target))
    faults.sort(key=lambda f: f.at)
    down: dict[str, str] = {}  # target -> "kill" | "pause", for faults not yet undone
    for f in faults:
        if f.action in UNDO:
            if down.get(f.target) != UNDO[f.action]:
                raise ScheduleError(f"{f.describe()}: no {UNDO[f.action]} of {f.target} before it to undo")
            del down[f.target]
        elif f.target in down:
            raise ScheduleError(f"{f.describe()}: {f.target} is already {'killed' if down[f.target] == 'kill' else 'paused'}")
        else:
            down[f.target] = f.action
    return faults
