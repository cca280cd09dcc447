"""Model-based tests of the stores against the spec: the correct one conforms, the buggy one does not."""

import pytest

from lockstep.testing import Adapter, NonConformance, assert_holds, conforms

from .spec import KVStore
from .store import EvictingStore, Store


class StoreAdapter(Adapter):
    """Maps the spec's actions to calls on a `Store`, and the store's contents back to the spec's field."""

    implementation = Store

    def __init__(self):
        self.store = self.implementation(capacity=2)

    def put(self, k, v):
        self.store.put(k, v)

    def put_refused(self, k, v):
        self.store.put(k, v)  # the spec's refused put: the store must not change

    def delete(self, k):
        self.store.delete(k)

    def cas(self, k, expected, new):
        self.store.cas(k, expected, new)

    def observe(self):
        return {"store": {k: self.store.data.get(k) for k in range(3)}}


class EvictingAdapter(StoreAdapter):
    implementation = EvictingStore


def test_the_spec_holds():
    assert_holds(KVStore)


def test_the_store_conforms():
    conforms(KVStore, StoreAdapter)


def test_the_evicting_store_fails_with_a_short_trace():
    with pytest.raises(NonConformance) as failure:
        conforms(KVStore, EvictingAdapter)
    trace = failure.value.trace
    assert len(trace.steps) - 1 <= 5  # hypothesis shrank it: fill the store, then one put too many
    assert trace.steps[-1].label.startswith("put_refused")
