"""`check --cluster local`: the vector engine partitioned over 2 Ray actors gives the verdict, the counts,
the depth and the counterexample of one process, on registered specs and their seeded bugs, at bounds,
and after one of its actors is killed mid-run."""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import signal
import subprocess
import sys

import pytest

from lockstep.checker.cluster import ClusterSearch
from lockstep.checker.cluster.connect import connect, disconnect
from lockstep.checker.explicit import Options
from lockstep.checker.loader import load_model
from lockstep.checker.progress import NoProgress
from lockstep.checker.vector import VectorModel, check_vector
from tests.checker.scaling.test_checkpoint import summary
from tests.conftest import model_path

if importlib.util.find_spec("ray") is None:
    pytest.skip("the cluster tests need Ray", allow_module_level=True)


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance for the module, as `--cluster local` starts one (starting Ray takes seconds); the
    searches reuse it. The ray module."""
    ray, _, started = connect("local", 2)
    assert started
    yield ray
    disconnect(ray)


def listening(root: int) -> list[tuple[str, str]]:
    """(process name, address) of every TCP socket listening in process `root` or its descendants."""
    addresses = {}
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        with open(table, encoding="ascii") as f:
            for row in f.readlines()[1:]:
                cols = row.split()
                if cols[3] == "0A":  # LISTEN
                    h = cols[1].split(":")[0]
                    raw = b"".join(bytes.fromhex(h[i:i + 8])[::-1] for i in range(0, len(h), 8))
                    ip = ipaddress.IPv6Address(raw) if v6 else ipaddress.IPv4Address(raw)
                    addresses[cols[9]] = getattr(ip, "ipv4_mapped", None) or ip
    parent = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                parent[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    family, grew = {root}, True
    while grew:
        more = {p for p, pp in parent.items() if pp in family} - family
        family |= more
        grew = bool(more)
    out = []
    for pid in family:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
                name = f.read().strip()
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            inode = link[len("socket:["):-1] if link.startswith("socket:[") else None
            if inode in addresses:
                out.append((name, str(addresses[inode])))
    return out


PROBE = """
import json, os, stat, sys
from tests.checker.scaling.test_cluster import listening
from lockstep.checker.cluster import connect as c
ray, n, started = c.connect("local", 1)
private = c._private[0]
st = os.stat(private)
seen = {"listening": listening(os.getpid()), "mode": stat.S_IMODE(st.st_mode), "owner": st.st_uid,
        "session": os.path.isdir(os.path.join(private, "ray", "session_latest")), "actors": n}
c.disconnect(ray)
seen["removed"] = not os.path.exists(private)
print(json.dumps(seen))
"""


def test_a_local_instance_listens_on_loopback_only_and_keeps_its_files_private():
    """`--cluster local` in a fresh process: every server of its Ray instance listens on 127.0.0.1, its files are in
    a directory of mode 0700 owned by the user (not the world-writable /tmp/ray), removed when it stops."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=600, cwd=root)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    names = {name for name, _ in seen["listening"]}
    assert {"gcs_server", "raylet"} <= names, seen["listening"]  # Ray's servers were seen
    outside = [(name, addr) for name, addr in seen["listening"] if not ipaddress.ip_address(addr).is_loopback]
    assert outside == [], f"listening beyond the loopback interface: {outside}"
    assert seen["mode"] == 0o700 and seen["owner"] == os.getuid() and seen["session"]
    assert seen["removed"] and seen["actors"] == 1


def both(spec: str, params: dict | None = None, on_level=None, say=None, **bounds):
    vm = VectorModel(load_model(spec, params or {}))
    one = check_vector(vm, Options(**bounds))
    search = ClusterSearch(vm, spec, params or {}, Options(**bounds), NoProgress(), "local", 2, every=0,
                           on_level=on_level, say=say)
    return one, search.run(), search


def assert_same(one, many) -> None:
    assert (many.verdict, many.distinct, many.generated, many.depth, many.queued, many.cut) == \
        (one.verdict, one.distinct, one.generated, one.depth, one.queued, one.cut)
    assert (one.violation is None) == (many.violation is None)
    if one.violation is not None:
        a, b = one.violation, many.violation
        assert (b.kind, b.name, b.message) == (a.kind, a.name, a.message)
        assert [(s.label, s.state) for s in b.trace.steps] == [(s.label, s.state) for s in a.trace.steps]


