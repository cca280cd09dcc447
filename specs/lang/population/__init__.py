"""The population model: anonymous agents in random pairwise interactions (`protocol`), and how
running agents apply a protocol's rules (`agents`)."""

from .protocol import ALL, Config, Population, predicate, start

__all__ = ["ALL", "Config", "Population", "predicate", "start"]
