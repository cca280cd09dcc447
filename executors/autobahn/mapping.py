"""The refinement mapping from the Autobahn replicas' logs (`replica.py`) to the spec (`lockstep.specs.autobahn`).

A run has tens of slots and hundreds of cars per lane; the spec is checked at a few of each (slots <= 6,
cars <= 3, and building it with lanes takes seconds per instance). So a run is validated as many small
instances of the spec, each a projection of the replicas' logs:

- each slot s of the run is slot 1 of a consensus instance (`lanes=0`: no cars, a leader proposes one of
  `proposals` abstract cuts), with as many views and cuts as the slot used. A run's cut is the index of
  its digest among the cuts the slot's ops name, in order of the view that first names them (the spec's
  leaders propose any cut in view 1 and after a TC without a winner; the TC's winner is computed by the
  spec). The replicas are renamed so that the spec's leader(1, v) = (1 + offset + v) mod n is the run's
  leader(s, v) = (s + v) mod n: replica r is the spec's (r - s + 1) mod n with every replica honest, and
  with a Byzantine replica b (the spec's is the last, n - 1) r is (r + n - 1 - b) mod n, `offset` being
  (s + n - 2 - b) mod n;
- each pair of consecutive cars (h, h+1) of each lane is a lane instance (`lanes=1, cars=2, slots=1,
  views=1`: the producing lane is the spec's last, n - 1), the author renamed n - 1 (r is (r + n - 1 - a)
  mod n, which keeps who is a designated voter of whom), car h the spec's car 1 and h+1 its car 2. Every
  parent-child pair of a lane is in one instance: that car h+1 goes out only once car h has its PoA, and
  that a replica takes it only once it holds car h.

What one instance does not see: what links slots under k (a view-1 Prepare of slot s > k carries the commit of
slot s-k as its ticket; slot s starts once slot s-k is committed and a Prepare of slot s-1 voted for; a view-1
leader's coverage counts against slot s-1's cut) and the contents of cuts (which cars a cut reaches, their PoAs): the
property checks (`validate.py`: open_slots_bounded with the run's k, and coverage) check those on the whole run. Each
slot is slot 1 of a one-slot instance, which the spec opens at once for any k (slot 1 <= k has no ticket and no
predecessor): the spec is not weakened; the links between slots are checked outside it. Fetching cars
(sync) is not validated step by step: the consensus instances have no cars and the lane instances no commits.

Events to steps. Each replica's event (a frame it acted on, a timer) lists its ops (`replica.py`); in an
instance, an event stands for the steps of its ops in that slot or for those two cars:
- `got` M from q: the delivery of M from q (`deliver(src=q, dst=p, msg=M)`);
- `commit` (of a certificate another replica made): the delivery of the Commit of the leader that made it;
- `timeout`, `fast`, `propose`: the slot timer, the fast-path timer and the lead timer (`timeout(p, timer,
  c)`, `c` the proposed cut where the leader is free to choose one);
- the rest (votes, which the spec sends within the steps above, views, PoAs formed, cars sent, the
  leader's own commit, execution, rejected messages) is no step.

Deviations of the runtime from the spec, each handled where stated:
- A replica that moves on to the next slot stops acting on the old one's messages, and ignores messages its
  state makes no difference to (a Prepare it does not vote for, a vote for another cut, a Timeout of an
  earlier view): such a receipt is no step, the message staying in flight (`replica.py` logs `got` only
  for the receipts the spec's handler changes something on).
- Messages of a slot that is not open at the replica (slot s-k not committed) wait until it is: their receipt is
  logged, as a step, when they are acted on. With k > 1 slots run at once and commit in any order, and one event
  may act in several slots (a Prepare of slot s whose ticket commits slot s-k, a commit that lets slot s+k open or
  slot s+1 start and its leader propose): each slot's ops go to that slot's instance, as steps of one event there.
- A replica learns a commit from the leader's Commit, from another replica's answer to its Timeout, or
  from the Prepare of slot s+k, which carries it as its ticket: each is the delivery of the leader's Commit, which the
  spec's leader sends every replica as it makes the certificate (the certificate is the same whoever
  relays it; the spec's answers, and a Byzantine replica's relays, stay in flight).
- A replica joins a view change on f+1 Timeouts (the spec does not model it): that is its slot timer
  firing, which the spec allows at any time; it resends its Timeout each timer period, the same signed
  message, which receivers drop as a replay: no step. An author resends its uncertified car the same way: a replica
  that has it drops it (no step), one that missed it takes it (the delivery of the car, still in flight).
- The leader's fast-path wait, the slow path's Confirm and its own votes, commit and own Prepare vote are the
  spec's in the same steps (`replica.py` handles its own messages within the step that sends them).
- A Byzantine replica sends the replicas other than the next view's leader the Timeout it sends the leader;
  the spec's sends them one that reports nothing, only its sender counting there: the reports of a Byzantine
  Timeout are dropped at those replicas.
- The spec's Byzantine replica sends a Confirm as soon as it holds a PrepareQC; the runtime's (following the
  protocol there) waits for the fast path: its fast-path timer is no step.
- An equivocating leader's second Prepare after a TC with a winner ignores the winner: every honest replica
  rejects it, and the spec's Byzantine replica sends nothing an honest replica does not accept: no step.
- Runs the spec's bounds or its Byzantine replica do not cover are said so, slot or lane by slot or lane
  (`Instance.skipped`): more than 4 views or 4 cuts in a slot; a Byzantine Timeout reporting a Prepare of an
  earlier view (the spec's reports only the Timeout's view); a `vote_all` replica voting for the cars of a
  lane it is not a designated voter of (the spec's Byzantine replica is the last lane's author).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from lockstep.executors.projection import LINE
from lockstep.trace import step

INTERNAL: list[str] = []  # every step is logged

# -- the steps of a projected event ------------------------------------------------------------------------


def ops(e: Any) -> list:
    """The spec steps of a projected event: one per op that is a step, in order."""
    me = int(e.node)
    out = []
    for o in e.args["ops"]:
        kind = o["op"]
        if kind == "got":
            out.append(step("deliver", src=o["from"], dst=me, msg=_message(o)))
        elif kind == "commit":
            out.append(step("deliver", src=o["leader"], dst=me, msg={"tag": "Commit", "s": 1, "v": o["v"],
                                                                     "cut": o["cut"]}))
        elif kind == "timer":
            out.append(step("timeout", p=me, timer=o["timer"], **o["choice"]))
    return out


EVENTS = {"ops": ops}


def variables(e: Any) -> dict[str, Any]:
    """What an honest replica's ops say about its state afterwards: its votes and its commit."""
    out: dict[str, Any] = {}
    for o in e.args["ops"]:
        out.update(o.get("check") or {})
    return out


