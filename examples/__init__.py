"""Examples of Lockstep used as a library (each is also run by the test suite)."""
