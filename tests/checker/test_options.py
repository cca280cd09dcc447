"""Every option a command accepts is honoured or refused (exit 2, naming it): pairs that exclude each other, options
that modify one not given, options of another engine or kind of spec, values that make no sense."""

from __future__ import annotations

import pytest

from lockstep.checker.cli import main

REFUSED = [
    (["check", "two_phase_commit", "--por", "--no-por"], "--por and --no-por exclude each other"),
    (["check", "two_phase_commit", "--no-por", "--por"], "--no-por and --por exclude each other"),
    (["check", "two_phase", "--seed", "5"], "--seed applies to --tree random:N"),
    (["check", "d2_coloring", "--tree", "path:4", "--seed", "5"], "--seed applies to --tree random:N"),
    (["check", "two_phase", "--graph-limit", "5"], "--graph-limit applies to --dump-graph"),
    (["check", "two_phase", "--force"], "--force applies to --all-trees N"),
    (["check", "two_phase", "--checkpoint-every", "5"], "--checkpoint-every applies to --checkpoint DIR"),
    (["check", "two_phase", "--engine", "smt", "--property", "p"], "--property: only for the explicit engine"),
    (["check", "two_phase", "--engine", "smt", "--coverage", "c.json"], "--coverage: only for the explicit engine"),
    (["check", "two_phase_commit", "--engine", "smt", "--no-por"], "--no-por: only for the explicit engine"),
    (["check", "d2_coloring", "--all-trees", "3", "--max-depth", "2"], "--all-trees runs the explicit engine with its "
                                                                       "defaults"),
    (["check", "d2_coloring", "--all-trees", "3", "--invariant", "x", "--no-deadlock"], "drop --no-deadlock, --invariant"),
    (["simulate", "two_phase", "--confidence", "0.9"], "--confidence: only for population protocols"),
    (["simulate", "two_phase", "--prob", "0.9"], "--prob: only for population protocols"),
    (["simulate", "phase_clock", "--prob", "0.9"], "--prob: for the claim --within C tests"),
    (["simulate", "phase_clock", "--claim-confidence", "0.9"], "--claim-confidence: for the claim --within C tests"),
    (["analyze", "phase_clock", "--at", "5"], "--at applies to --measure transient"),
    (["replay", "cex.json", "--on-processes", "--full"], "--full does not apply to --on-processes"),
    (["replay", "cex.json", "--on-processes", "--param", "rm=3"], "--param does not apply to --on-processes"),
    (["datalog", "eval", "cc", "--graph", "gnm:20:40", "--weights", "1:3"], "--weights: the program's edge relation has 2"),
    (["datalog", "eval", "sssp", "--graph", "gnm:20:40", "--undirected"], "--undirected: gnm graphs are directed"),
]


@pytest.mark.parametrize("argv,words", REFUSED, ids=[" ".join(a[:1] + a[2:]) for a, _ in REFUSED])
def test_an_option_that_would_be_ignored_is_refused(capsys, tmp_path, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    if argv[0] == "replay":
        assert main(["check", "two_phase_commit_eager", "--out", "cex.json", "--quiet"]) == 1
        capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as e:  # refused while the command line is parsed
        code = e.code
    out, err = capsys.readouterr()
    assert code == 2 and words in err, out + err
    assert "Traceback" not in err and "Checking" not in out  # refused before anything ran


def test_the_options_they_modify_make_them_count(cli, tmp_path):
    """The same options, where they apply, are taken."""
    dot = tmp_path / "g.dot"
    r = cli("check", "two_phase", "--dump-graph", str(dot), "--graph-limit", "10", "--quiet")
    assert r.code == 2 and "more than 10 states" in r.err, r.err  # the limit is the one given
    r = cli("check", "d2_coloring", "--tree", "random:6", "--seed", "3", "--quiet")
    assert r.code == 0, r.out + r.err
    reduced, full = cli("check", "two_phase_commit", "--quiet"), cli("check", "two_phase_commit", "--no-por", "--quiet")
    assert "partial-order reduction" in reduced.out.splitlines()[0], reduced.out
    assert "partial-order reduction" not in full.out.splitlines()[0], full.out
    r = cli("simulate", "phase_clock", "--within", "30", "--prob", "0.9", "--runs", "5", "--quiet")
    assert r.code in (0, 1, 3) and "probability ≥ 0.9" in r.out, r.out + r.err
