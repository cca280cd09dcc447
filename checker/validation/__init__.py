"""Validation of recorded runs: is what real processes did a behaviour of the spec? One module per
system model (`actors`, `rounds`, `population`) over the run-trace reader (`runtrace`)."""
