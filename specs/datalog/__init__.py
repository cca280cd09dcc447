"""Datalog with aggregates in recursion: the language (grammar, analysis, reference semantics, the plans workers run),
the shipped programs, and the SSP protocol's specs. The evaluator that runs programs on real graphs is an engine:
`lockstep.checker.datalog`."""
