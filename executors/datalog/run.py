"""`lockstep run PROGRAM`: a linear or path-composition Datalog program on W worker processes under SSP(s), BSP
or async.

The runner proves PreM, builds the program's decomposable plan on the graph once (the joins with the
input relations, vectorised), writes each worker's partition (its keys' initial values and the steps
reading its keys) to a private directory, starts the workers on the shared cluster core
(`executors.cluster`), waits until every worker has detected quiescence or been told to stop, and
merges their results. On a graph of the SSP spec's catalogue (`--graph ssp:N`) the workers follow the
spec's own bounds and record their steps, and the merged trace is validated against the spec.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from lockstep.checker.datalog.evaluation import prepare, refusal
from lockstep.checker.datalog.files import load_graph
from lockstep.checker.datalog.graph_options import check_graph_options
from lockstep.checker.datalog.plan import linear_plan, pair_plan
from lockstep.checker.validation.runtrace import MergedRun, merge
from lockstep.specs.datalog.plan import LinearPlan, PairPlan, is_composition
from lockstep.specs.datalog.ssp import RANDOM_BASE, graph_edges
from lockstep.specs.datalog.syntax import DatalogError

from ..cluster import Cluster, default_trace_path
from ..faults import Faults
from .pairs import main as pairs_main
from .worker import WorkerConfig, main

SPECS = {"sssp": "ssp_sssp", "cc": "ssp_cc", "reach": "ssp_reach", "apsp": "ssp_apsp"}  # programs with an SSP spec
RUN_TIMEOUT = 600.0


@dataclass
class DatalogRun:
    """What a run did: the merged result, per-worker statistics, and the trace if one was recorded."""

    program: str
    workers: int
    staleness: int
    seconds: float
    keys: np.ndarray  # key values with a value
    vals: np.ndarray
    stats: dict[int, dict[str, Any]]
    clocks: dict[int, int]
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    trace: str | None = None
    merged: MergedRun | None = None
    spec: str | None = None
    spec_params: dict[str, int] | None = None
    plan: LinearPlan | PairPlan | None = None
    startup: float = 0.0  # seconds to start the workers (not included in `seconds`: from go to the last stop)
    interrupted: float | None = None  # seconds into the run when SIGINT stopped it (the result is then partial)

    def mapping(self) -> dict[int, int]:
        return dict(zip(self.keys.tolist(), self.vals.tolist()))


class DatalogCluster(Cluster):
    """The worker processes of one run."""

    def __init__(self, configs: list[WorkerConfig]):
        super().__init__("datalog", {}, len(configs), None)
        self.configs = configs

    def process_for(self, pid: int, restore: bool) -> tuple[Callable[[dict[str, Any]], None], dict[str, Any], str]:
        cfg = self.configs[pid]
        cfg.control_port = self.control_port
        return (pairs_main if cfg.kind == "pairs" else main), asdict(cfg), f"lockstep-datalog-{pid}"


def ssp_graph(text: str) -> int | None:
    """The catalogue index of `ssp:N` (None for any other graph)."""
    if text.startswith("ssp:"):
        try:
            n = int(text[4:])
        except ValueError:
            raise DatalogError(f"graph {text!r}: ssp:N takes a catalogue index") from None
        graph_edges(n)  # a ValueError for an unknown index
        return n
    return None


def build_plan(ref: str, params: dict[str, int], graph: str, weights: tuple[int, int] | None, seed: int,
               undirected: bool, with_fixpoint: bool) -> tuple[LinearPlan | PairPlan, list[str], int | None]:
    prog, verdicts = prepare(ref, params)
    err = refusal(prog, verdicts)
    if err is not None:
        raise err
    inputs = list(prog.inputs)
    if len(inputs) != 1:
        raise DatalogError(f"the workers read one input relation; the program has {len(inputs)}")
    arity = prog.arity[inputs[0]]
    check_graph_options(graph, arity, weights, undirected)
    notes = []
    index = ssp_graph(graph)
    if index is not None:
        edges = graph_edges(index)[:, :arity]
        notes.append(f"SSP catalogue graph {index}" + (" (random)" if index >= RANDOM_BASE else ""))
    else:
        g = load_graph(graph, seed, undirected)
        edges, note = g.columns(arity, weights, seed)
        notes.append(f"{g.edges:,} edges from {g.origin}")
        if note:
            notes.append(note)
    if is_composition(prog):
        return pair_plan(prog, {inputs[0]: edges}, with_fixpoint=with_fixpoint), notes, index
    return linear_plan(prog, {inputs[0]: edges}, with_fixpoint=with_fixpoint), notes, index


def partition(plan: LinearPlan | PairPlan, workers: int, pid: int, path: str) -> None:
    """Write worker `pid`'s part of the plan to `path` (an .npz file of plain arrays)."""
    if isinstance(plan, PairPlan):
        lits = ", ".join(str(lit) for lit in plan.literals) or "0 = 0"
        np.savez(path, n=np.int64(len(plan.nodes)), own_row=plan.owner(workers) == pid, row_owner=plan.owner(workers),
                 init_keys=plan.init_keys, init_vals=plan.init_vals, rule=np.array(f"h(min<{plan.head}>) <- {lits}."),
                 left=np.array(plan.left), right=np.array(plan.right), head=np.array(plan.head))
        return
    owner = plan.owner(workers)
    own = owner == pid
    data: dict[str, Any] = {"nkeys": np.int64(len(plan.keys)), "own": own, "owner": owner,
                            "ngroups": np.int64(len(plan.groups))}
    mine = own[plan.init_keys]
    data["init_keys"], data["init_vals"] = plan.init_keys[mine], plan.init_vals[mine]
    for i, g in enumerate(plan.groups):
        sel = own[g.src]
        data[f"g{i}_src"], data[f"g{i}_dst"] = g.src[sel], g.dst[sel]
        for name, col in g.env.items():
            data[f"g{i}_env_{name}"] = col[sel]
        lits = ", ".join(str(lit) for lit in g.literals) or "0 = 0"
        head = f"h(min<{g.head}>)" if g.head is not None else "h(0)"
        data[f"g{i}_meta"] = np.array(json.dumps({"env": sorted(g.env), "value_var": g.value_var,
                                                  "rule": f"{head} <- {lits}."}))
    np.savez(path, **data)


