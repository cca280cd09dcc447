"""State-space reductions that engines apply while they search: partial-order reduction for
actor specs (`actors`)."""
