"""Two implementations of the key-value store: a correct one, and one with a bug in its eviction."""

from __future__ import annotations


class Store:
    """A dict with a capacity: a put of a new key into a full store returns False and changes nothing."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.data: dict[int, int] = {}

    def put(self, key: int, value: int) -> bool:
        if key not in self.data and len(self.data) >= self.capacity:
            return False
        self.data[key] = value
        return True

    def delete(self, key: int) -> None:
        self.data.pop(key, None)

    def cas(self, key: int, expected: int, new: int) -> bool:
        if self.data.get(key) != expected:
            return False
        self.data[key] = new
        return True


class EvictingStore(Store):
    """The bug: when full, a put of a new key evicts the oldest key instead of being refused."""

    def put(self, key: int, value: int) -> bool:
        if key not in self.data and len(self.data) >= self.capacity:
            del self.data[next(iter(self.data))]
        self.data[key] = value
        return True
