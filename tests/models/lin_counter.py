"""A user-written sequential model for `lockstep linearizable --model`: a counter with incr and read."""


class Counter:
    name = "counter"
    observers = ("read",)

    def init(self):
        return 0

    def apply(self, state, f, key, value):
        if f == "incr":
            return state + 1, True
        return state, state
