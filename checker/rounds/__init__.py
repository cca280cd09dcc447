"""Checking rounds specs beyond one network: the sweep over every tree up to N nodes."""
