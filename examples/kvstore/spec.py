"""The spec of a small key-value store with a capacity: put, delete and compare-and-set.

A store holds at most `capacity` keys; a put of a new key into a full store is refused and leaves
the store unchanged. `cas(k, expected, new)` writes `new` only if the key holds `expected`.
"""

from lockstep.specs.lang import Count, Int, Map, Option, Param, Range, Spec, action, invariant, require

KEYS = Param("keys", default=3, lo=1, doc="how many keys exist")
CAPACITY = Param("capacity", default=2, lo=1, doc="how many keys the store may hold")
Key = Range(KEYS)
Value = Int(0, 2)


def held(s):
    """How many keys the store holds."""
    return Count(Key, lambda k: s.store[k].is_some())


class KVStore(Spec):
    """A key-value store of bounded size."""

    capacity = CAPACITY
    store = Map(Key, Option(Value))  # None: the key is absent

    @action
    def put(s, k: Key, v: Value):
        require(s.store[k].is_some() | (held(s) < CAPACITY))
        s.store[k] = v

    @action
    def put_refused(s, k: Key, v: Value):
        require(s.store[k].is_none(), held(s) >= CAPACITY)

    @action
    def delete(s, k: Key):
        s.store[k] = None

    @action
    def cas(s, k: Key, expected: Value, new: Value):
        require(s.store[k] == expected)
        s.store[k] = new

    @invariant
    def within_capacity(s):
        return held(s) <= CAPACITY
