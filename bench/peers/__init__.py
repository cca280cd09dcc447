"""The benchmark models written for other Python model checkers, in each one's own idiom."""