def _message(o: dict[str, Any]) -> dict[str, Any]:
    """The spec's message (its JSON form) of a projected `got` op."""
    m = o["m"]
    if m in ("Car", "CarVote"):
        return {"tag": m, "lane": o["lane"], "tip": o["tip"]}
    if m == "PoA":
        return {"tag": m, "lane": o["lane"], "tip": o["tip"], "signers": o["signers"]}
    if m == "Timeout":
        return {"tag": m, "s": 1, "v": o["v"], "prop": o["prop"], "qc": o["qc"]}
    return {"tag": m, "s": 1, "v": o["v"], "cut": o["cut"]}


# -- instances -----------------------------------------------------------------------------------------------

CONSENSUS = frozenset({"got", "vote", "commit", "lead_commit", "timeout", "fast", "propose", "view"})
LANE = frozenset({"car_sent", "got", "vote", "poa"})
CONSENSUS_BYZANTINE = frozenset({"equivocate", "vote_all", "silent_timeouts"})  # the others follow the protocol there
LANE_BYZANTINE = frozenset({"rush"})
MAX_VIEWS = MAX_CUTS = 4  # the spec's bounds (`views`, `proposals`)


@dataclass
class Instance:
    """A spec instance a stretch of the run is validated on: the spec, its parameters, each replica's projected
    events (by its id in the instance) and whether its log was complete."""

    name: str
    spec: str
    params: dict[str, int]
    logs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    ended: dict[int, bool] = field(default_factory=dict)
    skipped: str | None = None  # why this stretch is not validated step by step
    sources: dict[int, int] = field(default_factory=dict)  # the run's replica each instance replica's log comes from


