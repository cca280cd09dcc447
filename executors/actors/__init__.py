"""Actor specs on real processes: the process (`process`), its compiled handlers (`handlers`), the
run driver (`run`), replay of counterexamples (`replay`) and `lockstep run` (`command`)."""
