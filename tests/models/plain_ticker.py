"""A plain spec with fairness: a counter mod 3 that may also `park` at 0; `visits_two` needs WF(step)."""

from lockstep.specs.lang import always_eventually, eventually

fairness = {"step": "weak"}
temporal = {"visits_two": eventually(lambda s: s == 2), "two_forever": always_eventually(lambda s: s == 2)}


def init():
    yield 0


def next(state):
    yield ("step", (state + 1) % 3)
    if state == 0:
        yield ("park", 0)


class Misdeclared:
    """Fairness for an action that no step has."""

    fairness = {"jump": "weak"}
    temporal = {"visits_two": eventually(lambda s: s == 2)}

    def init(self):
        return [0]

    def next(self, state):
        yield ("step", (state + 1) % 3)
