"""Validation of a P-SMR run's trace against the spec's rules (`lockstep.specs.psmr`).

The running service has thousands of commands, so its trace is not replayed through the spec's
bounded global program; instead every rule the spec states is checked on the recorded events,
with the spec's own C-G and command semantics (`lockstep.specs.psmr.commands`):

- integrity: each sequencer numbers its stream 0, 1, 2, ... and each worker delivers that stream's
  commands in order, each at most once; every delivered command was ordered for that group, which
  C-G addresses;
- agreement: worker g's delivery sequence at every replica is a prefix of its group's stream;
- acyclic order: the union of all delivery sequences has no cycle (networkx);
- the barrier: a single-group command is executed by its one worker; a multi-group command by the
  lowest worker of C-G(C), after a signal from every other one, which resumes only after it;
- execution in delivery order at each worker, dependent commands in the same relative order at
  every replica (Lamport clocks of the replica's signal/go frames order them), and equal results:
  each replica's executions, replayed in that order on a sequential store, give the replies it
  recorded, so replicas that executed the same commands hold the same state.

A crashed replica's trace ends early; what it recorded is checked like the rest.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from lockstep.specs.psmr.commands import CG_FUNCTIONS, Command, execute


class RunInvalid(Exception):
    """The run broke a rule of the spec; the message says which and where."""


@dataclass
class PsmrValidation:
    events: int = 0
    commands: int = 0
    executions: int = 0
    notes: list[str] = field(default_factory=list)


def _read(path: str) -> list[dict[str, Any]]:
    """A process's log (in the event schema, `lockstep.trace`) as records: its header first (`k` "header", with
    its role), then each event's arguments with `k` its action and `at` its place (file:line)."""
    out: list[dict[str, Any]] = []
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                if fh.readline():  # only the last line may be torn (a killed process)
                    raise RunInvalid(f"{path}:{n}: not JSON") from None
                continue
            if not isinstance(obj, dict) or obj.get("end") is True:
                continue
            if "schema" in obj:
                _check_header(obj, f"{path}:{n}")
                out.append({**obj, "k": "header", "pid": obj.get("node")})
            elif isinstance(obj.get("action"), str) and isinstance(obj.get("args", {}), dict):
                e = {**obj.get("args", {}), "k": obj["action"], "at": f"{path}:{n}"}
                bad = [a for a in INTEGER_ARGS.get(e["k"], ()) if not _integer(e.get(a))]
                if bad:
                    raise RunInvalid(f"{path}:{n}: a{'n' if e['k'][0] in 'aeiou' else ''} {e['k']} event needs integer "
                                     f"args {', '.join(INTEGER_ARGS[e['k']])}; {', '.join(bad)} is not")
                out.append(e)
            else:
                raise RunInvalid(f"{path}:{n}: not an event of the schema (node, seq, action, args)")
    return out


INTEGER_ARGS = {"order": ("seq", "c"), "deliver": ("seq", "c"), "signal": ("c", "lc"), "resume": ("c", "lc"),
                "exec": ("c", "lc", "v")}  # the arguments of each event the rules read, all integers
ROLES = ("sequencer", "hub", "worker", "client")


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_header(obj: dict[str, Any], where: str) -> None:
    """A process's header names its role, its place (two integers) and the service's shape; RunInvalid otherwise."""
    svc, at = obj.get("service"), obj.get("at")
    if obj.get("role") not in ROLES or not (isinstance(at, list) and len(at) == 2 and all(map(_integer, at))):
        raise RunInvalid(f"{where}: a process's header names its role ({', '.join(ROLES)}) and its place (at: two "
                         "integers)")
    if not (isinstance(svc, dict) and all(_integer(svc.get(k)) and svc[k] >= 1 for k in ("workers", "replicas", "keys"))
            and svc.get("cg") in CG_FUNCTIONS):
        raise RunInvalid(f"{where}: the header's service needs workers, replicas and keys (positive integers) and cg "
                         f"(one of {', '.join(CG_FUNCTIONS)})")


