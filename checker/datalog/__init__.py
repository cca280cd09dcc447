"""Engines for Datalog programs: PreM proofs (z3) and evaluation with the proofs' verdicts."""
