"""One exploration: a path of states through a spec, the steps enabled at its end, and optionally a
saved trace (a counterexample) to follow.

Everything the browser shows comes from `view()`, in the same notation as the text traces and
with the same sequence chart as `lockstep draw` for actor specs.
"""

from __future__ import annotations

from typing import Any

from ..model import Model
from ..render.notation import notation_of
from ..render.text import action_text, changed_marks, changes_of, nodes, state_lines, state_rows
from ..render.values import change_text
from ..trace import Trace, TraceError

MAX_ACTIONS = 2000  # enabled steps listed at one state
MAX_INITIAL = 2000  # initial states offered


class ExploreError(ValueError):
    """A request that does not fit the exploration (a step that is not enabled, an index out of range)."""


class Session:
    """The explorer's state: `path` is [(label id or None, state), ...] from an initial state."""

    def __init__(self, model: Model, trace: Trace | None = None):
        self.model = model
        self.notation = notation_of(model)
        self.inits = model.initial_states()[:MAX_INITIAL]
        if not self.inits:
            raise TraceError(f"spec {model.name} has no initial state")
        self.trace = trace
        self.followed = self._walk(trace) if trace is not None else None
        self.path: list[tuple[Any, Any]] = []
        self.reset()

    # -- the saved trace -------------------------------------------------------------------------
    def _walk(self, trace: Trace) -> list[tuple[Any, Any]]:
        """The trace's steps as (label id, state) of this model; TraceError at the first that does not fit."""
        m = self.model
        if sorted(trace.vars) != sorted(m.vars):
            raise TraceError(f"the trace's variables ({', '.join(trace.vars)}) are not spec {m.name}'s")
        first = next((s for s in m.initial_states() if m.encode_state(s) == trace.steps[0].state), None)
        if first is None:
            raise TraceError(f"step 0 of the trace is not an initial state of {m.name} {m.params}")
        out = [(None, first)]
        for i, step in enumerate(trace.steps[1:], start=1):
            hit = next(((lid, t) for lid, t in m.successors(out[-1][1])
                        if m.label_json(lid) == step.action and m.encode_state(t) == step.state), None)
            if hit is None:
                raise TraceError(f"step {i} of the trace ({action_text(step.action).plain}) is not a step of "
                                 f"{m.name} {m.params}")
            out.append(hit)
        return out

    # -- moves -----------------------------------------------------------------------------------
    def reset(self) -> None:
        self.path = [(None, self.inits[0])] if len(self.inits) == 1 else []

    def options(self) -> list[tuple[Any, Any]]:
        """What can come next: the enabled steps, or the initial states when the path is empty."""
        if not self.path:
            return [(None, s) for s in self.inits]
        return list(self.model.successors(self.path[-1][1]))[:MAX_ACTIONS]

    def step(self, k: int) -> None:
        try:
            opts = self.options()
        except Exception:
            raise ExploreError("no step is possible here: " + self.model.diagnose(self.path[-1][1]).describe()) from None
        if not 0 <= k < len(opts):
            raise ExploreError(f"there is no step {k} here ({len(opts)} enabled)")
        self.path.append(opts[k])

    def back(self) -> None:
        if len(self.path) > (1 if len(self.inits) == 1 else 0):
            self.path.pop()

    def goto(self, i: int) -> None:
        """Cut the path back to its step `i`."""
        if not 0 <= i < len(self.path):
            raise ExploreError(f"the path has no step {i}")
        del self.path[i + 1:]

    def follow(self, i: int) -> None:
        """Jump to step `i` of the saved trace."""
        if self.followed is None:
            raise ExploreError("no trace was loaded (lockstep explore SPEC --trace FILE)")
        if not 0 <= i < len(self.followed):
            raise ExploreError(f"the trace has no step {i} (it has {len(self.followed) - 1} steps)")
        self.path = list(self.followed[:i + 1])

    # -- what the page shows ---------------------------------------------------------------------
    def view(self) -> dict[str, Any]:
        m = self.model
        out: dict[str, Any] = {"spec": m.name, "params": m.params, "step": len(self.path) - 1,
                               "path": [self._label(i) for i in range(len(self.path))]}
        failure = None
        try:
            opts = self.options()
        except Exception:
            opts, failure = [], m.diagnose(self.path[-1][1]).describe()
        out["choosing_initial"] = not self.path
        out["actions"] = [{"index": k, "label": self._option_label(lid, k)} for k, (lid, _) in enumerate(opts)]
        out["failure"] = failure
        out["deadlock"] = bool(self.path) and failure is None and not opts
        out["trace"] = self._trace_view()
        if not self.path:
            out.update(state=[], changes=[], invariants=[], chart=None)
            return out
        st = self.path[-1][1]
        cur = nodes(m.encode_state(st), self.notation)
        prev = nodes(m.encode_state(self.path[-2][1]), self.notation) if len(self.path) > 1 else None
        changes = changes_of(prev, cur) if prev is not None else []
        marks = changed_marks(prev, cur, changes) if prev is not None else set()
        out["state"] = [{"text": t.plain, "changed": ch} for t, ch in state_rows(cur, self.notation, marks)]
        out["changes"] = [change_text(c).plain for c in changes]
        out["invariants"] = [{"name": n, "holds": m.invariant_holds(n, st)} for n in m.invariant_names]
        out["chart"] = self._chart()
        return out

    def _label(self, i: int) -> str:
        lid = self.path[i][0]
        return "init" if lid is None else action_text(self.model.label_json(lid)).plain

    def _option_label(self, lid: Any, k: int) -> str:
        if lid is not None:
            return action_text(self.model.label_json(lid)).plain
        text = ", ".join(t.plain.strip() for t in state_lines(nodes(self.model.encode_state(self.inits[k]),
                                                                          self.notation), self.notation))
        return f"initial state {k}: {text}"

    def _trace_view(self) -> dict[str, Any] | None:
        if self.followed is None or self.trace is None:
            return None
        n = len(self.followed)
        on = len(self.path) <= n and all(self.path[i][1] == self.followed[i][1] for i in range(len(self.path)))
        steps = [action_text(s.action).plain if s.action else "init" for s in self.trace.steps]
        return {"length": n - 1, "position": len(self.path) - 1 if on and self.path else None, "steps": steps,
                "loop": self.trace.loop, "property": self.trace.property, "message": self.trace.message}

    def _chart(self) -> str | None:
        from lockstep.specs.lang.actors import ActorProgram

        if not isinstance(getattr(self.model, "prog", None), ActorProgram):
            return None
        from ..render.chart import chart_of_trace
        from ..render.svg import svg

        st = self.path[-1][1]
        bad = self.model.violated(st)
        prop = {"kind": "invariant", "name": self.model.invariant_names[bad]} if bad >= 0 else {}
        trace = Trace.from_states(self.model, self.path, property=prop)
        return svg(chart_of_trace(trace, self.model), standalone=False)  # type: ignore[arg-type]
