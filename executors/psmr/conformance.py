"""A P-SMR run validated step by step against the spec: its processes' logs (in the event schema) searched for a
behaviour of an instance of `lockstep.specs.psmr` through `mapping.py`.

A run of the spec's workload (`--spec-workload N`) is validated whole against the registered spec. A run of a random
workload is validated against the spec built for its workload (`lockstep.specs.psmr.workload`: its clients'
commands, each client's in the order it issued them, on its keys, with its values) over a window: the first
commands invoked (by the clients' clocks; a prefix of each client's), as many as one instance holds, and the
largest prefix of every process's log that
involves only those commands and receives only what that prefix sends (a consistent cut). An instance is bounded by
its network: a set over every (sender, receiver, message) of the instance (commands x workers x positions
deliveries, commands x values replies), of at most `MAX_ELEMENTS` elements; `window_commands` is the most commands
that fit.
Every event of the run, in the window and after it, is also checked against the spec's rules
(`checker/validation/psmr.py`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lockstep.checker.errors import TraceError
from lockstep.checker.validation.origins import Origins

from ..projection import LINE, project, read_log
from .layout import ServiceConfig
from .mapping import spec_params

if TYPE_CHECKING:
    from lockstep.checker.validation.conformance.search import Conformance

MAPPING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mapping.py")
MAX_REPLICAS = MAX_WORKERS = 4  # the spec's bounds on replicas and workers
COMMAND_EVENTS = frozenset({"invoke", "hub", "order", "deliver", "signal", "exec", "reply", "signalled", "released",
                            "resume"})  # the events about one command (its id is their `c`)


def beyond_bounds(service: ServiceConfig) -> str | None:
    """Why a run of this shape is no behaviour of any instance of the spec (None if it can be validated step by step)."""
    if service.replicas > MAX_REPLICAS or service.workers > MAX_WORKERS:
        return (f"it has {service.replicas} replicas of {service.workers} workers; the spec has at most {MAX_REPLICAS} "
                f"replicas of {MAX_WORKERS} workers")
    return None


def window_commands(service: ServiceConfig, top: int) -> int:
    """The most commands an instance for a run of this shape holds (values 0..`top`): its network, a set over every
    message of the instance for each pair of processes, within the spec language's limit on a set's elements."""
    from lockstep.specs.lang.limits import MAX_ELEMENTS
    from lockstep.specs.psmr.workload import MAX_INSTANCE_COMMANDS

    pairs = (service.replicas + 2) ** 2

    def messages(n: int) -> int:  # Multicast(c), Deliver(c, g, i), Reply(c, v)
        return n + n * service.workers * n + n * (top + 1)

    n = 1
    while n < MAX_INSTANCE_COMMANDS and pairs * messages(n + 1) <= MAX_ELEMENTS:
        n += 1
    return n


@dataclass
class Window:
    """The part of a run validated step by step: the first commands invoked (a prefix of each client's), and the cut
    of every log."""

    clients: list[list[Any]]  # each client's commands in the window (`commands.Command`), in the order it issued them
    number: dict[int, int]  # a service command id in the window -> the instance's command
    cut: dict[int, int]  # process -> the events of its log in the window
    issued: int = 0  # commands the run's clients issued
    limit: int = 0  # the most commands an instance for this run holds
    events: int = 0  # events of the run's logs
    sent: dict[int, list[str]] = field(default_factory=dict)  # id(event) -> frame ids it sends besides its own
    recv: dict[int, list[str]] = field(default_factory=dict)  # id(event) -> frame ids it receives besides its own

    @property
    def commands(self) -> int:
        return sum(map(len, self.clients))


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _invocation(e: dict[str, Any], keys: int, path: str) -> tuple[int, Any]:
    """A client's `invoke` event as (its command id, the command), checked (TraceError naming the event otherwise)."""
    from lockstep.specs.psmr.commands import Command

    a = e.get("args", {})
    cmd = a.get("cmd")
    ok = _integer(a.get("c")) and isinstance(cmd, list) and len(cmd) == 3
    if ok:
        op, key, value = cmd
        ok = (op == "putall" and key is None or op in ("get", "put") and _integer(key) and 0 <= key < keys) and \
            (value is None if op == "get" else _integer(value) and value >= 0)
    if not ok:
        raise TraceError(f"{path}:{e.get(LINE)}: an invoke event gives its command id (c, an integer) "
                         f"and its cmd, [op, key, value]: get with a key (0..{keys - 1}), put with a key and a value of "
                         f"at least 0, putall with a value; got {str(a)[:100]}")
    return a["c"], Command(*cmd)


def _cid(e: dict[str, Any]) -> Any:
    """The service command an event is about, or None."""
    return e.get("args", {}).get("c") if e.get("action") in COMMAND_EVENTS else None


def window(logs: dict[int, tuple[dict[str, Any], list[dict[str, Any]], bool]], service: ServiceConfig,
           paths: dict[int, str]) -> Window:
    """The window of a run's logs (process -> its header, events, end; read from `paths`): every command for the
    spec's workload; else the first commands invoked (by the clients' clocks, in turn where they tie), as many as
    `window_commands` allows, which are a prefix of each client's, and the consistent cut of the logs that involves
    only them."""
    invoked: dict[int, list[tuple[int, Any]]] = defaultdict(list)  # client -> (command id, Command) in its order
    stamps: list[tuple[float, int, int]] = []  # (time, number, client) of each invocation
    for pid, (header, events, _) in logs.items():
        if header.get("role") == "client":
            at = header.get("at")
            if not (isinstance(at, list) and at and _integer(at[0])):
                raise TraceError(f"{paths.get(pid, f'process {pid}')}:1: a client's header gives its index (at: [index, 0])")
            for e in events:
                if e.get("action") == "invoke":
                    t = e.get("time")
                    stamps.append((t if isinstance(t, (int, float)) else float("inf"), len(invoked[at[0]]), at[0]))
                    invoked[at[0]].append(_invocation(e, service.keys, paths.get(pid, f"process {pid}'s log")))
    issued = sum(map(len, invoked.values()))
    top = max([c.value for cmds in invoked.values() for _, c in cmds if c.value is not None] + [1])
    limit = issued if service.spec_commands else window_commands(service, top)
    taken: dict[int, int] = defaultdict(int)  # client -> its commands in the window
    for _, _, k in sorted(stamps)[:limit]:
        taken[k] += 1
    chosen = [k for k in sorted(invoked) if taken[k]]
    clients = [[c for _, c in invoked[k][:taken[k]]] for k in chosen]
    number, j = {}, 0
    for k in chosen:
        for cid, _ in invoked[k][:taken[k]]:
            number[cid] = j
            j += 1
    cut = {pid: next((i for i, e in enumerate(evs) if _cid(e) is not None and _cid(e) not in number), len(evs))
           for pid, (_, evs, _) in logs.items()}
    while True:  # the largest consistent cut within: every event receives only frames an event in the cut sent
        sent = {m for pid, (_, evs, _) in logs.items() for e in evs[:cut[pid]] for m in e.get("sent") or ()}
        short = {pid: next((i for i, e in enumerate(evs[:cut[pid]]) if any(m not in sent for m in e.get("recv") or ())),
                           cut[pid]) for pid, (_, evs, _) in logs.items()}
        if short == cut:
            break
        cut = short
    win = Window(clients, number, cut, issued=issued, events=sum(len(evs) for _, evs, _ in logs.values()), limit=limit)
    _hub_after_direct_orders(logs, win)
    return win


def _hub_after_direct_orders(logs: dict[int, tuple[dict[str, Any], list[dict[str, Any]], bool]], win: Window) -> None:
    """Order the hub's event of each multi-group command after the commands each sequencer of its groups ordered
    alone before it merged the forwarded one (`mapping.py`: the spec appends the command to all its groups in that
    one step, where the service's sequencers merge it each in its turn)."""
    hub = {_cid(e): e for pid, (header, evs, _) in logs.items() if header.get("role") == "hub"
           for e in evs[:win.cut[pid]] if e.get("action") == "hub"}
    for pid, (header, evs, _) in logs.items():
        if header.get("role") != "sequencer":
            continue
        direct = None
        for e in evs[:win.cut[pid]]:
            if e.get("action") != "order":
                continue
            a = e.get("args", {})
            if a.get("from") == "mc":
                direct = e
            elif direct is not None and a.get("c") in hub:
                edge = f"merged-after.{pid}.{a['c']}"
                win.sent.setdefault(id(direct), []).append(edge)
                win.recv.setdefault(id(hub[a["c"]]), []).append(edge)


CHECKED = ("every event against the spec's rules (integrity, agreement, acyclic order, the barrier, execution in "
           "delivery order, dependent commands in the same order at every replica, replies equal to a sequential "
           "replay of each replica: checker/validation/psmr.py)")
SILENT = frozenset({"deliver", "signalled", "released", "resume", "rejected", "fault"})  # events that are no step


def _keeper(win: Window) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """The projection of an event onto the instance: None for the events that are no step and carry nothing the
    mapping reads (arrivals of frames a later event takes, the barrier's frames, rejections, losses, replies after
    the first); the others with their command numbered as the instance numbers it, and the ordering edges of the
    window (`_hub_after_direct_orders`)."""
    def keep(e: dict[str, Any]) -> dict[str, Any] | None:
        if e["action"] in SILENT or (e["action"] == "reply" and not e.get("args", {}).get("first")):
            return None
        out = dict(e)
        if _cid(e) is not None:
            out["args"] = {**e["args"], "c": win.number[e["args"]["c"]]}
        extra_sent, extra_recv = win.sent.get(id(e)), win.recv.get(id(e))
        if extra_sent:
            out["sent"] = [*(e.get("sent") or ()), *extra_sent]
        if extra_recv:
            out["recv"] = [*(e.get("recv") or ()), *extra_recv]
        return out

    return keep


def instance(win: Window, service: ServiceConfig, spec: str) -> tuple[str | type, dict[str, int]]:
    """The spec and parameters the window is validated against: the registered spec for the spec's workload, else
    the spec `spec` names built for the window's workload."""
    if service.spec_commands:
        return spec, spec_params(service)
    from lockstep.checker.loader import resolve
    from lockstep.specs.psmr.workload import for_workload

    base, _ = resolve(spec)
    return (for_workload(win.clients, service.keys, base),
            {"replicas": service.replicas, "workers": service.workers, "outstanding": service.outstanding})


def validate_steps(traces: dict[int, str], service: ServiceConfig, spec: str,
                   origins: Origins | None = None) -> tuple[Conformance | None, Window]:
    """Search the run's logs (process -> path), within their window, for a behaviour of an instance of `spec` (a
    registered P-SMR spec): the events the mapping takes as steps, each after the receipts of the frames its process
    acted on before it. `origins` learns where each event of the projected logs comes from (their files are gone
    when this returns). The outcome (None if no command was issued), and the window."""
    from lockstep.checker.validation.conformance.run import validate_logs

    logs = {pid: read_log(path) for pid, path in sorted(traces.items())}
    logs = {pid: log for pid, log in logs.items() if log[0] or log[1]}
    win = window(logs, service, traces)
    keep = _keeper(win)
    tmp = tempfile.mkdtemp(prefix="lockstep-psmr-steps-")
    try:
        paths = []
        for pid, (header, events, ended) in logs.items():
            out = os.path.join(tmp, f"process-{pid}.jsonl")
            cut = win.cut[pid] < len(events)  # the window's part of the log is all of it there is to validate
            project(events[:win.cut[pid]], pid, out, keep, ended or cut,
                    {k: header[k] for k in ("role", "at") if k in header}, origins, traces[pid])
            paths.append(out)
        if not win.commands:
            return None, win
        spec_obj, params = instance(win, service, spec)
        return validate_logs(paths, spec_obj, params, MAPPING, one_order=not service.spec_commands), win
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def print_steps(traces: dict[int, str], service: ServiceConfig, spec: str, origins: Origins | None = None) -> int:
    """Validate the run step by step, within its window, if some instance of the spec can have it, and print the
    outcome, naming each event by its place in the user's file (`origins`); the exit code (0 valid, or not validated
    step by step and said why, 1 not a behaviour of the spec, 3 cut short or inconclusive)."""
    from lockstep.checker.validation.conformance.run import report

    why = beyond_bounds(service)
    if why is not None:
        print(f"Step by step: not validated against the spec: {why}.\n  checked instead: {CHECKED}.")
        return 0
    origins = origins or Origins()
    with origins.naming():
        res, win = validate_steps(traces, service, spec, origins)
    if res is None:
        print("Step by step: no client issued a command: there is no step to validate")
        return 0
    if service.spec_commands:
        shape = f"{spec} " + " ".join(f"{k}={v}" for k, v in spec_params(service).items())
    else:
        shape = (f"{spec} for the workload of its window, {win.commands:,} commands from {len(win.clients)} client(s) on "
                 f"{service.keys} keys; replicas={service.replicas} workers={service.workers} "
                 f"outstanding={service.outstanding}")
    lines = report(res, res.model)
    print(origins.relocate(f"Step by step ({shape}, through executors/psmr/mapping.py): {lines[0]}"))
    for line in lines[1:]:
        print(origins.relocate(line))
    if not service.spec_commands:
        kept = sum(win.cut.values())
        sizes = sorted({len(c) for c in win.clients})
        per_client = ", ".join(str(len(c)) for c in win.clients) if len(sizes) > 1 else f"{sizes[0]:,}"
        if win.commands == win.issued and kept == win.events:
            print(f"  window: the whole run, its {win.commands:,} commands ({per_client} per client) and {kept:,} events")
        else:
            print(f"  window: the first {win.commands:,} of the {win.issued:,} commands issued ({per_client} per client), "
                  f"{kept:,} of the run's {win.events:,} events (each log up to its first event of a later command, and "
                  "up to the first that receives what no event in the window sent); the later events are checked "
                  f"against the spec's rules only (an instance holds at most {win.limit:,} commands here: its network "
                  "is a set over every message of its commands)")
    return res.exit_code
