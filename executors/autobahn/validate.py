"""Check a run of the Autobahn processes against the spec's properties, with the spec's model of signatures.

The spec (`lockstep.specs.autobahn`) keeps a record of every vote an honest replica signed and calls
a certificate authentic when each honest signer really cast that vote (a Byzantine signer may have
signed anything). Each replica's trace is that record for the replica, so the validator checks,
over all traces together: agreement, prefix-consistent execution logs, certificates_authentic
(every commit's and every committed tip's certificate is big enough and its honest signers' votes
are in their traces), vote_once, locked_after_commit, no vote after a timeout of the same view,
open_slots_bounded (an honest leader proposes in slot s only after it committed slot s - k, and in view 1 only after it
voted for a Prepare of slot s - 1 or committed it) and coverage (an honest view-1 leader's cut of slot s has `coverage`
lanes with tips newer than in its base: the cut it committed for slot s - 1, else the first Prepare of slot s - 1 it
voted for, whose tips its proposer logged; and its digest is the one it proposed).
A trace line that does not parse, or an op not of its declared shape (`logshape.py`), is a `RunInvalid` naming the
file and line.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .logshape import LogShapeError, check_op
from .messages import cut_id
from .replica import K


class RunInvalid(Exception):
    """The run breaks one of the spec's properties; the message says which, where and how."""


@dataclass
class Validation:
    events: int = 0
    commits: int = 0
    slots: int = 0
    votes: int = 0
    rejections: dict[str, int] = field(default_factory=dict)


def read(path: str, pid: int, n: int) -> list[dict[str, Any]]:
    """A replica's log (in the event schema) as the ops it records, in order, each with `ev` its kind and `_at`
    where it is, each op of its declared shape (`logshape`) in a run of n replicas. A torn last line (a killed
    replica) is left out."""
    out = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            if i >= len(lines) - 1:
                break  # a torn last line of a killed replica
            raise RunInvalid(f"{path}:{i}: not a JSON line") from None
        if not isinstance(ev, dict):
            raise RunInvalid(f"{path}:{i}: an event is a JSON object")
        if "schema" in ev or ev.get("end") is True:
            continue  # the header, the end record
        out.extend({**o, "ev": o["op"], "_at": f"replica {pid} ({path}:{i})"} for o in event_ops(ev, n, f"{path}:{i}"))
    return out


def event_ops(ev: dict[str, Any], n: int, where: str) -> list[dict[str, Any]]:
    """The ops a replica's event lists (its args.ops), each of its declared shape (`logshape`) in a run of n replicas;
    RunInvalid at `where` (the event's place in its log) otherwise."""
    ops = ev.get("args").get("ops") if "action" in ev and isinstance(ev.get("args"), dict) else None
    if not isinstance(ops, list):
        raise RunInvalid(f"{where}: an event of a replica has an action and lists its ops (args.ops)")
    for o in ops:
        try:
            check_op(o, n)
        except LogShapeError as e:
            raise RunInvalid(f"{where}: {e}") from None
    return ops


def validate(traces: dict[int, str], n: int, byzantine: set[int] | frozenset[int] = frozenset(),
             coverage: int | None = None, lanes: bool = True, k: int = K) -> Validation:
    """Validate the traces of one run (replica -> trace file; `coverage` the replicas', None: 2f+1; `lanes=False`: a
    run of the baseline without lanes, whose cuts name batches, with neither coverage nor PoAs; `k`: the slots the
    replicas ran at once, by default the runtime's); RunInvalid at the first broken property."""
    f = (n - 1) // 3
    q = 2 * f + 1
    cover = (q if coverage is None else coverage) if lanes else 0
    honest = [p for p in sorted(traces) if p not in byzantine]
    events = {p: read(path, p, n) for p, path in traces.items()}
    res = Validation(events=sum(len(e) for e in events.values()))
    votes: dict[str, set[tuple]] = defaultdict(set)  # kind -> {(voter, ...statement)} of honest replicas
    try:
        tips = _proposed_tips(events)
        for p in honest:
            once: dict[tuple, str] = {}
            timed_out: set[tuple[int, int]] = set()
            committed: dict[int, list[int]] = {}  # slot -> the tips' heights of the cut p committed there
            first: dict[int, str] = {}  # slot -> the cut of the first Prepare p voted for there
            for ev in events[p]:
                kind = ev["ev"]
                if kind == "vote":
                    stmt = (ev["a"], ev["h"]) if ev["kind"] == "car" else (ev["s"], ev["v"])
                    val = ev["c"] if ev["kind"] == "car" else ev["d"]
                    key = (ev["kind"], *stmt)
                    if once.setdefault(key, val) != val:
                        raise RunInvalid(f"vote_once: {ev['_at']} voted twice for {ev['kind']} {stmt}")
                    if ev["kind"] != "car" and stmt in timed_out:
                        raise RunInvalid(f"{ev['_at']} voted in slot {stmt[0]} view {stmt[1]} after timing out of it")
                    votes[ev["kind"]].add((p, *stmt, val))
                    res.votes += 1
                    if ev["kind"] == "prepare":
                        first.setdefault(ev["s"], val)
                elif kind == "timeout":
                    timed_out.add((ev["s"], ev["v"]))
                elif kind == "commit":
                    committed.setdefault(ev["s"], [0 if t is None else t[0] for t in ev["cut"]])
                elif kind == "propose":
                    _covered(ev, _base(ev, k, committed, first, tips, n), cover)
        decided: dict[int, tuple[int, str, str]] = {}
        logs: dict[int, tuple[str, str]] = {}
        for p in honest:
            for ev in events[p]:
                if ev["ev"] == "commit":
                    res.commits += 1
                    s, v, d = ev["s"], ev["v"], ev["d"]
                    if s in decided and decided[s][1] != d:
                        raise RunInvalid(f"agreement: slot {s} committed {d[:12]} at {ev['_at']} but "
                                         f"{decided[s][1][:12]} at {decided[s][2]}")
                    decided.setdefault(s, (v, d, ev["_at"]))
                    _authentic(ev, votes, byzantine, n, q, f, lanes)
                elif ev["ev"] == "exec":
                    s = ev["s"]
                    if s in logs and logs[s][0] != ev["log"]:
                        raise RunInvalid(f"logs_prefix_consistent: the execution logs after slot {s} differ at "
                                         f"{ev['_at']} and {logs[s][1]}")
                    logs.setdefault(s, (ev["log"], ev["_at"]))
        for kind in ("prepare", "confirm"):
            for (voter, s, v, d) in votes[kind]:
                if s in decided and v > decided[s][0] and d != decided[s][1]:
                    raise RunInvalid(f"locked_after_commit: replica {voter} voted {kind} for another cut in slot {s} "
                                     f"view {v}, after the slot committed in view {decided[s][0]}")
        for p in traces:
            for ev in events[p]:
                if ev["ev"] == "reject":
                    res.rejections[ev["reason"]] = res.rejections.get(ev["reason"], 0) + 1
        res.slots = len(decided)
    except (KeyError, TypeError) as e:
        raise RunInvalid(f"an event lacks a field or has the wrong type ({e})") from None
    return res


