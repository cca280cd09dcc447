"""Probabilistic engines for population protocols: the exact Markov chain over configurations
(`dtmc`, `analysis`, `exact`), a batched simulator exact in distribution (`batched`) and
statistical model checking with stated confidence (`smc`)."""
