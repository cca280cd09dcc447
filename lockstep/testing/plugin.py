"""The pytest plugin: the `lockstep` marker runs a test once per combination of spec parameters.

    @pytest.mark.lockstep(rm=[2, 3, 4], workers=1)     # lists are ranges of values, scalars fixed
    def test_two_phase(spec_params):
        assert_holds(TwoPhase, **spec_params)
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "lockstep(**params): run the test once per combination of spec parameters "
                                       "(lists give the values to try), passed as the `spec_params` fixture")


def pytest_generate_tests(metafunc: Any) -> None:
    marks = list(metafunc.definition.iter_markers("lockstep"))
    if not marks:
        return
    if "spec_params" not in metafunc.fixturenames:
        pytest.fail(f"{metafunc.definition.nodeid}: @pytest.mark.lockstep needs the spec_params fixture as an "
                    "argument of the test", pytrace=False)
    grid: dict[str, list[Any]] = {}
    for mark in reversed(marks):  # the mark nearest the function wins
        if mark.args:
            pytest.fail(f"{metafunc.definition.nodeid}: @pytest.mark.lockstep takes parameters by name, "
                        "e.g. @pytest.mark.lockstep(rm=[2, 3])", pytrace=False)
        grid.update({k: list(v) if isinstance(v, (list, tuple, range)) else [v] for k, v in mark.kwargs.items()})
    names = sorted(grid)
    combos = [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]
    metafunc.parametrize("spec_params", combos, ids=[",".join(f"{k}={v}" for k, v in c.items()) for c in combos])


@pytest.fixture
def spec_params() -> dict[str, Any]:
    """The spec parameters of this run of a `@pytest.mark.lockstep` test (empty without the marker)."""
    return {}
