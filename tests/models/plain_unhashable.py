"""A malformed plain spec: its states are lists."""


def init():
    yield [0]


def next(state):
    yield ("step", [state[0] + 1])