CASES = [
    ("two_phase", {"rm": 4}, {}),  # holds
    ("filter_lock", {}, {}),  # holds
    ("bracha", {}, {"max_depth": 7}),  # the depth bound, with unexplored states
    ("filter_lock", {}, {"max_depth": 30}),  # the depth bound beyond the diameter: holds
    ("two_phase", {"rm": 4}, {"max_states": 900}),  # the state bound, mid-level
    ("filter_lock_buggy", {}, {}),  # seeded bug: mutual exclusion
    ("peterson_buggy", {}, {}),  # seeded bug: mutual exclusion
    ("bracha_low_echo_quorum", {}, {}),  # seeded bug: agreement
    ("two_phase_commit_eager", {}, {}),  # seeded bug, in the initial level's successors
    ("tcommit", {}, {}),  # a deadlock
    ("agent_clock_buggy", {}, {}),  # a failing step (a value out of its type)
    ("diehard", {}, {}),
    (model_path("constrained.py") + ":Counter", {}, {}),  # a violation just outside the constraint
    (model_path("constrained.py") + ":Chain", {}, {}),
]


@pytest.mark.parametrize("spec,params,bounds", CASES, ids=[f"{c[0].split('/')[-1]}-{c[2]}" for c in CASES])
def test_two_actors_match_one_process(local_ray, spec, params, bounds):
    one, many, _search = both(spec, params, **bounds)
    assert_same(one, many)


def test_exchange_volume_is_recorded(local_ray):
    one, many, search = both("two_phase", {"rm": 4})
    assert len(search.exchanged) == one.depth  # one entry per expanded level (the last finds nothing new)
    rows, cross, nbytes = map(sum, zip(*search.exchanged))
    assert 0 < cross < rows and nbytes == cross * 4 * 8
    assert "crossed partitions" in many.notes[-1]


def test_a_killed_actor_is_reported_and_the_run_resumes_from_the_last_level(local_ray):
    said = []

    def kill_one(search, level):
        if level == 5 and not search.recovered:
            os.kill(local_ray.get(search.actors[1].pid.remote()), signal.SIGKILL)

    one, many, search = both("filter_lock_buggy", on_level=kill_one, say=said.append)
    assert search.recovered == 1
    assert any("actor was lost at level 5" in s and "resuming from level 5" in s for s in said), said
    assert_same(one, many)


def test_cli_cluster_local(local_ray, cli):
    r = cli("check", "peterson_buggy", "--cluster", "local", "--workers", "2", "--quiet")
    plain = cli("check", "peterson_buggy", "--quiet")
    assert r.code == plain.code == 1
    (counts, before), (counts1, before1) = summary(r.out), summary(plain.out)
    assert counts == counts1
    assert before.split("\n", 1)[1] == before1.split("\n", 1)[1]  # all but the header: the counterexample
    assert "cluster: 2 Ray actors" in r.out


def test_cluster_usage_errors(cli):
    for args, words in [(["--cluster", "nowhere"], "expected local"),
                        (["--cluster", "local", "--dfs"], "--dfs"),
                        (["--cluster", "local", "--symmetry"], "--symmetry"),
                        (["--cluster", "local", "--engine", "scalar"], "--engine scalar")]:
        r = cli("check", "two_phase", *args)
        assert r.code == 2 and words in r.err, (args, r.err)


def test_checkpoints_move_between_the_cluster_and_one_process(local_ray, cli, tmp_path):
    """A cluster run's checkpoint resumed by one process, and one process's resumed on the cluster."""
    plain = cli("check", "filter_lock_buggy", "--quiet")
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    cut = ["--max-depth", "6", "--checkpoint-every", "0"]
    assert cli("check", "filter_lock_buggy", "--quiet", "--cluster", "local", "--workers", "2", "--checkpoint", a,
               *cut).code == 3
    assert cli("check", "filter_lock_buggy", "--quiet", "--checkpoint", b, *cut).code == 3
    for d in (a, b):
        assert json.load(open(os.path.join(d, "manifest.json")))["level"] == 6
    one = cli("check", "filter_lock_buggy", "--quiet", "--resume", a)
    many = cli("check", "filter_lock_buggy", "--quiet", "--cluster", "local", "--workers", "2", "--resume", b)
    assert one.code == many.code == plain.code == 1
    counts, before = summary(plain.out)
    for r in (one, many):
        c, b4 = summary(r.out)
        assert c == counts and b4.split("\n", 1)[1] == before.split("\n", 1)[1]


