"""`check --checkpoint DIR` / `--resume DIR`: a search interrupted at a level boundary (by a bound, or by
`kill -9` of a real run) and resumed ends with exactly the result of an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from lockstep.checker.explicit import Options
from lockstep.checker.loader import load_model
from lockstep.checker.vector import VectorModel, VectorOptions, check_vector
from lockstep.checker.vector.checkpoint import Checkpoint
from tests.conftest import model_path

COUNTS = re.compile(r"[\d,]+ distinct states, [\d,]+ generated, depth \d+")


def summary(out: str) -> tuple[str, str]:
    """(the counts line without timings, everything the run printed before it)."""
    m = COUNTS.search(out)
    assert m, out
    return m.group(0), out[:m.start()]


def test_resume_after_a_depth_bound_gives_the_same_counterexample(cli, tmp_path):
    d = str(tmp_path / "ck")
    plain = cli("check", "filter_lock_buggy", "--quiet")
    assert plain.code == 1
    cut = cli("check", "filter_lock_buggy", "--quiet", "--max-depth", "6", "--checkpoint", d, "--checkpoint-every", "0")
    assert cut.code == 3
    assert json.load(open(os.path.join(d, "manifest.json")))["level"] == 6
    resumed = cli("check", "filter_lock_buggy", "--quiet", "--resume", d)
    assert resumed.code == 1
    assert summary(resumed.out) == summary(plain.out)  # the counts and the whole counterexample


def test_resume_in_process_matches_on_a_violation_found_by_the_state_bound(tmp_path):
    m = load_model("two_phase", {"rm": 4})
    vm = VectorModel(m)
    base = check_vector(vm, Options(max_states=900))
    ck = Checkpoint(str(tmp_path), 0, resume=False, deadlock=True)
    ck.bind(vm)
    first = check_vector(vm, Options(max_depth=5), vopts=VectorOptions(checkpoint=ck))
    assert first.verdict == "inconclusive"
    again = Checkpoint(str(tmp_path), 0, resume=True, deadlock=True)
    again.bind(vm)
    res = check_vector(vm, Options(max_states=900), vopts=VectorOptions(checkpoint=again))
    assert (res.verdict, res.distinct, res.generated, res.depth, res.queued, res.cut) == \
        (base.verdict, base.distinct, base.generated, base.depth, base.queued, base.cut)


def kill_9_and_resume(tmp_path, cmd: list[str], levels: tuple[int, int]) -> tuple[str, str]:
    """Run `cmd` with checkpoints, SIGKILL it right after a random level's checkpoint, resume it: the stdout
    of the uninterrupted run and of the resumed one."""
    d = str(tmp_path / "ck")
    plain = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0, plain.stderr
    level = random.Random(os.getpid()).randint(*levels)
    proc = subprocess.Popen(cmd + ["--checkpoint", d, "--checkpoint-every", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    manifest = os.path.join(d, "manifest.json")
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if os.path.exists(manifest) and json.load(open(manifest)).get("level", -1) >= level:
                break
            time.sleep(0.005)
        assert proc.poll() is None, f"the run ended before level {level}: {proc.communicate()}"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert json.load(open(manifest))["level"] >= level
    resumed = subprocess.run(cmd + ["--resume", d], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    return plain.stdout, resumed.stdout


def test_kill_9_at_a_random_level_then_resume(tmp_path):
    """A real run killed with SIGKILL right after a random level's checkpoint, then resumed."""
    cmd = [sys.executable, "-m", "lockstep.checker.cli", "check", "two_phase", "-p", "rm=8", "--quiet"]
    plain, resumed = kill_9_and_resume(tmp_path, cmd, (6, 18))
    assert summary(resumed)[0] == summary(plain)[0] == "1,745,408 distinct states, 18,507,778 generated, depth 26"


