"""The explored state graph in compact form: states by index, their steps as CSR arrays, the breadth-first
tree, and what the fairness constraints need.

A step's fairness constraint is that of its label (`label_cons`), so edges keep only a target and a label;
the constraints enabled in a state are those of its steps, plus `extra` ones (steps that lead past the state
bound and were not stored). Steps that change nothing (stuttering) are never stored. Both engines build
this graph: the scalar engine state by state (`Builder`), the vector engine a level at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lockstep.specs.lang.errors import SpecError

from ..temporal import Fairness, Property


@dataclass
class StateGraph:
    """States 0..n-1; the steps of state u are edges offsets[u]..offsets[u+1]-1 (target, label id)."""

    offsets: np.ndarray  # int64, n + 1
    targets: np.ndarray  # int32
    labels: np.ndarray  # int32: label ids (a typed spec's transition index)
    label_cons: np.ndarray  # int32 per label id: its fairness constraint, or -1
    parent: np.ndarray  # int64: the breadth-first tree's parent, -1 at an initial state
    parent_label: np.ndarray  # int32: the label id of the step from the parent
    depth: np.ndarray  # int32
    expanded: np.ndarray  # bool: the state's steps are known (not cut by a bound or a state constraint)
    initial: np.ndarray  # int64, in the order the spec gives its initial states
    label_of: Callable[[int], Any]  # label id -> the model's label
    state_of: Callable[[int], Any]  # state index -> the model's state
    evaluate: Callable[[Property], list[np.ndarray]]  # a property's conditions, one bool array per operand
    extra: dict[int, set[int]] = field(default_factory=dict)  # constraints enabled by steps that were not stored
    generated: int = 0
    cut: str | None = None
    outside: int = 0
    fingerprinted: bool = False  # states told apart by 64-bit fingerprints (a collision is possible)
    path_states: Callable[[list[tuple[Any, int]]], list[Any]] | None = None  # a path's states, rebuilt (no state kept)

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    def steps(self, u: int) -> list[tuple[int, int]]:
        """[(target, label id), ...] of state u."""
        a, b = int(self.offsets[u]), int(self.offsets[u + 1])
        return list(zip(self.targets[a:b].tolist(), self.labels[a:b].tolist()))

    def constraint(self, label: int) -> int:
        return int(self.label_cons[label])

    def enabled(self, u: int) -> set[int]:
        """The fairness constraints enabled in state u."""
        a, b = int(self.offsets[u]), int(self.offsets[u + 1])
        out = {int(c) for c in self.label_cons[self.labels[a:b]] if c >= 0}
        return out | self.extra.get(u, set())

    def extra_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """`extra` as CSR arrays (offsets per state, constraint ids)."""
        off = np.zeros(self.n + 1, dtype=np.int64)
        items = sorted(self.extra.items())
        for u, cs in items:
            off[u + 1] = len(cs)
        np.cumsum(off, out=off)
        cons = np.array([c for _, cs in items for c in sorted(cs)], dtype=np.int32)
        return off, cons

    def path_to(self, i: int) -> list[tuple[Any, int]]:
        """[(None, initial id), (label id, id), ...] along the breadth-first tree to state i."""
        rev: list[tuple[Any, int]] = []
        while True:
            p = int(self.parent[i])
            if p < 0:
                rev.append((None, i))
                break
            rev.append((int(self.parent_label[i]), i))
            i = p
        rev.reverse()
        return rev


def constraint_kinds(fair: Fairness) -> np.ndarray:
    """Per constraint: 1 weak, 2 strong."""
    return np.array([1 if c.kind == "weak" else 2 for c in fair.constraints], dtype=np.uint8)


class Builder:
    """A StateGraph built one state at a time, the states expanded in index order (a breadth-first search)."""

    def __init__(self, fair: Fairness, interned: bool):
        self.fair = fair
        self.states: list[Any] = []
        self.index: dict[Any, int] = {}
        self.parent: list[int] = []
        self.parent_label: list[int] = []
        self.depth: list[int] = []
        self.initial: list[int] = []
        self.offsets: list[int] = [0]
        self.targets: list[int] = []
        self.labels: list[int] = []
        self.expanded: list[bool] = []
        self.extra: dict[int, set[int]] = {}
        self._interned = interned  # plain specs' labels are any hashable: numbered as they come
        self._label_ids: dict[Any, int] = {}
        self._label_list: list[Any] = []
        self._cons: list[int] = []

    def label_id(self, label: Any) -> int:
        if not self._interned:
            while len(self._cons) <= label:
                self._cons.append(self.fair.of(len(self._cons)))
            return label
        lid = self._label_ids.get(label)
        if lid is None:
            lid = self._label_ids[label] = len(self._label_list)
            self._label_list.append(label)
            self._cons.append(self.fair.of(label))
        return lid

    def constraint(self, lid: int) -> int:
        return self._cons[lid]

    def add(self, st: Any, parent: int, label: int) -> int:
        i = len(self.states)
        self.index[st] = i
        self.states.append(st)
        self.parent.append(parent)
        self.parent_label.append(label)
        self.depth.append(0 if parent < 0 else self.depth[parent] + 1)
        self.expanded.append(False)
        return i

    def expand(self, i: int, steps: list[tuple[int, int]]) -> None:
        """State i's steps [(target, label id)], given in index order of the expanded states."""
        while len(self.offsets) <= i:
            self.offsets.append(len(self.targets))
        self.expanded[i] = True
        for t, lid in steps:
            self.targets.append(t)
            self.labels.append(lid)
        self.offsets.append(len(self.targets))

    def path_to(self, i: int) -> list[tuple[Any, int]]:
        rev: list[tuple[Any, int]] = []
        while True:
            p = self.parent[i]
            if p < 0:
                rev.append((None, i))
                break
            rev.append((self.label_of(self.parent_label[i]), i))
            i = p
        rev.reverse()
        return rev

    def label_of(self, lid: int) -> Any:
        return self._label_list[lid] if self._interned else lid

    def graph(self, generated: int, cut: str | None, outside: int) -> StateGraph:
        n = len(self.states)
        while len(self.offsets) <= n:
            self.offsets.append(len(self.targets))
        states = self.states

        def evaluate(prop: Property) -> list[np.ndarray]:
            return [_column(prop, k, cond, states) for k, cond in enumerate(prop.conditions)]

        return StateGraph(
            offsets=np.array(self.offsets, dtype=np.int64), targets=np.array(self.targets, dtype=np.int32),
            labels=np.array(self.labels, dtype=np.int32), label_cons=np.array(self._cons or [-1], dtype=np.int32),
            parent=np.array(self.parent, dtype=np.int64), parent_label=np.array(self.parent_label, dtype=np.int32),
            depth=np.array(self.depth, dtype=np.int32), expanded=np.array(self.expanded, dtype=bool),
            initial=np.array(self.initial, dtype=np.int64), label_of=self.label_of, state_of=states.__getitem__,
            evaluate=evaluate, extra=self.extra, generated=generated, cut=cut, outside=outside)


def _column(prop: Property, k: int, cond: Callable[[Any], bool], states: list[Any]) -> np.ndarray:
    out = np.empty(len(states), dtype=bool)
    for i, st in enumerate(states):
        try:
            out[i] = bool(cond(st))
        except Exception as e:
            raise SpecError(f"temporal property {prop.name}: condition {'PQ'[k]} fails on state "
                            f"{model_state(st)}: {type(e).__name__}: {e}") from None
    return out


def model_state(st: Any) -> str:
    """A state's repr, cut at 200 characters."""
    text = repr(st)
    return text if len(text) < 200 else text[:197] + "..."
