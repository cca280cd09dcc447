"""The vector compiler's code stays proportional to what a step changes (Autobahn's network is such a set)."""

from __future__ import annotations

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.vector import VectorModel, check_vector
from tests.conftest import model_path

SPARSE = model_path("sparse_sets.py") + ":SparseSet"


def test_a_few_elements_of_a_wide_set_cost_a_few_lines():
    """32 columns, 4 actions: once every set operation ran column by column (over 400 lines)."""
    model = load_model(SPARSE)
    vm = VectorModel(model)
    assert vm.layout.prog.slot_doms[1].elem.size == 2000
    lines = [x for x in vm.program.source.splitlines() if x.strip() and not x.lstrip().startswith(("#", "del "))]
    assert len(lines) < 200, len(lines)  # 107 now, 541 before


def test_and_the_engines_still_agree_on_it():
    model = load_model(SPARSE)
    for deadlock in (True, False):
        opts = Options(deadlock=deadlock)
        scalar, vector = check(model, opts), check_vector(model, opts)
        assert (vector.verdict, vector.distinct, vector.generated, vector.depth) == \
            (scalar.verdict, scalar.distinct, scalar.generated, scalar.depth)
        assert vector.distinct > 10


def test_a_set_past_the_decimal_digit_limit_compiles_in_both_interpreters():
    model = load_model(model_path("sparse_sets.py") + ":HugeSet")
    opts = Options(deadlock=False)
    scalar, vector = check(model, opts), check_vector(model, opts)
    assert (scalar.verdict, scalar.distinct, scalar.depth) == (vector.verdict, vector.distinct, vector.depth) == ("holds", 3, 3)
