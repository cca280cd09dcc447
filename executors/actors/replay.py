"""Replay a counterexample on real processes: a controlled scheduler imposes the trace's order.

The processes run as in `lockstep run`, but every message waits in the relay until the
scheduler releases it, and timers fire only when the scheduler says so. Step by step the
scheduler does what the counterexample did (deliver this message, fire that timer, crash that
process) and compares the local state each real process reports with the trace's. At the end
it assembles the global state from what the real processes hold — their reported local states
and the messages really in flight in the relay — and evaluates the spec's invariants on it.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from typing import Any

from lockstep.checker.render.text import model_state_lines
from lockstep.checker.replay import ReplayResult
from lockstep.checker.trace import Trace, TraceError
from lockstep.checker.validation.actors import validate
from lockstep.checker.validation.runtrace import Mismatch, merge
from lockstep.specs.lang.actors import ActorProgram, in_flight
from lockstep.specs.lang.jsonvalues import from_json, to_json

from ..cluster import Cluster
from ..controlled import STEP_TIMEOUT, ProcessReplay
from ..relay import Relay
from .run import ActorCluster


async def replay_actors(trace: Trace, checked: ReplayResult, say: Callable[[str], None]) -> ProcessReplay:
    """Replay a checked counterexample of an actor spec on real processes (see the module docstring)."""
    model = checked.model
    prog: ActorProgram = model.prog
    system = prog.system
    actions = [s.action for s in trace.steps[1:]]
    n = system.proc.size
    relay = Relay(None, controlled=True)
    with tempfile.TemporaryDirectory(prefix="lockstep-replay-") as tmp:
        cluster = ActorCluster(trace.spec, dict(model.params), n, tmp, 0, relay, controlled=True)
        try:
            result = await _drive(cluster, relay, model, checked.states, actions, checked.labels[1:],
                                  trace.property or {}, say)
            await cluster.stop()
        finally:
            cluster.close()
        merged = merge({p: cluster.trace_path(p) for p in range(n)}, f"{tmp}/run.jsonl", trace.spec, model.name,
                       dict(model.params))  # type: ignore[arg-type]
        try:
            validate(merged)
            result.validated = True
        except (Mismatch, TraceError) as e:
            say(f"  the processes' own trace does not validate: {e}")
    return result


async def _drive(cluster: Cluster, relay: Relay, model: Any, states: list[tuple], actions: list[Any],
                 labels: list[str], prop: dict[str, Any], say: Callable[[str], None]) -> ProcessReplay:
    prog: ActorProgram = model.prog
    system = prog.system
    run = _Replaying(cluster, relay, prog, say)
    start_choice = _start_choices(prog, states[0])
    await cluster.start(start_choice)
    for p in system.pids:
        if start_choice.get(p) is not None:
            run.took(await _next_event(cluster, p, "start"))
    _compare(prog, states[0], run.local, 0, "init")
    say("  0  init: every process started")
    for i, (action, label) in enumerate(zip(actions, labels), start=1):
        await run.perform(i, action["action"], action.get("args", {}), label)
        _compare(prog, states[i], run.local, i, label)
    steps = len(actions)
    if prop.get("kind") == "step":
        lid = next((k for k, t in enumerate(prog.transitions) if t.label == prop.get("name")), None)
        if lid is None:
            raise TraceError(f"the trace claims step {prop.get('name')} fails, but the spec has no such step")
        failing = model.label_json(lid)
        failed = await run.perform(steps + 1, failing["action"], failing["args"], prop["name"], failure=True)
        conclusion = (f"replayed {steps} steps on {len(system.pids)} processes; then the real handler failed, "
                      f"as in the counterexample: {failed}")
        say(conclusion)
        return ProcessReplay(steps, None, conclusion, False, failed)
    expected = len(in_flight(prog, states[-1]))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STEP_TIMEOUT
    while len(_envelopes(system, relay, run.delivered)) < expected and loop.time() < deadline:
        await asyncio.sleep(0.01)
    real = _assemble(prog, run.local, _envelopes(system, relay, run.delivered), run.killed, run.history)
    say("  the real processes' global state (local states reported, messages held in the relay):")
    for line in model_state_lines(model, real):
        say(line.plain)
    index = model.violated(real)
    bad = model.invariant_names[index] if index >= 0 else None
    claimed = prop.get("name") if prop.get("kind") == "invariant" else None
    if claimed in model.invariant_names and not model.invariant_holds(claimed, real):
        bad = claimed  # the invariant the counterexample shows (with --invariant NAME, others may fail too)
    if prop.get("kind") == "deadlock" and bad is None:
        if model.successors(real):
            raise TraceError(f"the trace claims a deadlock after step {steps}, but the real processes can still act")
        conclusion = (f"replayed {steps} steps on {len(system.pids)} processes; no handler of any process is enabled "
                      "in their final state: the deadlock, as in the counterexample")
        say(conclusion)
        return ProcessReplay(steps, None, conclusion, False, deadlocked=True)
    if bad is None:
        conclusion = f"replayed {steps} steps on {len(system.pids)} processes; the invariants hold in their final state"
    else:
        conclusion = (f"replayed {steps} steps on {len(system.pids)} processes; their final state violates "
                      f"invariant {bad}, as in the counterexample")
    say(conclusion)
    return ProcessReplay(steps, bad, conclusion, False)


class _Replaying:
    """What the real processes hold so far, and how to make them take one step of the trace."""

    def __init__(self, cluster: Cluster, relay: Relay, prog: ActorProgram, say: Callable[[str], None]):
        self.cluster, self.relay, self.prog, self.say = cluster, relay, prog, say
        self.system = prog.system
        self.local = {p: self.system.init_locals[p] for p in self.system.pids}
        self.history: set[Any] = set()
        self.delivered: list[tuple[int, int, Any]] = []  # on a duplicating network, what was delivered stays in flight
        self.killed: set[int] = set()

    def took(self, ev: dict[str, Any]) -> None:
        """Record the local state and observations a process reported."""
        self.local[ev["pid"]] = self.system.local_from_json(ev["state"])
        self.history |= _observed(self.prog, ev)

    async def perform(self, i: int, name: str, args: dict[str, Any], label: str, failure: bool = False) -> str | None:
        """Make the processes take step `i`; with `failure`, expect the handler to fail and return its message."""
        cluster, relay, system, prog = self.cluster, self.relay, self.system, self.prog
        if name == "deliver":
            src, dst = _int(args["src"]), _int(args["dst"])
            msg = to_json(system.message, _itf_msg(prog, args["msg"]))
            choice = {k: v for k, v in args.items() if k not in ("src", "dst", "msg")}
            await _wait_held(relay, src, dst, msg)
            relay.release(src, dst, msg, _decode_choice(prog, name, args) if choice else None)
            if system.net.duplicating:
                self.delivered.append((src, dst, msg))
            ev = await _next_event(cluster, dst, label, failure)
            what = f"process {dst} received it and ran its handler"
        elif name == "timeout":
            p, timer = _int(args["p"]), args["timer"]
            choice = {k: v for k, v in args.items() if k not in ("p", "timer")}
            cluster.send(p, {"op": "fire", "timer": timer, "choice": _decode_choice(prog, name, args) if choice else None})
            ev = await _next_event(cluster, p, label, failure)
            what = f"process {p}'s timer fired"
        elif name == "forge" and not failure:
            src, dst = _int(args["src"]), _int(args["dst"])
            msg = to_json(system.message, _itf_msg(prog, args["msg"]))
            cluster.send(src, {"op": "forge", "dst": dst, "msg": msg})
            await _next_event(cluster, src, label)
            self.say(f"  {i}  {label}: Byzantine process {src} forged it")
            return None
        elif name == "crash" and not failure:
            p = _int(args["p"])
            await cluster.kill(p)
            self.killed.add(p)
            self.say(f"  {i}  {label}: process {p} killed (SIGKILL)")
            return None
        elif name == "drop" and not failure:
            src, dst = _int(args["src"]), _int(args["dst"])
            msg = to_json(system.message, _itf_msg(prog, args["msg"]))
            await _wait_held(relay, src, dst, msg)
            relay.discard(src, dst, msg)
            self.say(f"  {i}  {label}: the relay dropped it")
            return None
        else:
            raise TraceError(f"step {i}: {name} steps cannot be replayed on processes")
        if ev["kind"] == "failure":
            if not failure:
                raise TraceError(f"{label}: process {ev['pid']} failed: {ev.get('message')}")
            self.say(f"  {i}  {label}: {what}, which failed: {ev.get('message')}")
            return str(ev.get("message"))
        if failure:
            raise TraceError(f"{label}: the real handler did not fail, but the trace says the spec's step fails here")
        self.took(ev)
        self.say(f"  {i}  {label}: {what}")
        return None


def _start_choices(prog: ActorProgram, init: tuple) -> dict[int, dict[str, Any] | None]:
    """For each process with a start handler, the choice of it (JSON form) that leads to the trace's initial state."""
    from lockstep.checker import interpret

    system = prog.system
    pre = tuple(prog.init_defaults)
    start = next((t for t in prog.init_transitions if interpret.run_transition(prog, t, pre) == init), None)
    if start is None:
        raise TraceError("no start of the processes leads to the trace's initial state")
    out: dict[int, dict[str, Any] | None] = {p: None for p in system.pids}
    for s in system.steps:
        if s.kind == "start":
            out[s.pid] = {}
    for (name, v), dom in zip(start.args, start.arg_doms):
        choice, _, pid = name.rpartition("@")
        out[int(pid)][choice] = to_json(dom, v)  # type: ignore[index]
    return out


