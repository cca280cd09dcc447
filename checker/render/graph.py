"""Small state graphs as Graphviz DOT: every reachable state and step, the counterexample marked.

The graph is explored breadth-first with the spec's successor function (a networkx `DiGraph`:
nodes are states, labelled with their fields in the spec's notation; edges are steps, labelled
with their action). It is refused beyond a size limit — a picture of more than a few thousand
states helps nobody — and the refusal comes before anything large is built.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import networkx as nx

from ..errors import UsageError
from ..model import Model
from ..trace import Trace
from .notation import notation_of
from .text import action_text, nodes, state_lines

DEFAULT_LIMIT = 1000


def state_graph(model: Model, limit: int = DEFAULT_LIMIT) -> nx.DiGraph:
    """The reachable state graph (states within the state constraints, as the search stores them), or UsageError if it
    has more than `limit` states."""
    canon = model.canonical if model.symmetry else (lambda s: s)
    g = nx.DiGraph()
    queue: deque = deque()
    for s in model.initial_states():
        s = canon(s)
        if s not in g:
            g.add_node(s, initial=True)
            queue.append(s)
    while queue:
        s = queue.popleft()
        if len(g) > limit:
            break
        try:
            bad = model.violated(s)
        except Exception:
            bad = -1
        if bad >= 0:
            g.nodes[s]["violates"] = model.invariant_names[bad]
        try:
            succ = model.successors(s)
        except Exception:
            g.nodes[s]["failure"] = model.diagnose(s).describe()
            continue
        for lid, t in succ:
            t = canon(t)
            if t not in g and _outside(model, t):  # as the search: a state outside a constraint is not stored
                continue
            if t not in g:
                g.add_node(t)
                queue.append(t)
            labels = g.edges[s, t]["labels"] if g.has_edge(s, t) else []
            g.add_edge(s, t, labels=labels + [lid])
    if len(g) > limit:
        raise UsageError(f"--dump-graph: the state graph of {model.name} has more than {limit:,} states; a graph "
                         "picture is for small instances: lower the parameters, or raise the limit with --graph-limit")
    return g


def _outside(model: Model, state: object) -> bool:
    try:
        return bool(model.constraint_names) and model.outside(state) >= 0
    except Exception:  # a constraint that fails to evaluate: kept, as the search keeps it
        return False


def mark_trace(g: nx.DiGraph, model: Model, trace: Trace) -> None:
    """Mark the counterexample's states and steps (and a lasso's step back) in the graph."""
    by_itf = {_key(model.encode_state(s)): s for s in g.nodes}
    path = [by_itf.get(_key(step.state)) for step in trace.steps]
    if None in path:
        return
    for i, s in enumerate(path):
        g.nodes[s]["on_path"] = True
        if i:
            g.edges[path[i - 1], s]["on_path"] = True
    g.nodes[path[-1]]["last"] = True
    if trace.loop is not None and trace.loop < len(path) - 1 and g.has_edge(path[-1], path[trace.loop]):
        g.edges[path[-1], path[trace.loop]]["on_path"] = True


def _key(values: dict[str, Any]) -> str:
    import json

    return json.dumps(values, sort_keys=True)


def to_dot(g: nx.DiGraph, model: Model, violated: str | None = None) -> str:
    """The graph in Graphviz's DOT language."""
    notation = notation_of(model)
    ids = {s: i for i, s in enumerate(g.nodes)}
    ps = ", ".join(f"{k}={v}" for k, v in model.params.items())
    out = [f"digraph {_quote(model.name)} {{",
           f"  label={_quote(f'{model.name} ({ps}): {len(g)} states, {g.number_of_edges()} steps')};",
           '  labelloc=t; node [shape=box, fontname="monospace", fontsize=10]; edge [fontname="monospace", fontsize=9];']
    for s, data in g.nodes(data=True):
        text = "\\l".join(_esc(t.plain.strip()) for t in state_lines(nodes(model.encode_state(s), notation), notation))
        attrs = [f'label="{text}\\l"']
        if data.get("initial"):
            attrs.append("peripheries=2")
        if data.get("on_path"):
            attrs += ["color=red", "penwidth=2"]
        if data.get("last") and violated:
            attrs += ['style=filled', 'fillcolor="#ffcdd2"', f'xlabel={_quote(violated)}']
        elif data.get("violates"):
            attrs += ['style=filled', 'fillcolor="#fce4ec"', f'tooltip={_quote("violates " + data["violates"])}']
        if data.get("failure"):
            attrs += ['style=filled', 'fillcolor="#ffe0b2"', f'tooltip={_quote(data["failure"])}']
        out.append(f"  s{ids[s]} [{', '.join(attrs)}];")
    for s, t, data in g.edges(data=True):
        label = " | ".join(action_text(model.label_json(lid)).plain for lid in data["labels"])
        attrs = [f"label={_quote(label)}"] + (["color=red", "fontcolor=red", "penwidth=2.5"] if data.get("on_path") else [])
        out.append(f"  s{ids[s]} -> s{ids[t]} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _quote(text: str) -> str:
    return '"' + _esc(text).replace("\n", "\\n") + '"'
