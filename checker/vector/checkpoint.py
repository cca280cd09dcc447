"""Checkpoints of a vector search at level boundaries: `check --checkpoint DIR`, `--resume DIR`.

A checkpoint holds what a breadth-first search needs to go on after a level: the frontier, the
visited fingerprints, the parent links of every level and the counters. It is a directory of
`.npy` files (read back as plain arrays: a checkpoint never chooses code) and a `manifest.json`
naming the spec, its parameters, the checked properties and the packing, so a checkpoint is never
resumed against another model. What a checkpoint directory holds is read as data: only regular
files, never through a symbolic link, the manifest up to a size limit and its counters checked.

Parent links of a finished level never change, so each level's links are written once
(`links-L.npy`); the frontier and the visited set are written whole at each checkpoint. Files are
written under temporary names and renamed; the manifest is replaced last, so a run killed at
any moment leaves the previous checkpoint intact, and the files it no longer names are removed
only after it is replaced.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..errors import UsageError
from ..safeio import open_input, read_bytes, replacing
from ..safejson import JSONInputError, loads
from .spool import Spool

FORMAT = 1
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 1 << 20
MAX_COUNT = 1 << 62  # a manifest's counters (levels, states, depth) are whole numbers up to this
CHUNK = 1 << 20  # rows copied at a time


class CheckpointError(UsageError):
    """A checkpoint directory cannot be used: missing, of another model, or damaged (an input error: exit 2)."""


def identity(vm: Any) -> dict:
    """What a checkpoint must agree on with the run resuming it."""
    m = vm.model
    return {"spec": m.name, "params": {k: v for k, v in m.params.items()},
            "invariants": list(m.invariant_names), "constraints": list(m.constraint_names),
            "bits": vm.layout.bits, "words": vm.layout.words, "transitions": vm.ntrans,
            **({"symmetry": True} if m.symmetry else {})}


def read_manifest(directory: str) -> dict | None:
    """The manifest of the last complete checkpoint in `directory`, or None if there is none."""
    path = os.path.join(directory, MANIFEST)
    try:
        man = loads(read_bytes(path, MAX_MANIFEST_BYTES, "checkpoint manifest", follow=False), path)
    except FileNotFoundError:
        return None
    except (OSError, JSONInputError) as e:
        raise CheckpointError(f"{path} is not a readable checkpoint manifest ({e})") from None
    if not isinstance(man, dict) or man.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a lockstep checkpoint of format {FORMAT}")
    return man


def counters(man: dict, keys: Iterable[str], path: str) -> dict[str, int]:
    """The manifest's counters `keys`, each a whole number from 0 to MAX_COUNT; a CheckpointError naming the first
    that is missing or is not one."""
    out = {}
    for key in keys:
        v = man.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_COUNT:
            raise CheckpointError(f"{path}: {key!r} is {'missing' if v is None else json.dumps(v)[:40]}, not a whole "
                                  f"number from 0 to {MAX_COUNT:,}: not a checkpoint Lockstep wrote")
        out[key] = v
    return out


class Checkpoint:
    """Writes a search's state to `directory` at level boundaries, at most every `every` seconds;
    with `resume`, the search starts from the checkpoint there instead of the initial states."""

    def __init__(self, directory: str, every: float, resume: bool, deadlock: bool,
                 say: Any = None, por: bool = False):
        self.directory, self.every, self.resume, self.deadlock = directory, every, resume, deadlock
        self.por = por  # a reduced search: resumed only by a reduced search (its visited set is the reduced one)
        self.say = say or (lambda text: None)
        self.last = time.monotonic()
        self.manifest: dict | None = None
        self.layout: Any = None  # the packing of the model bound (`bind`)
        self.written = 0  # levels whose parent links are on disk

    def bind(self, vm: Any) -> None:
        """Check the directory against the model before the search starts."""
        want = dict(identity(vm), deadlock=self.deadlock, **({"por": True} if self.por else {}))
        self.layout = vm.layout
        if self.resume:
            man = read_manifest(self.directory) if os.path.isdir(self.directory) else None
            if man is None:
                raise CheckpointError(f"{self.directory} holds no checkpoint to resume "
                                      f"(write one with --checkpoint {self.directory})")
            if not isinstance(man.get("identity"), dict):
                raise CheckpointError(f"{os.path.join(self.directory, MANIFEST)} does not say what it checkpoints")
            if bool(man["identity"].get("por")) != self.por:
                raise CheckpointError(
                    f"{self.directory} holds a search with partial-order reduction, and this run is not reduced "
                    "(--no-por, or --cluster, which expands every event); resume it on one machine without --no-por"
                    if not self.por else
                    f"{self.directory} holds a search without partial-order reduction, and this run is reduced; "
                    "resume it with --no-por")
            if man["identity"] != want:
                diff = sorted(k for k in set(want) | set(man["identity"]) if man["identity"].get(k) != want.get(k))
                raise CheckpointError(f"{self.directory} is a checkpoint of {man['identity'].get('spec')} "
                                      f"{man['identity'].get('params')}, which differs from this run in: "
                                      f"{', '.join(diff)}")
            self._verify(man, vm.layout.words)
            self.manifest = man
            self.written = man["levels"]
            return
        os.makedirs(self.directory, exist_ok=True)
        if read_manifest(self.directory) is not None:
            raise CheckpointError(f"{self.directory} already holds a checkpoint; continue it with "
                                  f"--resume {self.directory}, or choose an empty directory")
        self.manifest = {"format": FORMAT, "identity": want}

    def _verify(self, man: dict, words: int) -> None:
        """Every file the manifest names is there, of the right shape (their headers are read, not the data)."""
        d = self.directory
        c = counters(man, ("levels", "distinct", "level", "generated", "depth"), os.path.join(d, MANIFEST))
        levels, distinct = c["levels"], c["distinct"]
        if levels != c["level"] + 1:
            raise CheckpointError(f"{os.path.join(d, MANIFEST)}: level {c['level']} with the parent links of {levels} "
                                  "levels: a checkpoint at level L holds the links of levels 0..L")
        frontier, visited = man.get("frontier"), man.get("visited")
        if not isinstance(frontier, str) or not isinstance(visited, str):
            raise CheckpointError(f"{os.path.join(d, MANIFEST)} does not name its frontier and visited files")
        if os.path.basename(frontier) != frontier or os.path.basename(visited) != visited:
            raise CheckpointError(f"{os.path.join(d, MANIFEST)} names files outside {d}")
        if _load(os.path.join(d, visited)).shape != (distinct,):
            raise CheckpointError(f"{os.path.join(d, visited)} does not hold the {distinct:,} visited states "
                                  "the manifest counts")
        shape = _load(os.path.join(d, frontier)).shape
        if len(shape) != 2 or shape[0] != words:
            raise CheckpointError(f"{os.path.join(d, frontier)} does not hold states packed as this spec packs them")
        for lv in range(levels):
            if _load(os.path.join(d, f"links-{lv}.npy")).ndim != 2:
                raise CheckpointError(f"{os.path.join(d, f'links-{lv}.npy')} does not hold parent links")

    # -- writing -----------------------------------------------------------------------------------
    def level_done(self, search: Any, frontier: Spool, level: int) -> None:
        """At the boundary before expanding `level`: write a checkpoint if one is due."""
        if not len(frontier) or time.monotonic() - self.last < self.every:
            return
        t0 = time.monotonic()
        counters = {"level": level, "distinct": search.distinct, "generated": search.generated, "depth": search.depth}
        por = getattr(search, "por", None)
        if por is not None:  # the reduction's statistics, so a resumed run reports those of an uninterrupted one
            st = por.stats
            counters["por_stats"] = [st.enabled, st.pruned, st.reduced, st.proviso]
        self.save(search.checkpoint_links(self.written), frontier, _table_keys(search.table), counters)
        self.last = time.monotonic()
        self.say(f"checkpoint: level {level}, {search.distinct:,} states, written to {self.directory} "
                 f"in {self.last - t0:.1f} s")

    def save(self, levels: list, frontier: Spool | np.ndarray, visited: Iterator[np.ndarray], counters: dict) -> None:
        """Write a complete checkpoint and make it the current one; `levels` holds every level's parent
        links (a Spool or an array; those already written may be None)."""
        d = self.directory
        for lv in range(self.written, len(levels)):
            _write_spool(os.path.join(d, f"links-{lv}.npy"), levels[lv])
        self.written = len(levels)
        level = counters["level"]
        _write_spool(os.path.join(d, f"frontier-{level}.npy"), frontier)
        _write_chunks(os.path.join(d, f"visited-{level}.npy"), visited, counters["distinct"])
        assert self.manifest is not None
        old = self.manifest.get("level")
        man = dict(self.manifest, levels=len(levels), frontier=f"frontier-{level}.npy",
                   visited=f"visited-{level}.npy", **counters)
        _atomic_json(os.path.join(d, MANIFEST), man)
        self.manifest = man
        if old is not None and old != level:
            for name in (f"frontier-{old}.npy", f"visited-{old}.npy"):
                _remove(os.path.join(d, name))

    # -- reading -----------------------------------------------------------------------------------
    def restore(self, search: Any) -> tuple[Spool, int]:
        """Load the checkpoint into a fresh search: (frontier, level)."""
        man = self.manifest
        assert man is not None and self.resume
        d = self.directory
        for lv in range(man["levels"]):
            search.levels.append(_read_spool(os.path.join(d, f"links-{lv}.npy"), search.link_budget, None))
        frontier = _read_spool(os.path.join(d, man["frontier"]), search.budget, search.layout.words)
        visited = _load(os.path.join(d, man["visited"]))
        search.table.reserve(len(visited))  # the saved keys come in slot order: into a table of their final size
        for start in range(0, len(visited), CHUNK):
            search.table.add(np.array(visited[start:start + CHUNK]))
        for words in frontier.batches(CHUNK):
            _check_frontier(os.path.join(d, man["frontier"]), words, search.layout)
            if not search.table.contains(search.layout.fingerprints(words)).all():
                raise CheckpointError(f"{os.path.join(d, man['frontier'])} holds a state that is not among the visited "
                                      "states: the checkpoint is damaged")
        search.distinct, search.generated, search.depth = man["distinct"], man["generated"], man["depth"]
        por = getattr(search, "por", None)
        if por is not None and isinstance(man.get("por_stats"), list) and len(man["por_stats"]) == 4:
            st = por.stats
            st.enabled, st.pruned, st.reduced, st.proviso = (int(x) for x in man["por_stats"])
        search.resumed(frontier)
        self.last = time.monotonic()
        self.say(f"resuming from {d}: level {man['level']}, {man['distinct']:,} states, "
                 f"{len(frontier):,} in the frontier")
        return frontier, man["level"]


    def load(self) -> tuple[list[np.ndarray], np.ndarray, dict]:
        """The checkpoint as arrays (memory-mapped): (parent links per level, frontier, manifest)."""
        man = self.manifest
        assert man is not None and self.resume
        d = self.directory
        links = [_load(os.path.join(d, f"links-{lv}.npy")) for lv in range(man["levels"])]
        frontier = _load(os.path.join(d, man["frontier"]))
        for start in range(0, frontier.shape[1], CHUNK):
            _check_frontier(os.path.join(d, man["frontier"]), frontier[:, start:start + CHUNK], self.layout)
        self.last = time.monotonic()
        return links, frontier, man

    def link_fingerprints(self) -> Iterator[np.ndarray]:
        """The visited set, read back from the parent links on disk (links of the (fingerprint, parent)
        form, as the cluster keeps them)."""
        for lv in range(self.written):
            arr = _load(os.path.join(self.directory, f"links-{lv}.npy"))
            for start in range(0, arr.shape[1], CHUNK):
                yield np.array(arr[0, start:start + CHUNK])


def _check_frontier(path: str, words: np.ndarray, layout: Any) -> None:
    """A CheckpointError unless every column of `words` packs a state of the spec."""
    if not layout.valid(words).all():
        raise CheckpointError(f"{path} holds words that are not states of this spec: the checkpoint is damaged")


def _table_keys(visited: Any) -> Iterator[np.ndarray]:
    """The fingerprints held by a visited set (one table or several), a slice at a time."""
    for table in getattr(visited, "parts", [visited]):
        arr = table.table
        for start in range(0, len(arr), CHUNK):
            part = arr[start:start + CHUNK]
            yield part[part != 0]


def _write_spool(path: str, spool: Spool | np.ndarray) -> None:
    if isinstance(spool, np.ndarray):
        save_array(path, spool)
        return
    with replacing(path, binary=True, durable=True) as f:
        out = _mapped_npy(f, (spool.columns, len(spool)))
        at = 0
        for block in spool.batches(CHUNK):
            out[:, at:at + block.shape[1]] = block
            at += block.shape[1]
        out.flush()
        del out


def _write_chunks(path: str, chunks: Iterator[np.ndarray], total: int) -> None:
    with replacing(path, binary=True, durable=True) as f:
        out = _mapped_npy(f, (total,))
        at = 0
        for part in chunks:
            if at + len(part) > total:
                raise CheckpointError("the visited table holds more fingerprints than the search counted")
            out[at:at + len(part)] = part
            at += len(part)
        if at != total:
            raise CheckpointError("the visited table holds fewer fingerprints than the search counted")
        out.flush()
        del out


def _mapped_npy(f: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A `.npy` file of uint64 of `shape` in the new file `f`: its header written, its data mapped for writing."""
    np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.uint64)),
                                             "fortran_order": False, "shape": shape})
    offset = f.tell()
    f.flush()
    f.truncate(offset + 8 * int(np.prod(shape)))
    if not np.prod(shape):
        return np.empty(shape, dtype=np.uint64)
    return np.memmap(f, dtype=np.uint64, mode="r+", offset=offset, shape=shape)


