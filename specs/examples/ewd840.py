"""Termination detection in a ring (Dijkstra, Feijen, van Gasteren, EWD 840), as in the TLA+ Examples.

Source: github.com/tlaplus/Examples, specifications/ewd840/EWD840.tla (Stephan Merz). Nodes
0..N-1 form a ring; a token travels from node N-1 down to node 0. Active nodes may activate
others (a message to a higher-numbered node blackens the sender) or become passive. Node 0
detects termination when it holds a white token, is white and is passive. With N = 3 there are
302 distinct reachable states, as TLC reports (check with deadlock checking off: the state
where termination is detected has no successor). Lockstep counts 1,817 generated states and
depth 9 (an independent tuple BFS agrees); the Examples manifest lists 2,001 and 10 for a run
whose configuration it does not record. With N = 4: 1,566 distinct states and depth 12, as the
manifest's JSON model.

Properties, with the TLA+ names: `TerminationDetection` and `Inv` (Dijkstra's invariant) are
invariants; `Liveness`, (∀ i: ¬active[i]) ↝ terminationDetected, holds under the spec's
fairness WF_vars(System), where System is InitiateProbe ∨ ∃ i ≠ 0: PassToken(i) — the family
`system` below. Without that fairness (`--fairness system=none`) the token may stop moving and
`Liveness` fails. `EWD840Unstained` is a seeded bug: a black node passes the token on without
staining it, and `Inv` and `TerminationDetection` fail.

Deviations: none. `TypeOK` is implied by the declared types and so is not restated; N is the
parameter `n` (3 by default). `SendMsg(i)` with its `∃ j` becomes the action `send_msg(i, j)`.
"""

from ..lang import (
    ANY,
    And,
    Bool,
    Enum,
    Exists,
    ForAll,
    If,
    Implies,
    Map,
    Not,
    Or,
    Range,
    Spec,
    Var,
    action,
    invariant,
    leads_to,
    require,
    temporal,
)

Node = Range("n", default=3)
Color = Enum("white", "black")


def termination_detected(s):
    """Node 0 holds a white token, is white and is passive."""
    return And(s.tpos == 0, s.tcolor == "white", s.color[0] == "white", Not(s.active[0]))


class EWD840(Spec):
    """EWD 840: termination detection on a token ring; Liveness holds under WF(System)."""

    active = Map(Node, Bool, init=ANY)
    color = Map(Node, Color, init=ANY)
    tpos = Var(Node, init=ANY)
    tcolor = Var(Color, init="black")

    @action(fairness="weak", family="system")
    def initiate_probe(s):
        require(s.tpos == 0, Or(s.tcolor == "black", s.color[0] == "black"))
        s.tpos = s.n - 1
        s.tcolor = "white"
        s.color[0] = "white"

    @action(fairness="weak", family="system")
    def pass_token(s, i: Node):
        require(i != 0, s.tpos == i, Or(Not(s.active[i]), s.color[i] == "black", s.tcolor == "black"))
        s.tpos = i - 1
        s.tcolor = If(s.color[i] == "black", "black", s.tcolor)
        s.color[i] = "white"

    @action
    def send_msg(s, i: Node, j: Node):
        require(i != j, s.active[i])
        s.active[j] = True
        if j > i:
            s.color[i] = "black"

    @action
    def deactivate(s, i: Node):
        require(s.active[i])
        s.active[i] = False

    @invariant
    def TerminationDetection(s):
        return Implies(termination_detected(s), ForAll(Node, lambda i: Not(s.active[i])))

    @invariant
    def Inv(s):
        return Or(ForAll(Node, lambda i: Implies(s.tpos < i, Not(s.active[i]))),
                  Exists(Node, lambda j: And(j <= s.tpos, s.color[j] == "black")),
                  s.tcolor == "black")

    @temporal
    def Liveness(s):
        return leads_to(ForAll(Node, lambda i: Not(s.active[i])), termination_detected(s))


class EWD840Unstained(EWD840):
    """Seeded bug: a black node passes the token without staining it (Inv fails)."""

    @action(fairness="weak", family="system")
    def pass_token(s, i: Node):
        require(i != 0, s.tpos == i, Or(Not(s.active[i]), s.color[i] == "black", s.tcolor == "black"))
        s.tpos = i - 1
        s.color[i] = "white"
