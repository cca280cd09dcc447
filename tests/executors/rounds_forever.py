"""A rounds spec whose run goes on until it is stopped (for the interruption tests; kept out of tests/models, whose
specs every engine explores): two nodes, one beating every round, neither ever terminating."""

import networkx as nx

from lockstep.specs.lang import If, Int, Not, Range, Record
from lockstep.specs.lang.rounds import Local, RoundsSpec, broadcast, on_receive, on_start, on_transmit, terminated

Beat = Record("Beat")


class Ticker(RoundsSpec):
    """The initiator broadcasts a beat every round; a node that hears one flips a bit; no node ever terminates."""

    Node = Range("n", default=2)
    Message = Beat
    bit = Local(Int(0, 1), init=0)
    beats = Local(Int(0, 1), init=0)

    @staticmethod
    def graph(params):
        return nx.path_graph(params["n"])

    @classmethod
    def max_rounds(cls, graph, params):
        return 1_000_000

    @on_start
    def start(p, initiator):
        p.beats = If(initiator, 1, 0)

    @on_transmit
    def transmit(p):
        broadcast(Beat(), when=p.beats == 1)

    @on_receive
    def receive(p, m):
        p.bit = If(m.is_some(), 1 - p.bit, p.bit)

    @terminated
    def done(p):
        return Not(p.beats == p.beats)
