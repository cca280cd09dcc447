"""Checking rounds specs beyond one network: the sweep over every tree up to N nodes."""

FORCE_LIMIT = 12  # larger sweeps need --force (13 nodes: 1,301 trees; 16 nodes: 19,320)
