"""`lockstep explore`: a local web explorer of a spec's state space (a small ASGI app on 127.0.0.1)."""
