"""Recursive Datalog with aggregates: the single-process engine against scipy.sparse.csgraph and networkx on
a graph of about 10^6 edges (SSSP and CC), and W = 2 workers under BSP, SSP(s) and async, with and without
a straggler.

    python -m bench.datalog                  # n = 200,000 nodes, m = 1,000,000 edges
    python -m bench.datalog --edges 200000   # smaller
    python -m bench.datalog --skip-networkx --skip-workers
    python -m bench.datalog --edges 100000 --worker-edges 20000 --repeats 1   # a quick look

Wall time of each engine's input step (lockstep: deduplicating and indexing the rows; scipy: building the CSR
matrix; networkx: building the graph) and of its algorithm, apart; ratios on the algorithm alone and end to end.
scipy and lockstep are timed in `--rounds` interleaved rounds, and their medians compared (each row shows the
range of its algorithm's times); networkx and DuckDB once. The workers' start-up is reported apart. Peak memory
is tracemalloc's peak over the algorithm (lockstep: input step included; numpy allocations counted), from an
untimed run. Each result is checked against scipy's. DuckDB's recursive CTEs are timed too when `duckdb` is
installed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np
from scipy.sparse import csgraph, csr_matrix

from lockstep.checker.datalog.evaluate import Evaluator
from lockstep.checker.datalog.kernels import kernels
from lockstep.executors.datalog.run import run as run_workers
from lockstep.executors.faults import Faults, Straggler
from lockstep.specs.datalog.analysis import analyse
from lockstep.specs.datalog.catalog import load
from lockstep.specs.datalog.graphs import Graph

ALONE, WHOLE = 2.0, 1.0  # targets: lockstep's time over scipy's, the algorithm alone and end to end


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(result, seconds) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def peak(fn: Callable[[], Any]) -> float:
    """The peak MiB of one call under tracemalloc (whose tracing slows allocation-heavy code, numpy's included, so
    it is not timed)."""
    tracemalloc.start()
    fn()
    mib = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return mib


def measure(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(seconds, peak MiB, result): the time of one call, and the peak of a second, untimed call."""
    out, seconds = timed(fn)
    return seconds, peak(fn), out


def ours(name: str, edges: np.ndarray) -> tuple[float, float, Any]:
    """(seconds loading the input: deduplicating and indexing it, seconds evaluating, the result). The program is
    parsed and analysed before, and the result turned into a mapping after, the timed steps."""
    prog = analyse(load(name))
    t0 = time.perf_counter()
    ev = Evaluator(prog, {"edge": edges}, {s: True for s in prog.sites}, kernels=kernels())
    t1 = time.perf_counter()
    res = ev.run()
    return t1 - t0, time.perf_counter() - t1, res


