"""Reference specs checked against published results (TLC's counts, known counterexamples)."""
