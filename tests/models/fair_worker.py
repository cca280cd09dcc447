"""A worker that must finish while a clock keeps ticking: `finishes` needs weak fairness of `finish`."""

from lockstep.specs.lang import Bool, Int, Spec, Var, action, always_eventually, eventually, eventually_always, require, temporal


class Worker(Spec):
    """finish is continuously enabled until taken; only WF(finish) forces it."""

    done = Var(Bool, init=False)
    clock = Var(Int(0, 1), init=0)

    @action(fairness="weak")
    def tick(s):
        s.clock = 1 - s.clock

    @action(fairness="weak")
    def finish(s):
        require(s.done == False)  # noqa: E712
        s.done = True

    @temporal
    def finishes(s):
        return eventually(s.done)

    @temporal
    def stays_done(s):
        return eventually_always(s.done)

    @temporal
    def clock_goes_round(s):
        return always_eventually(s.clock == 1)

    @temporal
    def clock_stops(s):
        return eventually_always(s.clock == 0)
