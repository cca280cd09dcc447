"""A set over a large universe (32 columns) whose actions touch a few elements: the vector compiler's
code for each action must grow with the elements it touches, not with the set's columns."""

from lockstep.specs.lang import If, Int, Range, Set, Spec, Var, action, require

Wide = Range(2000)  # 32 columns of 63 elements


class SparseSet(Spec):
    """Elements near both ends of a wide set come and go; `k` moves an element within one column."""

    k = Var(Int(0, 5), init=0)
    bag = Set(Wide)

    @action
    def add_low(s):
        s.bag = s.bag.add(1)

    @action
    def swap_high(s):
        require(s.bag.contains(1))
        s.bag = If(s.bag.contains(1990), s.bag.remove(1990).add(1999), s.bag.add(1990))

    @action
    def walk(s):
        require(s.k < 5)
        s.bag = s.bag.remove(100 + s.k).add(101 + s.k)
        s.k = s.k + 1

    @action
    def clear_low(s):
        require(s.bag.contains(1) & (s.k == 5))
        s.bag = s.bag.remove(1)


class HugeSet(Spec):
    """A set over 20,000 elements: its constants run past Python's 4,300-digit limit on decimal ints."""

    bag = Set(Range(20_000))

    @action
    def add_last(s):
        require(s.bag.is_empty())
        s.bag = s.bag.add(19_999)

    @action
    def swap(s):
        require(s.bag.contains(19_999))
        s.bag = s.bag.remove(19_999).add(19_998)
