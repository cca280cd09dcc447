"""`lockstep simulate` on typed, actor and plain specs: random walks find seeded bugs, save traces that
replay (on the spec and on processes), are reproducible by seed whatever the workers, and report coverage."""

from __future__ import annotations

import json
import re

from lockstep.checker.loader import load_model
from lockstep.checker.replay import replay
from lockstep.checker.simulation import simulate
from lockstep.checker.trace import Trace
from tests.conftest import model_path

VACUOUS = model_path("vacuous.py") + ":Vacuous"


def test_random_walks_find_the_low_echo_quorum_bug_and_the_trace_replays_on_processes(cli, tmp_path):
    out = tmp_path / "cex.json"
    r = cli("simulate", "bracha_low_echo_quorum", "--runs", "10000", "--no-deadlock", "--quiet", "--out", str(out))
    assert r.code == 1, r.out
    assert "invariant ready_agreement is violated" in r.out
    trace = Trace.load(str(out))
    assert trace.property == {"kind": "invariant", "name": "ready_agreement"}
    assert replay(trace).states
    r = cli("replay", str(out), "--on-processes")
    assert r.code == 0 and "violates invariant ready_agreement, as in the counterexample" in r.out


def test_the_correct_quorum_survives_the_walks(cli):
    r = cli("simulate", "bracha", "--runs", "300", "--depth", "60", "--no-deadlock", "--quiet")
    assert r.code == 0, r.out
    assert "No violation in 300 walks" in r.out and "steps/s" in r.out


def test_a_deadlock_is_a_violation_unless_allowed(cli):
    r = cli("simulate", "two_phase_commit", "--runs", "50", "--quiet")
    assert r.code == 1 and "deadlock" in r.out
    assert cli("simulate", "two_phase_commit", "--runs", "50", "--quiet", "--no-deadlock").code == 0


def test_typed_and_plain_specs_and_failing_steps(cli):
    assert cli("simulate", "two_phase", "--runs", "200", "--no-deadlock", "--quiet").code == 0
    r = cli("simulate", model_path("plain_counter.py"), "--runs", "200", "--quiet")
    assert r.code == 1 and "invariant sum_below_7 is violated" in r.out
    r = cli("simulate", model_path("failing_action.py") + ":Asserting", "--runs", "5", "--quiet")
    assert r.code == 1 and "n must skip 2" in r.out


def summary(res, model) -> tuple:
    """Everything a simulation reports but its time."""
    trace = None if res.violation is None else res.violation.trace.to_json()
    return (res.runs, res.steps, res.distinct, res.seen, res.endings, res.coverage.table(model), res.violating_walk,
            trace)


def test_same_seed_same_walks_whatever_the_workers():
    model = load_model("bracha_low_echo_quorum", {})
    one = simulate(model, 3000, 100, seed=7, deadlock=False)
    again = simulate(model, 3000, 100, seed=7, deadlock=False)
    two = simulate(model, 3000, 100, seed=7, deadlock=False, workers=2)
    assert one.violation is not None
    assert summary(one, model) == summary(again, model) == summary(two, model)
    other = simulate(model, 3000, 100, seed=8, deadlock=False)
    assert other.violation.trace.to_json() != one.violation.trace.to_json()


def test_workers_count_what_one_process_counts_up_to_a_violation_in_a_later_block():
    """Walk 27 of 400 (seed 11) is the first to break mutual exclusion: 2 workers run blocks of 25 walks and
    count the walks, steps and states of one process, which stops there."""
    model = load_model("filter_lock_buggy", {})
    one = simulate(model, 400, 100, seed=11, deadlock=False)
    assert one.violating_walk == 26 and one.runs == 27
    assert summary(simulate(model, 400, 100, seed=11, deadlock=False, workers=2), model) == summary(one, model)
    held = load_model("tcommit", {})
    alone = simulate(held, 120, 50, seed=1, deadlock=False)
    assert alone.violation is None and alone.runs == 120
    assert summary(simulate(held, 120, 50, seed=1, deadlock=False, workers=2), held) == summary(alone, held)


