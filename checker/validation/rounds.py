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

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lockstep.specs.lang.errors import SpecError
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
    truncated: bool = False  # the trace file lacks its end record
    state: tuple | None = None
    notes: list[str] = field(default_factory=list)


class BroadcastViolation(Mismatch):
    """The broadcasts of a round (the spec's transmit step) violate an invariant: the run is a behaviour
    of the spec up to there, and that step breaks the property."""

    def __init__(self, event: dict[str, Any], invariant: str, r: int):
        super().__init__(event, f"invariant {invariant} is violated by the broadcasts of round {r}")
        self.invariant, self.round = invariant, r


def is_rounds_trace(merged: MergedRun) -> bool:
    model = merged.header.get("model")
    if isinstance(model, str):
        return model == "rounds"
    for e in itertools.islice(merged.events, 64):  # a trace written before headers named the model
        if e.get("kind") == "round" or (e.get("kind") == "start" and "initiator" in e):
            return True
        if e.get("kind") in ("message", "timeout", "interact") or (e.get("kind") == "start" and "initiator" not in e):
            return False
    return False


def _rounds(merged: MergedRun, n: int) -> Iterator[tuple[int, dict[int, dict[str, Any]]]]:
    """(round, pid -> event) in round order (round 0: the start events), read as a stream."""
    current, group = 0, {}
    for e in merged.events:
        kind = e["kind"]
        if kind not in ("start", "round"):
            continue
        if not 0 <= e["pid"] < n:
            raise Mismatch(e, f"pid {e['pid']} is not a node of the network (0..{n - 1})")
        r = 0 if kind == "start" else e.get("round")
        if isinstance(r, bool) or not isinstance(r, int) or (kind == "round" and r < 1):
            raise Mismatch(e, f"round {r!r} is not a positive integer")
        if r != e.get("clock", r) or r < current:
            raise Mismatch(e, f"node {e['pid']}'s record of round {r} is out of order (the trace is not merged by round)")
        if r != current:
            yield current, group
            current, group = r, {}
        if e["pid"] in group:
            raise Mismatch(e, f"node {e['pid']} recorded round {r} twice" if r else f"node {e['pid']} starts twice")
        group[e["pid"]] = e
    yield current, group


def validate_rounds(merged: MergedRun) -> RoundsValidation:
    """Check the run against its spec, round by round as the trace is read; raises Mismatch at the first event
    that is not a step of it."""
    h = merged.header
    try:
        model = load_model(h["spec"], dict(h.get("params") or {}))
    except (LoadError, SpecError) as e:
        raise TraceError(f"spec {h['spec']!r} cannot be loaded with the trace's parameters: {e}") from None
    prog = model.prog  # type: ignore[attr-defined]
    if not isinstance(prog, RoundsProgram):
        raise TraceError(f"the trace names {h['spec']!r}, which is not a rounds spec")
    sysm = prog.system
    n = sysm.graph.number_of_nodes()

    def local(e: dict[str, Any]) -> tuple:
        try:
            return sysm.local_from_json(e.get("state"), f"node {e['pid']}'s state")
        except ValueError as err:
            raise Mismatch(e, f"not a local state of the spec: {err}") from None

    groups = _rounds(merged, n)
    r0, starts = next(groups)
    missing = [p for p in range(n) if p not in starts] if r0 == 0 else [0]
    if missing:
        return RoundsValidation(0, 0, incomplete=f"node {missing[0]} recorded no start: nothing validated")
    logged = {p: local(starts[p]) for p in range(n)}
    initiators = frozenset(p for p in range(n) if starts[p].get("initiator"))
    state = next((s for s in model.initial_states() if _locals(sysm, s) == logged), None)
    if state is None:
        raise Mismatch(starts[0], f"the start events are not the spec's initial state with initiators {sorted(initiators)}")
    res = RoundsValidation(0, n, state=state)
    bad = model.violated(state)
    if bad >= 0:
        res.violation = model.invariant_names[bad]
        return res
    outbox, inbox = prog.field("outbox").base, prog.field("inbox").base
    for r, evs in groups:
        if r != res.rounds + 1 or len(evs) < n:
            res.incomplete = _unrecorded(res.rounds + 1, evs if r == res.rounds + 1 else {}, n, h.get("lost"))
            return res
        state = _round(model, sysm, state, evs, r, outbox, inbox, local)
        res.rounds, res.events, res.state = r, res.events + n, state
        bad = model.violated(state)
        if bad >= 0:
            res.violation = model.invariant_names[bad]
            return res
    if not merged.ended:
        res.incomplete = f"the trace has no end record (the file was cut short): rounds 1..{res.rounds} validated"
        res.truncated = True
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
    return print_rounds(res, time.monotonic() - t0)


def print_rounds(res: RoundsValidation, took: float) -> int:
    """Print a rounds validation's outcome (`took` seconds); its exit code."""
    if res.violation:
        print(f"Violation: invariant {res.violation} is violated after round {res.rounds}")
        return 1
    if res.incomplete:
        print(f"{'Incomplete' if res.truncated else 'Validated what was recorded'}: {res.incomplete} ({took:.2f} s)")
        if res.truncated:
            return 3
    else:
        print(f"Valid: all {res.rounds} rounds ({res.events} events) are rounds of the spec and the invariants hold "
              f"after each ({took:.2f} s)")
    return 0
