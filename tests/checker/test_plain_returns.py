"""A plain spec's or a population protocol's function that returns None where a value is required (a missing `return`)
is an error naming the function's line, not a value read as false: an invariant is not "violated", a constraint does
not silently exclude every state, `init()` and `next()` are not a bare TypeError."""

from __future__ import annotations

import textwrap

import pytest

PLAIN = '''
def init():
    {init}

def next(s):
    {next}

def small(s):
    {invariant}

def constraint(s):
    {constraint}

invariants = {{"small": small}}
'''

RIGHT = {"init": "return [0]", "next": "return [('inc', s + 1)] if s < 3 else []", "invariant": "return s < 5",
         "constraint": "return s < 9"}


def plain(tmp_path, **wrong: bool) -> str:
    """A plain spec file counting 0..3, with some functions' `return` left out."""
    bodies = {k: v.removeprefix("return ") if k in wrong else v for k, v in RIGHT.items()}
    path = tmp_path / "counter.py"
    path.write_text(PLAIN.format(**bodies))
    return str(path)


def line_of(path: str, text: str) -> int:
    lines = open(path).read().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(f"def {text}"))


def test_the_plain_spec_with_every_return_counts_to_three(cli, tmp_path):
    r = cli("check", plain(tmp_path), "--no-deadlock")
    assert r.code == 0 and "4 distinct states" in r.out, r.out + r.err


@pytest.mark.parametrize("missing, fn, message", [
    ("invariant", "small", "invariant small of plain spec counter returns None, not a condition"),
    ("constraint", "constraint", "constraint of plain spec counter returns None, not a condition"),
    ("init", "init", "init() of plain spec counter returns None, not the initial states"),
])
def test_a_missing_return_is_refused_before_the_search(cli, tmp_path, missing, fn, message):
    path = plain(tmp_path, **{missing: True})
    r = cli("check", path, "--no-deadlock")
    assert r.code == 2, r.out + r.err
    assert f"{path}:{line_of(path, fn)}: {message}" in r.err and "is a `return` missing?" in r.err


def test_a_next_without_return_is_a_spec_error_at_its_line(cli, tmp_path):
    path = plain(tmp_path, next=True)
    r = cli("check", path, "--no-deadlock")
    assert r.code == 5, r.out + r.err
    assert f"at {path}:{line_of(path, 'next')}: next(state) of plain spec counter returns None" in r.out


def test_an_invariant_returning_none_in_some_states_is_a_spec_error_there(cli, tmp_path):
    path = tmp_path / "partial.py"
    path.write_text(textwrap.dedent('''
        def init():
            return [0]

        def next(s):
            return [("inc", s + 1)] if s < 3 else []

        def small(s):
            if s < 2:
                return True

        invariants = {"small": small}
    '''))
    r = cli("check", str(path), "--no-deadlock")
    assert r.code == 5, r.out + r.err
    assert "invariant small of plain spec partial returns None, not a condition" in r.out
    assert "Counterexample (2 steps)" in r.out or "reaches it (2 steps)" in r.out


EPIDEMIC = '''
from lockstep.specs.lang import Enum, Param{extra_import}
from lockstep.specs.lang.population import Population, predicate, start


class Epidemic(Population):
    n = Param("n", default=4, lo=2)
    agent = Enum("S", "I")

    def delta(self, u, v):
        return (u, "I") if u == "I" else (u, v)

    @start
    def one_infected(self):
        return {{"I": 1, "S": self.n - 1}}

    {marker}
    def someone_infected(self, c):
        {body}
'''


def epidemic(tmp_path, name: str, marker: str = "@predicate(invariant=True)", body: str = 'return c["I"] >= 1',
             extra_import: str = "") -> str:
    """A protocol file (named anew each time: a module is imported once per process)."""
    path = tmp_path / f"{name}.py"
    path.write_text(EPIDEMIC.format(marker=marker, body=body, extra_import=extra_import))
    return f"{path}:Epidemic"


def test_a_population_predicate_without_return_is_refused(cli, tmp_path):
    ref = epidemic(tmp_path, "epidemic")
    assert cli("check", ref).code == 1  # a silent configuration (all infected): a deadlock, as for any protocol
    ref = epidemic(tmp_path, "no_return", body='c["I"] >= 1')
    for command in (["check", ref], ["simulate", ref], ["analyze", ref]):
        r = cli(*command)
        assert r.code == 2, (command, r.out + r.err)
        assert "predicate someone_infected of Epidemic returns None, not a condition" in r.err, command


def test_a_typed_language_decorator_on_a_population_protocol_is_refused(cli, tmp_path):
    ref = epidemic(tmp_path, "typed_marker", marker="@invariant", extra_import=", invariant")
    r = cli("check", ref)
    assert r.code == 2
    assert "population protocol Epidemic marks someone_infected @invariant, which population protocols do not read" \
        in r.err and "@predicate(invariant=True)" in r.err
