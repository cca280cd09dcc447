"""Trace validation: is a recorded run of real processes a behaviour of its actor spec?

The merged trace's events are taken in Lamport order. Each handler event must be a step of the
spec from the state so far: a delivery is of a message in flight, a timeout of an armed timer;
the local state after, the messages sent and the timers started are what the spec's handler
produces from the logged input and the state before; the invariants hold after it. The first
event that fails is reported with what the spec expected and what the trace shows.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lockstep.specs.lang.actors import ActorProgram, ActorSystem, in_flight
from lockstep.specs.lang.errors import SpecError
from lockstep.specs.lang.jsonvalues import from_json, to_json

from ..codegen import compile_transitions
from ..loader import LoadError, load_model
from ..trace import TraceError
from ..typed_model import TypedModel
from .runtrace import STEP_KINDS, MergedRun, Mismatch

CACHE_LIMIT = 100_000  # entries per memo table of the validator
MAX_EARLY = 10_000  # events read ahead while waiting for every process's start event


def _compact_json(v: Any) -> str:
    """A JSON value in at most 80 characters, for a message."""
    text = json.dumps(v, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _scalar(v: Any) -> bool:
    """Whether a value read from a trace can be a key (JSON arrays and objects cannot)."""
    return not isinstance(v, (list, dict))


def _flat_key(j: Any) -> frozenset | None:
    """A hashable key for a JSON object whose values are all scalars (None otherwise)."""
    if not isinstance(j, dict) or any(isinstance(v, (dict, list)) for v in j.values()):
        return None
    return frozenset((k, (type(v), v)) for k, v in j.items())


@dataclass
class Validation:
    """The outcome of validating a run trace."""

    events: int  # steps checked
    violation: str | None = None  # an invariant that fails after some step
    violation_event: dict[str, Any] | None = None
    failure: str | None = None  # a handler failed, in the real process and in the spec
    incomplete: str | None = None  # why the events after `stopped_at` are not validated
    stopped_at: dict[str, Any] | None = None
    truncated: bool = False  # the trace file lacks its end record
    dropped: int = 0  # messages in flight the validation took as lost (a lossy network may lose any)
    overflow: int = 0  # deliveries the processes dropped (their deferral queue was full); in the spec still in flight
    rejected: int = 0  # frames the processes rejected (malformed, or not from the run)


class Validator:
    """Replays run events against an actor spec's global program and its local steps."""

    def __init__(self, spec: str, params: dict[str, Any]):
        try:
            model = load_model(spec, params)
        except (LoadError, SpecError) as e:
            raise TraceError(f"spec {spec!r} cannot be loaded with the trace's parameters {params}: {e}") from None
        prog = getattr(model, "prog", None)
        if not isinstance(prog, ActorProgram) or not isinstance(model, TypedModel):
            raise TraceError(f"the trace names {spec!r}, which is not an actor spec")
        self.model: TypedModel = model
        self.prog: ActorProgram = prog
        self.system: ActorSystem = prog.system
        self.steps = compile_transitions(prog, prog.transitions)
        self.by_args = {(t.action, tuple(v for _, v in t.args)): fn for t, fn in zip(prog.transitions, self.steps)}
        self.trans_by_args = {(t.action, tuple(v for _, v in t.args)): t for t in prog.transitions}
        self.lossy = bool(model.params.get("lossy"))
        self.capacity_fifo = int(model.params.get("capacity", 1)) if model.params.get("ordered") else 0
        self.dropped = 0  # messages taken as lost by the network (lossy specs)
        self.inits = {tuple(v for _, v in t.args): fn
                      for t, fn in zip(prog.init_transitions, compile_transitions(prog, prog.init_transitions))}
        local = compile_transitions(self.system.local, [s.transition for s in self.system.steps])
        self.local: dict[tuple, tuple[Any, Callable]] = {s.key: (s, fn) for s, fn in zip(self.system.steps, local)}
        self.index: dict[tuple, list] = {}
        for s in self.system.steps:
            self.index.setdefault((s.kind, s.pid, s.src, s.msg, s.timer), []).append((s.key, self.local[s.key]))
        self._msg_cache: dict[Any, Any] = {}
        self._msg_jsons: dict[Any, Any] = {}
        self._effects: dict[tuple, tuple] = {}  # (local step, local state before) -> expected effects
        self._state_json: dict[tuple, Any] = {}

    # -- decoding --------------------------------------------------------------------------------
    def _msg(self, e: dict[str, Any], j: Any, where: str) -> Any:
        key = _flat_key(j) or json.dumps(j, sort_keys=True)
        hit = self._msg_cache.get(key)
        if hit is None:
            try:
                hit = self._msg_cache[key] = from_json(self.system.message, j, where)
            except ValueError as err:
                raise Mismatch(e, f"not a message of the spec: {err}") from None
        return hit

    def _msg_json(self, msg: Any) -> Any:
        j = self._msg_jsons.get(msg)
        if j is None:
            j = self._msg_jsons[msg] = to_json(self.system.message, msg)
        return j

    def _json_state(self, local: tuple) -> Any:
        j = self._state_json.get(local)
        if j is None:
            j = self._state_json[local] = self.system.local_json(local)
        return j

    # -- checking --------------------------------------------------------------------------------
    def _local_step(self, e: dict[str, Any], kind: str, pid: int, src: Any, msg: Any, timer: Any) -> tuple:
        """(key of the local step, step) for the event's input and choice."""
        raw = e.get("choice") or {}
        if not isinstance(raw, dict):
            raise Mismatch(e, "\"choice\" is not an object")
        candidates = [s for k, (s, _) in self._candidates(kind, pid, src, msg, timer)]
        if not raw:
            for s in candidates:
                if not s.choice:
                    return s.key, s
        for s in candidates:
            names = [n for n, _ in s.choice]
            if sorted(names) != sorted(raw):
                continue
            try:
                vals = tuple(from_json(d, raw[n], f"choice.{n}") for n, d in zip(names, s.choice_doms))
            except ValueError:
                continue
            if tuple(v for _, v in s.choice) == vals:
                return s.key, s
        if not candidates:
            raise Mismatch(e, f"process {pid} has no handler for this input in the spec")
        raise Mismatch(e, "the handler has no such choice", [dict((n, to_json(d, v)) for (n, v), d in
                                                             zip(s.choice, s.choice_doms)) for s in candidates], raw)

    def _candidates(self, kind: str, pid: int, src: Any, msg: Any, timer: Any) -> list:
        key = (kind, pid, src, msg, timer)
        return self.index.get(key, []) if all(_scalar(x) for x in key) else []

    def _check_effects(self, e: dict[str, Any], key: tuple, local: tuple) -> None:
        """The event's state, sends and timers against the local step run on the process's state before."""
        want = self._effects.get((key, local))
        if want is None:
            want = self._effects[(key, local)] = self._expected(e, key, local)
        want_state, want_sends, want_timers, want_observed = want
        for field in ("sends", "timers", "observed"):
            if field in e and not isinstance(e[field], list):
                raise Mismatch(e, f"{field!r} is {_compact_json(e[field])}, not a list")
        if not all(isinstance(t, str) for t in e.get("timers", [])):
            raise Mismatch(e, "\"timers\" must list timer names", want_timers, e.get("timers"))
        if e.get("state") != want_state:
            raise Mismatch(e, "the local state after the handler differs from the spec's", want_state, e.get("state"))
        if e.get("sends", []) != want_sends:
            raise Mismatch(e, "the messages sent differ from the spec's", want_sends, e.get("sends"))
        timers = e.get("timers", [])
        if (timers or want_timers) and sorted(timers) != want_timers:
            raise Mismatch(e, "the timers started differ from the spec's", want_timers, timers)
        if e.get("observed", []) != want_observed:
            raise Mismatch(e, "the operations observed differ from the spec's", want_observed, e.get("observed", []))

    def _expected(self, e: dict[str, Any], key: tuple, local: tuple) -> tuple:
        """(state, sends, timers started, operations observed), in JSON form, of a local step run on `local`."""
        step, fn = self.local[key]
        try:
            out = fn(self.system.pad(local))
        except Exception:
            raise Mismatch(e, f"the spec's handler fails here ({step.transition.label}), but the process went on") from None
        if not out:
            raise Mismatch(e, f"the spec's handler is not enabled in the process's state before this event "
                              f"({step.transition.label})", None, self._json_state(local))
        full = out[0][1]
        sends, restarts = self.system.outputs(full, len(step.sends))
        observed = [to_json(self.system.observation, op) for op in self.system.observed(full, len(step.observed))]
        return (self._json_state(full[:self.system.nstate]), [[d, self._msg_json(m)] for d, m in sends],
                sorted(t for t, on in restarts.items() if on), observed)

    def _forge(self, state: tuple, e: dict[str, Any]) -> tuple:
        """The global state after a Byzantine process forged a message."""
        pid, dst = self._pid(e), e.get("dst")
        msg = self._msg(e, e.get("msg"), "msg")
        fn = self.by_args.get(("forge", (pid, dst, msg))) if _scalar(dst) else None
        out = fn(state) if fn is not None else []
        if not out:
            raise Mismatch(e, f"process {pid} may not forge this message here (the spec lets a Byzantine process "
                              "forge each message once, when it is not already in flight)")
        return out[0][1]

    def _check_failure(self, state: tuple, e: dict[str, Any]) -> None:
        """A handler that failed in a real process must fail in the spec too, on the same input and state."""
        pid, kind = self._pid(e), e.get("input")
        src = e.get("src")
        msg = self._msg(e, e.get("msg"), "msg") if kind == "message" else None
        timer = e.get("timer")
        local = self.system.pad(self._locals(state, pid))
        for _key, (_step, fn) in self._candidates(kind, pid, src, msg, timer):
            try:
                fn(local)
            except Exception:
                return
        raise Mismatch(e, f"the process reports a failed handler ({e.get('message')}), but the spec's handler "
                          "does not fail on this input and state")

    def _locals(self, state: tuple, pid: int) -> tuple:
        return tuple(state[i] for i in self.system.gslots[pid])

    def _pid(self, e: dict[str, Any]) -> int:
        pid = e.get("pid")
        if isinstance(pid, bool) or not isinstance(pid, int) or not 0 <= pid < self.system.proc.size:
            raise Mismatch(e, f"pid {pid!r} is not a process of the spec (0..{self.system.proc.size - 1})")
        return pid

    def initial(self, starts: list[dict[str, Any]]) -> tuple:
        """The global state after every process's start event."""
        by_pid: dict[int, dict[str, Any]] = {}
        for e in starts:
            pid = self._pid(e)
            if pid in by_pid:
                raise Mismatch(e, f"process {pid} starts twice")
            by_pid[pid] = e
        starting = sorted({s.pid for s in self.system.steps if s.kind == "start"})
        missing = [p for p in starting if p not in by_pid]
        if missing:
            raise TraceError(f"the trace has no start event for process {missing[0]}: a process that never "
                             "started cannot be validated")
        pre = tuple(self.prog.init_defaults)
        args: list[tuple[str, Any]] = []
        for pid in starting:
            e = by_pid[pid]
            key, step = self._local_step(e, "start", pid, None, None, None)
            self._check_effects(e, key, self._locals(pre, pid))
            args.extend((f"{n}@{pid}", v) for n, v in step.choice)
        fn = self.inits.get(tuple(v for _, v in args))
        out = fn(pre) if fn is not None else []
        if not out:
            raise Mismatch(starts[0], "the processes' starts together are not an initial state of the spec")
        return out[0][1]

    def step(self, state: tuple, e: dict[str, Any]) -> tuple:
        """The global state after event `e` (a handler event), or Mismatch."""
        kind, pid = e["kind"], self._pid(e)
        src = msg = timer = None
        if kind == "message":
            src = e.get("src")
            if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < self.system.proc.size:
                raise Mismatch(e, f"src {src!r} is not a process of the spec")
            msg = self._msg(e, e.get("msg"), "msg")
        elif kind == "timeout":
            timer = e.get("timer")
            if timer not in self.system.timer_names:
                raise Mismatch(e, f"{timer!r} is not a timer of the spec", self.system.timer_names, timer)
        key, step = self._local_step(e, kind, pid, src, msg, timer)
        if kind == "message":
            action = ("deliver", (src, pid, msg, *(v for _, v in step.choice)))
        else:
            action = ("timeout", (pid, timer, *(v for _, v in step.choice)))
        fn = self.by_args.get(action)
        out = self._apply(e, action, fn, state)
        if not out and self.lossy:  # the relay may have lost messages: the spec's network may drop them too
            for dropped in self._drops(e, state, pid, src, msg):
                out = self._apply(e, action, fn, dropped)
                if out:
                    self.dropped += 1
                    break
        if not out:
            self._explain_disabled(e, state, kind, pid, src, msg, timer)
        self._check_effects(e, key, self._locals(state, pid))
        return out[0][1]

    def _apply(self, e: dict[str, Any], action: tuple, fn: Callable | None, state: tuple) -> list:
        """The spec's global step for the event ([] where it is not enabled; Mismatch where it fails)."""
        if fn is None:
            return []
        try:
            return fn(state)
        except Exception:
            if self.lossy:
                return []  # a send that does not fit: perhaps a copy in flight was lost; see `_drops`
            t = self.trans_by_args[action]
            why = self.model._diagnose_with([t], state).describe()
            raise Mismatch(e, f"the spec's step fails here, though the process went on: {why}") from None

    def _drops(self, e: dict[str, Any], state: tuple, pid: int, src: Any, msg: Any):
        """States a lossy network reaches from `state` by losing the messages in flight that block the event:
        earlier copies of what it sends, or (on ordered channels) the messages ahead of the one it delivers."""
        drop = self.by_args.get
        cur = state
        for dst, mj in e.get("sends") or []:
            if isinstance(dst, int) and not isinstance(dst, bool):
                fn = drop(("drop", (pid, dst, self._msg(e, mj, "sends"))))
                out = fn(cur) if fn is not None else []
                if out:
                    cur = out[0][1]
                    yield cur
        if e["kind"] == "message" and self.capacity_fifo:
            cur = state
            for _ in range(self.capacity_fifo):
                fn = drop(("drop", (src, pid, 0)))
                out = fn(cur) if fn is not None else []
                if not out:
                    return
                cur = out[0][1]
                yield cur

    def _explain_disabled(self, e: dict[str, Any], state: tuple, kind: str, pid: int, src: Any, msg: Any,
                          timer: Any) -> None:
        if "crashed" in self.model.vars and pid in self.prog.field("crashed").decode(state):
            raise Mismatch(e, f"process {pid} has crashed in the spec's state")
        if kind == "message":
            flying = [(s, d, m) for s, d, m in in_flight(self.prog, state) if d == pid]
            if (src, pid, msg) not in flying:
                raise Mismatch(e, "the message is not in flight: it was never sent, or was already delivered",
                               [[s, to_json(self.system.message, m)] for s, _, m in flying],
                               [src, to_json(self.system.message, msg)])
        if kind == "timeout":
            armed = self.prog.field("timers").decode(state)[pid]
            if not armed[timer]:
                raise Mismatch(e, f"timer {timer!r} of process {pid} is not armed")
        raise Mismatch(e, "the spec's handler is not enabled here", None, self._json_state(self._locals(state, pid)))

    def run(self, run: MergedRun) -> Validation:
        """Validate every event of `run` as it is read; raise Mismatch at the first that is not a step of the spec.

        Memory is bounded by the spec's states, not by the length of the run (the events are a stream)."""
        counts = {"overflow": 0, "rejected": 0}

        def steps():
            for e in run.events:
                kind = e.get("kind")
                if kind in (*STEP_KINDS, "restart", "failure", "forge"):
                    yield e
                elif kind in counts:
                    counts[kind] += 1

        events = steps()
        starts: list[dict[str, Any]] = []
        early: list[dict[str, Any]] = []  # events of the same clock as the starts, ordered before some of them
        waiting = {s.pid for s in self.system.steps if s.kind == "start"}
        for e in events:
            if e["kind"] == "start":
                starts.append(e)
                waiting.discard(e.get("pid"))
                before = next((x for x in early if x.get("pid") == e.get("pid") and x["kind"] != "forge"), None)
                if before is not None:
                    raise Mismatch(before, f"an event of process {e.get('pid')} before it started: in the spec every "
                                           "process starts first, so nothing is in flight and no timer is armed before")
            else:
                early.append(e)
                if not waiting or len(early) > MAX_EARLY:
                    break
            if not waiting and early:
                break
        if waiting and early:
            raise Mismatch(early[0], f"an event before process {min(waiting)} started: in the spec every process "
                                     "starts first, so nothing is in flight and no timer is armed before")
        state = self.initial(starts)
        result = Validation(len(starts))
        violated, names = self.model.violated, self.model.invariant_names
        bad = violated(state)
        if bad >= 0:
            result.violation, result.violation_event = names[bad], starts[-1]
            return result
        cut = run.cut
        for e in itertools.chain(early, events):
            kind = e["kind"]
            if kind == "start":
                raise Mismatch(e, f"process {e.get('pid')} starts after other processes have taken steps")
            if kind == "restart":
                pid = self._pid(e)
                have = self._json_state(self._locals(state, pid))
                if e.get("state") != have:
                    raise Mismatch(e, "a restarted process does not resume from its last state", have, e.get("state"))
                continue
            if kind == "forge":
                state = self._forge(state, e)
                result.events += 1
                continue
            if kind == "failure":
                self._check_failure(state, e)
                result.failure, result.violation_event = str(e.get("message")), e
                break
            lost = self._lost_send(e, cut)
            if lost is not None:
                result.incomplete, result.stopped_at = lost, e
                break
            try:
                state = self.step(state, e)
            except Mismatch:
                if kind == "message" and _scalar(e.get("src")) and e.get("src") in cut and "sent" not in e:
                    result.incomplete, result.stopped_at = self._cut_reason(e, cut), e
                    break
                raise
            result.events += 1
            bad = violated(state)
            if bad >= 0:
                result.violation, result.violation_event = names[bad], e
                break
            self._bound_caches()
        result.dropped = self.dropped
        result.overflow, result.rejected = counts["overflow"], counts["rejected"]
        if result.incomplete is None and result.violation is None and result.failure is None and not run.ended:
            result.incomplete = ("the trace has no end record: the file was cut short (or is still being written), "
                                 "so the run's later events are unknown")
            result.truncated = True
        return result

    def _lost_send(self, e: dict[str, Any], cut: dict[int, int]) -> str | None:
        """Why a delivery cannot be validated: its message was sent by an event that a dead process did not record."""
        src, sent = e.get("src"), e.get("sent")
        if e["kind"] != "message" or not _scalar(src) or src not in cut or not isinstance(sent, int) or sent <= cut[src]:
            return None
        return self._cut_reason(e, cut)

    def _cut_reason(self, e: dict[str, Any], cut: dict[int, int]) -> str:
        src = e.get("src")
        return (f"process {src} stopped without recording its last events (its trace ends at clock {cut[src]}); "
                f"process {e.get('pid')} delivers a message that one of those events sent, so the run is validated "
                "up to there")

    def _bound_caches(self) -> None:
        """Keep the memoised effects and JSON forms below a fixed size (memory bounded by states, not events)."""
        for cache in (self._effects, self._state_json, self._msg_cache, self._msg_jsons):
            if len(cache) > CACHE_LIMIT:
                cache.clear()


def validate(run: MergedRun) -> Validation:
    """Validate a merged run trace against the spec its header names (Mismatch at the first bad event)."""
    params = run.header.get("params") or {}
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in params.values()):
        raise TraceError("the run header's params must be integers")
    validator = Validator(run.header["spec"], params)
    procs, size = run.header.get("processes"), validator.system.proc.size
    if isinstance(procs, int) and procs != size:
        raise TraceError(f"the run has {procs} processes, but spec {validator.model.name} {validator.model.params} has "
                         f"{size}: the trace is a run of other parameters")
    return validator.run(run)
