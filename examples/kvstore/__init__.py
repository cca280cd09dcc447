"""A key-value store, its spec, and model-based tests of two implementations against the spec."""
