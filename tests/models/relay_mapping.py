"""The mapping of the relay logs (`relay_log.py`): events are the spec's own actions; only the sender's timer
ticks (`wait`) happen unlogged."""

INTERNAL = ["wait"]