def _decode_choice(prog: ActorProgram, action: str, args: dict[str, Any]) -> dict[str, Any]:
    """The JSON form of a step's choice arguments (from their ITF form in the trace), in the domains of the process
    that takes the step (a Byzantine process's handlers choose from domains of their own)."""
    fixed = ("src", "dst", "msg") if action == "deliver" else ("p", "timer")
    who = "dst" if action == "deliver" else "p"
    pid, chosen = _int(args[who]), set(args) - set(fixed)
    t = next((t for t in prog.transitions if t.action == action and dict(t.args).get(who) == pid
              and chosen <= {n for n, _ in t.args}), None)
    if t is None:
        raise TraceError(f"no {action} step of process {pid} chooses {', '.join(sorted(chosen))}: the trace is not "
                         "one of this spec's")
    doms = dict(zip((n for n, _ in t.args), t.arg_doms))
    return {k: to_json(doms[k], _itf_value(doms[k], v)) for k, v in args.items() if k not in fixed}


def _itf_value(dom: Any, v: Any) -> Any:
    from lockstep.checker.itf import encode_typed

    for x in dom.values():
        if encode_typed(dom, x) == v:
            return x
    raise TraceError(f"{v!r} is not a value of {dom.describe()}")


def _itf_msg(prog: ActorProgram, v: Any) -> Any:
    return _itf_value(prog.system.message, v)