Log = tuple[dict[str, Any], list[dict[str, Any]], bool]  # a replica's (header, events, complete)


def instances(logs: dict[int, Log], n: int, byzantine: dict[int, str]) -> Iterable[Instance]:
    """The instances of a run (replica -> its log), slot by slot, then lane by lane."""
    slots: dict[int, dict[int, list[tuple[dict[str, Any], list[dict[str, Any]]]]]] = defaultdict(lambda: defaultdict(list))
    cars: dict[tuple[int, int], dict[int, list[tuple[int, dict[str, Any], list[dict[str, Any]]]]]] = \
        defaultdict(lambda: defaultdict(list))
    for pid, (_, events, _) in logs.items():
        for k, e in enumerate(events):
            by_slot: dict[int, list[dict[str, Any]]] = defaultdict(list)
            by_car: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
            for o in (e.get("args") or {}).get("ops", ()):
                if o["op"] in CONSENSUS and "s" in o:
                    by_slot[o["s"]].append(o)
                elif o["op"] in LANE and "a" in o:
                    by_car[(o["a"], o["h"])].append(o)
            for s, sops in by_slot.items():
                slots[s][pid].append((e, sops))
            for key, cops in by_car.items():
                cars[key][pid].append((k, e, cops))
    ended = {pid: log[2] for pid, log in logs.items()}
    f = (n - 1) // 3
    byz = next((b for b, how in byzantine.items() if how in CONSENSUS_BYZANTINE), None)
    for s in sorted(slots):
        yield _slot(s, slots[s], n, f, byz, ended)
    lane_byz = {b for b, how in byzantine.items() if how in LANE_BYZANTINE}
    voters = {b for b, how in byzantine.items() if how == "vote_all"}
    heights: dict[int, int] = defaultdict(int)
    for a, h in cars:
        heights[a] = max(heights[a], h)
    for a in sorted(heights):
        for h in range(1, max(heights[a], 2)):
            yield _window(a, h, cars, n, f, a in lane_byz, voters, ended)


