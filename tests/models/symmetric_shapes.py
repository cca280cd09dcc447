"""Symmetric ranges in every kind of slot, for the tests of symmetry reduction.

Processes P (process 0 fixed: only it announces) link to each other and post messages; two
interchangeable ballots Q elect leaders. Ids appear in nested maps keyed twice by processes, in
sets of records naming two processes, in options, in a sequence of union values, in a set inside a
record, as keys naming both ranges, and in sets with one process per element (one of them wider than a
word, with few elements that name processes).
"""

from lockstep.specs.lang import (
    And,
    Bool,
    ForAll,
    Int,
    Map,
    Not,
    Option,
    Param,
    Range,
    Record,
    Seq,
    Set,
    Spec,
    Union,
    Var,
    action,
    invariant,
    require,
)

N = Param("n", default=3, lo=2)
P = Range(N, symmetric=True, fixed=(0,))
Q = Range(2, symmetric=True)
Msg = Record("Msg", src=P, dst=P, v=Int(0, 1))
Tok = Record("Tok", owner=P)
Nil = Record("Nil")
Note = Union(Msg, Tok, Nil)
Group = Record("Group", members=Set(P))
Badge = Union(Record("Plain", k=Int(0, 63)), Tok)  # over 63 elements, few of which name a process


class Shapes(Spec):
    """Links, inboxes, ballots, a queue of notes and a sealed group, all symmetric in P (0 fixed) and Q."""

    links = Map(P, Map(P, Bool), init=False)
    inbox = Map(P, Set(Msg))
    leader = Map(Q, Option(P), init=None)
    votes = Map(P, Map(Q, Int(0, 1)), init=0)
    queue = Seq(Note, 2)
    tokens = Set(Tok)
    badges = Set(Badge)
    joined = Set(P)
    group = Var(Option(Group), init=None)
    rounds = Var(Int(0, 2), init=0)

    @action
    def link(s, a: P, b: P):
        require(a != b, a != 0, Not(s.links[a][b]))
        s.links[a][b] = True
        s.inbox[b] = s.inbox[b].add(Msg(a, b, 0))

    @action
    def announce(s, b: P):
        require(b != 0, Not(s.inbox[b].contains(Msg(0, b, 1))))
        s.inbox[b] = s.inbox[b].add(Msg(0, b, 1))

    @action
    def elect(s, q: Q, p: P):
        require(s.leader[q].is_none())
        s.leader[q] = p
        s.votes[p][q] = 1

    @action
    def post(s, a: P, b: P):
        require(s.links[a][b], s.queue.len() < 2)
        s.queue = s.queue.append(Msg(a, b, 1))

    @action
    def pass_token(s, p: P):
        require(s.rounds < 2, Not(s.tokens.contains(Tok(p))))
        s.tokens = s.tokens.add(Tok(p))
        s.badges = s.badges.add(Tok(p))
        s.rounds = s.rounds + 1

    @action
    def drain(s):
        require(Not(s.queue.is_empty()))
        s.queue = s.queue.tail()

    @action
    def join(s, p: P):
        require(s.group.is_none(), Not(s.joined.contains(p)))
        s.joined = s.joined.add(p)

    @action
    def seal(s, p: P, q: P):
        require(p < q, s.group.is_none(), s.joined.contains(p), s.joined.contains(q))
        s.group = Group(frozenset({p, q}))

    @invariant
    def one_leader_per_ballot_voted(s):
        """A process voted in a ballot only if it leads it."""
        return ForAll(P, Q, lambda p, q: Not(And(s.votes[p][q] == 1, s.leader[q] != p)))


class ShapesTwoWay(Shapes):
    """Seeded bug: an invariant that two processes never link both ways (false after two links)."""

    @invariant
    def one_way(s):
        """No two processes are linked in both directions."""
        return ForAll(P, P, lambda a, b: Not(And(s.links[a][b], s.links[b][a])))
