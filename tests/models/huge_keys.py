"""A map keyed by a huge range: refused when the spec is built (its state would have 10**9 slots)."""

from lockstep.specs.lang import Bool, Map, Range, Spec, action

Key = Range(10**9)


class HugeKeys(Spec):
    flags = Map(Key, Bool, init=False)

    @action
    def set_first(s):
        s.flags[0] = True