def _proposed_tips(events: dict[int, list[dict[str, Any]]]) -> dict[str, list[int]]:
    """The tips' heights of every cut a replica proposed (by digest), each proposal's logged tips checked to be its cut."""
    out = {}
    for evs in events.values():
        for ev in evs:
            if ev["ev"] == "propose":
                if cut_id(ev["tips"]) != ev["d"]:
                    raise RunInvalid(f"{ev['_at']} logs tips whose digest is not the cut {ev['d'][:12]} it proposed")
                out[ev["d"]] = [0 if t is None else t[0] for t in ev["tips"]]
    return out


def _base(ev: dict[str, Any], k: int, committed: dict[int, list[int]], first: dict[int, str],
          tips: dict[str, list[int]], n: int) -> list[int]:
    """The tips' heights a proposal of slot s counts its coverage against, once open_slots_bounded is checked: the
    cut its proposer committed for slot s - 1, else the first Prepare of slot s - 1 it voted for (by its logged tips)."""
    s = ev["s"]
    if s > k and s - k not in committed:
        raise RunInvalid(f"open_slots_bounded (k = {k}): {ev['_at']} proposed slot {s} before it committed slot {s - k}")
    if s == 1:
        return [0] * n
    if s - 1 in committed:
        return committed[s - 1]
    if s - 1 not in first:
        if ev["v"] == 1:
            raise RunInvalid(f"open_slots_bounded (k = {k}): {ev['_at']} proposed slot {s} in view 1 before it voted "
                             f"for a Prepare of slot {s - 1} or committed it")
        return [0] * n
    if first[s - 1] not in tips:
        raise RunInvalid(f"{ev['_at']} proposed slot {s} on a Prepare of slot {s - 1} ({first[s - 1][:12]}) that no "
                         "replica's log proposed")
    return tips[first[s - 1]]


def _covered(ev: dict[str, Any], base: list[int], cover: int) -> None:
    """In view 1, `cover` of a proposal's tips are newer than in its base (`base`, heights by lane)."""
    newer = sum(t is not None and t[0] > old for t, old in zip(ev["tips"], base))
    if ev["v"] == 1 and newer < cover:
        raise RunInvalid(f"coverage: {ev['_at']} proposed slot {ev['s']} with {newer} lane(s) newer than its base "
                         f"(slot {ev['s'] - 1}'s cut), fewer than the coverage {cover}")


def _authentic(ev: dict[str, Any], votes: dict[str, set[tuple]], byzantine: set[int] | frozenset[int], n: int,
               q: int, f: int, lanes: bool) -> None:
    s, v, d = ev["s"], ev["v"], ev["d"]
    kind, need = ("prepare", n) if ev["fast"] else ("confirm", q)
    signers = ev["signers"]
    if len(set(signers)) < need:
        raise RunInvalid(f"certificates_authentic: the commit of slot {s} at {ev['_at']} has {len(set(signers))} "
                         f"signers, fewer than {need}")
    for w in signers:
        if w not in byzantine and (w, s, v, d) not in votes[kind]:
            raise RunInvalid(f"certificates_authentic: the commit of slot {s} at {ev['_at']} names replica {w}, "
                             f"which never cast that {kind} vote")
    for a, tip in enumerate(ev["cut"]):
        if tip is None:
            continue
        h, c, poa = tip
        if not lanes:
            if poa:
                raise RunInvalid(f"slot {s} at {ev['_at']}: a run without lanes commits batches, not certified cars")
            continue
        if len(set(poa)) < f + 1:
            raise RunInvalid(f"committed_cars_certified: lane {a} height {h} in slot {s} has a PoA of {len(poa)} votes")
        for w in poa:
            if w not in byzantine and (w, a, h, c) not in votes["car"]:
                raise RunInvalid(f"certificates_authentic: the PoA of lane {a} height {h} names replica {w}, "
                                 f"which never voted for that car")