# -- random simulation over actors ----------------------------------------------------------------------

SLOW = pytest.mark.slow  # each run starts 2 actors (seconds here): the default run keeps two cases
WALKS = [  # (spec, walks, depth, seed, deadlock): the one-process result is known to be reached this way
    ("filter_lock_buggy", 400, 100, 3, False),  # mutual exclusion broken by walk 53: in the third block of 25
    ("tcommit", 160, 50, 1, False),  # holds (its terminal states allowed): every block counted
    pytest.param("diehard", 400, 100, 2, False, marks=SLOW),  # walk 62
    pytest.param("agent_clock_buggy", 200, 100, 1, False, marks=SLOW),  # a failing step in the first walk
    pytest.param("two_phase_commit", 100, 100, 1, True, marks=SLOW),  # a deadlock
    pytest.param(model_path("plain_counter.py"), 200, 100, 1, True, marks=SLOW),  # a plain spec
]


def both_walks(spec, runs, depth, seed, deadlock, **kw):
    from lockstep.checker.cluster import ClusterSimulation
    from lockstep.checker.simulation import simulate

    model = load_model(spec, {})
    one = simulate(model, runs, depth, seed=seed, deadlock=deadlock)
    sim = ClusterSimulation(model, spec, {}, runs, depth, seed, deadlock, "local", 2, **kw)
    return model, one, sim.run(), sim


@pytest.mark.parametrize("spec,runs,depth,seed,deadlock", WALKS,
                         ids=[getattr(w, "values", w)[0].split("/")[-1] for w in WALKS])
def test_walks_on_two_actors_match_one_process(local_ray, spec, runs, depth, seed, deadlock):
    from tests.checker.test_simulate import summary as walk_summary

    model, one, many, _sim = both_walks(spec, runs, depth, seed, deadlock)
    assert (one.violation is None) == (spec == "tcommit")
    assert walk_summary(many, model) == walk_summary(one, model)
    assert "cluster: 2 Ray actors" in many.notes[-1]


@pytest.mark.slow
def test_a_killed_walker_is_replaced_and_its_blocks_run_again(local_ray):
    said = []

    def kill_one(sim, block):
        if not sim.recovered and block == 0:
            os.kill(local_ray.get(sim.actors[1].pid.remote()), signal.SIGKILL)

    model, one, many, sim = both_walks("tcommit", 160, 50, 1, False, on_block=kill_one, say=said.append)
    from tests.checker.test_simulate import summary as walk_summary

    assert one.violation is None and one.runs == 160
    assert sim.recovered == 1 and any("an actor was lost" in s for s in said), said
    assert walk_summary(many, model) == walk_summary(one, model)


def test_cli_simulate_on_the_cluster_saves_the_one_process_trace(local_ray, cli, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    common = ["filter_lock_buggy", "--runs", "400", "--seed", "3", "--no-deadlock", "--quiet"]
    many = cli("simulate", *common, "--cluster", "local", "--workers", "2", "--out", str(a))
    one = cli("simulate", *common, "--out", str(b))
    assert many.code == one.code == 1
    assert a.read_text() == b.read_text()
    assert "found by walk 20 (seed 3)" in many.out and "20 walks, 1,989 steps" in many.out
    assert cli("replay", str(a)).code == 0


def test_simulate_cluster_usage_errors(cli):
    r = cli("simulate", "two_phase", "--cluster", "nowhere")
    assert r.code == 2 and "expected local" in r.err
    r = cli("simulate", "adaptive_majority", "--cluster", "local")
    assert r.code == 2 and "--cluster" in r.err