def test_coverage_flags_a_never_enabled_action(cli, tmp_path):
    out = tmp_path / "cov.json"
    r = cli("simulate", VACUOUS, "--runs", "20", "--depth", "10", "--quiet", "--coverage", str(out))
    assert r.code == 0
    assert "warning: action overflow was never enabled in the states explored" in r.out
    data = json.loads(out.read_text())
    assert data["never_enabled"] == ["overflow"]
    assert data["actions"]["inc"]["taken"] > 0 and data["actions"]["overflow"] == {"enabled": 0, "taken": 0}
    assert sum(v["taken"] for v in data["actions"].values()) == data["steps"] == 200


def test_actions_a_short_walk_never_enabled_are_named_in_one_warning(cli):
    r = cli("simulate", "two_phase", "--runs", "1", "--depth", "4", "--quiet")
    warnings = [line for line in r.out.splitlines() if "warning" in line]
    assert r.code == 0 and len(warnings) == 1, r.out
    assert "3 actions were never enabled in the states explored" in warnings[0]
    assert warnings[0].endswith(": rm_rcv_abort_msg, rm_rcv_commit_msg, tm_commit")
    assert "walks ended: 1 after 4 steps, 0 without a possible step" in r.out


def test_a_walk_prints_its_states_in_the_notation_of_check(cli):
    """Processes and envelopes as `check` prints them: `process 0  leader = False`, `Envelope(src=0, ...)`."""
    walk = cli("simulate", "chang_roberts_forward_all", "--quiet")
    search = cli("check", "chang_roberts_forward_all", "--quiet")
    assert walk.code == search.code == 1
    initial = [line for line in search.out.splitlines() if line.startswith(" " * 9)][:5]
    assert initial[0].strip() == "process 0  leader = False"
    assert "network = {Envelope(src=0, dst=1, msg=Elect(uid=0))," in initial[4]
    assert all(line in walk.out.splitlines() for line in initial), walk.out
    step = re.compile(r"^    1  deliver\(src=\d, dst=\d, msg=Elect\(uid=\d\)\)$", re.M)  # named by its type
    assert step.search(search.out) and step.search(walk.out)


def test_per_message_tag_coverage_of_actor_specs():
    res = simulate(load_model("bracha", {}), 20, 100, deadlock=False)
    table = res.coverage.table(load_model("bracha", {}))
    assert {"deliver Initial", "deliver Echo", "deliver Ready"} <= set(table)
    assert all(v["taken"] > 0 for k, v in table.items() if k.startswith("deliver"))


def test_options_of_the_other_kind_of_simulation_are_refused(cli):
    r = cli("simulate", "two_phase", "--time", "5")
    assert r.code == 2 and "--time: only for population protocols" in r.err
    r = cli("simulate", "adaptive_majority", "--depth", "5")
    assert r.code == 2 and "--depth" in r.err


def test_check_coverage_counts_every_enabled_step_and_flags_the_vacuous_action(cli, tmp_path):
    out = tmp_path / "cov.json"
    r = cli("check", VACUOUS, "--coverage", str(out))
    assert r.code == 0 and "warning: action overflow was never enabled in any reachable state (a vacuous guard?)" in r.out
    data = json.loads(out.read_text())
    assert data["actions"] == {"inc": {"enabled": 3, "taken": 3}, "overflow": {"enabled": 0, "taken": 0},
                               "reset": {"enabled": 1, "taken": 1}}
    r = cli("check", "two_phase_commit", "--no-deadlock", "--coverage", str(out))
    assert r.code == 0 and "partial-order reduction off with --coverage" in r.out
    data = json.loads(out.read_text())
    assert sum(v["enabled"] for v in data["actions"].values()) == 2208 - 1  # every step generated, less the start
    assert data["never_enabled"] == []
    assert cli("check", "two_phase_commit", "--coverage", str(out), "--engine", "vector").code == 2