def run(ref: str, graph: str, workers: int = 2, staleness: int = 1, params: dict[str, int] | None = None,
        weights: tuple[int, int] | None = None, seed: int = 0, undirected: bool = False, faults: Faults | None = None,
        trace: str | None = None, tracing: bool | None = None, max_clock: int = 0, check: bool = False,
        timeout: float = RUN_TIMEOUT, progress: Callable[[str], None] | None = None) -> DatalogRun:
    """Run program `ref` on W workers (staleness -1: asynchronous); see the module docstring."""
    params = dict(params or {})
    plan, notes, index = build_plan(ref, params, graph, weights, seed, undirected, with_fixpoint=check)
    name = os.path.splitext(os.path.basename(ref))[0]
    spec = SPECS.get(name) if index is not None else None
    traced = bool(spec) if tracing is None else tracing
    pairs = isinstance(plan, PairPlan)
    if traced and not spec:
        notes.append("no SSP spec for this program and graph: the run is recorded but cannot be validated")
    spec_params = None
    best = worst = nil = None
    if spec:
        best, worst = plan.bounds()
        nil = worst + 1 if plan.func == "min" else worst - 1
        spec_params = {"workers": workers, "s": staleness, "graph": index, **{k: v for k, v in params.items()
                                                                            if k == "source"}}
    clocks_base = 31  # the spec's clocks + 1 used to pack seen clocks in traced ticks (W > 2)
    faults = faults or Faults()
    delays = {s.pid: (s.delay_ms, s.probability) for s in faults.stragglers}
    with tempfile.TemporaryDirectory(prefix="lockstep-datalog-") as tmp:
        os.chmod(tmp, 0o700)
        configs = []
        for pid in range(workers):
            part = os.path.join(tmp, f"partition-{pid}.npz")
            partition(plan, workers, pid, part)
            configs.append(WorkerConfig(
                pid, workers, staleness, 0, part, os.path.join(tmp, f"result-{pid}.npz"), plan.func, nil, worst, best,
                max_clock or max(10_000, 2 * len(plan.keys) + 10), *delays.get(pid, (0.0, 1.0)), seed,
                os.path.join(tmp, f"worker-{pid}.jsonl") if traced else None, spec, spec_params,
                clocks_base if workers > 2 else 0, "pairs" if pairs else "linear"))
        stats, clocks, failures, seconds, startup, interrupted = asyncio.run(_drive(configs, timeout, progress))
        keys, vals = [], []
        for pid in range(workers):
            path = configs[pid].result
            if os.path.exists(path):
                with np.load(path, allow_pickle=False) as z:
                    keys.append(z["keys"])
                    vals.append(z["vals"])
            elif interrupted is not None:  # stopped before it had a result to write: the partial result lacks it
                notes.append(f"worker {pid} was stopped before it wrote a result")
            else:
                failures.append(f"worker {pid} wrote no result")
        k = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
        v = np.concatenate(vals) if vals else np.zeros(0, dtype=np.int64)
        order = np.argsort(k)
        if interrupted is not None:
            notes.append(f"interrupted (SIGINT) {interrupted:.2f} s into the run: the workers were stopped there, so "
                         "the result is partial; their traces keep what was recorded up to then")
        out = DatalogRun(name, workers, staleness, seconds, plan.keys[k[order]], v[order], stats, clocks, failures,
                         notes, spec=spec, plan=plan, startup=startup, interrupted=interrupted)
        if traced:
            out.trace = trace or default_trace_path(f"datalog-{name}")
            paths = {pid: configs[pid].trace for pid in range(workers)}
            if spec:
                spec_params = _validation_params(paths, spec_params, workers)
            out.spec_params = spec_params
            out.merged = merge(paths, out.trace, spec or name, spec or name, spec_params or {}, notes,  # type: ignore
                               {} if interrupted is None else {"interrupted": interrupted})
        return out


