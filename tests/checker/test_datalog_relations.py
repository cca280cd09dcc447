"""The column kernels under the evaluator against plain Python: packing, deduplication, grouping, probing,
on both of their paths (a table over a small key space, a sort over a large one)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.checker.datalog.relations import Index, KeySpace, group_best, merge_new, unique_rows

ints = st.integers(-(1 << 40), 1 << 40)
small = st.integers(-5, 5)


def columns(rows: list[tuple[int, ...]], arity: int) -> list[np.ndarray]:
    return [np.array([r[i] for r in rows], dtype=np.int64) for i in range(arity)]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(small, ints, small), min_size=1, max_size=60))
def test_unique_rows_and_decode(rows):
    got = unique_rows(columns(rows, 3))
    assert list(zip(*(c.tolist() for c in got))) == sorted(set(rows))
    space = KeySpace.covering(columns(rows, 3))
    back = space.decode(space.encode(columns(rows, 3)))
    assert list(zip(*(c.tolist() for c in back))) == rows


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), ints), min_size=1, max_size=80), st.sampled_from(["min", "max"]),
       st.booleans())
def test_group_best_on_either_path(pairs, func, table):
    codes = np.array([c for c, _ in pairs], dtype=np.int64)
    vals = np.array([v for _, v in pairs], dtype=np.int64)
    pick = min if func == "min" else max
    want: dict[int, int] = {}
    for c, v in pairs:
        want[c] = pick(want.get(c, v), v)
    c, v = group_best(codes, vals, func, 41 if table else None)
    assert dict(zip(c.tolist(), v.tolist())) == want and c.tolist() == sorted(want)


def test_group_best_with_values_too_wide_to_pack():
    codes = np.array([3, 1 << 40, 3], dtype=np.int64)
    vals = np.array([-(1 << 61), 1 << 61, 5], dtype=np.int64)
    c, v = group_best(codes, vals, "max")
    assert c.tolist() == [3, 1 << 40] and v.tolist() == [5, 1 << 61]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-3, 30), max_size=40), st.lists(st.integers(-5, 35), min_size=1, max_size=40),
       st.booleans())
def test_index_probe_finds_every_match(keys, probes, wide):
    if wide:  # a key space too large for the offset table: the sorted path
        keys = [k * (1 << 30) for k in keys]
        probes = [p * (1 << 30) for p in probes]
    col = np.array(keys, dtype=np.int64)
    if not len(col):
        return
    left, rows = Index([col]).probe([np.array(probes, dtype=np.int64)])
    got = sorted(zip(left.tolist(), rows.tolist()))
    assert got == sorted((i, j) for i, p in enumerate(probes) for j, k in enumerate(keys) if k == p)
    index = Index([col])
    other = np.arange(len(col), dtype=np.int64) * 7
    left2, at = index.probe_sorted([np.array(probes, dtype=np.int64)])
    assert np.array_equal(left2, left) and np.array_equal(index.take(other, 0, at), other[rows])


@settings(max_examples=80, deadline=None)
@given(st.sets(st.integers(0, 60)), st.sets(st.integers(0, 60), min_size=1), st.booleans())
def test_merge_new_gives_the_union_and_what_was_absent(old, new, huge):
    shift = (1 << 61) if huge else 0  # codes too large to tag in the low bit: the searchsorted path
    a = np.array(sorted(old), dtype=np.int64) + shift
    b = np.array(sorted(new), dtype=np.int64) + shift
    merged, fresh = merge_new(a, b)
    assert merged.tolist() == sorted({x + shift for x in old | new})
    assert fresh.tolist() == sorted(x + shift for x in new - old)