def _slot(s: int, per: dict[int, list[tuple[dict[str, Any], list[dict[str, Any]]]]], n: int, f: int, byz: int | None,
          ended: dict[int, bool]) -> Instance:
    """Slot s of the run as slot 1 of a consensus instance."""
    views, first_view = 1, {}
    for evs in per.values():
        for _, sops in evs:
            for o in sops:
                v = o.get("v", 1)
                views = max(views, v + 1 if o["op"] == "timeout" else v)
                for d, w in _cuts(o):
                    first_view[d] = min(first_view.get(d, w), w)
    order = sorted(first_view, key=lambda d: (first_view[d], d))
    cut = {d: i for i, d in enumerate(order)}
    if byz is None:
        rot = {r: (r - s + 1) % n for r in range(n)}
        spec, params = "autobahn", {"f": f, "lanes": 0, "slots": 1, "views": views, "proposals": max(len(cut), 1)}
    else:
        rot = {r: (r + n - 1 - byz) % n for r in range(n)}
        spec = "autobahn_byzantine"
        params = {"f": f, "lanes": 0, "slots": 1, "views": views, "proposals": max(len(cut), 1),
                  "offset": (s + n - 2 - byz) % n}
    inst = Instance(f"slot {s}", spec, params)
    if views > MAX_VIEWS or len(cut) > MAX_CUTS:
        inst.skipped = (f"slot {s} went through {views} views and {len(cut)} cuts; the spec has at most {MAX_VIEWS} "
                        f"of each")
        return inst
    offset = params.get("offset", 0)

    def leader(v: int) -> int:
        return (1 + offset + v) % n

    def ref(pair: list[Any] | None) -> dict[str, Any] | None:
        return None if pair is None else {"tag": "Ref", "view": pair[0], "cut": cut[pair[1]]}

    spec_byz = None if byz is None else n - 1
    for pid, evs in per.items():
        me = rot[pid]
        honest = me != spec_byz
        out: list[dict[str, Any]] = []
        for e, sops in evs:
            spec_ops: list[dict[str, Any]] = []
            tc_taken = False  # an equivocating leader proposes twice on one TC
            for o in sops:
                kind = o["op"]
                if kind == "got":
                    src = rot[o["from"]]
                    g: dict[str, Any] = {"op": "got", "m": o["m"], "from": src, "v": o["v"]}
                    if o["m"] == "Timeout":
                        keep = src != spec_byz or me == leader(o["v"] + 1)  # see the module's docstring
                        g.update(prop=ref(o["hp"]) if keep else None, qc=ref(o["hq"]) if keep else None)
                    else:
                        g["cut"] = cut[o["d"]]
                        if honest and o["m"] in ("Prepare", "Confirm"):
                            g["check"] = {f"{'pvote' if o['m'] == 'Prepare' else 'cvote'}[{me}][1][{o['v']}]": g["cut"]}
                    spec_ops.append(g)
                elif kind == "commit" and o.get("via") != "own":
                    c = {"op": "commit", "v": o["v"], "cut": cut[o["d"]], "leader": leader(o["v"])}
                    if honest:
                        c["check"] = {f"committed[{me}][1]": {"tag": "Ref", "view": o["v"], "cut": cut[o["d"]]}}
                    spec_ops.append(c)
                elif honest and kind == "timeout":
                    spec_ops.append({"op": "timer", "timer": "slot1", "choice": {"c": 0}})
                elif honest and kind == "fast":
                    spec_ops.append({"op": "timer", "timer": "fast1", "choice": {"c": 0}})
                elif honest and kind == "propose":
                    spec_ops.append({"op": "timer", "timer": "lead1", "choice": {"c": cut[o["d"]] if o["free"] else 0}})
                elif not honest and kind == "propose" and o.get("equivocal") and not o["free"]:
                    pass  # its second Prepare after a TC with a winner ignores the winner: every honest replica
                    # rejects it (the spec's Byzantine replica does not send what no honest replica accepts)
                elif not honest and kind in ("timeout", "propose"):
                    why = _byzantine_acts(o, me, rot, cut, leader, params, spec_ops, tc_taken)
                    if why is not None:
                        inst.skipped = f"slot {s}: {why}"
                        return inst
                    tc_taken = tc_taken or kind == "propose"
            _add(out, e, pid, spec_ops, sops)
        inst.logs[me] = out
        inst.sources[me] = pid
        inst.ended[me] = ended[pid]
    return inst


def _cuts(o: dict[str, Any]) -> list[tuple[str, int]]:
    """(cut digest, view) of every cut a consensus op names."""
    out = [(o["d"], o["v"])] if "d" in o else []
    for key in ("hp", "hq"):
        if o.get(key) is not None:
            out.append((o[key][1], o[key][0]))
    for entry in o.get("tc") or ():
        for pair in entry[1:]:
            if pair is not None:
                out.append((pair[1], pair[0]))
    return out


def _byzantine_acts(o: dict[str, Any], me: int, rot: dict[int, int], cut: dict[str, int], leader: Any,
                    params: dict[str, int], spec_ops: list[dict[str, Any]], tc_taken: bool) -> str | None:
    """The spec's Byzantine replica's timer steps for its `timeout` or `propose` op (added to `spec_ops`; a
    proposal after a TC is first the step that assembles the TC, unless `tc_taken`), or why it has none."""
    from lockstep.specs.autobahn.messages import Ref

    index = _act_index(params["f"], params["views"], params["proposals"])

    def value(pair: list[Any] | None) -> Any:
        return None if pair is None else Ref(pair[0], cut[pair[1]])

    def act(timer: str, entry: tuple) -> str | None:
        if entry not in index:
            return f"the Byzantine replica's {entry[0]} {entry[1:]} is not one the spec's Byzantine replica makes"
        spec_ops.append({"op": "timer", "timer": timer, "choice": {"a": index[entry]}})
        return None

    v = o["v"]
    if o["op"] == "timeout":
        if not o.get("sent"):
            return None  # it sent nothing (`silent_timeouts`)
        if o["hp"] is not None and o["hp"][0] != v:
            return (f"the Byzantine replica's Timeout of view {v} reports its Prepare of view {o['hp'][0]}; the spec's "
                    "reports only Prepares of the Timeout's view")
        why = act("slot1", ("timeout", v, None))
        if why is None and leader(v + 1) != me:
            why = act("slot1", ("timeout", v, (value(o["hp"]), value(o["hq"]))))
        return why
    if v > 1 and "tc" in o and not tc_taken:
        own = next(((value(hp), value(hq)) for w, hp, hq in o["tc"] if rot[w] == me), None)
        members = frozenset(rot[w] for w, _, _ in o["tc"] if rot[w] != me)
        why = act("lead1", ("tc", v, members, own))
        if why is not None:
            return why
    return act("lead1", ("propose", cut[o["d"]]))


