"""The Datalog language: syntax errors with positions, analysis errors, parameters, edge lists and graph
generators."""

from __future__ import annotations

import pytest

from lockstep.specs.datalog.analysis import analyse
from lockstep.specs.datalog.catalog import PROGRAMS, load
from lockstep.specs.datalog.graphs import Graph, generate, parse_edge_list
from lockstep.specs.datalog.parser import parse
from lockstep.specs.datalog.syntax import DatalogError


def error_of(text: str) -> DatalogError:
    with pytest.raises(DatalogError) as e:
        analyse(parse(text, "t.dl"))
    return e.value


@pytest.mark.parametrize("text, line, column, words", [
    ("p(X) <- q(X)", 1, 13, "ends in the middle"),
    ("p(X) <- q(X).\np(X) <- Q(X).", 2, 10, "unexpected '('"),
    ("p(x) <- q(X).", 1, 3, "unexpected 'x'"),
    ("p(X) <- q(\"a\").", 1, 11, "unexpected character"),
    ("p(min<X>, Y) <- q(X, Y).", 1, 3, "last argument"),
    ("p(X) <- q(X) r(X).", 1, 14, "unexpected 'r'"),
    ("p(X) <- q(min<X>).", 1, 11, "only appear in the head"),
    ("p(X) <- q(X), X / 2 = 1.", 1, 17, "unexpected character '/'"),
    ("p(X, min<C>, max<D>) <- q(X, C, D).", 1, 14, "at most one aggregate"),
])
def test_syntax_errors_point_at_line_and_column(text, line, column, words):
    e = error_of(text)
    assert e.pos is not None and (e.pos.line, e.pos.column) == (line, column), str(e)
    assert words in str(e)
    assert str(e).startswith(f"t.dl:{line}:{column}:")
    assert "^" in str(e)  # the caret under the column


@pytest.mark.parametrize("text, line, words", [
    (".input e(a, b).\np(X) <- e(X, Y), not q(Y).\nq(X) <- e(X, _).", 2, "negation"),
    (".input e(a, b).\np(X, Z) <- e(X, Y).", 2, "head variable Z is not bound"),
    (".input e(a, b).\np(X) <- e(X, Y), Z > 2.", 2, "variable Z"),
    (".input e(a, b).\np(X) <- e(X).", 2, "used with 1 argument(s) here and 2"),
    ("p(X) <- r(X).", 1, "unknown predicate r"),
    (".input e(a, b).\np(X, min<Y>) <- e(X, Y).\np(X, max<Y>) <- e(X, Y).", 3, "disagree on its aggregate"),
    (".input e(a, b).\np(X) <- e(X, $k).", 2, "unknown parameter $k"),
    (".input e(a, b).\ne(X, Y) <- e(Y, X).", 2, "is an input and also the head"),
])
def test_analysis_errors(text, line, words):
    e = error_of(text)
    assert words in str(e), str(e)
    assert e.pos is not None and e.pos.line == line


def test_parameters_bind_and_unknown_parameters_are_refused():
    prog = analyse(load("sssp"), {"source": 3})
    assert prog.params == {"source": 3}
    with pytest.raises(DatalogError, match="no parameter 'sorce'"):
        analyse(load("sssp"), {"sorce": 3})


def test_every_shipped_program_parses_and_has_strata():
    for name in PROGRAMS:
        prog = analyse(load(name))
        assert prog.strata and prog.idb


def test_edge_lists():
    g = parse_edge_list(["# SNAP style\n", "0 1\n", "1\t2\n", "% another comment\n", "2 0\n"], "g.txt")
    assert g.src.tolist() == [0, 1, 2] and g.weight is None
    with pytest.raises(DatalogError, match="bad.txt:2:"):
        parse_edge_list(["0 1\n", "1 x\n"], "bad.txt")
    with pytest.raises(DatalogError, match="mixed.txt:2: 3 fields"):
        parse_edge_list(["0 1\n", "1 2 3\n"], "mixed.txt")


def test_generators_and_limits():
    g = generate("grid:3:4")
    assert g.edges == 2 * (3 * 3 + 2 * 4)  # both directions
    assert isinstance(generate("gnm:10:20", seed=1), Graph)
    with pytest.raises(DatalogError, match="unknown graph generator"):
        generate("foo:3")
    with pytest.raises(DatalogError, match="more than the limit"):
        generate("complete:100000")
