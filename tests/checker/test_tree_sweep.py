"""`lockstep check SPEC --all-trees N` and `--tree`: every tree, every initiator, and the refusals."""

from __future__ import annotations

import re

import pytest

from lockstep.checker.cli import main
from lockstep.checker.rounds.sweep import sweep

TREES = {2: 1, 3: 1, 4: 2, 5: 3, 6: 6, 7: 11, 8: 23, 9: 47, 10: 106, 11: 235, 12: 551}  # OEIS A000055


def rows_of(out: str) -> dict[int, list[str]]:
    return {int(m[1]): line.split() for line in out.splitlines() if (m := re.match(r"\s+(\d+)\s+\d+\s+\d+", line))}


def check_table(out: str, upto: int) -> None:
    rows = rows_of(out)
    assert sorted(rows) == list(range(2, upto + 1))
    for n, cols in rows.items():
        trees, runs = int(cols[1]), int(cols[2])
        assert trees == TREES[n] and runs == n * TREES[n]
        max_rounds, bound = int(cols[4]), int(cols[5])
        assert max_rounds <= bound and float(cols[7]) <= 1.0
        assert cols[8] == f"{runs}/{runs}" and cols[9] == "0"  # exactly Δ+1 colours in every run


def test_all_trees_up_to_9(capsys):
    assert main(["check", "d2_coloring", "--all-trees", "9", "--quiet"]) == 0
    out = capsys.readouterr().out
    check_table(out, 9)
    assert "No violation: 94 trees, 748 runs (tree, initiator)" in out
    assert "(worst rounds/bound 1.00)" in out


@pytest.mark.slow
def test_all_trees_up_to_12(capsys):
    assert main(["check", "d2_coloring", "--all-trees", "12", "--quiet"]) == 0
    check_table(capsys.readouterr().out, 12)


def test_the_seeded_bug_fails_on_the_smallest_tree_with_siblings(capsys, tmp_path):
    out_file = tmp_path / "cex.json"
    assert main(["check", "d2_coloring_uncoordinated", "--all-trees", "5", "--quiet", "--out", str(out_file)]) == 1
    out = capsys.readouterr().out
    assert "On the tree edges:0-1,0-2:" in out and "Violation: invariant proper_distance2 is violated" in out
    assert main(["replay", str(out_file)]) == 0


def test_sweep_stops_at_the_first_violation():
    res = sweep("d2_coloring_uncoordinated", 6, {})
    assert [r.n for r in res.rows] == [2] and res.failure is not None and res.failed_tree.number_of_nodes() == 3


@pytest.mark.parametrize("argv, message", [
    (["check", "d2_coloring", "--all-trees", "13"], "add --force"),
    (["check", "two_phase", "--all-trees", "4"], "not a rounds spec with a tree parameter"),
    (["check", "d2_coloring", "--all-trees", "4", "--tree", "path:3"], "exclude each other"),
    (["check", "d2_coloring", "--all-trees", "4", "-p", "n=3"], "drop --param n"),
    (["check", "d2_coloring", "--tree", "edges:0-1,1-2,2-0"], "not a tree (it has the cycle 0-1-2)"),
    (["check", "d2_coloring", "--tree", "edges:0-1,2-3"], "disconnected"),
    (["check", "d2_coloring", "--tree", "ring:5"], "unknown tree generator 'ring'"),
    (["check", "d2_coloring", "-p", "n=5", "-p", "tree=999"], "not a tree on 5 nodes"),
])
def test_bad_input_is_one_message_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if not line.startswith("progress: ")]  # what it builds, then why not
    assert message in err and "Traceback" not in err and errors[0].startswith("lockstep: error:")


def test_one_given_tree(capsys):
    assert main(["check", "d2_coloring", "--tree", "random:12", "--seed", "4", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "Checking D2Coloring (n=12," in out and "No violation" in out
