"""Rounds specs for the tests: flooding a token along a path, and a star where anyone may shout."""

import networkx as nx

from lockstep.specs.lang import And, Bool, If, Int, Not, Or, Range, Record, invariant
from lockstep.specs.lang.rounds import Local, RoundsSpec, broadcast, on_receive, on_start, on_transmit, terminated

Token = Record("Token", hops=Int(0, 7))
Hello = Record("Hello")


class Flood(RoundsSpec):
    """The initiator broadcasts a token; a node that receives it passes it on once, counting hops."""

    Node = Range("n", default=4)
    Message = Token
    has = Local(Bool, init=False)
    sent = Local(Bool, init=False)
    hops = Local(Int(0, 7), init=0)

    @staticmethod
    def graph(params):
        return nx.path_graph(params["n"])

    @on_start
    def start(p, initiator):
        p.has = initiator

    @on_transmit
    def transmit(p):
        broadcast(Token(hops=p.hops), when=And(p.has, Not(p.sent)))
        p.sent = p.has

    @on_receive
    def receive(p, m):
        p.hops = If(And(Not(p.has), m.is_some()), m.get().hops + 1, p.hops)
        p.has = Or(p.has, m.is_some())

    @terminated
    def done(p):
        return p.sent

    @invariant
    def no_collision(s):
        return s.collisions.is_empty()


class Shout(RoundsSpec):
    """Any non-empty set of nodes starts; in round 1 a starter shouts and any other node may (a choice)."""

    Node = Range("n", default=4)
    Message = Hello
    starters = "any"
    spoke = Local(Bool, init=False)
    heard = Local(Bool, init=False)
    rounds = Local(Int(0, 1), init=0)

    @staticmethod
    def graph(params):
        return nx.star_graph(params["n"] - 1)

    @on_start
    def start(p, initiator):
        p.spoke = initiator

    @on_transmit
    def transmit(p, talk: Bool):
        broadcast(Hello(), when=And(p.rounds == 0, Or(p.spoke, talk)))

    @on_receive
    def receive(p, m):
        p.heard = Or(p.heard, m.is_some())
        p.rounds = 1

    @terminated
    def done(p):
        return p.rounds == 1

    @invariant
    def no_collision(s):
        return s.collisions.is_empty()

    @invariant
    def no_conflict(s):
        return s.conflicts.is_empty()


class Pick(RoundsSpec):
    """On a path of three, the initiator speaks once; a node that hears it picks a value (a receive choice)."""

    Node = Range("n", default=3)
    Message = Hello
    has = Local(Bool, init=False)
    sent = Local(Bool, init=False)
    val = Local(Int(0, 1), init=0)

    @staticmethod
    def graph(params):
        return nx.path_graph(params["n"])

    @on_start
    def start(p, initiator):
        p.has = initiator

    @on_transmit
    def transmit(p):
        broadcast(Hello(), when=And(p.has, Not(p.sent)))
        p.sent = p.has

    @on_receive
    def receive(p, m, pick: Int(0, 1)):
        p.val = If(m.is_some(), pick, p.val)
        p.has = Or(p.has, m.is_some())

    @terminated
    def done(p):
        return p.sent

    @invariant
    def ends_differ(s):
        return Not(And(s.val[0] == 1, s.val[2] == 1))