def _command(e: dict[str, Any], keys: int) -> Command:
    """The command a sequencer's event orders (its `cmd`: [op, key, value], as the service issues them)."""
    cmd = e.get("cmd")
    ok = isinstance(cmd, list) and len(cmd) == 3
    if ok:
        op, key, value = cmd
        ok = (op == "putall" and key is None or op in ("get", "put") and _integer(key) and 0 <= key < keys) and \
            (value is None if op == "get" else _integer(value))
    if not ok:
        raise RunInvalid(f"{e['at']}: an order event's cmd must be [op, key, value]: get with a key (0..{keys - 1}), put "
                         f"with a key and an integer value, putall with a value; got {json.dumps(cmd)[:80]}")
    return Command(*cmd)


def validate_run(traces: dict[int, str]) -> PsmrValidation:
    """Check the per-process traces of one run (pid -> JSONL path); RunInvalid on the first broken rule."""
    logs = {p: _read(path) for p, path in traces.items()}
    res = PsmrValidation(events=sum(len(v) for v in logs.values()))
    header = next((e for v in logs.values() for e in v if e.get("k") == "header"), None)
    if header is None:
        raise RunInvalid("no process recorded a header")
    svc = header["service"]
    W, R, K = svc["workers"], svc["replicas"], svc["keys"]
    cg = CG_FUNCTIONS[svc["cg"]]
    roles = {p: (v[0]["role"], tuple(v[0]["at"])) for p, v in logs.items() if v and v[0].get("k") == "header"}
    # the sequencers' streams
    streams: dict[int, list[int]] = {}
    commands: dict[int, Command] = {}
    for p, (role, at) in roles.items():
        if role != "sequencer":
            continue
        g, seq = at[0], []
        for e in logs[p]:
            if e["k"] != "order":
                continue
            if e["seq"] != len(seq):
                raise RunInvalid(f"sequencer {g} numbered a command {e['seq']} after {len(seq)} ({e['at']})")
            c = _command(e, K)
            if g not in cg(c, W, K):
                raise RunInvalid(f"sequencer {g} ordered command {e['c']} ({c}), which C-G does not address to g_{g} "
                                 f"({e['at']})")
            commands[e["c"]] = c
            seq.append(e["c"])
        streams[g] = seq
    res.commands = len(commands)
    graph = nx.DiGraph()
    per_replica: dict[int, list[tuple[int, int, dict[str, Any]]]] = defaultdict(list)  # replica -> (worker, idx, ev)
    for p, (role, at) in roles.items():
        if role != "worker":
            continue
        r, w = at
        stream = streams.get(w, [])
        delivered: list[int] = []
        for e in logs[p]:
            k = e["k"]
            if k == "deliver":
                i = len(delivered)
                if e["seq"] != i or i >= len(stream) or stream[i] != e["c"]:
                    ordered = f"numbered command {stream[i]} {i}" if i < len(stream) else f"numbered only {len(stream)} commands"
                    raise RunInvalid(f"replica {r} worker {w} delivered command {e['c']} as number {e['seq']} of "
                                     f"g_{w}, its delivery number {i}, but the sequencer of g_{w} {ordered} ({e['at']})")
                if delivered:
                    graph.add_edge(delivered[-1], e["c"])
                delivered.append(e["c"])
            per_replica[r].append((w, len(per_replica[r]), e))
    if not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        raise RunInvalid(f"the delivery order has a cycle: {cycle[:4]}")
    for r, evs in per_replica.items():
        res.executions += _check_replica(r, evs, commands, cg, W, K)
    _check_dependent_order(per_replica, commands, W, K)
    if R > len(per_replica):
        res.notes.append(f"{R - len(per_replica)} replica(s) recorded nothing")
    return res


