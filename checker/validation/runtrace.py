"""Run traces: what executors record, one JSON object per line, and how per-process traces merge.

A process's trace starts with a header `{"kind": "header", "spec", "spec_name", "params", "pid"}`;
then one line per event:

- `start`, `message`, `timeout`: a handler ran. `pid`, Lamport `clock`, vector clock `vc` (one entry
  per process; entry p counts p's recorded events; actor and rounds runs), `seq` (per process),
  `time` (seconds since the run began), the input (`src`, `msg` and `sent`, the sender's clock when it
  sent the message; or `timer`), `choice` (the values of the handler's choice parameters), `sends`
  (`[dst, msg]` pairs in send order), `timers` (the timers it started or restarted), `observed`
  (client-visible operations, if any) and `state` (the local state after);
- `forge`: a Byzantine process forged a message (`dst`, `msg`), in a spec with `forge = True`;
- `restart`: the process was restarted from its last recorded `state` (not a step of the spec);
- `failure`: a handler failed (`message`); the process stops;
- `rejected`: a frame was dropped (`reason`; malformed, or not authenticated); not a step;
- `overflow`: a message was dropped because the queue of deliveries waiting for their handler to be
  enabled was full; not a step (in the spec, the message stays in flight);
- `end`: the process stopped normally, with its counters (`stats`); the last line. A trace without it
  was cut short (the process was killed).

A merged trace has one header `{"kind": "run", "model", "spec", "spec_name", "params", "processes",
"notes", "cut"}` — `cut` maps each process whose trace has no `end` record to the clock of its last
record — then every event ordered by (clock, pid, seq), a linearization consistent with the Lamport
order, and a last line `{"kind": "end", "events": N}`: a merged trace without it is incomplete.
Merging and reading both stream: memory does not grow with the length of the run.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..safeio import create_fresh, open_input, replacing
from ..safejson import JSONInputError
from ..safejson import loads as json_loads
from ..trace import TraceError, registered_name
from .origins import Origins


class Mismatch(Exception):
    """An event that is not a step of the spec."""

    def __init__(self, event: dict[str, Any], reason: str, expected: Any = None, observed: Any = None):
        super().__init__(reason)
        self.event, self.reason, self.expected, self.observed = event, reason, expected, observed

    def render(self) -> str:
        e = self.event
        where = f"line {e['_line']}: " if "_line" in e else ""
        what = {k: v for k, v in e.items() if k in ("kind", "pid", "clock", "src", "msg", "timer", "choice")}
        text = f"{where}event {_compact(what)}: {self.reason}"
        if self.expected is not None or self.observed is not None:
            text += f"\n  expected: {_compact(self.expected)}\n  observed: {_compact(self.observed)}"
        return text


def _compact(v: Any) -> str:
    text = json.dumps(v, separators=(",", ":"), default=str)
    return text if len(text) <= 300 else text[:297] + "..."


STEP_KINDS = ("start", "message", "timeout")
"""Events that run a handler (a `forge` event is a step of the spec too, but runs none)."""

MAX_LINE = 16 << 20  # bytes in one line of a run trace


def iter_jsonl(path: str, tolerate_torn_end: bool = False, torn: list[bool] | None = None,
               start: int = 1) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line of a JSONL file, read as it is iterated. A torn last line (a killed
    writer) is skipped when `tolerate_torn_end` (and `torn[0]` set); anything else malformed is a TraceError."""
    try:
        f = open_input(path)
    except OSError as e:
        raise TraceError(f"cannot read trace {path}: {e.strerror}") from None
    with f:
        pending: tuple[int, bytes] | None = None
        i = 0
        while raw := f.readline(MAX_LINE + 1):
            i += 1
            if len(raw) > MAX_LINE:
                raise TraceError(f"{path}:{i}: a line of more than {MAX_LINE:,} bytes, the limit")
            if i < start:
                continue
            if pending is not None:
                yield pending[0], _parse_line(path, *pending)
                pending = None
            if not raw.strip():
                continue
            if raw.endswith(b"\n"):
                yield i, _parse_line(path, i, raw)
            else:
                pending = (i, raw)  # the last line, without its newline: torn if it does not parse
        if pending is not None:
            try:
                yield pending[0], _parse_line(path, *pending)
            except TraceError:
                if not tolerate_torn_end:
                    raise
                if torn is not None:
                    torn[0] = True


def _parse_line(path: str, i: int, raw: bytes) -> dict[str, Any]:
    try:
        obj = json_loads(raw, f"{path}:{i}", one_line=True)
    except JSONInputError as e:
        if "not UTF-8" in str(e):
            raise TraceError(f"{path}:{i}: not a text file (expected JSON lines)") from None
        raise TraceError(str(e)) from None
    if not isinstance(obj, dict):
        raise TraceError(f"{path}:{i}: expected a JSON object per line, got {type(obj).__name__}")
    return obj