def _validation_params(paths: dict[int, str | None], params: dict[str, int], workers: int) -> dict[str, int]:
    """The spec's bounds for validating this run: clocks above the largest one reached, and channels that
    hold the most messages that were ever in flight on one of them."""
    top = 0
    events = []
    for p in paths.values():
        if p and os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                for line in f:
                    e = json.loads(line)
                    if e.get("kind") in ("start", "message", "timeout"):
                        events.append(e)
                        top = max(top, e["state"]["clock"])
    events.sort(key=lambda e: (e["clock"], e["pid"], e["seq"]))
    flight: dict[tuple[int, int], int] = {}
    most = 1
    for e in events:
        if e["kind"] == "message":
            flight[(e["src"], e["pid"])] = flight.get((e["src"], e["pid"]), 0) - 1
        for dst, _ in e["sends"]:
            key = (e["pid"], dst)
            flight[key] = flight.get(key, 0) + 1
            most = max(most, flight[key])
    out = dict(params)
    out["clocks"] = 30 if workers > 2 else max(top + 1, 2)
    out["capacity"] = most
    return out


async def _drive(configs: list[WorkerConfig], timeout: float,
                 progress: Callable[[str], None] | None) -> tuple[dict, dict, list[str], float, float, float | None]:
    cluster = DatalogCluster(configs)
    failures: list[str] = []
    t0 = time.perf_counter()
    seconds = startup = 0.0

    async def until_quiet() -> None:
        """Wait until every worker has detected quiescence (or one fails, dies, or the run times out)."""
        if progress:
            progress(f"{len(configs)} workers started in {startup:.1f} s")
        pending = set(range(len(configs)))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while pending:
            if loop.time() > deadline:
                failures.append(f"workers {sorted(pending)} did not finish within {timeout:.0f} s")
                return
            for pid in list(pending):
                q = cluster.members[pid].reports
                while not q.empty():
                    msg = q.get_nowait()
                    if msg.get("op") == "done":
                        pending.discard(pid)
                        if progress:
                            progress(f"worker {pid} stopped at clock {msg.get('clock')}")
                    elif msg.get("op") == "failed":
                        failures.append(f"worker {pid}: {msg.get('message')}")
                        pending.clear()
                    elif msg.get("op") == "gone":
                        failures.append(f"worker {pid} exited unexpectedly")
                        pending.clear()
            dead = cluster.dead()
            if dead:
                failures.append(f"worker {dead[0]} exited unexpectedly")
                return
            await asyncio.sleep(0.002)

    try:
        await cluster.start()
        startup = time.perf_counter() - t0
        t1 = time.perf_counter()
        await cluster.drive(until_quiet())
        seconds = time.perf_counter() - t1
        await cluster.stop()
    finally:
        cluster.close()
    stats = {p: (m.bye or {}).get("stats", {}) for p, m in cluster.members.items()}
    clocks = {p: (m.bye or {}).get("clock", -1) for p, m in cluster.members.items()}
    for p, m in sorted(cluster.members.items()):
        if m.exit_note and m.bye is None:  # a worker that said goodbye (its result written) but exits slowly is fine
            failures.append(f"worker {p} {m.exit_note}")
    return stats, clocks, failures, seconds, startup, cluster.interrupted
