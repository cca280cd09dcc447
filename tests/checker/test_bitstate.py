"""Bitstate mode (`--bitstate BYTES`): with room to spare it is the exact search; with little room it omits
states, never adds any, keeps its counterexamples replayable and says how many it expects to have omitted."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lockstep.checker.explicit import Options
from lockstep.checker.loader import load_model
from lockstep.checker.vector import VectorOptions, check_vector
from lockstep.checker.vector.visited import BitTable
from tests.checker.test_vector import bound, outcome
from tests.conftest import typed_spec_refs

ROOMY = 1 << 22  # bytes: 32 M bits for the agreement bound's 20,000 states (and its last level's candidates)
TWO_PHASE_6 = 50_816  # TwoPhase RM=6 (test_vector.test_known_counts)


def test_the_table_counts_its_bits_and_finds_what_it_stored():
    t = BitTable(1 << 12)
    keys = np.arange(1, 101, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    assert t.add(keys) == 100 and t.add(keys) == 0 and t.size == 100
    assert t.contains(keys).all()
    assert int(t.table[0]) == int(np.bitwise_count(t.table[1:]).sum()) <= 3 * 100
    assert not t.contains(keys + np.uint64(1)).all()
    with pytest.raises(ValueError, match="at least 16 bytes"):
        BitTable(8)


@pytest.mark.parametrize("ref", typed_spec_refs())
def test_a_roomy_table_is_the_exact_search(ref):
    """Every typed spec and seeded bug at its default parameters: the same verdict, counts and counterexample."""
    model = load_model(ref, {})
    opts = Options(deadlock=True, max_states=bound(ref))
    exact = check_vector(model, opts)
    bits = check_vector(model, opts, vopts=VectorOptions(bitstate=ROOMY))
    assert outcome(bits) == outcome(exact)
    assert bits.bitstate_omitted < 0.01


@pytest.mark.parametrize("ref", ["bracha_low_echo_quorum", "two_phase_commit_eager", "chang_roberts_forward_all",
                                 "psmr_first_key_cg", "bracha_equivocating_sender"])
def test_with_partial_order_reduction_the_verdicts_are_the_exact_ones(ref):
    model = load_model(ref, {})
    opts = Options(deadlock=True, por=True, max_states=200_000)
    exact = check_vector(model, opts)
    bits = check_vector(model, opts, vopts=VectorOptions(bitstate=ROOMY))
    assert outcome(bits) == outcome(exact)


@pytest.mark.parametrize("ref, params, actors", [("two_phase", {"rm": 6}, False), ("filter_lock_buggy", {"n": 4}, False),
                                                 ("two_phase_commit_eager", {}, True),
                                                 ("bracha_low_echo_quorum", {}, True)])
def test_on_two_threads_each_table_takes_half_and_the_search_is_the_exact_one(ref, params, actors):
    from tests.checker.test_vector import threaded

    for por in (False, True) if actors else (False,):
        exact = check_vector(load_model(ref, params), Options(por=por))
        two = threaded(ref, params, VectorOptions(batch=256, native="always", bitstate=ROOMY), por=por)
        assert two.workers == 2 and outcome(two) == outcome(exact)
        assert len([n for n in two.notes if n.startswith(f"bitstate: {ROOMY:,} bytes")]) == 1


@pytest.mark.parametrize("size", [1 << 10, 1 << 12, 1 << 14, 1 << 16])
def test_a_small_table_omits_states_but_adds_none(size):
    res = check_vector(load_model("two_phase", {"rm": 6}), Options(), vopts=VectorOptions(bitstate=size))
    assert res.verdict == "holds" and 0 < res.distinct < TWO_PHASE_6
    assert res.bitstate_omitted > 1
    assert any(n.startswith("bitstate: ") and "lower bounds" in n for n in res.notes)


def test_the_omission_estimate_falls_with_the_table_size():
    model = load_model("two_phase", {"rm": 6})
    est = [check_vector(model, Options(), vopts=VectorOptions(bitstate=s)).bitstate_omitted
           for s in (1 << 13, 1 << 15, 1 << 17)]
    assert est[0] > est[1] > est[2]


def test_the_command_reports_the_estimate_and_replays_its_counterexample(cli, tmp_path):
    r = cli("check", "two_phase", "-p", "rm=6", "--bitstate", "1M", "--quiet")
    assert r.code == 0 and "No violation among the states explored (bitstate" in r.out
    assert f"{TWO_PHASE_6:,} distinct states" in r.out and "hash factor" in r.out
    trace = tmp_path / "cex.json"
    r = cli("check", "two_phase_commit_eager", "--bitstate", "1M", "--quiet", "--out", str(trace))
    assert r.code == 1 and "bitstate: " in r.out
    r = cli("replay", str(trace))
    assert r.code == 0 and "violated in the last state, as recorded" in r.out
    r = cli("check", "two_phase", "--bitstate", "64K", "--quiet", "--format", "json")
    assert r.code == 0 and json.loads(r.out)["bitstate"]["expected_omitted"] >= 0


@pytest.mark.parametrize("size, says", [("12", "too small"), ("4Q", "expected a size in bytes"), ("-1M", "expected")])
def test_sizes_are_read_whole(capsys, size, says):
    from lockstep.checker.cli import main

    with pytest.raises(SystemExit) as e:
        main(["check", "two_phase", "--bitstate", size])
    err = capsys.readouterr().err
    assert e.value.code == 2 and says in err and "Traceback" not in err


@pytest.mark.parametrize("args, says", [
    (["two_phase", "--bitstate", "1M", "--workers", "3"], "does not combine with --workers 3"),
    (["two_phase", "--bitstate", "1M", "--engine", "scalar"], "does not combine with --engine scalar"),
    (["two_phase", "--bitstate", "1M", "--dfs"], "does not combine with --dfs"),
    (["two_phase", "--bitstate", "1M", "--checkpoint", "ck"], "does not combine with --checkpoint"),
    (["two_phase", "--bitstate", "1024T"], "more than this machine's memory"),
    (["phase_clock", "--bitstate", "1M"], "--bitstate needs the vector engine"),
    (["diehard", "--bitstate", "1M", "--engine", "auto"], None),
])
def test_combinations_it_cannot_honour_are_refused(cli, args, says):
    r = cli("check", *args, "--quiet")
    if says is None:  # a typed spec: honoured
        assert r.code == 1 and "bitstate: " in r.out
        return
    assert r.code == 2 and says in r.err and "Traceback" not in r.err
