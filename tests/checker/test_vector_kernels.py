"""The vector engine's two sets of loops (numpy and C) give the same results, the fused kernel is used where
a spec suits it, the C toolchain's absence or an unsafe cache directory only costs speed, and the cache of built
libraries cannot be taken over by another user."""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.vector import VectorOptions, check_vector
from lockstep.checker.vector.kernels import Native, cbuild, fused, portable
from lockstep.checker.vector.kernels.runtime import Runtime
from lockstep.checker.vector.kernels.runtime import library as runtime_library
from lockstep.checker.vector.layout import Layout
from lockstep.checker.vector.visited import _first_empty
from tests.conftest import model_path


@pytest.fixture(scope="module")
def native() -> Runtime:
    return Runtime(runtime_library().load())


keys_st = st.lists(st.integers(1, 2**64 - 1), max_size=200)


def _table(keys: list[int], cap: int = 512) -> np.ndarray:
    table = np.zeros(cap, dtype=np.uint64)
    portable.insert(table, np.array(keys, dtype=np.uint64))
    return table


@settings(max_examples=60, deadline=None)
@given(keys_st, keys_st)
def test_table_operations_agree(native, inserted, probed):
    a, b = np.zeros(512, dtype=np.uint64), np.zeros(512, dtype=np.uint64)
    ins = np.array(inserted, dtype=np.uint64)
    assert portable.insert(a, ins) == native.insert(b, ins) == len(set(inserted))
    keys = np.array(probed + inserted, dtype=np.uint64)
    assert portable.contains(a, keys).tolist() == native.contains(b, keys).tolist() == \
        [k in set(inserted) for k in probed + inserted]
    big_a, big_b = np.zeros(1024, dtype=np.uint64), np.zeros(1024, dtype=np.uint64)
    portable.rehash(a, big_a, 0, a.size, np.array([-1, 0], dtype=np.int64))
    native.rehash(b, big_b, 0, b.size, np.array([-1, 0], dtype=np.int64))
    assert native.contains(big_b, keys).tolist() == portable.contains(big_a, keys).tolist()


def _probe_chains_unbroken(table: np.ndarray) -> bool:
    """Every key sits at its home slot or after an unbroken run of keys from it (wrapping at the end)."""
    cap = table.size
    for slot in np.flatnonzero(table):
        h = int((int(table[slot]) >> 32) * cap >> 32)
        if not all(table[i % cap] for i in range(h, slot if slot >= h else slot + cap)):
            return False
    return True


# keys spread over the table (small integers would all have home 0), and keys near 2^64, whose homes are at
# the table's end: their runs wrap around to its first slots
spread_st = st.integers(1, 2**64 - 1).map(lambda x: x * 0x9E3779B97F4A7C15 % 2**64 or 1)
crowded_st = st.lists(st.one_of(spread_st, st.integers(2**64 - 2**58, 2**64 - 1)), max_size=400)


@settings(max_examples=80, deadline=None)
@given(crowded_st, st.integers(1, 9), st.integers(0, 600), st.sampled_from([1, 7, 64, 1000]),
       st.sampled_from([(0, 0), (1, 0), (1, 1)]))