def duckdb_sssp(con, n: int):
    q = """WITH RECURSIVE sp(node, d) USING KEY (node) AS (
             SELECT 0, 0
             UNION
             SELECT e.dst, min(sp.d + e.w) FROM sp JOIN e ON e.src = sp.node GROUP BY e.dst
           ) SELECT node, d FROM sp"""
    return dict(con.execute(q).fetchall())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--nodes", type=int, default=0, help="default: edges / 5")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-networkx", action="store_true")
    ap.add_argument("--skip-workers", action="store_true")
    ap.add_argument("--worker-edges", type=int, default=200_000, help="edges of the workers' graph")
    ap.add_argument("--straggler-ms", type=float, default=50.0, help="a straggler's delay before an iteration")
    ap.add_argument("--transient-p", type=float, default=0.3, help="transient stragglers: the chance of a delay")
    ap.add_argument("--grid", default="grid:60:60", help="a second workers' graph, of high diameter ('' for none)")
    ap.add_argument("--repeats", type=int, default=3, help="worker runs per cell (the median is shown)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="timed rounds of scipy and lockstep, interleaved (the medians are compared)")
    args = ap.parse_args()
    m = args.edges
    n = args.nodes or m // 5
    rng = np.random.default_rng(args.seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(1, 101, m)
    edges = np.stack([src, dst, w], axis=1)
    engine = "C kernels" if kernels().joins_into_groups else "numpy"
    kernels()  # built (or loaded from the cache) before anything is timed
    print(f"graph: {n:,} nodes, {m:,} random directed edges, weights 1..100 (seed {args.seed}); passes: {engine}\n")

    # Every engine starts from the same edge arrays. "input" is what it does before the algorithm proper:
    # lockstep deduplicates and indexes the rows; scipy builds a CSR matrix (lightest parallel edge; for CC
    # also the symmetric one); networkx builds its graph. Ratios are given on the algorithm alone and end to end.
    # scipy and lockstep are timed in `--rounds` rounds of one call each (so that a slow spell of a shared
    # machine, or the first touch of fresh memory, falls on both alike), and the medians compared.
    times: dict[str, list[float]] = {k: [] for k in ("csr", "dijkstra", "sssp in", "sssp", "sym", "cc", "cc in",
                                                      "ours cc")}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        ls, ld, lw = _lightest(src, dst, w, n)  # parallel edges: the lightest counts (csgraph would add them up)
        M = csr_matrix((lw.astype(np.float64), (ls, ld)), shape=(n, n))
        times["csr"].append(time.perf_counter() - t0)
        dist, t = timed(lambda: csgraph.dijkstra(M, indices=0))
        times["dijkstra"].append(t)
        o_load, o_alg, res = ours("sssp", edges)
        times["sssp in"].append(o_load)
        times["sssp"].append(o_alg)
        ref = {i: int(d) for i, d in enumerate(dist) if np.isfinite(d)}
        assert res.mapping("sp") == ref, "SSSP differs from scipy"
        t0 = time.perf_counter()
        U = M + M.T
        times["sym"].append(time.perf_counter() - t0)
        (_, labels), t = timed(lambda: csgraph.connected_components(U, directed=False))
        times["cc"].append(t)
        o2_load, o2_alg, res = ours("cc", edges[:, :2])
        times["cc in"].append(o2_load)
        times["ours cc"].append(o2_alg)
        cc = res.mapping("cc")
        present = np.unique(np.concatenate([src, dst]))
        assert len(set(cc.values())) == len(np.unique(labels[present])) and len(cc) == len(present), "CC differs"
    med = {k: statistics.median(v) for k, v in times.items()}
    span = {k: f"{min(v):.3f}-{max(v):.3f}" for k, v in times.items()}
    t_csr, s_t, o_load, o_alg = med["csr"], med["dijkstra"], med["sssp in"], med["sssp"]
    t_u, c_t, o2_load, o2_alg = med["csr"] + med["sym"], med["cc"], med["cc in"], med["ours cc"]
    s_m, o_m = peak(lambda: csgraph.dijkstra(M, indices=0)), peak(lambda: ours("sssp", edges))
    c_m, o2_m = peak(lambda: csgraph.connected_components(U, directed=False)), peak(lambda: ours("cc", edges[:, :2]))
    rows = []  # (query, engine, input s, algorithm s, peak MiB, note)

    def ratio(a_in: float, a_alg: float, b_in: float, b_alg: float) -> str:
        return f"{a_alg / b_alg:.1f}x alone, {(a_in + a_alg) / (b_in + b_alg):.1f}x end to end"

    rows.append(("SSSP", f"lockstep (semi-naive, {engine})", o_load, o_alg, o_m,
                 f"algorithm {span['sssp']} s; scipy: " + ratio(o_load, o_alg, t_csr, s_t)))
    rows.append(("SSSP", "scipy.sparse.csgraph.dijkstra", t_csr, s_t, s_m, f"algorithm {span['dijkstra']} s"))
    how = "chaotic iteration" if kernels().propagates else "semi-naive"  # the recursion taken in place (C), or not
    rows.append(("CC", f"lockstep ({how}, {engine})", o2_load, o2_alg, o2_m,
                 f"algorithm {span['ours cc']} s; scipy: " + ratio(o2_load, o2_alg, t_u, c_t)))
    rows.append(("CC", "scipy.sparse.csgraph.connected_components", t_u, c_t, c_m, f"algorithm {span['cc']} s"))
    if not args.skip_networkx:
        t0 = time.perf_counter()
        G = nx.DiGraph()
        G.add_weighted_edges_from(zip(ls.tolist(), ld.tolist(), lw.tolist()))
        t_g = time.perf_counter() - t0
        x_t, x_m, xd = measure(lambda: nx.single_source_dijkstra_path_length(G, 0))
        assert {k: int(v) for k, v in xd.items()} == ref
        rows.append(("SSSP", "networkx.single_source_dijkstra_path_length", t_g, x_t, x_m,
                     "lockstep faster: " + ratio(t_g, x_t, o_load, o_alg)))
        Gu = G.to_undirected(as_view=True)
        y_t, y_m, comps = measure(lambda: list(nx.connected_components(Gu)))
        rows.append(("CC", "networkx.connected_components", t_g, y_t, y_m,
                     "lockstep faster: " + ratio(t_g, y_t, o2_load, o2_alg)))
    try:
        import duckdb  # an optional peer
    except ImportError:
        duckdb = None
    if duckdb is not None:
        con = duckdb.connect()
        t0 = time.perf_counter()
        con.register("edges_df", {"src": src, "dst": dst, "w": w})
        con.execute("CREATE TABLE e AS SELECT * FROM edges_df")
        t_d = time.perf_counter() - t0
        try:
            d_t, d_m, dd = measure(lambda: duckdb_sssp(con, n))
            ok = dd == ref
            rows.append(("SSSP", "duckdb recursive CTE (USING KEY)", t_d, d_t, d_m, "" if ok else "result differs"))
        except Exception as e:  # an older duckdb without USING KEY
            rows.append(("SSSP", f"duckdb: {type(e).__name__}", t_d, float("nan"), float("nan"), str(e)[:40]))
    else:
        rows.append(("SSSP", "duckdb recursive CTE", float("nan"), float("nan"), float("nan"),
                     "not installed (pip install duckdb)"))

    print(f"{'query':<6} {'engine':<46} {'input s':>8} {'algo s':>8} {'peak MiB':>9}  note")
    for q, eng, t_in, t, mem, note in rows:
        print(f"{q:<6} {eng:<46} {t_in:>8.3f} {t:>8.3f} {mem:>9.1f}  {note}")
    for q, (a_in, a_alg, b_in, b_alg) in (("SSSP", (o_load, o_alg, t_csr, s_t)), ("CC", (o2_load, o2_alg, t_u, c_t))):
        alone, whole = a_alg / b_alg, (a_in + a_alg) / (b_in + b_alg)
        print(f"target: {q} at {m:,} edges, {alone:.2f}x scipy's algorithm time (<= {ALONE:g}x): "
              f"{'met' if alone <= ALONE else 'missed'}")
        print(f"target: {q} at {m:,} edges, {whole:.2f}x scipy's time end to end (<= {WHOLE:g}x): "
              f"{'met' if whole <= WHOLE else 'missed'}")

    if args.skip_workers:
        return
    mw = args.worker_edges
    nw = mw // 5
    with tempfile.TemporaryDirectory() as tmp:
        g = Graph(rng.integers(0, nw, mw), rng.integers(0, nw, mw), rng.integers(1, 101, mw), "bench")
        _write_edges(g, f"{tmp}/g.txt")
        _workers_section(f"{tmp}/g.txt", f"random directed graph, {nw:,} nodes and {mw:,} edges", args)
        if args.grid:
            _workers_section(args.grid, f"{args.grid} (both directions; node r*C+c: with C even each column is one "
                                        "worker's, so paths run along columns without crossing workers)", args)


def _workers_section(graph: str, label: str, args: argparse.Namespace) -> None:
    """BSP vs SSP(s) vs async on W = 2 workers, SSSP on `graph`: no straggler; worker 1 delayed before every
    iteration (a persistent straggler); every worker delayed before an iteration with chance p (transient
    stragglers). The median of `--repeats` runs (and their range); every run is checked against the fixpoint."""
    ms, p, reps = args.straggler_ms, args.transient_p, args.repeats
    weights = None if os.path.exists(graph) else (1, 100)  # an edge-list file has its own weights
    print(f"\nW = 2 workers, SSSP on {label}; median of {reps} runs (range), seconds from go to the last stop")
    print(f"  persistent: worker 1 sleeps {ms:g} ms before each iteration; transient: each worker sleeps {ms:g} ms "
          f"before an iteration with chance {p:g}")
    print(f"{'model':<8} {'straggler':<11} {'seconds':>8} {'range':>13} {'iters w0':>8} {'iters w1':>8} "
          f"{'delayed s':>9} {'deltas':>9}  result")
    scenarios = (("none", None), ("persistent", Faults(stragglers=[Straggler(1, ms)])),
                 ("transient", Faults(stragglers=[Straggler(0, ms, p), Straggler(1, ms, p)])))
    base: dict[str, float] = {}
    for s, model in ((0, "BSP"), (1, "SSP(1)"), (2, "SSP(2)"), (4, "SSP(4)"), (-1, "async")):
        for name, faults in scenarios:
            runs = [run_workers("sssp", graph, workers=2, staleness=s, faults=faults, weights=weights,
                                seed=args.seed, tracing=False, check=True) for _ in range(reps)]
            wrong = [_wrong(rep) for rep in runs]
            times = sorted(rep.seconds for rep in runs)
            mid = runs[sorted(range(reps), key=lambda i: runs[i].seconds)[reps // 2]]
            med = times[reps // 2]
            base.setdefault(name, med)
            note = "= fixpoint" if not any(wrong) else "WRONG: " + "; ".join(w for w in wrong if w)
            if s != 0:
                note += f", {base[name] / med:.2f}x BSP's speed"
            st = mid.stats
            delayed = max(st[q].get("delayed_s", 0.0) for q in (0, 1))
            deltas = sum(x.get("deltas_sent", 0) for x in st.values())
            print(f"{model:<8} {name:<11} {med:>8.3f} {times[0]:>6.2f}–{times[-1]:<6.2f} "
                  f"{st[0].get('iterations', 0):>8} {st[1].get('iterations', 0):>8} {delayed:>9.2f} {deltas:>9,}  "
                  f"{note}", flush=True)


def _wrong(rep) -> str:
    """'' if a worker run equals the sequential fixpoint, else what differs."""
    fix = {int(rep.plan.keys[k]): v for k, v in rep.plan.fixpoint.items()}
    got = rep.mapping()
    wrong = sum(got.get(k) != v for k, v in fix.items()) + len(set(got) - set(fix))
    return f"{wrong} keys differ {rep.failures}" if wrong or rep.failures else ""


def _write_edges(g: Graph, path: str) -> None:
    """The graph as an edge list (one `src dst weight` line an edge)."""
    cols = [g.src, g.dst] + ([g.weight] if g.weight is not None else [])
    np.savetxt(path, np.stack(cols, axis=1), fmt="%d")


def _lightest(src: np.ndarray, dst: np.ndarray, w: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, weight) with one edge per pair, the lightest."""
    code = src.astype(np.int64) * n + dst
    order = np.lexsort((w, code))
    c = code[order]
    first = np.concatenate(([True], c[1:] != c[:-1]))
    return c[first] // n, c[first] % n, w[order][first]


if __name__ == "__main__":
    main()
