"""Validation of a recorded run of a rounds spec: is it a behaviour of the spec, round by round?

The nodes' `start` events must be the initial state of the logged initiators. For each round,
every node's event must be present; what each node broadcast must be what the spec's transmit
step produces from its state, what it heard (how many neighbours spoke, what it received) must
follow from its neighbours' broadcasts, and the global state made of the logged local states
must be the spec's `round` successor of the previous one; the invariants must hold after it.
A round that not every node recorded (a node died) ends the validation: the rounds before it
are the validated prefix.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from lockstep.specs.lang.rounds import RoundsProgram

from ..loader import LoadError, load_model
from ..trace import TraceError
from .runtrace import MergedRun, Mismatch


@dataclass
class RoundsValidation:
    """The outcome: rounds checked, the final global state, and what stopped the validation early."""

    rounds: int
    events: int
    violation: str | None = None  # an invariant false after round `rounds`
    incomplete: str | None = None  # why later rounds were not validated
    state: tuple | None = None
    notes: list[str] = field(default_factory=list)


class BroadcastViolation(Mismatch):
    """The broadcasts of a round (the spec's transmit step) violate an invariant: the run is a behaviour
    of the spec up to there, and that step breaks the property."""

    def __init__(self, event: dict[str, Any], invariant: str, r: int):
        super().__init__(event, f"invariant {invariant} is violated by the broadcasts of round {r}")
        self.invariant, self.round = invariant, r


def is_rounds_trace(merged: MergedRun) -> bool:
    return any(e.get("kind") == "round" for e in merged.events) or \
        any(e.get("kind") == "start" and "initiator" in e for e in merged.events)


def validate_rounds(merged: MergedRun) -> RoundsValidation:
    """Check the run against its spec; raises Mismatch at the first event that is not a step of it."""
    h = merged.header
    try:
        model = load_model(h["spec"], dict(h.get("params") or {}))
    except LoadError as e:
        raise TraceError(f"the trace names spec {h['spec']!r}, which cannot be loaded: {e}") from None
    prog = model.prog  # type: ignore[attr-defined]
    if not isinstance(prog, RoundsProgram):
        raise TraceError(f"the trace names {h['spec']!r}, which is not a rounds spec")
    sysm = prog.system
    n = sysm.graph.number_of_nodes()
    starts: dict[int, dict[str, Any]] = {}
    by_round: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    for e in merged.events:
        if e["kind"] in ("start", "round") and not 0 <= e["pid"] < n:
            raise Mismatch(e, f"pid {e['pid']} is not a node of the network (0..{n - 1})")
        if e["kind"] == "start":
            starts[e["pid"]] = e
        elif e["kind"] == "round":
            r = e.get("round")
            if isinstance(r, bool) or not isinstance(r, int) or r < 1:
                raise Mismatch(e, f"round {r!r} is not a positive integer")
            if e["pid"] in by_round[r]:
                raise Mismatch(e, f"node {e['pid']} recorded round {r} twice")
            by_round[r][e["pid"]] = e
    missing = [p for p in range(n) if p not in starts]
    if missing:
        return RoundsValidation(0, 0, incomplete=f"node {missing[0]} recorded no start: nothing validated")

    def local(e: dict[str, Any]) -> tuple:
        try:
            return sysm.local_from_json(e.get("state"), f"node {e['pid']}'s state")
        except ValueError as err:
            raise Mismatch(e, f"not a local state of the spec: {err}") from None

    logged = {p: local(starts[p]) for p in range(n)}
    initiators = frozenset(p for p in range(n) if starts[p].get("initiator"))
    state = next((s for s in model.initial_states() if _locals(sysm, s) == logged), None)
    if state is None:
        raise Mismatch(starts[0], f"the start events are not the spec's initial state with initiators {sorted(initiators)}")
    res = RoundsValidation(0, n, state=state)
    outbox, inbox = prog.field("outbox").base, prog.field("inbox").base
    for r in range(0, max(by_round, default=0) + 1):
        if r > 0:
            evs = by_round.get(r, {})
            if len(evs) < n:
                res.incomplete = _unrecorded(r, evs, n, h.get("lost"))
                return res
            state = _round(model, sysm, state, evs, r, outbox, inbox, local)
            res.rounds, res.events, res.state = r, res.events + n, state
        bad = model.violated(state)
        if bad >= 0:
            res.violation = model.invariant_names[bad]
            return res
    return res


def _unrecorded(r: int, evs: dict[int, dict[str, Any]], n: int, lost: Any) -> str:
    """Why round r is not validated: which nodes recorded it, and which node the run lost (from the
    header's `lost` list, written by the run driver) — not merely the first node missing."""
    recorded = sorted(evs)
    who = f"only by node{'s' if len(recorded) != 1 else ''} {_nodes(recorded)}" if recorded else "by no node"
    text = f"round {r} was recorded {who} ({len(recorded)} of {n})"
    dead = [x for x in lost if isinstance(x, dict) and x.get("round") == r and isinstance(x.get("pid"), int)] \
        if isinstance(lost, list) else []
    if dead:
        text += ": " + "; ".join(f"node {x['pid']} " + ("was killed at the start of" if x.get("killed") else "died during")
                                 + f" round {r}" for x in dead)
    return text + f"; rounds 1..{r - 1} validated"


def _nodes(ps: list[int]) -> str:
    return ", ".join(map(str, ps)) if len(ps) <= 8 else ", ".join(map(str, ps[:8])) + f", … ({len(ps) - 8} more)"


def _round(model: Any, sysm: Any, state: tuple, evs: dict[int, dict[str, Any]], r: int, outbox: int, inbox: int,
           local: Any) -> tuple:
    """The state after round r, if the nodes' events are the spec's round from `state` (else Mismatch)."""
    n = len(evs)
    sent = {}
    for p in range(n):
        try:
            sent[p] = sysm.message_rep(evs[p].get("broadcast"), "broadcast")
        except ValueError as err:
            raise Mismatch(evs[p], f"not a message of the spec: {err}") from None
    halves = [s for lid, s in model.successors(state) if model.label(lid).startswith("transmit")]
    if not halves:
        raise Mismatch(evs[0], f"round {r} is not possible here: every node has terminated or the round bound is reached")
    mid = next((s for s in halves if all(s[outbox + p] == sent[p] for p in range(n))), None)
    if mid is None:
        p = next(p for p in range(n) if halves[0][outbox + p] != sent[p])
        raise Mismatch(evs[p], "the node's broadcast is not what the spec's transmit step sends",
                       sysm.message_json(halves[0][outbox + p]), evs[p].get("broadcast"))
    bad = model.violated(mid)
    if bad >= 0:
        raise BroadcastViolation(evs[0], model.invariant_names[bad], r)
    for p in range(n):
        e = evs[p]
        heard = sum(1 for q in sysm.graph.neighbors(p) if sent[q])
        if e.get("heard") != heard or e.get("received") != sysm.message_json(mid[inbox + p]):
            raise Mismatch(e, "what the node heard does not follow from its neighbours' broadcasts",
                           {"heard": heard, "received": sysm.message_json(mid[inbox + p])},
                           {"heard": e.get("heard"), "received": e.get("received")})
    after = {p: local(evs[p]) for p in range(n)}
    ends = [s for lid, s in model.successors(mid) if model.label(lid).startswith("receive")]
    end = next((s for s in ends if _locals(sysm, s) == after), None)
    if end is None:
        exp = _locals(sysm, ends[0])
        p = next(p for p in range(n) if exp[p] != after[p])
        raise Mismatch(evs[p], f"node {p}'s state after round {r} is not the spec's", sysm.local_json(exp[p]),
                       evs[p].get("state"))
    return end


def _locals(sysm: Any, state: tuple) -> dict[int, tuple]:
    return {p: tuple(state[i] for i in slots) for p, slots in sysm.gslots.items()}


def report_rounds(merged: MergedRun, t0: float) -> int:
    """Validate a rounds trace and print the outcome: 0 valid (or a valid prefix of an unfinished run), 1 not."""
    try:
        res = validate_rounds(merged)
    except Mismatch as m:
        print("Invalid: the run is not a behaviour of the spec at " + m.render())
        return 1
    took = time.monotonic() - t0
    if res.violation:
        print(f"Violation: invariant {res.violation} is violated after round {res.rounds}")
        return 1
    if res.incomplete:
        print(f"Validated what was recorded: {res.incomplete} ({took:.2f} s)")
    else:
        print(f"Valid: all {res.rounds} rounds ({res.events} events) are rounds of the spec and the invariants hold "
              f"after each ({took:.2f} s)")
    return 0
