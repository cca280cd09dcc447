"""`lockstep.testing`: assertions, hypothesis strategies, the pytest plugin, model-based testing."""

import pytest
from hypothesis import given, settings

import lockstep
import lockstep.checker.vector  # noqa: F401  (numpy imported once: pytester's runs forget the modules they import)
from examples.kvstore.spec import KVStore
from examples.kvstore.test_store import StoreAdapter
from lockstep.checker.typed_model import TypedModel
from lockstep.specs.examples.diehard import DieHard
from lockstep.specs.examples.two_phase import Message, TwoPhase
from lockstep.specs.lang import Bool, Enum, Int, Map, Option, Range, Record, Set, Union
from lockstep.testing import NonConformance, assert_holds, assert_violates, conforms, reachable_states, values

pytest_plugins = ["pytester"]


def test_assert_holds_and_its_failure_message():
    assert assert_holds(TwoPhase, rm=3).distinct == 288
    with pytest.raises(AssertionError) as failure:
        assert_holds(DieHard)
    text = str(failure.value)
    assert text.startswith("Violation: invariant not_solved is violated") and "Counterexample (6 steps):" in text
    assert "    6  " in text  # numbered steps, as the command line prints them


def test_assert_violates():
    v = assert_violates(DieHard, property="not_solved", max_steps=6)
    assert len(v.trace.steps) == 7
    with pytest.raises(AssertionError, match="expected a violation within 5 steps"):
        assert_violates(DieHard, max_steps=5)
    with pytest.raises(AssertionError, match="expected deadlock to be violated"):
        assert_violates(DieHard, property="deadlock")


Rec = Record("Rec", a=Int(0, 3), b=Bool)
TYPES = [Bool, Int(-2, 5), Enum("x", "y", "z"), Range(4), Rec, Union(Record("P", v=Range(3)), Record("Q")),
         Option(Int(0, 2)), Set(Range(70)), Map(Range(3), Set(Range(2)))]


@pytest.mark.parametrize("t", TYPES, ids=repr)
def test_values_are_values_of_the_type(t):
    from lockstep.specs.lang.params import Binding

    dom = t.dom(Binding("test", {}))

    @settings(max_examples=60, deadline=None)
    @given(values(t))
    def check(v):
        if isinstance(v, dict):
            assert sorted(v) == dom.key.values() and all(dom.val.value(dom.val.index(x)) == x for x in v.values())
        else:
            assert dom.value(dom.index(v)) == v

    check()


def test_values_of_a_parameterised_type():
    rm = Range("rm", default=3)
    seen = set()

    @settings(max_examples=200, deadline=None)
    @given(values(rm, rm=5))
    def collect(v):
        seen.add(v)

    collect()
    assert seen == set(range(5))
    with pytest.raises(lockstep.SpecError, match="no parameter 'n'"):
        values(rm, n=2)
    values(Message, rm=4)  # a union of records over a parameterised range


def test_reachable_states_are_reachable():
    model = lockstep.model(TwoPhase, rm=3)
    assert isinstance(model, TypedModel)
    frontier, seen = list(model.initial_states()), set()
    while frontier:
        s = frontier.pop()
        if s not in seen:
            seen.add(s)
            frontier += [t for _, t in model.successors(s)]
    reachable = [model.prog.decode(s) for s in seen]

    @settings(max_examples=100, deadline=None)
    @given(reachable_states(TwoPhase, max_steps=12, rm=3))
    def check(state):
        assert state in reachable

    check()


def test_an_implementation_that_raises_is_reported_with_the_trace():
    class Raising(StoreAdapter):
        def delete(self, k):
            raise KeyError(k)

    with pytest.raises(NonConformance, match=r"delete\(k=\d\)\): the implementation raised KeyError"):
        conforms(KVStore, Raising, max_examples=40)