def _int(v: Any) -> int:
    if isinstance(v, dict) and "#bigint" in v:
        return int(v["#bigint"])
    if isinstance(v, int):
        return v
    raise TraceError(f"expected an integer, got {v!r}")


async def _wait_held(relay: Relay, src: int, dst: int, msg: Any) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STEP_TIMEOUT
    while not any(s == src and d == dst and m == msg for s, d, m, _ in relay.held):
        if loop.time() > deadline:
            raise TraceError(f"process {src} never sent {msg} to process {dst}: the real processes diverge "
                             "from the counterexample")
        await asyncio.sleep(0.005)


async def _next_event(cluster: Cluster, pid: int, label: str, failure: bool = False) -> dict[str, Any]:
    q = cluster.members[pid].reports
    try:
        while True:
            msg = await asyncio.wait_for(q.get(), STEP_TIMEOUT)
            op = msg.get("op")
            if op == "event":
                ev = msg["event"]
                if ev.get("kind") == "failure" and not failure:
                    raise TraceError(f"{label}: process {pid} failed: {ev.get('message')}")
                if ev.get("kind") in ("start", "message", "timeout", "forge", "failure"):
                    return ev
            elif op == "deferred":
                raise TraceError(f"{label}: process {pid} did not take this step: its handler is not enabled")
            elif op == "gone":
                raise TraceError(f"{label}: process {pid} exited")
    except TimeoutError:
        raise TraceError(f"{label}: process {pid} did not report within {STEP_TIMEOUT:.0f} s") from None


def _compare(prog: ActorProgram, state: tuple, local: dict[int, tuple], i: int, label: str) -> None:
    system = prog.system
    for p in system.pids:
        want = tuple(state[j] for j in system.gslots[p])
        if local[p] != want:
            raise TraceError(f"step {i} ({label}): process {p}'s real state {system.local_json(local[p])} "
                             f"is not the counterexample's {system.local_json(want)}")


def _observed(prog: ActorProgram, ev: dict[str, Any]) -> set[Any]:
    """The operations a real process reported observing in an event."""
    dom = prog.system.observation
    return {from_json(dom, j, "observed") for j in ev.get("observed", [])} if dom is not None else set()


def _envelopes(system: Any, relay: Relay, delivered: list[tuple[int, int, Any]]) -> list[tuple[int, int, Any]]:
    """The messages in flight among the real processes: those held in the relay, and on a duplicating network
    (where delivery leaves a message in flight) those delivered, once each."""
    held = [(s, d, from_json(system.message, m, "msg")) for s, d, m, _ in relay.held]
    if not delivered:
        return held
    again = {(s, d, from_json(system.message, m, "msg")) for s, d, m in delivered}
    return held + sorted(again - set(held), key=repr)


def _assemble(prog: ActorProgram, local: dict[int, tuple], envelopes: list[tuple[int, int, Any]], killed: set[int],
              history: set[Any]) -> tuple:
    """The global state made of the real processes' local states and observations and the messages in flight."""
    system = prog.system
    state = list(prog.init_defaults)
    for p, values in local.items():
        for j, v in zip(system.gslots[p], values):
            state[j] = v
    net = prog.field("network")
    state[net.base:net.base + net.count] = net.encode(system.net.value_of(envelopes))
    names = {f.name for f in prog.fields}
    if "history" in names:
        h = prog.field("history")
        state[h.base:h.base + h.count] = h.encode(frozenset(history))
    if "crashed" in names:
        c = prog.field("crashed")
        state[c.base:c.base + c.count] = c.encode(frozenset(killed))
    return tuple(state)
