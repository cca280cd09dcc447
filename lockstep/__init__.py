"""Lockstep: specify, model-check and run synchronization protocols in Python.

One installed namespace: `lockstep.specs` (the modelling language and the protocols),
`lockstep.checker` (the engines and the `lockstep` command), `lockstep.executors` (protocols
run as real OS processes) and `lockstep.proofs` (machine-checked facts about specs).
"""

__version__ = "0.2.0"