def test_the_pytest_plugin(pytester):
    pytester.makepyfile('''
        import pytest
        from lockstep.specs.examples.two_phase import TwoPhase
        from lockstep.specs.examples.diehard import DieHard
        from lockstep.testing import assert_holds

        @pytest.mark.lockstep(rm=[2, 3])
        def test_two_phase(spec_params):
            assert assert_holds(TwoPhase, **spec_params).distinct in (56, 288)

        def test_die_hard():
            assert_holds(DieHard)
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_two_phase?rm=2? PASSED*", "*test_two_phase?rm=3? PASSED*",
                                 "*AssertionError: Violation: invariant not_solved is violated*",
                                 "*Counterexample (6 steps):*", "*big = 4*"])


def test_a_failing_test_starts_with_the_spec_message_not_lockstep_frames(pytester):
    """The failure of assert_holds, assert_violates and conforms shows the test's own line, then the message: none of
    Lockstep's frames (hidden with `__tracebackhide__`)."""
    pytester.makepyfile('''
        from examples.kvstore.test_store import StoreAdapter
        from lockstep.specs.examples.diehard import DieHard
        from lockstep.specs.examples.two_phase import TwoPhase
        from lockstep.testing import assert_holds, assert_violates, conforms
        from tests.api.test_testing import KVStore

        def test_holds():
            assert_holds(DieHard)

        def test_violates():
            assert_violates(TwoPhase, rm=2)

        class Raising(StoreAdapter):
            def delete(self, k):
                raise KeyError(k)

        def test_conforms():
            conforms(KVStore, Raising, max_examples=40)
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    for test, call, message in (("test_holds", "assert_holds(DieHard)", "AssertionError: Violation: invariant not_solved"),
                                ("test_violates", "assert_violates(TwoPhase, rm=2)",
                                 "AssertionError: expected a violation, but holds"),
                                ("test_conforms", "conforms(KVStore, Raising, max_examples=40)",
                                 "lockstep.testing.conformance.NonConformance: step")):
        section = out.split(f"_ {test} _", 1)[1]
        lines = [line for line in section.splitlines() if line.strip()]
        at = next(i for i, line in enumerate(lines) if line.startswith(">"))
        assert lines[at] == f">       {call}" and lines[at + 1].startswith(f"E       {message}"), section[:2000]
    assert "lockstep/testing/" not in out and "lockstep/api.py" not in out


def test_a_nonconformance_trace_replays_against_the_spec(tmp_path):
    from examples.kvstore.test_store import EvictingAdapter

    with pytest.raises(NonConformance) as caught:
        conforms(KVStore, EvictingAdapter, max_examples=200)
    path = str(tmp_path / "nonconformance.json")
    caught.value.trace.save(path)
    res = lockstep.replay(path, spec=KVStore)
    assert "a run of KVStore" in res.conclusion and "where the implementation differed" in res.conclusion


def test_the_pytest_plugin_reports_misuse_and_unmet_expectations(pytester):
    pytester.makepyfile(test_misuse='''
        import pytest

        @pytest.mark.lockstep(2, 3)
        def test_positional(spec_params):
            pass
    ''', test_expectations='''
        from lockstep.specs.examples.two_phase import TwoPhase
        from lockstep.testing import assert_holds, assert_violates
        from tests.models.vacuous import Witnessed

        def test_a_correct_spec_is_not_violated():
            assert_violates(TwoPhase, rm=2)

        def test_an_unreachable_witness_fails():
            assert_holds(Witnessed)
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider", "--continue-on-collection-errors")
    result.assert_outcomes(failed=2, errors=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*test_positional: @pytest.mark.lockstep takes parameters by name, e.g.*",
                                 "*AssertionError: expected a violation, but holds: 56 states explored*",
                                 "*AssertionError: witness reaches_five is unreachable: no reachable state "
                                 "satisfies it (4 states)*"])
    assert "_manager.py" not in out and "plugin.py" not in out  # the misuse is one message, not a traceback
