"""Coverage: how often each action (for actor specs, each delivery per message tag and each timer) was
enabled and taken, and which were never enabled — the sign of a spec that checks less than it seems."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from .errors import UsageError
from .model import Model
from .safeio import replacing


def action_key(model: Model, lid: Any) -> str:
    """The coverage entry a step belongs to: its action, and for an actor delivery the message's tag."""
    label = model.label_json(lid)
    action = str(label.get("action", model.label(lid)))
    args = label.get("args", {})
    if action == "deliver" and isinstance(args.get("msg"), dict) and "tag" in args["msg"]:
        return f"deliver {args['msg']['tag']}"
    if action == "timeout" and isinstance(args.get("timer"), str):
        return f"timeout {args['timer']}"
    return action


def declared_keys(model: Model) -> list[str]:
    """Every coverage entry the spec declares (typed specs: one per traced transition; plain specs: none known)."""
    prog = getattr(model, "prog", None)
    if prog is None:
        return []
    return sorted({action_key(model, lid) for lid in range(len(prog.transitions))})


class Coverage:
    """Enabled and taken counts per step label, folded into coverage entries when reported."""

    def __init__(self) -> None:
        self.enabled: Counter = Counter()
        self.taken: Counter = Counter()

    def merge(self, other: Coverage) -> None:
        self.enabled.update(other.enabled)
        self.taken.update(other.taken)

    def table(self, model: Model) -> dict[str, dict[str, int]]:
        """{entry: {"enabled": n, "taken": n}}, every declared entry included."""
        out: dict[str, dict[str, int]] = {k: {"enabled": 0, "taken": 0} for k in declared_keys(model)}
        keys: dict[Any, str] = {}
        for counter, field in ((self.enabled, "enabled"), (self.taken, "taken")):
            for lid, n in counter.items():
                key = keys.get(lid)
                if key is None:
                    key = keys[lid] = action_key(model, lid)
                out.setdefault(key, {"enabled": 0, "taken": 0})[field] += n
        return dict(sorted(out.items()))

    def never_enabled(self, model: Model) -> list[str]:
        """The entries no explored state enabled."""
        return [k for k, v in self.table(model).items() if not v["enabled"]]

    def warning(self, model: Model, exhaustive: bool) -> str | None:
        """One warning naming every entry never enabled (None if there is none): after a search of every reachable
        state (`exhaustive`) a vacuous guard; after walks or a bounded search, maybe only states not reached."""
        never = self.never_enabled(model)
        if not never:
            return None
        what = f"action {never[0]} was" if len(never) == 1 else f"{len(never)} actions were"
        names = "" if len(never) == 1 else f": {', '.join(never)}"
        why = ("in any reachable state (a vacuous guard?)" if exhaustive
               else "in the states explored (a vacuous guard, or states not reached: a search without bounds, or "
                    "more or longer walks, may enable them)")
        return f"{what} never enabled {why}{names}"

    def print(self, model: Model, exhaustive: bool) -> None:
        """The table of enabled and taken counts, then one warning for the entries never enabled."""
        rows = self.table(model)
        if not rows:
            return
        width = max(len(k) for k in rows)
        print("  coverage (enabled / taken):")
        for k, v in rows.items():
            print(f"    {k:<{width}}  {v['enabled']:>12,}  {v['taken']:>12,}")
        if (warning := self.warning(model, exhaustive)) is not None:
            print(f"  warning: {warning}")

    def count_enabled(self, model: Model) -> None:
        """Make `model`'s successor function count each enabled step (an exhaustive search takes every one), and
        its searches use that function rather than a compiled expander."""
        successors, enabled = model.successors, self.enabled

        def counted(st: Any) -> list[tuple[Any, Any]]:
            out = successors(st)
            for lid, _t in out:
                enabled[lid] += 1
            return out

        model.successors = counted  # type: ignore[method-assign]
        model.level_expander = None  # type: ignore[attr-defined]
        self.taken = enabled

    def save(self, model: Model, path: str, **extra: Any) -> None:
        data = {"spec": model.name, "params": model.params, **extra, "actions": self.table(model),
                "never_enabled": self.never_enabled(model)}
        try:
            with replacing(path) as f:
                json.dump(data, f, indent=2, default=str)
                f.write("\n")
        except OSError as e:
            raise UsageError(f"cannot write the coverage file {path}: {e.strerror}") from None
