"""A worker of a non-linear path-composition program (`r(X, Y) <- r(X, Z), r(Z, Y)`, e.g. apsp) under SSP(s).

The paper's hybrid model for non-linear recursion: the pairs are partitioned by row (pair (x, y) belongs to
the worker of node x), and since a row's derivations read every other row, each worker keeps a replica
of the whole table. An iteration joins the changed pairs of its own rows with the replica (r(x, z) changed:
row z; r(z, y) changed, in any row: column z of its own rows), keeps the improvements of its own pairs and
broadcasts them to every other worker, whose replicas take them as deltas. Replica values may be up to s
iterations old; they are values of derivations, and only improve, so a stale one is only a worse candidate
(γ = min/max is PreM); the clocks, ticks and quiescence detection are the linear worker's.

On a graph of the spec catalogue (`--graph ssp:N`) the workers follow the bounds of the hybrid SSP
spec (`lockstep.specs.datalog.hybrid`, `ssp_apsp`): candidates worse than every walk of at most n edges
are dropped, one better than every such walk is divergence; and they record each handler run as that
spec's local step (one `message` event per delta, each improvement sent to every other worker), so the
run is validated against the spec. Deviation from a complete hybrid design: the replica is a dense n × n
table, so the workers take graphs of up to a few thousand nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lockstep.specs.datalog.parser import parse
from lockstep.specs.datalog.plan import compose

from .worker import Worker, WorkerConfig, serve_worker

LIMIT = 1 << 61  # a value beyond ±2^61 is divergence (a negative cycle keeps doubling a path's cost)


def main(cfg: dict[str, Any]) -> None:
    """Entry point of a spawned worker of a path-composition program."""
    serve_worker(PairWorker(WorkerConfig(**cfg)))


class PairWorker(Worker):
    """The rows of a pair table owned by this worker, and a replica of the others' rows."""

    def _load(self) -> None:
        with np.load(self.cfg.partition, allow_pickle=False) as z:
            self.n = int(z["n"])
            self.own_row = z["own_row"]  # bool per node: its row of pairs is this worker's
            self.owner = np.repeat(z["row_owner"], self.n)  # worker of each pair key
            init_k, init_v = z["init_keys"], z["init_vals"]
            rule = parse(str(z["rule"])).rules[0]  # the composing rule's comparisons, re-read from their text
            self.left, self.right, self.head = str(z["left"]), str(z["right"]), str(z["head"])
        self.literals = tuple(lit for lit in rule.body if not hasattr(lit, "pred"))
        self.nkeys = self.n * self.n
        self.own = np.repeat(self.own_row, self.n)
        self.groups = []
        self.val = np.full(self.nkeys, self.nil, dtype=np.int64)
        self.val[init_k] = init_v  # every worker starts from the whole exit table (its replica)
        self.changed = np.zeros(self.nkeys, dtype=bool)
        self.changed[init_k] = True  # own pairs: changed on both sides of the join; others: as the right side

    def accepts(self, keys: np.ndarray) -> bool:
        """Deltas are replica updates: for pairs of other workers' rows."""
        return not bool(self.own[keys].any())

    def compose(self, d1: np.ndarray, d2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v, ok = compose(self.literals, self.left, self.right, self.head, d1, d2)
        ok &= (d1 != self.nil) & (d2 != self.nil)
        if self.cfg.worst is not None:
            ok &= ~self.better(self.cfg.worst, v)  # worse than every bounded walk: never a pair's final value
        return v, ok

    def iterate(self) -> None:
        n = self.n
        D = self.val.reshape(n, n)
        ch = self.changed.reshape(n, n)
        rows = np.flatnonzero(self.own_row)
        cand_k, cand_v = [], []
        # r(x, z) changed for an own row x: joined with row z
        lx, lz = np.nonzero(ch[rows])
        if len(lx):
            x = np.repeat(rows[lx], n)
            y = np.tile(np.arange(n), len(lx))
            v, ok = self.compose(np.repeat(D[rows[lx], lz], n), D[lz].ravel())
            cand_k.append((x * n + y)[ok])
            cand_v.append(v[ok])
        # r(z, y) changed in any row: joined with column z of the own rows
        rz, ry = np.nonzero(ch)
        if len(rz) and len(rows):
            x = np.repeat(rows, len(rz))
            v, ok = self.compose(D[rows][:, rz].ravel(), np.tile(D[rz, ry], len(rows)))
            cand_k.append((x * n + np.tile(ry, len(rows)))[ok])
            cand_v.append(v[ok])
        self.changed[:] = False
        batches: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        sends: list[tuple[int, dict]] = []
        if cand_k:
            k, v = np.concatenate(cand_k), np.concatenate(cand_v)
            if len(v) and (int(v.max()) > LIMIT or int(v.min()) < -LIMIT):
                self._fail("divergence: a path's value passed ±2^61 (an improving cycle, e.g. a negative one)")
                return
            if self.cfg.best is not None and len(v) and self.better(v, self.cfg.best).any():
                bad = int(k[self.better(v, self.cfg.best)][0])
                self._fail(f"divergence: the pair of node indices {divmod(bad, n)} would get a value better than "
                           f"every walk of at most {n} edges")
                return
            order = np.lexsort((v if self.cfg.func == "min" else -v, k))
            k, v = k[order], v[order]
            first = np.ones(len(k), dtype=bool)
            first[1:] = k[1:] != k[:-1]
            k, v = k[first], v[first]
            imp = self.better(v, self.val[k])
            k, v = k[imp], v[imp]
            self.val[k] = v
            self.changed[k] = True
            self.stats["improved"] += len(k)
            if len(k):
                batches = {dst: (k, v) for dst in range(self.W) if dst != self.pid}
            if self.trace is not None:  # the spec's order: each improved pair, to every other worker
                sends = [(dst, {"tag": "Delta", "k": int(x), "v": int(y)}) for x, y in zip(k, v)
                         for dst in range(self.W) if dst != self.pid]
        self._end_iteration(batches, sends)