def _check_replica(r: int, evs: list[tuple[int, int, dict[str, Any]]], commands: dict[int, Command], cg: Any,
                   W: int, K: int) -> int:
    """One replica: each worker in its delivery order; the barrier by the Lamport clocks of its frames; and
    replies equal to a sequential replay of the replica's executions."""
    queue: dict[int, list[int]] = defaultdict(list)
    pos: dict[int, int] = defaultdict(int)
    signals: dict[int, dict[int, int]] = defaultdict(dict)  # cid -> worker -> lc
    resumes: list[tuple[int, int, int, str]] = []  # (worker, cid, lc, where)
    execs: dict[int, tuple[int, int, int, str]] = {}  # cid -> (lc, worker, value, where)
    for w, _, e in evs:
        k = e["k"]
        if k == "deliver":
            queue[w].append(e["c"])
            continue
        if k not in ("exec", "signal", "resume"):
            continue
        cid = e["c"]
        if pos[w] >= len(queue[w]) or queue[w][pos[w]] != cid:
            raise RunInvalid(f"replica {r} worker {w}: {k} of command {cid} out of its delivery order ({e['at']})")
        groups = cg(commands[cid], W, K)
        leader = min(groups)
        if k == "signal":
            if w == leader:
                raise RunInvalid(f"replica {r} worker {w} signalled command {cid}, which it executes itself ({e['at']})")
            signals[cid][w] = e["lc"]
        elif k == "resume":
            resumes.append((w, cid, e["lc"], e["at"]))
            pos[w] += 1
        else:
            if w != leader:
                raise RunInvalid(f"replica {r}: command {cid} executed by worker {w}, not {leader}, the lowest of C-G "
                                 f"({e['at']})")
            if cid in execs:
                raise RunInvalid(f"replica {r}: command {cid} executed twice ({e['at']})")
            execs[cid] = (e["lc"], w, e["v"], e["at"])
            pos[w] += 1
    for cid, (lc, w, _, at) in execs.items():
        groups = cg(commands[cid], W, K)
        early = [o for o in sorted(groups - {w}) if not signals[cid].get(o, lc) < lc]
        if early:
            raise RunInvalid(f"replica {r}: command {cid} executed before the signals of workers {early} ({at})")
    for w, cid, lc, at in resumes:
        if cid not in execs or not execs[cid][0] < lc:
            raise RunInvalid(f"replica {r} worker {w} resumed after command {cid} before it was executed ({at})")
    store = [0] * K
    for cid, (_lc, _w, v, at) in sorted(execs.items(), key=lambda x: (x[1][0], x[1][1])):
        want = execute(commands[cid], store)
        if want != v:
            raise RunInvalid(f"replica {r}: command {cid} ({commands[cid]}) replied {v}; executed in the replica's "
                             f"order on the spec's store it gives {want} ({at})")
    return len(execs)


def _check_dependent_order(per_replica: dict[int, list], commands: dict[int, Command], W: int, K: int) -> None:
    """Dependent commands executed at two replicas are in the same relative order at both: per key, the
    writes in the same order, and each read after the same number of those writes."""
    sigs: dict[int, dict[int, tuple[list[int], dict[int, int]]]] = {}
    at: dict[int, dict[int, str]] = {}  # replica -> command -> where it executed it
    for r, evs in per_replica.items():
        order = sorted(((e["lc"], w, e["c"]) for w, _, e in evs if e["k"] == "exec"))
        at[r] = {e["c"]: e["at"] for _, _, e in evs if e["k"] == "exec"}
        per_key: dict[int, tuple[list[int], dict[int, int]]] = defaultdict(lambda: ([], {}))
        for _, _, cid in order:
            c = commands[cid]
            for k in c.keys(K):
                writes, reads = per_key[k]
                if c.writes():
                    writes.append(cid)
                else:
                    reads[cid] = len(writes)
        sigs[r] = per_key
    reps = sorted(sigs)
    for a, b in zip(reps, reps[1:]):
        for k in set(sigs[a]) & set(sigs[b]):
            (wa, ra), (wb, rb) = sigs[a][k], sigs[b][k]
            common = set(wa) & set(wb)
            fa, fb = [c for c in wa if c in common], [c for c in wb if c in common]
            if fa != fb:
                i = next(i for i, (x, y) in enumerate(zip(fa, fb)) if x != y)
                raise RunInvalid(f"key {k}: writes {fa[i]} and {fb[i]} executed in different orders at replicas {a} "
                                 f"and {b} ({at[a][fa[i]]}, {at[b][fb[i]]})")
            if len(common) == len(wa) == len(wb):
                for cid in set(ra) & set(rb):
                    if ra[cid] != rb[cid]:
                        raise RunInvalid(f"key {k}: read {cid} executed after {ra[cid]} writes at replica {a} and "
                                         f"{rb[cid]} at replica {b} ({at[a][cid]}, {at[b][cid]})")
