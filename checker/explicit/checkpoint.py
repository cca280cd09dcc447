"""Checkpoints of the scalar engine's breadth-first search (`check --engine explicit --checkpoint DIR`,
`--resume DIR`), for typed specs, with or without symmetry and partial-order reduction.

At a level boundary the search is its parent links (the visited set), its frontier and its counters;
the reduction's cycle proviso keeps nothing across levels. The parent links are `.npy` arrays of
fingerprints; the frontier's states, tuples of integers and booleans, are one JSON array (read back
as data: a checkpoint never chooses code). Files are written under the level's name and the manifest
replaced last, as the vector engine's checkpoints are, so a run killed at any moment leaves the
previous checkpoint whole.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from ..model import Model
from ..reduction.ample import PorStats
from ..safeio import read_bytes
from ..safejson import JSONInputError, loads
from ..vector.checkpoint import (
    FORMAT,
    MANIFEST,
    CheckpointError,
    _atomic_json,
    _load,
    _remove,
    counters,
    read_manifest,
    save_array,
    save_json,
)

M64 = (1 << 64) - 1
MAX_FRONTIER_BYTES = 1 << 32  # the frontier's JSON: more than any frontier a scalar search holds in memory
ENGINE = "explicit"


def identity(model: Model, deadlock: bool, por: bool) -> dict:
    """What a checkpoint must agree on with the run resuming it."""
    return {"engine": ENGINE, "spec": model.name, "params": dict(model.params),
            "invariants": list(model.invariant_names), "constraints": list(model.constraint_names),
            "slots": model.prog.nslots, "symmetry": bool(model.symmetry), "deadlock": deadlock, "por": por}


class ExplicitCheckpoint:
    """Writes the scalar search to `directory` at level boundaries, at most every `every` seconds; with
    `resume`, the search starts from the checkpoint there."""

    def __init__(self, directory: str, every: float, resume: bool, deadlock: bool, por: bool, say: Any = None):
        self.directory, self.every, self.resume, self.deadlock, self.por = directory, every, resume, deadlock, por
        self.say = say or (lambda text: None)
        self.last = time.monotonic()
        self.manifest: dict | None = None

    def bind(self, model: Model) -> None:
        """Check the directory against the model before the search starts."""
        want = identity(model, self.deadlock, self.por)
        d = self.directory
        if not self.resume:
            os.makedirs(d, exist_ok=True)
            if read_manifest(d) is not None:
                raise CheckpointError(f"{d} already holds a checkpoint; continue it with --resume {d}, or choose "
                                      "an empty directory")
            self.manifest = {"format": FORMAT, "identity": want}
            return
        man = read_manifest(d) if os.path.isdir(d) else None
        if man is None:
            raise CheckpointError(f"{d} holds no checkpoint to resume (write one with --checkpoint {d})")
        got = man.get("identity")
        if not isinstance(got, dict):
            raise CheckpointError(f"{os.path.join(d, MANIFEST)} does not say what it checkpoints")
        if got.get("engine") != ENGINE:
            raise CheckpointError(f"{d} holds a checkpoint of the vector engine; resume it without --engine "
                                  "scalar/explicit")
        if got != want:
            diff = sorted(k for k in want if got.get(k) != want[k])
            raise CheckpointError(f"{d} is a checkpoint of {got.get('spec')} {got.get('params')}, which differs "
                                  f"from this run in: {', '.join(diff)}")
        counters(man, ("level", "generated", "depth", "distinct"), os.path.join(d, MANIFEST))
        names = [man.get(k) for k in ("links", "roots", "frontier", "fingerprints")]
        if not all(isinstance(n, str) for n in names):
            raise CheckpointError(f"{os.path.join(d, MANIFEST)} does not name its links, roots, frontier and "
                                  "fingerprints files")
        if any(os.path.basename(n) != n for n in names):
            raise CheckpointError(f"{os.path.join(d, MANIFEST)} names files outside {d}")
        self.manifest = man

    # -- writing -----------------------------------------------------------------------------------
    def level_done(self, search: Any, frontier: list[tuple[int, Any]], level: int) -> None:
        """At the boundary before expanding `level`: write a checkpoint if one is due."""
        if not frontier or time.monotonic() - self.last < self.every:
            return
        t0 = time.monotonic()
        d = self.directory
        parents: dict[int, int | None] = search.parents
        roots = [f for f, p in parents.items() if p is None]
        links = np.array([(f & M64, p & M64) for f, p in parents.items() if p is not None],
                         dtype=np.uint64).reshape(-1, 2).T
        states = []
        for _f, st in frontier:
            row = list(st)
            if any(type(v) not in (int, bool) for v in row):
                bad = next(v for v in row if type(v) not in (int, bool))
                raise CheckpointError(f"a state of {search.model.name} holds {bad!r} ({type(bad).__name__}); "
                                      "checkpoints hold states of integers and booleans only")
            states.append(row)
        files = {"links": f"links-{level}.npy", "roots": f"roots-{level}.npy", "frontier": f"frontier-{level}.json",
                 "fingerprints": f"fingerprints-{level}.npy"}
        save_array(os.path.join(d, files["links"]), links)
        save_array(os.path.join(d, files["roots"]), np.array([f & M64 for f in roots], dtype=np.uint64))
        save_array(os.path.join(d, files["fingerprints"]), np.array([f & M64 for f, _ in frontier], dtype=np.uint64))
        save_json(os.path.join(d, files["frontier"]), states)
        counters: dict[str, Any] = {"level": level, "distinct": len(parents), "generated": search.generated,
                                    "depth": search.depth}
        if search.por is not None:
            st = search.por
            counters["por_stats"] = [st.enabled, st.pruned, st.reduced, st.proviso]
        assert self.manifest is not None
        old = self.manifest.get("level")
        man = dict(self.manifest, **files, **counters)
        _atomic_json(os.path.join(d, MANIFEST), man)
        self.manifest = man
        if old is not None and old != level:
            for name in (f"links-{old}.npy", f"roots-{old}.npy", f"frontier-{old}.json", f"fingerprints-{old}.npy"):
                _remove(os.path.join(d, name))
        self.last = time.monotonic()
        self.say(f"checkpoint: level {level}, {len(parents):,} states, written to {d} in {self.last - t0:.1f} s")

    # -- reading -----------------------------------------------------------------------------------
    def restore(self, search: Any) -> tuple[list[tuple[int, Any]], int]:
        """Load the checkpoint into a fresh search: (frontier, level)."""
        man = self.manifest
        assert man is not None and self.resume
        d = self.directory
        links, roots, fps = (_load(os.path.join(d, man[k])) for k in ("links", "roots", "fingerprints"))
        if links.ndim != 2 or links.shape[0] != 2 or roots.ndim != 1 or fps.ndim != 1:
            raise CheckpointError(f"{d}: the parent links or fingerprints do not have the shape of a checkpoint")
        states = _load_json(os.path.join(d, man["frontier"]))
        prog = search.model.prog
        bounds = [(dom.lo, dom.hi) for fld in sorted(prog.fields, key=lambda f: f.base) for _, dom in fld.leaves()]
        if (not isinstance(states, list) or len(states) != len(fps)
                or any(not isinstance(s, list) or len(s) != prog.nslots for s in states)
                or any(type(v) not in (int, bool) or not lo <= v <= hi for s in states for v, (lo, hi) in zip(s, bounds))):
            raise CheckpointError(f"{os.path.join(d, man['frontier'])} does not hold this spec's states")
        parents: dict[int, int | None] = dict.fromkeys((int(f) for f in roots), None)
        parents.update(zip((int(f) for f in links[0]), (int(p) for p in links[1])))
        if len(parents) != man["distinct"]:
            raise CheckpointError(f"{d}: the parent links hold {len(parents):,} states, the manifest counts "
                                  f"{man['distinct']:,}")
        fingerprint = search.model.fingerprint
        frontier = [(int(f), tuple(s)) for f, s in zip(fps, states)]
        for f, st in frontier[:100]:
            if fingerprint(st) & M64 != f:
                raise CheckpointError(f"{d}: a frontier state does not have its recorded fingerprint (another "
                                      "version of the spec?)")
        search.parents = parents
        search.generated, search.depth = int(man["generated"]), int(man["depth"])
        ps = man.get("por_stats")
        if self.por and isinstance(ps, list) and len(ps) == 4:
            search.por = PorStats()
            search.por.enabled, search.por.pruned, search.por.reduced, search.por.proviso = (int(x) for x in ps)
        self.last = time.monotonic()
        self.say(f"resuming from {d}: level {man['level']}, {len(parents):,} states, {len(frontier):,} in the "
                 "frontier")
        return frontier, int(man["level"])


def _load_json(path: str) -> Any:
    try:
        return loads(read_bytes(path, MAX_FRONTIER_BYTES, "checkpoint frontier", follow=False), path)
    except (OSError, JSONInputError) as e:
        raise CheckpointError(f"{path} is missing or damaged ({e})") from None
