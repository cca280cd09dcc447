"""Counterexamples people can read: shortest ones after a reduced or depth-first search (`shorten`), minimised
simulation walks (`minimise`), and several distinct violations of one search (`several`). Each works on any
`Model` and on the results of either explicit engine."""

from .minimise import Minimised, minimise
from .several import Collector, numbered_file
from .shorten import Budget, Shortening, shorten
from .target import Target

__all__ = ["Budget", "Collector", "Minimised", "Shortening", "Target", "minimise", "numbered_file", "shorten"]
