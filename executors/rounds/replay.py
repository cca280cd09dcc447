"""Replay a counterexample of a rounds spec on real node processes, round by round.

The nodes run as in `lockstep run` (one process per node, the round barrier), started with the
trace's initiators. A round of the trace is two checker steps, `transmit` then `receive`; for
each round the runner tells every node to take it, forcing the trace's values of the handlers'
choice parameters. Each node reports its local state after its transmit step and after its
receive step, what it broadcast and what it heard. After each step the global state assembled
from these reports is compared with the trace's, and at the end the spec's invariants are
evaluated on it.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from typing import Any

from lockstep.checker import interpret
from lockstep.checker.model import Model
from lockstep.checker.render.text import model_state_lines
from lockstep.checker.replay import ReplayResult
from lockstep.checker.trace import Trace, TraceError
from lockstep.checker.validation.rounds import BroadcastViolation, validate_rounds
from lockstep.checker.validation.runtrace import Mismatch, merge
from lockstep.specs.lang.rounds import PHASES, RoundsProgram, RoundsSystem

from ..controlled import STEP_TIMEOUT, ProcessReplay
from .process import choice_json
from .run import RoundsCluster

Plan = list[tuple[str, str, dict[int, dict[str, Any]]]]  # per step: action, label, pid -> its handler's choice


async def replay_rounds(trace: Trace, checked: ReplayResult, say: Callable[[str], None]) -> ProcessReplay:
    """Run the rounds of a counterexample (already re-checked against the spec) on real processes."""
    model = checked.model
    prog: RoundsProgram = model.prog  # type: ignore[attr-defined]
    prop = trace.property or {}
    if prop.get("kind") == "step":
        raise TraceError("a counterexample whose round fails cannot be replayed on processes")
    sysm = prog.system
    n = sysm.graph.number_of_nodes()
    initiators = _initiators(prog, checked.states[0])
    plan = _plan(model, checked.states, [s.action for s in trace.steps])
    with tempfile.TemporaryDirectory(prefix="lockstep-replay-") as tmp:
        cluster = RoundsCluster(trace.spec, dict(model.params), n, tmp, 0, controlled=True)
        try:
            result = await _drive(cluster, model, checked.states, plan, initiators, say)
            await cluster.stop()
        finally:
            cluster.close()
        merged = merge({p: cluster.trace_path(p) for p in range(n)}, f"{tmp}/run.jsonl", trace.spec, model.name,
                       dict(model.params))  # type: ignore[arg-type]
        try:
            res = validate_rounds(merged)
            result.validated = res.incomplete is None
            if res.incomplete:
                say(f"  the processes' own trace validates only in part: {res.incomplete}")
        except BroadcastViolation as e:
            result.validated = True
            say(f"  the processes' own trace validates up to the broadcasts of round {e.round}, which violate "
                f"invariant {e.invariant}")
        except Mismatch as e:
            say(f"  the processes' own trace does not validate: {e.render()}")
        except TraceError as e:
            say(f"  the processes' own trace does not validate: {e}")
    return result


def _initiators(prog: RoundsProgram, init: tuple) -> frozenset[int]:
    """The initiators of the spec's initial transition that leads to the trace's initial state."""
    pre = tuple(prog.init_defaults)
    start = next((t for t in prog.init_transitions if interpret.run_transition(prog, t, pre) == init), None)
    if start is None:
        raise TraceError("no set of initiators leads to the trace's initial state")
    return frozenset(dict(start.args)["initiators"])


def _plan(model: Model, states: list[tuple], actions: list[Any]) -> Plan:
    """Each step's action, label and per-node choices (JSON): the trace's transition between its states."""
    prog: RoundsProgram = model.prog  # type: ignore[attr-defined]
    sysm = prog.system
    out: Plan = []
    for i in range(1, len(states)):
        lid = next(lid for lid, t in model.successors(states[i - 1])
                   if t == states[i] and model.label_json(lid) == actions[i])
        t = prog.transitions[lid]
        per: dict[int, list[tuple[str, Any]]] = {p: [] for p in sysm.gslots}
        for name, v in t.args:
            choice, _, pid = name.rpartition("@")
            per[int(pid)].append((choice, v))
        choices = {}
        if t.action in PHASES:
            for p, chosen in per.items():
                step = next(s for s in sysm.steps[(t.action, p)] if s.choice == tuple(chosen))
                choices[p] = choice_json(step)
        out.append((t.action, model.label(lid), choices))
    return out


async def _drive(cluster: RoundsCluster, model: Model, states: list[tuple], plan: Plan, initiators: frozenset[int],
                 say: Callable[[str], None]) -> ProcessReplay:
    prog: RoundsProgram = model.prog  # type: ignore[attr-defined]
    sysm = prog.system
    n = sysm.graph.number_of_nodes()
    chooses = any(s.choice for steps in sysm.steps.values() for s in steps)
    await cluster.start({p: {"initiator": p in initiators} for p in range(n)})
    local = {p: _local(sysm, (await _report(cluster, p, "started", "init"))["event"], p) for p in range(n)}
    real = _assemble(prog, local, {}, 0, PHASES[0])
    _compare(model, states[0], real, 0, "init")
    say(f"  0  init: every node started; initiators {sorted(initiators)}")
    r, events, after, finished = 0, {}, local, False
    for i, (action, label, choices) in enumerate(plan, start=1):
        if action == "transmit":
            r += 1
            receive = plan[i][2] if i < len(plan) and plan[i][0] == "receive" else {}
            for p in range(n):
                cmd: dict[str, Any] = {"op": "round", "round": r}
                if chooses:
                    cmd["choice"] = {"transmit": choices[p], **({"receive": receive[p]} if receive else {})}
                cluster.send(p, cmd)
            reports = {p: await _report(cluster, p, "done", label, r) for p in range(n)}
            events = {p: rep["event"] for p, rep in reports.items()}
            after = {p: _local(sysm, events[p], p) for p in range(n)}
            mid = {p: _local(sysm, {"state": rep.get("transmitted")}, p) for p, rep in reports.items()}
            finished = all(rep.get("finished") for rep in reports.values())
            real = _assemble(prog, mid, events, r - 1, PHASES[1])
            spoke = sorted(p for p in range(n) if events[p].get("broadcast") is not None)
            what = f"nodes {spoke} broadcast" if spoke else "no node broadcast"
            say(f"  {i}  {label}: round {r}: {what}; every node reported what it heard")
        elif action == "receive":
            real = _assemble(prog, after, events, r, PHASES[0])
            say(f"  {i}  {label}: every node ran its receive step")
        else:
            if not finished:
                raise TraceError(f"step {i} ({label}): the trace stutters, but not every real node has terminated")
            say(f"  {i}  {label}: every node has terminated; nothing to run")
        _compare(model, states[i], real, i, label)
    say("  the real processes' global state (local states, broadcasts and what each node heard, as reported):")
    for line in model_state_lines(model, real):
        say(line.plain)
    index = model.violated(real)
    bad = model.invariant_names[index] if index >= 0 else None
    done = (f"replayed {len(plan)} step{'' if len(plan) == 1 else 's'} ({r} round{'' if r == 1 else 's'}) "
            f"on {n} processes")
    conclusion = (f"{done}; the invariants hold in their final state" if bad is None else
                  f"{done}; their final state violates invariant {bad}, as in the counterexample")
    say(conclusion)
    return ProcessReplay(len(plan), bad, conclusion, False)


def _local(sysm: RoundsSystem, ev: dict[str, Any], p: int) -> tuple:
    try:
        return sysm.local_from_json(ev.get("state"), f"node {p}'s state")
    except ValueError as e:
        raise TraceError(f"node {p} reported a state that is not one of the spec's: {e}") from None


async def _report(cluster: RoundsCluster, pid: int, op: str, label: str, r: int | None = None) -> dict[str, Any]:
    """The next report `op` (of round r) from node `pid`; TraceError if it refuses, exits or is silent."""
    q = cluster.members[pid].reports
    try:
        while True:
            rep = await asyncio.wait_for(q.get(), STEP_TIMEOUT)
            kind = rep.get("op")
            if kind == op and (r is None or rep.get("round") == r):
                return rep
            if kind == "rejected":
                raise TraceError(f"{label}: node {pid} refused round {rep.get('round')}: {rep.get('reason')}")
            if kind == "gone":
                raise TraceError(f"{label}: node {pid} exited")
    except TimeoutError:
        raise TraceError(f"{label}: node {pid} did not report within {STEP_TIMEOUT:.0f} s") from None


def _assemble(prog: RoundsProgram, local: dict[int, tuple], events: dict[int, dict[str, Any]], rounds: int,
              phase: str) -> tuple:
    """The global state made of the nodes' local states and what they broadcast and heard in the last round."""
    sysm = prog.system
    state = list(prog.init_defaults)
    for p, values in local.items():
        for j, v in zip(sysm.gslots[p], values):
            state[j] = v
    for name, value in (("round", rounds), ("phase", phase)):
        f = prog.field(name)
        state[f.base:f.base + f.count] = f.encode(value)
    if events:
        outbox, inbox = prog.field("outbox").base, prog.field("inbox").base
        sets: dict[str, set[int]] = {"broadcasters": set(), "collisions": set(), "conflicts": set()}
        for p, ev in events.items():
            try:
                state[outbox + p] = sysm.message_rep(ev.get("broadcast"), f"node {p}'s broadcast")
                state[inbox + p] = sysm.message_rep(ev.get("received"), f"node {p}'s reception")
            except ValueError as e:
                raise TraceError(f"node {p} reported a message that is not one of the spec's: {e}") from None
            heard = ev.get("heard") or 0
            if ev.get("broadcast") is not None:
                sets["broadcasters"].add(p)
                if heard:
                    sets["conflicts"].add(p)
            if heard >= 2:
                sets["collisions"].add(p)
        for name, nodes in sets.items():
            f = prog.field(name)
            state[f.base:f.base + f.count] = f.encode(frozenset(nodes))
    return tuple(state)


def _compare(model: Model, want: tuple, real: tuple, i: int, label: str) -> None:
    """TraceError naming the first node, or else the first field, where the processes differ from the trace."""
    if real == want:
        return
    sysm: RoundsSystem = model.prog.system  # type: ignore[attr-defined]
    for p, slots in sysm.gslots.items():
        mine, theirs = tuple(real[j] for j in slots), tuple(want[j] for j in slots)
        if mine != theirs:
            raise TraceError(f"step {i} ({label}): node {p}'s real state {sysm.local_json(mine)} is not the "
                             f"counterexample's {sysm.local_json(theirs)}")
    shown, expected = model.show_state(real), model.show_state(want)
    k = next(k for k in shown if shown[k] != expected[k])
    raise TraceError(f"step {i} ({label}): the processes give {k} = {shown[k]}, the counterexample has {expected[k]}")
