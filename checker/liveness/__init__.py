"""Liveness: temporal properties under weak and strong fairness, decided over the state graph.

Behaviours are TLA+ behaviours: infinite sequences of states in which the system may also
stutter (take no step), so a behaviour that stops is one that stutters for ever. A step of
an action counts for fairness only if it changes the state (TLA+'s ⟨A⟩_vars); an action is
enabled where it has such a step. WF(A): if A is enabled from some point on for ever, A is
taken infinitely often; SF(A): if A is enabled infinitely often, it is taken infinitely often.

The reachable graph is built breadth-first (`explore` state by state on the scalar engine,
`lockstep.checker.vector.graph` by the compiled kernels) into compact arrays (`graph`), then a
violating behaviour is searched as a lasso (`lasso`): a stem from an initial state to a "start"
state, then a fair cycle inside a region of states where the property's obligation stays unmet:

    ◇P        start: an initial ¬P state        region: ¬P
    □◇P       start: any ¬P state               region: ¬P
    ◇□P       start: an initial state           region: all, and the cycle visits a ¬P state
    P ↝ Q     start: a P ∧ ¬Q state             region: ¬Q

A fair cycle is either stuttering in a state where no fair action is enabled, or a strongly
connected set of states that covers its own fairness (`scc`, the classic Streett check: drop a
component whose weakly fair action is enabled everywhere and never taken; remove the states
where an untaken strongly fair action is enabled and split what is left into components
again). Everything is iterative, in C where a compiler is found (`native`) and in Python
otherwise, so graph size, not Python's recursion limit, bounds the search.
"""

from .check import check_properties, choose_engine, temporal_violation
from .graph import StateGraph
from .lasso import Lasso, find_lasso, lasso_violates

__all__ = ["Lasso", "StateGraph", "check_properties", "choose_engine", "find_lasso", "lasso_violates", "temporal_violation"]