@cache
def _act_index(f: int, views: int, proposals: int) -> dict[tuple, int]:
    """The Byzantine replica's timer choices (`byzantine.acts`) of a consensus instance, by what they do."""
    from lockstep.specs.autobahn.byzantine import acts

    return {entry: i for i, entry in enumerate(acts(f, views, 0, 1, proposals, 0))}


def _window(a: int, h: int, cars: dict, n: int, f: int, byzantine_author: bool, voters: set[int],
            ended: dict[int, bool]) -> Instance:
    """Cars h and h+1 of lane a as cars 1 and 2 of the spec's last lane."""
    spec = "autobahn_byzantine" if byzantine_author else "autobahn"
    inst = Instance(f"lane {a}, cars {h}-{h + 1}", spec, {"f": f, "lanes": 1, "cars": 2, "slots": 1, "views": 1})
    odd = sorted(b for b in voters if b != a and 0 < (b - a) % n <= f)
    if odd:
        inst.skipped = (f"lane {a}: replica {odd[0]} (vote_all) votes for its cars without being a designated voter; "
                        "the spec's Byzantine replica is the last lane's author")
        return inst
    rot = {r: (r + n - 1 - a) % n for r in range(n)}
    lane = n - 1
    merged: dict[int, list[tuple[int, dict[str, Any], list[dict[str, Any]]]]] = defaultdict(list)
    for height in (h, h + 1):
        for pid, evs in cars.get((a, height), {}).items():
            merged[pid].extend(evs)
    for pid, evs in merged.items():
        evs.sort(key=lambda x: x[0])
        me = rot[pid]
        out: list[dict[str, Any]] = []
        i = 0
        while i < len(evs):  # an event may hold ops of both cars: one projected event
            k, e, cops = evs[i]
            while i + 1 < len(evs) and evs[i + 1][0] == k:
                i += 1
                cops = cops + evs[i][2]
            i += 1
            spec_ops = []
            for o in cops:
                if o["op"] != "got" or pid == a and o["m"] == "Car":
                    continue
                tip = 2 * (o["h"] - h + 1) - 1  # branch 0 of the spec's last lane, which may fork: tips 1, 3 (`Layout`)
                g = {"op": "got", "m": o["m"], "from": rot[o["from"]], "lane": lane, "tip": tip}
                if o["m"] == "PoA":
                    g["signers"] = sorted(rot[w] for w in o["signers"])
                spec_ops.append(g)
            _add(out, e, pid, spec_ops, cops)
        inst.logs[me] = out
        inst.sources[me] = pid
        inst.ended[me] = ended[pid]
    return inst


def _add(out: list[dict[str, Any]], e: dict[str, Any], pid: int, spec_ops: list[dict[str, Any]],
         raw: list[dict[str, Any]]) -> None:
    """Append a projected event (its steps, and the ids of the messages its raw ops sent and received), or carry
    its receipts to the next one when it is no step and sends nothing."""
    sent = list(dict.fromkeys(i for o in raw for i in o.get("sent", ())))
    recv = list(dict.fromkeys(i for o in raw for i in o.get("recv", ())))
    carried = out.pop() if out and out[-1].get("carry") else None
    if carried is not None:
        recv = [*carried["recv"], *recv]
    if not spec_ops and not sent:
        out.append({"carry": True, "recv": recv})
        return
    line: dict[str, Any] = {"action": "ops", "args": {"at": f"replica {pid}, event {e['seq']}", "ops": spec_ops},
                            LINE: e.get(LINE)}
    if sent:
        line["sent"] = sent
    if recv:
        line["recv"] = list(dict.fromkeys(recv))
    if e.get("time") is not None:
        line["time"] = e["time"]
    out.append(line)