def test_checkpoint_errors_exit_2(cli, tmp_path):
    d = str(tmp_path / "ck")
    r = cli("check", "two_phase", "-p", "rm=3", "--quiet", "--resume", d)
    assert r.code == 2 and "holds no checkpoint" in r.err
    assert cli("check", "two_phase", "-p", "rm=3", "--quiet", "--checkpoint", d, "--checkpoint-every", "0").code == 0
    r = cli("check", "two_phase", "-p", "rm=3", "--quiet", "--checkpoint", d)
    assert r.code == 2 and "already holds a checkpoint" in r.err and "--resume" in r.err
    r = cli("check", "two_phase", "-p", "rm=4", "--quiet", "--resume", d)
    assert r.code == 2 and "differs from this run in: bits, params" in r.err
    r = cli("check", "two_phase", "-p", "rm=3", "--quiet", "--no-deadlock", "--resume", d)
    assert r.code == 2 and "deadlock" in r.err
    r = cli("check", "two_phase", "-p", "rm=3", "--checkpoint", d, "--workers", "2")
    assert r.code == 2 and "drop --workers" in r.err
    r = cli("check", "two_phase", "-p", "rm=3", "--checkpoint", d, "--engine", "smt")
    assert r.code == 2 and "--engine smt" in r.err
    with pytest.raises(SystemExit) as e:
        cli("check", "two_phase", "-p", "rm=3", "--checkpoint-every=-1")
    assert e.value.code == 2
    with open(os.path.join(d, "manifest.json"), "w") as f:
        f.write("{not json")
    r = cli("check", "two_phase", "-p", "rm=3", "--quiet", "--resume", d)
    assert r.code == 2 and "manifest" in r.err and "Traceback" not in r.err


def test_a_damaged_checkpoint_file_is_a_clear_error(cli, tmp_path):
    d = str(tmp_path / "ck")
    assert cli("check", "two_phase", "-p", "rm=3", "--quiet", "--max-depth", "4", "--checkpoint", d,
               "--checkpoint-every", "0").code == 3
    man = json.load(open(os.path.join(d, "manifest.json")))
    with open(os.path.join(d, man["visited"]), "wb") as f:
        f.write(b"garbage")
    r = cli("check", "two_phase", "-p", "rm=3", "--quiet", "--resume", d)
    assert r.code == 2 and "damaged" in r.err and "Traceback" not in r.err


# -- partial-order reduction: a reduced search checkpointed at a level boundary and resumed ----------------

