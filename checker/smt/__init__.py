"""The symbolic engine: specs as z3 formulas — bounded model checking, k-induction, conformance."""