def save_array(path: str, arr: np.ndarray) -> None:
    """Write an array of uint64 as a `.npy` file, replacing `path` once it is on disk."""
    with replacing(path, binary=True, durable=True) as f:
        np.save(f, np.ascontiguousarray(arr, dtype=np.uint64), allow_pickle=False)


def save_json(path: str, obj: Any) -> None:
    """Write a JSON document, replacing `path` once it is on disk."""
    with replacing(path, durable=True) as f:
        json.dump(obj, f, separators=(",", ":"))


def _atomic_json(path: str, obj: dict) -> None:
    with replacing(path, durable=True) as f:
        json.dump(obj, f, indent=1)


def _load(path: str) -> np.ndarray:
    """A `.npy` array of uint64 in a checkpoint, memory-mapped: a regular file (not a link), its header read
    (`allow_pickle` never applies: only a plain array header is accepted)."""
    try:
        with open_input(path, follow=False) as f:
            version = np.lib.format.read_magic(f)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read_header(f)
            if dtype != np.uint64:
                raise CheckpointError(f"{path} does not hold 64-bit words")
            if not np.prod(shape):
                return np.empty(shape, dtype=np.uint64)
            return np.memmap(f, dtype=np.uint64, mode="r", offset=f.tell(), shape=shape, order="F" if fortran else "C")
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path} is missing or damaged ({e})") from None


def _read_spool(path: str, budget: Any, columns: int | None) -> Spool:
    arr = _load(path)
    if arr.ndim != 2 or (columns is not None and arr.shape[0] != columns):
        raise CheckpointError(f"{path} does not have the shape this spec's states pack into")
    spool = Spool(budget, arr.shape[0])
    for start in range(0, arr.shape[1], CHUNK):
        spool.append(np.array(arr[:, start:start + CHUNK]))
    return spool


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def stderr_say(text: str) -> None:
    """Checkpoint news, on the progress stream."""
    print("progress: " + text, file=sys.stderr, flush=True)