def read_jsonl(path: str, tolerate_torn_end: bool = False) -> tuple[list[dict[str, Any]], bool]:
    """The objects of a (small) JSONL file, and whether a torn last line was dropped (a killed writer)."""
    torn = [False]
    out = [obj for _, obj in iter_jsonl(path, tolerate_torn_end, torn)]
    return out, torn[0]


class MergedRun:
    """A merged run trace: its header and its events in linearization order, held in memory (`events` given)
    or read from `path` each time `events` is iterated."""

    def __init__(self, header: dict[str, Any], events: list[dict[str, Any]] | None = None,
                 notes: list[str] | None = None, path: str | None = None, ended: bool = True):
        self.header = header
        self._events = events
        self.notes = list(notes or [])
        self.path = path
        self.ended = ended  # the trace has its end record

    @property
    def events(self) -> Iterable[dict[str, Any]]:
        if self._events is not None:
            return self._events
        return _EventStream(self.path)  # type: ignore[arg-type]

    @property
    def cut(self) -> dict[int, int]:
        """Processes whose trace was cut short -> the clock of their last record."""
        raw = self.header.get("cut") or {}
        return {int(k): v for k, v in raw.items()} if isinstance(raw, dict) else {}


class _EventStream:
    """The events of a merged trace file (after its header, up to its end record), read lazily."""

    def __init__(self, path: str):
        self.path = path

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i, e in iter_jsonl(self.path, start=2):
            if e.get("kind") == "end" and "pid" not in e:
                return
            _check_event(self.path, i, e)
            e["_line"] = i
            yield e


def event_order(e: dict[str, Any]) -> tuple:
    return (e.get("clock", 0), e.get("pid", 0), e.get("seq", 0))


def _ordered(pid: int, path: str) -> Iterator[tuple[tuple, dict[str, Any]]]:
    """A process's events with their merge keys; an event without a clock (a rejected frame) takes the clock of
    the event before it, so every process's stream is sorted by key."""
    clock = seq = 0
    for n, (_, e) in enumerate(iter_jsonl(path, tolerate_torn_end=True)):
        if e.get("kind") in ("header", "end"):
            continue
        c, s = e.get("clock"), e.get("seq")
        if isinstance(c, int) and not isinstance(c, bool):
            clock = c
        if isinstance(s, int) and not isinstance(s, bool):
            seq = s
        yield (clock, pid, seq, n), e


def merge(paths: dict[int, str], out: str, spec: str, spec_name: str, params: dict[str, int],
          notes: list[str] | None = None, extra: dict[str, Any] | None = None) -> MergedRun:
    """Merge per-process traces (pid -> file) into one file ordered by Lamport clock (`extra`: more header
    fields), streaming: one event per process is held at a time."""
    notes = list(notes or [])
    present = {}
    for pid, path in sorted(paths.items()):
        if os.path.exists(path):
            present[pid] = path
        else:
            notes.append(f"process {pid} wrote no trace")
    cut = {}
    for pid, path in present.items():
        last, torn = _tail(path)
        if torn:
            notes.append(f"process {pid}: its trace ends in a torn line (it was killed while writing); dropped it")
        if last is None or last.get("kind") != "end":
            clock = last.get("clock") if last else None
            cut[pid] = clock if isinstance(clock, int) and not isinstance(clock, bool) else 0
            notes.append(f"process {pid}'s trace has no end record (the process did not stop normally): its last "
                         "events may be missing, and the run is validated up to the first event that depends on them")
    header = {"kind": "run", "spec": registered_name(spec), "spec_name": spec_name, "params": params,
              "processes": len(paths), "notes": notes, **(extra or {})}
    if cut:
        header["cut"] = {str(p): c for p, c in sorted(cut.items())}
    count = 0
    streams = [_ordered(pid, path) for pid, path in present.items()]
    try:
        with replacing(out) as f:
            f.write(json.dumps(header) + "\n")
            lines = []
            for _, e in heapq.merge(*streams, key=lambda item: item[0]):
                lines.append(json.dumps(e, separators=(",", ":")))
                count += 1
                if len(lines) >= 4096:
                    f.write("\n".join(lines) + "\n")
                    lines = []
            if lines:
                f.write("\n".join(lines) + "\n")
            f.write(json.dumps({"kind": "end", "events": count}) + "\n")
    except OSError as e:
        raise TraceError(f"cannot write the run trace {out}: {e.strerror}") from None
    return MergedRun(header, None, notes, path=out, ended=True)


