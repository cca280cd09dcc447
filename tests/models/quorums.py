"""TLA+'s `∃ q ∈ Quorums: ∀ a ∈ q: ...` as an action parameter over a declared set of values (`OneOf`),
and `∃ q ∈ Quorums, a ∈ q` as two parameters with a concrete membership test."""

from itertools import combinations

from lockstep.specs.lang import Enum, ForAll, Map, OneOf, Option, Range, Set, Spec, action, invariant, require

Acceptor = Range(3)
Quorum = OneOf(lambda: [frozenset(q) for q in combinations(range(3), 2)], name="Quorum")  # the majorities
Value = Enum("a", "b")


class Vote(Spec):
    """Acceptors vote once; a value voted by a whole quorum may be chosen."""

    votes = Map(Acceptor, Option(Value), init=None)
    chosen = Set(Value)
    promised = Set(Acceptor)

    @action
    def vote(s, a: Acceptor, v: Value):
        require(s.votes[a].is_none())
        s.votes[a] = v

    @action
    def choose(s, q: Quorum, v: Value):
        require(ForAll(q, lambda a: s.votes[a] == v))
        s.chosen = s.chosen.add(v)

    @action
    def promise(s, q: Quorum, a: Acceptor):
        require(a in q, s.chosen.is_empty())  # `a in q`: both are concrete while the action is traced
        s.promised = s.promised.add(a)

    @invariant
    def agreement(s):
        return s.chosen.card() <= 1


class VoteTwice(Vote):
    """Seeded bug: an acceptor may change its vote, so two values can be chosen."""

    @action
    def vote(s, a: Acceptor, v: Value):
        s.votes[a] = v
