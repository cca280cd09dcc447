"""Refinement mappings: from implementation events to spec steps, and from logged variables to spec variables.

A mapping is a Python module the user names (`--map MAPPING.py`; a log never chooses code). For each
action name in the logs it has a function of the event — `EVENTS = {"append_entries": fn}`, or a module
function of that name — returning the spec steps the event stands for: one `step(action, **args)`, a list
of them (an event that stands for several steps), or None (no spec step: the event only logs variables);
an action the mapping has no function for is the spec action of that name, with the logged arguments.
An argument may be `ANY` (every value the spec allows is tried). `step(..., optional=True)` may be taken
or not, `step(..., repeat=K)` 0 to K times, `one_of(step(...), step(...))` is exactly one of them. Optional module attributes:

- `INTERNAL`: the spec actions that may run unlogged between two logged events (at most `--max-internal`
  of them; default: every action of the spec);
- `node(raw) -> value`: the spec's id of a node (default: the node id itself, a number if it is one);
- `variables(event) -> {"name[key]...": value}`: the spec variables the event's logged values are
  (default: a logged variable `x` of node `n` is the spec's `x[n]` if `x` is a map over nodes, else `x`).

A mapping function sees each node's events once, in the node's order, so a mapping may keep state per node
in its module (the search that tries other orders of the events loads the module anew). Without a mapping,
an event's action and arguments are the spec's own; for actor specs, the events of
Lockstep's actor runtime (`start`, `message` with `src` and `msg`, `timeout` with `timer`, `choice`) map
to the spec's deliveries and timeouts, with the process's local fields as its variables.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from lockstep.specs.lang.jsonvalues import from_json
from lockstep.specs.lang.types import Domain, MapDomain, RecordValue

from ...errors import TraceError, UsageError
from ...safeio import code_file
from .schema import Event


class _Any:
    def __repr__(self) -> str:
        return "ANY"


ANY: Any = _Any()
"""An argument left to the search: every value of its domain is tried."""


@dataclass(frozen=True)
class Step:
    """A spec step an event stands for."""

    action: str
    args: tuple[tuple[str, Any], ...]
    optional: bool = False
    repeat: int = 1  # taken 0..repeat times when > 1 (or optional), exactly once otherwise
    choices: tuple[Step, ...] = ()  # `one_of`: exactly one of these steps

    def label(self) -> str:
        if self.choices:
            return " or ".join(c.label() for c in self.choices)
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args)
        return f"{self.action}({inner})"


def step(action: str, *, optional: bool = False, repeat: int = 1, **args: Any) -> Step:
    """The spec step `action` with these arguments (`ANY` for an argument to search over)."""
    if not isinstance(action, str) or not action:
        raise TypeError("step(action, ...): the action is the spec action's name")
    if not isinstance(repeat, int) or repeat < 1:
        raise TypeError("step(..., repeat=K): K is a positive integer")
    return Step(action, tuple(args.items()), optional or repeat > 1, repeat)


def one_of(*steps: Step, optional: bool = False) -> Step:
    """Exactly one of `steps` (or none, with `optional=True`): for an event the log cannot tell apart."""
    if not steps or not all(isinstance(x, Step) and not x.optional and x.repeat == 1 for x in steps):
        raise TypeError("one_of(step(...), step(...), ...): plain steps, at least one")
    return Step("|", (), optional, 1, tuple(steps))


class MappingError(UsageError):
    """The mapping cannot be used (it fails, names an unknown action or variable, returns something else)."""


_PATH = re.compile(r"^([A-Za-z_][A-Za-z_0-9]*)((?:\[[^\[\]]*\])*)$")


@dataclass
class Mapping:
    """A loaded mapping (a user's module, or the default one)."""

    name: str
    events: dict[str, Callable[[Event], Any]] = field(default_factory=dict)
    module: ModuleType | None = None
    internal: list[str] | None = None
    node_fn: Callable[[Any], Any] | None = None
    variables_fn: Callable[[Event], Any] | None = None
    actors: bool = False  # the default mapping of an actor spec

    def steps(self, e: Event) -> list[Step]:
        """The spec steps event `e` stands for."""
        if self.actors:
            return actor_steps(e, self)
        fn = self.events.get(e.action)
        if fn is None and self.module is not None and e.action.isidentifier() and not e.action.startswith("_") \
                and e.action not in ("node", "variables", "step"):
            fn = getattr(self.module, e.action, None)
            if callable(fn):
                self.events[e.action] = fn
            else:
                fn = None
        if fn is None:
            args = tuple((k, v) for k, v in e.args.items())
            return [Step(e.action, args)]
        try:
            out = fn(e)
        except Exception as x:
            raise MappingError(f"{e.where}: the mapping's function for {e.action!r} failed: {type(x).__name__}: {x}") from None
        return _steps(out, e, self.name)

    def node(self, e: Event) -> Any:
        """The spec's id of the event's node."""
        if self.node_fn is not None:
            try:
                return self.node_fn(e.raw_node)
            except Exception as x:
                raise MappingError(f"{e.where}: the mapping's node() failed on {e.raw_node!r}: {x}") from None
        return int(e.node) if e.node.isdigit() else e.raw_node

    def variables(self, e: Event) -> dict[Any, Any]:
        """The spec variables (paths) the event's logged values are, with those values."""
        if self.variables_fn is not None:
            try:
                out = self.variables_fn(e)
            except Exception as x:
                raise MappingError(f"{e.where}: the mapping's variables() failed: {type(x).__name__}: {x}") from None
            if not isinstance(out, dict):
                raise MappingError(f"{e.where}: the mapping's variables() returned {type(out).__name__}, not a dict")
            return out
        return {(name, _NODE): v for name, v in e.vars.items()}


_NODE: Any = object()  # a path's key "the event's node, if the field is a map over nodes"


def _steps(out: Any, e: Event, name: str) -> list[Step]:
    if out is None:
        return []
    if isinstance(out, Step):
        return [out]
    if isinstance(out, (list, tuple)) and all(isinstance(s, Step) for s in out):
        return list(out)
    raise MappingError(f"{e.where}: the mapping {name}'s function for {e.action!r} returned {out!r}: return step(...), "
                       "a list of them, or None")


def load_mapping(path: str | None, actors: bool) -> Mapping:
    """The mapping in the Python file `path` (the user's own code), or the default mapping."""
    if path is None:
        return Mapping("(default)", actors=actors)
    if not path.endswith(".py") or not os.path.isfile(path):
        raise UsageError(f"--map {path}: not a Python file (give the path of a mapping module, e.g. mapping.py)")
    try:
        real = code_file(path, "mapping")
    except OSError as e:
        raise UsageError(f"--map {path}: {e}") from None
    name = "lockstep_mapping_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, real)
    if spec is None or spec.loader is None:
        raise UsageError(f"--map {path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as x:
        raise MappingError(f"--map {path}: the mapping fails to load: {type(x).__name__}: {x}") from None
    events = getattr(module, "EVENTS", {})
    internal = getattr(module, "INTERNAL", None)
    if not isinstance(events, dict) or not all(callable(f) for f in events.values()):
        raise MappingError(f"--map {path}: EVENTS must map action names to functions")
    if internal is not None and not (isinstance(internal, (list, tuple)) and all(isinstance(a, str) for a in internal)):
        raise MappingError(f"--map {path}: INTERNAL must list spec action names")
    node_fn, variables_fn = getattr(module, "node", None), getattr(module, "variables", None)
    return Mapping(path, dict(events), module, list(internal) if internal is not None else None,
                   node_fn if callable(node_fn) else None, variables_fn if callable(variables_fn) else None)


def parse_path(key: Any, where: str) -> tuple:
    """A variable path: `("x", k1, ...)` as given, or parsed from the text `"x[k1][k2]"` (keys are JSON
    values or bare words)."""
    if isinstance(key, tuple):
        return key
    if not isinstance(key, str):
        raise MappingError(f"{where}: variable {key!r}: give a name such as \"currentTerm[1]\" or a tuple")
    m = _PATH.match(key.replace(" ", ""))
    if m is None:
        raise MappingError(f"{where}: variable {key!r} is not of the form name[key][key]...")
    keys = []
    for raw in re.findall(r"\[([^\[\]]*)\]", m.group(2)):
        try:
            keys.append(json.loads(raw))
        except ValueError:
            keys.append(raw)
    return (m.group(1), *keys)


# ------------------------------------------------------------------ the default mapping of actor specs

def actor_steps(e: Event, mapping: Mapping) -> list[Step]:
    """The spec step of an event of Lockstep's actor runtime (a process's start is part of the initial state)."""
    kind = e.action
    choice = e.args.get("choice") or {}
    if not isinstance(choice, dict):
        raise TraceError(f"{e.where}: \"choice\" must be an object")
    pid = mapping.node(e)
    if kind == "start":
        return []
    if kind == "message":
        return [Step("deliver", (("src", e.args.get("src")), ("dst", pid), ("msg", e.args.get("msg")), *choice.items()))]
    if kind == "timeout":
        return [Step("timeout", (("p", pid), ("timer", e.args.get("timer")), *choice.items()))]
    raise TraceError(f"{e.where}: an actor spec's process logs start, message and timeout events, not {kind!r}")


def hashable(v: Any) -> Any:
    """A hashable key for a value a mapping or log gives (JSON forms included)."""
    if isinstance(v, (dict, list)):
        return ("json", json.dumps(v, sort_keys=True, default=repr))
    return v


def as_value(dom: Domain, v: Any, where: str) -> Any:
    """A value of `dom` from a mapping's argument or a log's value: its JSON form (read and checked against the
    type), or a Python value of the spec (a record, a tuple for a sequence, a frozenset for a set) as it is."""
    if isinstance(v, RecordValue) or isinstance(v, (tuple, frozenset)) and not isinstance(dom, MapDomain):
        return v
    return from_json(dom, v, where)