def collect(paths: dict[int, str], out: str, spec: str, notes: list[str] | None = None,
            origins: Origins | None = None) -> int:
    """The per-process traces of a run whose events carry no Lamport clocks (`run autobahn`, `run psmr`, validated
    by their own checks as they run) in one JSON-lines file `out`: a header `{"kind": "traces", "spec",
    "processes", "notes"}`, each process's events in its order, process by process, each with its `pid`, and an
    end record. A torn last line (a killed process) is left out. The number of events; `origins` (if given) learns
    the line of `out` each process's line went to, so that messages about the run name `out`."""
    count = 0
    try:
        with replacing(out) as f:
            f.write(json.dumps({"kind": "traces", "spec": spec, "processes": len(paths), "notes": list(notes or [])})
                    + "\n")
            for pid, path in sorted(paths.items()):
                if not os.path.exists(path):
                    continue
                lines: list[int | None] = []
                for i, e in iter_jsonl(path, tolerate_torn_end=True):
                    e.pop("pid", None)
                    f.write(json.dumps({"pid": pid, **e}, separators=(",", ":")) + "\n")
                    count += 1
                    lines += [None] * (i - 1 - len(lines)) + [count + 1]
                if origins is not None:
                    origins.add(path, out, lines)
            f.write(json.dumps({"kind": "end", "events": count}) + "\n")
    except OSError as e:
        raise TraceError(f"cannot write the trace {out}: {e.strerror}") from None
    return count


@dataclass
class CollectedTraces:
    """A file written by `collect`, split back into one file per process: its header and the paths by process."""

    header: dict[str, Any]
    paths: dict[int, str]
    ended: bool  # the file's end record is there (it was not cut short)
    origins: Origins = field(default_factory=Origins)  # each process's file, line by line, in the file split


def is_collected(path: str) -> bool:
    """Whether `path` is a file written by `collect` (its first line says so)."""
    first = next(iter_jsonl(path), None)
    return first is not None and first[1].get("kind") == "traces"


def split_traces(path: str, out_dir: str) -> CollectedTraces:
    """The per-process traces of a file written by `collect`, each written to `out_dir` (`process-P.jsonl`, created
    new) as the process wrote it (its lines, without the `pid` the collection added); a torn last line (a file cut
    short) is left out, and the file has no end record then. TraceError for anything that is not such a file."""
    it = iter_jsonl(path, tolerate_torn_end=True)
    first = next(it, None)
    if first is None or first[1].get("kind") != "traces":
        raise TraceError(f"{path}:1: not the per-process traces of a run (the first line must be "
                         '{"kind": "traces", ...}, as `lockstep run autobahn|psmr --trace FILE` writes)')
    header = first[1]
    n = header.get("processes")
    if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= 100_000:
        raise TraceError(f"{path}:1: the header's processes must be a positive number, got {_compact(n)}")
    files: dict[int, Any] = {}
    paths: dict[int, str] = {}
    lines: dict[int, list[int | None]] = {}
    ended = False
    try:
        for i, e in it:
            if ended:
                raise TraceError(f"{path}:{i}: a line after the end record")
            if "pid" not in e and e.get("kind") == "end":
                ended = True
                continue
            pid = e.pop("pid", None)
            if not _pid_in(pid, n):
                raise TraceError(f"{path}:{i}: each line needs the \"pid\" of one of the run's {n} processes, got "
                                 f"{_compact(pid)}")
            if pid not in files:
                paths[pid] = os.path.join(out_dir, f"process-{pid}.jsonl")
                files[pid] = create_fresh(paths[pid])
                lines[pid] = []
            files[pid].write(json.dumps(e, separators=(",", ":")) + "\n")
            lines[pid].append(i)
    finally:
        for f in files.values():
            f.close()
    origins = Origins()
    for pid, made in paths.items():
        origins.add(made, path, lines[pid])
    return CollectedTraces(header, dict(sorted(paths.items())), ended, origins)


def _tail(path: str) -> tuple[dict[str, Any] | None, bool]:
    """(the last complete JSON record of a file, whether its last line is torn), read from the file's end."""
    try:
        with open_input(path) as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - (1 << 16)))
            data = f.read()
    except OSError:
        return None, False
    torn = False
    lines = data.split(b"\n")
    if lines and lines[-1].strip():  # no newline at the end: parseable, or torn
        try:
            json.loads(lines[-1])
        except (ValueError, RecursionError):
            torn = True
            lines = lines[:-1]
    for raw in reversed(lines):
        if raw.strip():
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):
                return None, torn
            return (obj if isinstance(obj, dict) else None), torn
    return None, torn


