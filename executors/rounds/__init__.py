"""Rounds specs on real processes: the node process (`process`), the run driver with its round
barrier (`run`), replay of counterexamples (`replay`) and `lockstep run` (`command`)."""