def test_a_table_moved_in_slices_keeps_every_key_on_its_probe_chain(native, inserted, tenths, more, slice_, part):
    """Rehashing a slice at a time, the old table's first run (with the keys wrapped around from its end)
    kept aside and moved last, as `FingerprintTable._grow` does: the same keys (those of one part, when a
    table is split in two), each found by probing from its home slot, in C (ordered placement) and in numpy."""
    mask, which = part
    keys = np.array(sorted(set(inserted)), dtype=np.uint64)
    mine = keys[keys & np.uint64(mask) == np.uint64(which)]
    cap = max(int(len(keys) / 0.8) + 1, 8)
    old = np.zeros(cap, dtype=np.uint64)
    portable.insert(old, keys)
    new_cap = max(cap * tenths // 10, len(keys) + 1) + more
    first = _first_empty(old)
    for loops in (native, portable):
        new, state = np.zeros(new_cap, dtype=np.uint64), np.array([-1, 0], dtype=np.int64)
        for start in range(0, cap, slice_):
            loops.rehash(old, new, max(start, first), min(start + slice_, cap), state, mask, which)
        head = old[:first].copy()
        loops.insert(new, head[head & np.uint64(mask) == np.uint64(which)])
        assert np.array_equal(np.sort(new[new != 0]), mine)
        assert _probe_chains_unbroken(new)
        assert loops.contains(new, mine).all()


@pytest.mark.parametrize("expected", [0, 5_000, 400_000])
def test_a_visited_set_split_in_two_keeps_each_key_in_its_part(expected):
    """A one-table set split in two tables (the second move releasing the old table's pages): each key in the
    table of its low bit, found there and nowhere else, the sizes right, and room for the expected keys."""
    from lockstep.checker.vector import visited

    keys = np.arange(1, 700_001, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    one = visited.VisitedSet(1)
    assert one.add(keys) == keys.size and one.parts[0].mm is not None  # large enough for a mapped table
    two = one.split(expected)
    assert [t.size for t in two.parts] == [int(np.count_nonzero(keys & np.uint64(1) == p)) for p in (0, 1)]
    for p, t in enumerate(two.parts):
        assert np.array_equal(np.sort(t.table[t.table != 0]), np.sort(keys[keys & np.uint64(1) == np.uint64(p)]))
        assert _probe_chains_unbroken(t.table)
        assert t.size + expected // 2 <= t.limit
    assert two.contains(keys).all() and not two.contains(keys + np.uint64(2)).any()


@settings(max_examples=60, deadline=None)
@given(keys_st, keys_st, st.lists(st.integers(1, 40), max_size=300), st.integers(0, 300), st.integers(0, 300))
def test_both_tables_in_one_pass_agree_with_one_after_the_other(native, present0, present1, candidates, room0, room1):
    """`insert_pair` inserts into the two tables of a two-table set in one pass: the same new keys, in serial
    order, as inserting each table's keys on its own and merging the two runs by position; and at a table's
    limit it stops where the first of the two would have."""
    fps = np.array(candidates, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    ks = np.arange(len(candidates), dtype=np.int64) * 3
    tables = [_table([k for k in present0 if k & 1 == 0]), _table([k for k in present1 if k & 1])]
    sizes = [int(np.count_nonzero(t)) for t in tables]
    limits = [sizes[0] + room0, sizes[1] + room1]
    runs, stops = [], []
    for part in (0, 1):  # one after the other, each stopping at its own limit
        t = tables[part].copy()
        out_k, out_fp = np.zeros(len(candidates), np.int64), np.zeros(len(candidates), np.uint64)
        i, _size, m = native.insert_serial(t, sizes[part], limits[part], fps, ks, len(fps), 0, 1, part, out_k, out_fp, 0)
        runs.append((out_k[:m], out_fp[:m]))
        stops.append(i)
    stop = min(stops)
    want = [(int(k), int(f)) for k, f in sorted(zip(*map(np.concatenate, zip(*runs))), key=lambda x: x[0])
            if k // 3 < stop]
    pair = [t.copy() for t in tables]
    got_sizes = np.array(sizes, dtype=np.int64)
    out_k, out_fp = np.zeros(len(candidates), np.int64), np.zeros(len(candidates), np.uint64)
    i, m = native.insert_pair(pair[0], pair[1], got_sizes, np.array(limits, dtype=np.int64), fps, ks, len(fps), 0,
                              out_k, out_fp, 0)
    assert i == stop
    assert list(zip(out_k[:m].tolist(), out_fp[:m].tolist())) == want
    assert got_sizes.tolist() == [int(np.count_nonzero(t)) for t in pair]


@settings(max_examples=60, deadline=None)
@given(keys_st, st.lists(st.integers(1, 40), max_size=300), st.integers(0, 1), st.integers(0, 300))
def test_serial_insertion_agrees(native, present, candidates, part, room):
    """Each part's keys inserted in order, first occurrences winning, stopping at the table's limit."""
    fps = np.array(candidates, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    ks = np.arange(len(candidates), dtype=np.int64) * 3
    outs = []
    for loops in (portable, native):
        table = _table(present)
        size = int(np.count_nonzero(table))
        out_k, out_fp = np.zeros(len(candidates), np.int64), np.zeros(len(candidates), np.uint64)
        i, size2, m = loops.insert_serial(table, size, size + room, fps, ks, len(fps), 0, 1, part, out_k, out_fp, 0)
        i2, size3, m2 = loops.insert_serial(table, size2, 10**9, fps, ks, len(fps), i, 1, part, out_k, out_fp, m)
        outs.append((m, out_k[:m2].tolist(), out_fp[:m2].tolist(), size3))
    assert outs[0] == outs[1]
    mine = [(f, k) for f, k in zip(fps.tolist(), ks.tolist()) if f & 1 == part]
    firsts = {}
    for f, k in mine:
        firsts.setdefault(f, k)
    expect = [k for f, k in mine if firsts[f] == k and f not in set(present)]
    assert outs[0][1] == expect


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_serial_order_and_candidate_fingerprints_agree(native, data):
    n = data.draw(st.integers(1, 20))
    nseg = data.draw(st.integers(0, 5))
    rows, seg_start, seg_tid = [], [0], []
    for s in range(nseg):
        rows += sorted(data.draw(st.sets(st.integers(0, n - 1))))
        seg_start.append(len(rows))
        seg_tid.append(s * 2)
    rows_a = np.array(rows, dtype=np.int64)
    st_a, tid_a = np.array(seg_start, dtype=np.int64), np.array(seg_tid, dtype=np.int64)
    words = np.array([data.draw(st.lists(st.integers(0, 2**64 - 1), min_size=n, max_size=n)) for _ in range(2)],
                     dtype=np.uint64)
    deltas = np.array([data.draw(st.lists(st.sampled_from([0, 1, 2**63]), min_size=len(rows), max_size=len(rows)))
                       for _ in range(2)], dtype=np.uint64).reshape(2, len(rows))
    allow = np.array(data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))), dtype=np.bool_)
    got = []
    for loops in (portable, native):
        order, tids = np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64)
        loops.serial_order(rows_a, st_a, tid_a, n, order, tids)
        fps, ks, m = loops.candidate_fps(words, rows_a, deltas, order, allow, np.uint64(12345), False)
        kept = loops.keep_allowed(fps.copy(), ks.copy(), m, order, np.ones(len(rows), np.bool_))
        got.append((order.tolist(), tids.tolist(), fps[:m].tolist(), ks[:m].tolist(), kept))
    assert got[0] == got[1]
    assert got[0][0] == sorted(range(len(rows)), key=lambda j: (rows[j], j))  # row, then transition


def test_fingerprints_agree_with_the_layout(native):
    layout = Layout(load_model(model_path("vector_edges.py") + ":WideSet").prog)
    words = np.random.default_rng(1).integers(0, 2**63, size=(layout.words, 50), dtype=np.uint64)
    want = layout.fingerprints(words)
    assert native.fingerprints(words, np.uint64(layout.seed), layout.exact).tolist() == want.tolist()
    assert portable.fingerprints(words, np.uint64(layout.seed), layout.exact).tolist() == want.tolist()


def test_the_fused_kernel_is_used_where_the_spec_suits_one(monkeypatch):
    for ref in ("two_phase", model_path("vector_edges.py") + ":WideSet"):  # sets of one and of several chunks
        res = check_vector(load_model(ref), Options(max_states=200), vopts=VectorOptions(native="always"))
        assert not [n for n in res.notes if "numpy passes" in n]
    monkeypatch.setattr(fused, "MAX_LINES", 10)
    res = check_vector(load_model("two_phase"), Options(), vopts=VectorOptions(native="always"))
    assert any("no fused kernel for this spec (its kernel has" in n for n in res.notes)
    assert res.distinct == 288


@pytest.mark.parametrize("por, symmetry", [(False, False), (True, False), (False, True), (True, True)])
def test_a_kernel_in_several_parts_gives_the_one_kernel_results(por, symmetry, monkeypatch):
    """A spec whose transitions exceed `PART_LINES` is compiled as several libraries that `gen` calls in turn:
    the same counts as the scalar engine, with partial-order and symmetry reduction too."""
    monkeypatch.setattr(fused, "PART_LINES", 300)
    model = load_model("two_phase_commit", {"rm": 3}, symmetry=symmetry)
    opts = Options(deadlock=False, por=por)
    kernel = fused.fuse(model.prog, Layout(model.prog))
    assert len(kernel.parts) >= 3
    want = check(model, opts)
    got = check_vector(model, opts, vopts=VectorOptions(native="always"))
    assert not [n for n in got.notes if "numpy passes" in n]
    assert (got.verdict, got.distinct, got.generated, got.depth) == (want.verdict, want.distinct, want.generated,
                                                                    want.depth)


def test_without_a_compiler_the_search_runs_on_numpy_and_says_so(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    model = load_model("two_phase", {"rm": 3})
    res = check_vector(model, Options())
    assert any("no C compiler" in n for n in res.notes)
    assert (res.distinct, res.generated) == (check(model, Options()).distinct, check(model, Options()).generated)


def test_a_library_without_a_compiler_is_refused_and_collected_cleanly(monkeypatch):
    """No compiler: BuildError says so, and the half-made Library is collected without an exception in `__del__`."""
    monkeypatch.setenv("CC", "/nonexistent/cc")
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with pytest.raises(cbuild.BuildError, match="no C compiler"):
        cbuild.Library(PROBE % 1, "probe")
    gc.collect()
    assert unraisable == []


def test_a_broken_compiler_leaves_a_background_build_to_numpy(monkeypatch, tmp_path):
    """A compiler that fails is reported in a note, and the search finishes on numpy with the same counts."""
    fake = tmp_path / "cc"
    fake.write_text("#!/bin/sh\necho 'no such luck' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    monkeypatch.setenv("LOCKSTEP_CACHE", str(tmp_path / "cache"))
    native = Native(load_model("two_phase", {"rm": 3}).prog, None, False)
    native.start()
    native._bg.wait()
    assert not native.ready() and "did not build" in native.note and "no such luck" in native.note


PROBE = "long probe(void) { return %d; }\n"  # a library that says who built it
STRANGER = 65534  # another user's uid (nobody)


def _plant(directory, name: str, value: int) -> None:
    """Build, as another user would, a library `name` in `directory` (theirs, as its parent) whose probe returns
    `value`."""
    os.makedirs(directory, exist_ok=True)
    src = os.path.join(directory, "planted.c")
    with open(src, "w") as f:
        f.write(PROBE % value)
    subprocess.run([cbuild.compiler(), *cbuild.FLAGS, "-o", os.path.join(directory, name), src], check=True)
    for d in (directory, os.path.dirname(directory)):
        os.chown(d, STRANGER, STRANGER)


def _probe(lib: cbuild.Library) -> int:
    fn = lib.load().probe
    fn.restype = ctypes.c_long
    return fn()


def test_the_cache_directory_is_made_private(monkeypatch, tmp_path):
    monkeypatch.setenv("LOCKSTEP_CACHE", str(tmp_path / "mine"))
    lib = cbuild.Library(PROBE % 1, "probe")
    assert lib.refusal is None and _probe(lib) == 1
    assert os.stat(tmp_path / "mine" / "kernels").st_mode & 0o777 == 0o700
    assert os.listdir(tmp_path / "mine" / "kernels") == [lib.name]  # the build's own directory is gone
    assert cbuild.Library(PROBE % 1, "probe").cached()


@pytest.mark.parametrize("setup, why", [
    ("link", "symbolic link owned by another user"),
    ("foreign", "is owned by uid 65534"),
    ("foreign_parent", "belongs to another user (uid 65534)"),
    ("open_parent", "may be written by other users (mode 0777) and is not sticky"),
    ("group_writable", "may be written by other users (mode 0770)"),
])
def test_a_cache_another_user_could_change_is_refused(monkeypatch, tmp_path, setup, why):
    """The cache path is refused, saying why, when another user owns a component or could replace one (as ssh's
    StrictModes); the library is then built privately for this process, and a library planted there is not loaded."""
    evil = tmp_path / "evil"
    name = cbuild.Library(PROBE % 1, "probe").name
    _plant(evil / "kernels", name, 666)
    cache = {"link": tmp_path / "shared" / "cache", "foreign": tmp_path / "theirs", "foreign_parent": evil / "sub",
             "open_parent": tmp_path / "open" / "cache", "group_writable": tmp_path / "grp"}[setup]
    if setup == "link":
        (tmp_path / "shared").mkdir()
        os.symlink(tmp_path / "mine", cache)
        os.lchown(cache, STRANGER, STRANGER)
        (tmp_path / "mine").mkdir(mode=0o700)
    elif setup == "foreign":
        (cache / "kernels").mkdir(parents=True)
        os.chown(cache / "kernels", STRANGER, STRANGER)
    elif setup == "open_parent":
        (tmp_path / "open").mkdir()
        os.chmod(tmp_path / "open", 0o777)
    elif setup == "group_writable":
        cache.mkdir()
        os.chmod(cache, 0o770)
    monkeypatch.setenv("LOCKSTEP_CACHE", str(cache))
    lib = cbuild.Library(PROBE % 1, "probe")
    assert lib.refusal is not None and why in lib.refusal and str(cache) in lib.refusal
    assert not lib.cached() and _probe(lib) == 1
    assert not (tmp_path / "mine" / "kernels").exists()  # nothing written where the link points


def test_a_sticky_shared_parent_is_accepted(monkeypatch, tmp_path):
    """/tmp-like: others may write the parent, but it is sticky, so they cannot replace the user's directory."""
    (tmp_path / "tmp").mkdir()
    os.chmod(tmp_path / "tmp", 0o1777)
    monkeypatch.setenv("LOCKSTEP_CACHE", str(tmp_path / "tmp" / "cache"))
    lib = cbuild.Library(PROBE % 2, "probe")
    assert lib.refusal is None and _probe(lib) == 2 and lib.cached()


def test_the_cache_path_swapped_after_the_check_is_not_followed(monkeypatch, tmp_path):
    """The attack: after the ownership check, another user re-points the cache path at a directory of theirs
    holding their library under the expected name. The cache was opened once: the build goes into it and the
    library loaded is the one built from our source, never theirs."""
    mine = tmp_path / "cache"
    monkeypatch.setenv("LOCKSTEP_CACHE", str(mine))
    lib = cbuild.Library(PROBE % 3, "probe")
    assert lib.refusal is None
    _plant(tmp_path / "evil" / "kernels", lib.name, 666)
    os.rename(mine, tmp_path / "moved")
    os.symlink(tmp_path / "evil", mine)
    assert _probe(lib) == 3
    assert os.listdir(tmp_path / "moved" / "kernels") == [lib.name]
    assert sorted(os.listdir(tmp_path / "evil" / "kernels")) == sorted([lib.name, "planted.c"])


def test_the_compiler_runs_in_a_private_directory_of_the_cache(monkeypatch, tmp_path):
    """No predictable file name in a shared directory: the source is written, and compiled, in a new directory
    (mode 0700) inside the private cache, removed afterwards."""
    log = tmp_path / "cc.log"
    fake = tmp_path / "cc"
    fake.write_text(f"#!/bin/sh\nstat -c '%a %u' . > {log}\npwd -P >> {log}\nls >> {log}\nexec {cbuild.compiler()} \"$@\"\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    monkeypatch.setenv("LOCKSTEP_CACHE", str(tmp_path / "cache"))
    lib = cbuild.Library(PROBE % 4, "probe")
    assert _probe(lib) == 4
    mode, where, listing = log.read_text().split("\n", 2)
    assert mode == f"700 {os.getuid()}"
    assert os.path.dirname(where) == str(tmp_path / "cache" / "kernels") and not os.path.exists(where)
    assert listing.split() == ["kernel.c"]
    assert os.listdir(tmp_path / "cache" / "kernels") == [lib.name]


@settings(max_examples=60, deadline=None)
@given(keys_st, st.integers(0, 40), st.integers(0, 40), st.integers(0, 1000), st.sampled_from([1, 2, 1 << 40]))
def test_routing_splits_positions_by_table_in_order(native, keys, start0, start1, off, rmask):
    """Each table's list gets, after what it held, the positions of its keys in order (the C loop takes 16
    keys at a time where it can, then one at a time)."""
    fps = np.array(keys, dtype=np.uint64)
    ones = (fps & np.uint64(rmask)) != 0
    want = [list(range(start0)) + (np.flatnonzero(~ones) + off).tolist(),
            list(range(start1)) + (np.flatnonzero(ones) + off).tolist()]
    for loops in (portable, native):
        lists = [np.arange(max(start, 1) + fps.size + 16, dtype=np.int32) for start in (start0, start1)]
        counts = np.array([start0, start1], dtype=np.int64)
        loops.route(fps, rmask, off, *lists, counts)
        assert [lst[:c].tolist() for lst, c in zip(lists, counts)] == want


@settings(max_examples=40, deadline=None)
@given(keys_st, st.lists(st.integers(1, 40), max_size=300), st.integers(0, 300))
def test_routed_insertion_agrees_with_serial_insertion(native, present, candidates, room):
    """Each table's candidates, inserted at their positions, give what the table's serial insertion gives."""
    fps = np.array(candidates, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    n = len(candidates)
    for loops in (portable, native):
        pos = [np.flatnonzero(fps & np.uint64(1) == p).astype(np.int32) for p in (0, 1)]
        c0 = pos[0].size
        for part, c in ((0, c0), (1, n - c0)):
            want_t, got_t = _table(present), _table(present)
            size = int(np.count_nonzero(want_t))
            outs = []
            for t, routed in ((want_t, False), (got_t, True)):
                out_k, out_fp = np.zeros(max(n, 1), np.int64), np.zeros(max(n, 1), np.uint64)
                if routed:
                    q, s2, m = loops.insert_at(t, size, size + room, fps, None, pos[part], 0, c, out_k, out_fp, 0)
                    stop = int(pos[part][q]) if q < c else n
                else:
                    stop, s2, m = loops.insert_serial(t, size, size + room, fps, None, n, 0, 1, part, out_k, out_fp, 0)
                outs.append((stop, s2, out_k[:m].tolist(), out_fp[:m].tolist()))
            assert outs[0] == outs[1]


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.integers(0, 500), unique=True, max_size=60), split=st.randoms(use_true_random=False),
       cut=st.integers(0, 60))
def test_merging_two_runs_in_two_ranges_gives_the_whole_merge(native, keys, split, cut):
    """Each of two threads merges one range of the outputs (starting mid-merge, found by bisection); together
    they give the sorted union of the two runs, fingerprints following their positions."""
    runs = [sorted(k for k in keys if split.random() < 0.5)]
    runs.append(sorted(set(keys) - set(runs[0])))
    k0, k1 = (np.array(r, dtype=np.int64) for r in runs)
    f0, f1 = (k.astype(np.uint64) * np.uint64(3) + np.uint64(1) for k in (k0, k1))
    m = len(keys)
    lo = min(cut, m)
    for loops in (portable, native):
        pos, fps = np.full(m, -1, np.int64), np.zeros(m, np.uint64)
        loops.merge_range(k0, f0, k1, f1, lo, m, pos, fps)
        loops.merge_range(k0, f0, k1, f1, 0, lo, pos, fps)
        assert pos.tolist() == sorted(keys)
        assert fps.tolist() == [3 * k + 1 for k in sorted(keys)]


def test_a_shrinking_search_fills_the_table_further_rather_than_rebuild_it_for_its_last_keys():
    """Keys that would pass the table's usual limit are let in up to `TAIL_LOAD` when the search says every
    key still to come fits under it; while the levels grow, or when more are to come, the table is rebuilt."""
    from lockstep.checker.vector import visited

    def table_at(fill: float) -> visited.FingerprintTable:
        t = visited.FingerprintTable(1 << 16)
        t.add(np.arange(1, int(fill * (1 << 16)) + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
        assert t.rebuilds == 0
        return t

    slots = 1 << 16
    tail = table_at(0.58)
    tail.reserve(int(0.04 * slots), rest=int(0.08 * slots))  # 0.66 in the end: the table fills instead
    assert tail.rebuilds == 0 and tail.limit == int(visited.TAIL_LOAD * slots)
    more = table_at(0.58)
    more.reserve(int(0.04 * slots), rest=int(0.2 * slots))  # 0.78 in the end: rebuilt
    assert more.rebuilds == 1 and more.limit == int(visited.MAX_LOAD * len(more.table))
    growing = table_at(0.58)
    growing.reserve(int(0.04 * slots))  # levels that grow say nothing of the rest: rebuilt
    assert growing.rebuilds == 1
    tail.reserve(int(0.01 * slots))  # the levels grow again: back to the usual limit,
    assert tail.rebuilds == 0 and tail.limit == int(visited.MAX_LOAD * slots)
    tail.reserve(int(0.04 * slots))  # which these keys would pass: rebuilt
    assert tail.rebuilds == 1