def _check_event(path: str, i: int, e: dict[str, Any]) -> None:
    if not isinstance(e.get("kind"), str) or not isinstance(e.get("pid"), int) or isinstance(e.get("pid"), bool):
        raise TraceError(f"{path}:{i}: an event needs a \"kind\" and an integer \"pid\"")
    if e["kind"] in (*STEP_KINDS, "restart", "forge"):
        for key in ("clock", "seq"):
            v = e.get(key)
            if not isinstance(v, int) or isinstance(v, bool):
                raise TraceError(f"{path}:{i}: a {e['kind']} event needs integer \"clock\" and \"seq\"")


def _pid_in(v: Any, nproc: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < nproc


def vector_clock(e: dict[str, Any], nproc: int) -> list[int] | None:
    """An event's vector clock (None when it records none); a TraceError at its line if it is not one."""
    vc = e.get("vc")
    if vc is not None and not (isinstance(vc, list) and len(vc) == nproc and
                               all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in vc)):
        raise TraceError(f"line {e.get('_line', '?')}: \"vc\" must be a vector clock of {nproc} non-negative "
                         f"integers, got {_compact(vc)}")
    return vc


def check_shape(e: dict[str, Any], nproc: int) -> None:
    """The fields of an actor run's event that a reader takes as they are (processes, senders, destinations,
    vector clock, time) have their JSON types and ranges; a TraceError at the event's line otherwise. The
    validator checks the rest against the spec; pictures need this much to draw an event."""
    where = f"line {e.get('_line', '?')}"
    kind = e.get("kind")
    if not _pid_in(e.get("pid"), nproc):
        raise TraceError(f"{where}: pid {_compact(e.get('pid'))} is not a process of the run (0..{nproc - 1})")
    if kind == "message" and not _pid_in(e.get("src"), nproc):
        raise TraceError(f"{where}: src {_compact(e.get('src'))} is not a process of the run (0..{nproc - 1})")
    if kind == "forge" and not _pid_in(e.get("dst"), nproc):
        raise TraceError(f"{where}: dst {_compact(e.get('dst'))} is not a process of the run (0..{nproc - 1})")
    sends = e.get("sends")
    if sends is not None and not (isinstance(sends, list) and all(
            isinstance(x, list) and len(x) == 2 and _pid_in(x[0], nproc) for x in sends)):
        raise TraceError(f"{where}: \"sends\" must list [destination process, message] pairs, got {_compact(sends)}")
    vector_clock(e, nproc)
    t = e.get("time")
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))):
        raise TraceError(f"{where}: \"time\" must be a number of seconds, got {_compact(t)}")


HEADER_TYPES: dict[str, tuple[type, ...]] = {"spec": (str,), "spec_name": (str,), "params": (dict,), "processes": (int,),
                                             "notes": (list,), "model": (str,), "cut": (dict,), "seed": (int,),
                                             "agents": (int,), "interactions": (int,), "start": (str, type(None)),
                                             "complete": (bool,)}


def load(path: str) -> MergedRun:
    """Open a merged run trace (as written by `lockstep run --trace`): its header is read and checked now,
    its events as they are iterated."""
    first = next(iter_jsonl(path), None)
    if first is None:
        raise TraceError(f"{path}: empty trace")
    header = first[1]
    if header.get("kind") == "traces":
        raise TraceError(f"{path} holds the per-process logs of a `lockstep run {header.get('spec')}`, validated as such "
                         "(`lockstep validate FILE`), not as a merged run trace")
    if header.get("kind") != "run" or not isinstance(header.get("spec"), str):
        raise TraceError(f"{path}:1: not a Lockstep run trace: the first line must be the run header "
                         '{"kind": "run", "spec": ..., "params": ...} written by `lockstep run --trace`')
    for key, types in HEADER_TYPES.items():
        if key in header and (not isinstance(header[key], types) or
                              (isinstance(header[key], bool) and bool not in types)):
            raise TraceError(f"{path}:1: the run header's {key!r} is {_compact(header[key])}, not "
                             f"{' or '.join('null' if t is type(None) else t.__name__ for t in types)}")
    params = header.get("params", {})
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in params.values()):
        raise TraceError(f"{path}:1: the run header's params must be integers, got {_compact(params)}")
    if not all(isinstance(n, str) for n in header.get("notes") or []):
        raise TraceError(f"{path}:1: the run header's notes must be strings")
    cut = header.get("cut") or {}
    if not all(isinstance(k, str) and k.isdigit() and isinstance(v, int) and not isinstance(v, bool)
               for k, v in cut.items()):
        raise TraceError(f"{path}:1: the run header's cut must map process ids to clocks")
    last, _ = _tail(path)
    ended = last is not None and last.get("kind") == "end" and "pid" not in last
    return MergedRun(header, None, list(header.get("notes") or []), path=path, ended=ended)
