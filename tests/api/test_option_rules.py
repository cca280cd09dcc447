"""One core under the command line: the rules on how a check's options combine live once, in `lockstep.api`
(`check_rules`, `por_blockers`, `several_blockers`, `plan_check`), and `lockstep check` and `lockstep.check` both
apply them, each naming the options its own way. Both plan a check with `plan_check` and run and conclude it with
the plan's methods; checker/commands/check.py maps its flags onto `CheckChoices`, adds the runs only the command
offers (cluster, checkpoints, bitstate) and prints."""

from __future__ import annotations

import os
import re

import pytest

import lockstep
from lockstep.api import API_NAMES, CLI_NAMES, CheckChoices, check_rules
from lockstep.checker.errors import UsageError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (the choices, the command line's flags, the API's keywords)
REFUSED = [
    (CheckChoices(dfs=True, workers=2), ["--dfs", "--workers", "2"], {"dfs": True, "workers": 2}),
    (CheckChoices(fairness=True), ["--fairness", "wants=weak"], {"fairness": {"wants": "weak"}}),
    (CheckChoices(properties=True, dfs=True), ["--property", "no_starvation", "--dfs"],
     {"properties": ["no_starvation"], "dfs": True}),
    (CheckChoices(properties=True, max_violations=2), ["--property", "no_starvation", "--max-violations", "2"],
     {"properties": ["no_starvation"], "max_violations": 2}),
    (CheckChoices(properties=True, shorten=False), ["--property", "no_starvation", "--no-shorten"],
     {"properties": ["no_starvation"], "shorten": False}),
    (CheckChoices(properties=True, por=True, workers=2), ["--property", "no_starvation", "--por", "--workers", "2"],
     {"properties": ["no_starvation"], "por": True, "workers": 2}),
]


def refusal(choices: CheckChoices, names) -> str:
    with pytest.raises(UsageError) as e:
        check_rules(choices, names)
    return str(e.value)


@pytest.mark.parametrize("choices, flags, keywords", REFUSED, ids=lambda x: " ".join(x) if isinstance(x, list) else None)
def test_the_command_and_the_api_refuse_alike_through_the_one_rule(cli, choices, flags, keywords):
    said = refusal(choices, CLI_NAMES)
    r = cli("check", "lock_weak", *flags, "--quiet")
    assert r.code == 2 and r.err == f"lockstep: error: {said}\n"
    with pytest.raises(UsageError) as e:
        lockstep.check("lock_weak", **keywords)
    assert str(e.value) == refusal(choices, API_NAMES)
    for field in ("dfs", "workers", "fairness", "properties", "symmetry", "max_violations", "no_shorten", "por"):
        said = said.replace(getattr(CLI_NAMES, field), getattr(API_NAMES, field))
    assert said == str(e.value)  # the same rule, only the options' names differ


def test_reduction_blockers_are_named_alike(cli):
    """A search that cannot use partial-order reduction says why, from the one list of blockers."""
    r = cli("check", "chang_roberts", "--no-deadlock", "--dfs", "--quiet")
    assert r.code == 0 and "partial-order reduction off with --dfs: its cycle proviso is the breadth-first one" in r.out
    res = lockstep.check("chang_roberts", deadlock=False, dfs=True)
    assert "partial-order reduction off with dfs=True: its cycle proviso is the breadth-first one" in res.notes


def test_no_rule_is_written_in_the_command():
    """The rules' sentences occur in lockstep/api.py, and in no module of the command line."""
    phrases = ["runs on one worker", "applies to temporal properties", "is not available with",
               "its cycle proviso is the breadth-first one", "it runs on one worker", "the partitioned search expands",
               "counts steps in the scalar engine", "it counts every interleaving"]
    with open(os.path.join(ROOT, "lockstep", "api.py"), encoding="utf-8") as f:
        api = f.read()
    assert all(p in api for p in phrases)
    commands = os.path.join(ROOT, "checker", "commands")
    for name in sorted(os.listdir(commands)):
        if name.endswith(".py"):
            with open(os.path.join(commands, name), encoding="utf-8") as f:
                text = f.read()
            assert not [p for p in phrases if p in text], name


def test_the_command_runs_the_plan_the_api_makes(cli):
    """`lockstep check` and `lockstep.check` plan alike: the same engine, reductions, counts and notes."""
    import json

    res = lockstep.check("chang_roberts", deadlock=False, dfs=True)
    r = cli("check", "chang_roberts", "--no-deadlock", "--dfs", "--quiet", "--format", "json")
    rep = json.loads(r.out)
    assert r.code == 0 and rep["counts"]["distinct"] == res.distinct == 40
    assert rep["notes"] == [n.replace(API_NAMES.dfs, CLI_NAMES.dfs) for n in res.notes] and len(res.notes) == 2
    assert rep["options"]["engine"] == "scalar" and rep["options"]["por"] is False


def test_counting_coverage_is_refused_where_the_plan_cannot_count(cli):
    """--coverage runs the scalar engine on one worker: the plan refuses the rest, and --por, in one sentence."""
    r = cli("check", "chang_roberts", "--coverage", "cov.json", "--workers", "2", "--quiet")
    assert r.code == 2 and "--coverage counts steps in the scalar engine, one worker" in r.err
    r = cli("check", "chang_roberts", "--coverage", "cov.json", "--por", "--quiet")
    assert r.code == 2 and r.err == "lockstep: error: --por with --coverage: it counts every interleaving; drop one of them\n"


def test_partial_order_reduction_runs_on_the_vector_engines_two_workers(cli):
    """The vector engine's two workers are two threads of one search, which keep its cycle proviso: --workers 2
    keeps the reduction (the counts of one worker's), while more workers, or the scalar engine's two, refuse --por
    and, where it was not asked for, search without it and say why."""
    base = ["check", "bracha_low_echo_quorum", "--no-deadlock"]
    one, two = cli(*base), cli(*base, "--workers", "2")
    assert one.code == two.code == 1 and "vector breadth-first, 2 workers, partial-order reduction" in two.out
    counts = [re.search(r"([\d,]+) distinct states, ([\d,]+) generated", r.out).groups() for r in (one, two)]
    pruned = [re.search(r"partial-order reduction: ([\d,]+) of", r.out).group(1) for r in (one, two)]
    assert counts[0] == counts[1] and pruned[0] == pruned[1]
    res = lockstep.check("bracha_low_echo_quorum", deadlock=False, workers=2)
    assert res.distinct == int(counts[0][0].replace(",", ""))
    assert any(n.startswith("partial-order reduction: ") for n in res.notes)
    why = "it runs on one worker, or on the vector engine's two; drop one of them"
    for flags in (["--workers", "3"], ["--workers", "2", "--engine", "scalar"]):
        r = cli(*base, "--por", *flags, "--quiet")
        assert r.code == 2 and r.err == f"lockstep: error: --por with --workers: {why}\n"
    r = cli(*base, "--workers", "2", "--engine", "scalar", "--max-states", "2000")
    assert "partial-order reduction off with --workers: it runs on one worker, or on the vector engine's two" in r.out
