"""Engines for Datalog programs: the semi-naive evaluator (numpy, with compiled passes), PreM proofs (z3), evaluation
with the proofs' verdicts, the plans workers run bound to a graph, and termination of the SSP specs."""
