"""An unbounded counter made finite by a state constraint, and a spec for the bound options."""

from lockstep.specs.lang import Bool, Int, Not, Spec, Var, action, constraint, invariant, require


class Counter(Spec):
    """x grows by 1 or 2; the constraint keeps x < 10; x = 11 would break the invariant."""

    x = Var(Int(0, 20), init=0)

    @action
    def add1(s):
        s.x = s.x + 1

    @action
    def add2(s):
        require(s.x < 19)
        s.x = s.x + 2

    @constraint
    def small(s):
        return s.x < 10

    @invariant
    def below_11(s):
        return s.x < 11


class Chain(Spec):
    """A chain of 30 states with a flag that flips at the end."""

    i = Var(Int(0, 30), init=0)
    done = Var(Bool, init=False)

    @action
    def step(s):
        require(s.i < 30)
        s.i = s.i + 1

    @action
    def finish(s):
        require(s.i == 30, Not(s.done))
        s.done = True

    @action
    def idle(s):
        require(s.done)