def _reduced_cut_and_resumed(tmp_path, spec: str, params: dict, deadlock: bool) -> None:
    """A reduced search cut at half its depth, checkpointed and resumed, ends as the uninterrupted reduced
    search does: verdict, counts, depth, counterexample and the reduction's statistics. (At a level boundary
    the reduced search is its visited set and its frontier: the cycle proviso's per-level table starts empty
    at each level.)"""
    vm = VectorModel(load_model(spec, params))
    opts = {"deadlock": deadlock, "por": True}
    whole = check_vector(vm, Options(**opts))
    for mid in range(max(1, whole.depth // 2), 0, -1):  # a level the cut run reaches before any violation
        d = str(tmp_path / f"{spec.split(':')[-1]}-{deadlock}-{mid}")
        ck = Checkpoint(d, 0, resume=False, deadlock=deadlock, por=True)
        ck.bind(vm)
        cut = check_vector(vm, Options(max_depth=mid, **opts), vopts=VectorOptions(checkpoint=ck))
        if cut.verdict == "inconclusive":
            break
    assert cut.verdict == "inconclusive", f"{spec}: no level before the violation to cut at"
    again = Checkpoint(d, 0, resume=True, deadlock=deadlock, por=True)
    again.bind(vm)
    res = check_vector(vm, Options(**opts), vopts=VectorOptions(checkpoint=again))
    assert (res.verdict, res.distinct, res.generated, res.depth, res.queued) == \
        (whole.verdict, whole.distinct, whole.generated, whole.depth, whole.queued)
    assert [n for n in res.notes if "partial-order" in n] == [n for n in whole.notes if "partial-order" in n]
    assert (res.violation is None) == (whole.violation is None)
    if whole.violation is not None:
        assert [(s.label, s.state) for s in res.violation.trace.steps] == \
            [(s.label, s.state) for s in whole.violation.trace.steps]


GOSSIP = "tests/models/actor_gossip.py:"
REDUCED = [("two_phase_commit", {"lossy": 1}, False),  # lost messages make cycles: the proviso expands 170 states
           ("two_phase_commit", {}, True),  # a deadlock
           ("token_ring", {"n": 4, "laps": 2}, False),
           (GOSSIP + "Gossip", {}, True)]  # a deadlock
# (GossipSelfish and GossipObservedWrongClaim fail before a first level ends: there is nothing to resume)
REDUCED_SLOW = [(s, {}, dl) for s in ("token_ring", "two_phase_commit", "two_phase_commit_eager", "bracha",
                                      "bracha_low_echo_quorum", GOSSIP + "GossipWithForger", GOSSIP + "GossipObserved",
                                      "tests/models/actor_failing.py:Fragile") for dl in (False, True)] + \
    [("two_phase_commit", {"rm": 3}, False), ("two_phase_commit", {"ordered": 1, "capacity": 2}, False),
     ("two_phase_commit", {"duplicating": 1}, False), ("two_phase_commit_eager", {"rm": 3}, False),
     ("psmr", {"commands": 2}, False), ("psmr_no_acyclic_order", {"commands": 2}, False)]


@pytest.mark.parametrize("spec,params,deadlock", REDUCED, ids=[f"{s.split(':')[-1]}-{p}-{d}" for s, p, d in REDUCED])
def test_a_reduced_search_resumes_as_it_would_have_gone_on(tmp_path, spec, params, deadlock):
    _reduced_cut_and_resumed(tmp_path, spec, params, deadlock)


@pytest.mark.slow
@pytest.mark.parametrize("spec,params,deadlock", REDUCED_SLOW,
                         ids=[f"{s.split(':')[-1]}-{p}-{d}" for s, p, d in REDUCED_SLOW])
def test_every_small_actor_spec_resumes_its_reduced_search(tmp_path, spec, params, deadlock):
    _reduced_cut_and_resumed(tmp_path, spec, params, deadlock)


def test_checkpoints_keep_the_reduction_they_were_written_with(cli, tmp_path):
    reduced, full = str(tmp_path / "reduced"), str(tmp_path / "full")
    spec = ["check", "two_phase_commit", "--no-deadlock"]
    plain = cli(*spec)
    assert plain.code == 0 and "partial-order reduction:" in plain.out
    cut = ["--max-depth", "8", "--checkpoint-every", "0"]
    assert cli(*spec, "--checkpoint", reduced, *cut).code == 3  # an actor spec: reduced by default
    assert json.load(open(os.path.join(reduced, "manifest.json")))["identity"]["por"] is True
    r = cli(*spec, "--resume", reduced)
    assert r.code == 0 and summary(r.out)[0] == summary(plain.out)[0]
    assert [ln for ln in r.out.splitlines() if "partial-order" in ln] == \
        [ln for ln in plain.out.splitlines() if "partial-order" in ln]
    r = cli(*spec, "--resume", reduced, "--no-por")
    assert r.code == 2 and "with partial-order reduction, and this run is not reduced" in r.err
    unreduced = cli(*spec, "--no-por", "--quiet")
    assert cli(*spec, "--no-por", "--checkpoint", full, *cut).code == 3
    r = cli(*spec, "--resume", full, "--quiet")  # no flag: the checkpoint's choice
    assert r.code == 0 and summary(r.out)[0] == summary(unreduced.out)[0]
    assert "partial-order reduction off with --resume: the checkpoint in" in r.out
    r = cli(*spec, "--resume", full, "--por")
    assert r.code == 2 and "without partial-order reduction, and this run is reduced" in r.err


# -- the scalar engine's checkpoints ---------------------------------------------------------------------

def _scalar_cut_and_resumed(tmp_path, spec: str, params: dict, cut: dict, symmetry: bool = False, **opts) -> None:
    from lockstep.checker.explicit import check
    from lockstep.checker.explicit.checkpoint import ExplicitCheckpoint
    from lockstep.checker.explicit.search import _Search
    from lockstep.checker.progress import NoProgress

    model = load_model(spec, params, symmetry=symmetry)
    whole = check(model, Options(**opts))
    d = str(tmp_path / "ck")
    por = bool(opts.get("por"))
    deadlock = opts.get("deadlock", True)
    for resume, bounds in ((False, cut), (True, {})):
        ck = ExplicitCheckpoint(d, 0, resume=resume, deadlock=deadlock, por=por)
        ck.bind(model)
        search = _Search(model, Options(**opts, **bounds), NoProgress())
        search.checkpoint = ck
        res = search.run()
        if not resume:
            assert res.verdict == "inconclusive"
    assert (res.verdict, res.distinct, res.generated, res.depth, res.queued, res.cut) == \
        (whole.verdict, whole.distinct, whole.generated, whole.depth, whole.queued, whole.cut)
    assert res.notes == whole.notes  # the reduction's statistics included
    if whole.violation is not None:
        assert [(s.label, s.state) for s in res.violation.trace.steps] == \
            [(s.label, s.state) for s in whole.violation.trace.steps]


SCALAR = [("filter_lock_buggy", {}, {"max_depth": 6}, False, {}),  # a counterexample
          ("two_phase", {"rm": 4}, {"max_depth": 4}, True, {}),  # symmetry
          ("two_phase", {"rm": 4}, {"max_depth": 7}, False, {"max_states": 900}),  # the state bound, mid-level
          ("two_phase_commit", {"lossy": 1}, {"max_depth": 6}, False, {"por": True, "deadlock": False}),  # POR, proviso
          ("tcommit", {}, {"max_depth": 3}, False, {})]  # a deadlock


@pytest.mark.parametrize("spec,params,cut,symmetry,opts", SCALAR, ids=[f"{c[0]}-{c[2]}-{c[3]}" for c in SCALAR])
def test_the_scalar_engine_resumes_as_it_would_have_gone_on(tmp_path, spec, params, cut, symmetry, opts):
    _scalar_cut_and_resumed(tmp_path, spec, params, cut, symmetry, **opts)


@pytest.mark.slow
def test_kill_9_of_the_scalar_engine_at_a_random_level_then_resume(tmp_path):
    cmd = [sys.executable, "-m", "lockstep.checker.cli", "check", "two_phase", "-p", "rm=7", "--engine", "explicit",
           "--quiet"]
    plain, resumed = kill_9_and_resume(tmp_path, cmd, (5, 14))
    assert summary(resumed)[0] == summary(plain)[0]


def test_scalar_checkpoint_errors_exit_2(cli, tmp_path):
    d = str(tmp_path / "ck")
    base = ["check", "two_phase", "-p", "rm=3", "--quiet"]
    assert cli(*base, "--engine", "explicit", "--checkpoint", d, "--max-depth", "3", "--checkpoint-every", "0").code == 3
    r = cli(*base, "--resume", d)  # the vector engine would resume it
    assert r.code == 2 and "checkpoint of the scalar engine; resume it with --engine explicit" in r.err
    r = cli(*base, "--engine", "explicit", "--resume", d, "--symmetry")
    assert r.code == 2 and "differs from this run in: symmetry" in r.err
    v = str(tmp_path / "vector")
    assert cli(*base, "--checkpoint", v, "--max-depth", "3", "--checkpoint-every", "0").code == 3
    r = cli(*base, "--engine", "explicit", "--resume", v)
    assert r.code == 2 and "checkpoint of the vector engine" in r.err
    r = cli("check", model_path("plain_counter.py"), "--checkpoint", str(tmp_path / "p"))
    assert r.code == 2 and "plain spec" in r.err
    r = cli(*base, "--engine", "explicit", "--checkpoint", str(tmp_path / "w"), "--workers", "2")
    assert r.code == 2 and "drop --workers" in r.err
    r = cli(*base, "--engine", "explicit", "--resume", d, "--cluster", "local")
    assert r.code == 2 and "--engine explicit" in r.err


# -- a checkpoint directory is data: read as data, whatever it holds ---------------------------------------

def _edit_json(path: str, edit) -> None:
    with open(path) as f:
        doc = json.load(f)
    doc = edit(doc) or doc
    with open(path, "w") as f:
        json.dump(doc, f)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """A checkpoint of each engine (two_phase rm=3, cut at depth 4), copied afresh for each test that damages it."""
    from lockstep.checker.cli import main

    d = tmp_path_factory.mktemp("checkpoints")
    for engine in ("vector", "explicit"):
        assert main(["check", "two_phase", "-p", "rm=3", "--quiet", "--max-depth", "4", "--engine", engine,
                     "--checkpoint", str(d / engine), "--checkpoint-every", "0"]) == 3
    return d


def _copy(checkpoints, engine: str, tmp_path) -> str:
    import shutil

    return str(shutil.copytree(checkpoints / engine, tmp_path / engine))


def _resume(cli, engine: str, d: str):
    return cli("check", "two_phase", "-p", "rm=3", "--quiet", "--engine", engine, "--resume", d)


COUNTERS = [(engine, key, value) for engine in ("vector", "explicit")
            for key, value in (("level", 1e20), ("level", -1), ("distinct", "12"), ("depth", True), ("generated", 2**64))] \
    + [("vector", "levels", -1), ("vector", "levels", 1e20)]


@pytest.mark.parametrize("engine, key, value", COUNTERS)
def test_manifest_counters_must_be_whole_numbers_in_range(cli, checkpoints, tmp_path, engine, key, value):
    d = _copy(checkpoints, engine, tmp_path)
    _edit_json(os.path.join(d, "manifest.json"), lambda m: m.update({key: value}))
    r = _resume(cli, engine, d)
    assert r.code == 2 and f"{key!r} is {json.dumps(value)}" in r.err, r.err
    assert "not a whole number from 0 to" in r.err and "internal error" not in r.err


def test_a_vector_frontier_of_words_that_are_no_states_is_refused(cli, checkpoints, tmp_path):
    for words, why in ((2**64 - 1, "not states of this spec"), (5, "not among the visited states")):
        d = _copy(checkpoints, "vector", tmp_path / str(words))
        path = os.path.join(d, json.load(open(os.path.join(d, "manifest.json")))["frontier"])
        arr = np.load(path)
        arr[:] = np.uint64(words)
        np.save(path, arr)
        r = _resume(cli, "vector", d)
        assert r.code == 2 and why in r.err and "damaged" in r.err, r.err


def test_an_explicit_frontier_of_values_outside_their_types_is_refused(cli, checkpoints, tmp_path):
    d = _copy(checkpoints, "explicit", tmp_path)
    path = os.path.join(d, json.load(open(os.path.join(d, "manifest.json")))["frontier"])
    _edit_json(path, lambda states: [[2**64 - 1] * len(s) for s in states])
    r = _resume(cli, "explicit", d)
    assert r.code == 2 and "does not hold this spec's states" in r.err, r.err


@pytest.mark.parametrize("engine", ["vector", "explicit"])
@pytest.mark.parametrize("what", ["fifo", "device", "link"])
def test_checkpoint_files_are_regular_files_read_without_blocking(checkpoints, tmp_path, engine, what):
    """A manifest replaced by a FIFO (or /dev/zero, or a link to another file) is refused at once: nothing blocks
    on the open or reads without end. In a process of its own, so that a hang is a failure, not a stuck suite."""
    d = _copy(checkpoints, engine, tmp_path)
    manifest = os.path.join(d, "manifest.json")
    data = os.path.join(d, json.load(open(manifest))["links" if engine == "explicit" else "visited"])
    for victim in (manifest, data):
        keep = victim + ".kept"
        os.rename(victim, keep)
        if what == "fifo":
            os.mkfifo(victim)
        elif what == "device":
            os.mknod(victim, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # as /dev/zero
        else:
            os.symlink(keep, victim)
        r = subprocess.run([sys.executable, "-m", "lockstep.checker.cli", "check", "two_phase", "-p", "rm=3", "--quiet",
                            "--engine", engine, "--resume", d], capture_output=True, text=True, timeout=120)
        why = {"fifo": "it is a FIFO", "device": "it is a character device", "link": "it is a symbolic link"}[what]
        assert r.returncode == 2 and why in r.stderr, r.stderr
        os.remove(victim)
        os.rename(keep, victim)


def test_a_resume_inserts_the_saved_fingerprints_into_a_table_of_their_final_size(tmp_path, monkeypatch):
    """The saved fingerprints come in the order of the table they were saved from (by home slot). Inserted chunk by
    chunk into a table sized for one chunk, each chunk piles into one stretch of the table and every insertion
    probes along the whole pile: quadratic, a resume that never ends past about 2^20 states. The table is
    reserved for all of them first: it is built once."""
    from lockstep.checker.progress import NoProgress
    from lockstep.checker.vector import checkpoint
    from lockstep.checker.vector.search import VectorSearch

    vm = VectorModel(load_model("two_phase", {"rm": 5}))
    ck = Checkpoint(str(tmp_path), 0, resume=False, deadlock=True)
    ck.bind(vm)
    assert check_vector(vm, Options(max_depth=12), vopts=VectorOptions(checkpoint=ck)).verdict == "inconclusive"
    distinct = json.load(open(tmp_path / "manifest.json"))["distinct"]
    monkeypatch.setattr(checkpoint, "CHUNK", 256)
    assert distinct > 10 * checkpoint.CHUNK
    again = Checkpoint(str(tmp_path), 0, resume=True, deadlock=True)
    again.bind(vm)
    search = VectorSearch(vm, Options(), NoProgress(), VectorOptions(checkpoint=again))
    try:
        again.restore(search)
        (table,) = search.table.parts
        assert table.size == distinct and table.rebuilds == 1
        assert table.contains(np.load(tmp_path / f"visited-{json.load(open(tmp_path / 'manifest.json'))['level']}.npy")).all()
    finally:
        search.close()


@pytest.mark.slow
def test_a_checkpoint_of_millions_of_states_resumes(cli, tmp_path):
    """9.5 million visited states saved at depth 18 and resumed (before the table was reserved whole, this resume
    did not end within minutes): the counts of an uninterrupted run."""
    d = str(tmp_path / "ck")
    spec = ["check", "two_phase", "-p", "rm=9", "--quiet"]
    assert cli(*spec, "--max-depth", "18", "--checkpoint", d, "--checkpoint-every", "0").code == 3
    assert json.load(open(os.path.join(d, "manifest.json")))["distinct"] == 9_515_290
    r = cli(*spec, "--resume", d)
    assert r.code == 0 and summary(r.out)[0] == "10,340,352 distinct states, 123,558,402 generated, depth 29"
