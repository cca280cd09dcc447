"""Operational semantics of commands: a labelled transition system with Büchi acceptance.

A configuration is a term and the current state σ ∈ Σ. From it the term can

- terminate (✓), abort (↯), or
- take a step (k, σ') with k ∈ {π, ε}, to a new term, marked accepting or not.

A trace is read off a path: the initial state, then one (k, σ') per step, then ✓ or ↯ if
the path ends that way; every finite path is also a trace (an incomplete one: the semantic
model keeps feasible prefixes, so π;⊤ ≠ ⊤). An infinite path is a trace of the command iff it
takes infinitely many accepting steps. Terms are interned as ints and normalised
(nil;c = c, ⊤;c = ⊤, ⊥;c = ⊥, ; associated to the right), so every command has finitely
many reachable terms. The rules, with the algebraic definition each one implements:

    π(r), ε(r)   one step in r, then nil                      atomic steps
    c;d          c's steps; once c ✓, d's steps, ✓ and ↯       sequential composition
    c ⊓ d        the steps, ✓ and ↯ of either                  choice (trace union)
    c^ω          each step of c starts an iteration and is accepting; ✓ always;
                 ↯ if c ✓ (nil^ω = ⊥: an unguarded loop is the least fixed point, abort)
    c*           like c^ω, but a run that iterates for ever is rejected: at each iteration
                 the run guesses whether it is the last one; earlier iterations are muted
                 (none of their steps accepts), so acceptance is Fin(restart) ∧ Acc(c)
    c^∞          c^ω;⊤ (infinite iteration never terminates)
    c ∥ d        lock-step: π∥ε = ε∥π = π, ε∥ε = ε, π∥π has no step; relations intersect
                 (the next state agrees); ✓ iff both ✓; ↯ iff either ↯ (⊥ ∥ c = ⊥)
    c ⋒ d        lock-step on steps of the same kind; ✓ iff both; ↯ iff either
    fair         any step, for ever or until it stops; ✓ always; π steps accept
                 (= ε*;(π;ε*)^ω: infinite traces must have infinitely many π steps)

Products accept when both sides accept infinitely often (generalised Büchi, made plain
Büchi with a phase bit: wait for the left side, then for the right).
"""

from __future__ import annotations

from typing import Any

from .commands import CHOICE, CONJ, ENV, FAIR_PAR, INF, OMEGA, PAR, PGM, SEQ, STAR, Binary, Command, Const, Iter, Step, Var
from .commands import universal as universal_rel

Letter = tuple[str, int]  # ("init", σ0) first, then (π or ε, σ')
Config = tuple[int, int]  # (term id, state)

CONSTANT_NAMES = {
    "nil": "nil", "skip": "skip", "chaos": "chaos", "fair": "fair", "term": "term",
    "top": "top", "magic": "top", "⊤": "top", "bot": "bot", "abort": "bot", "⊥": "bot", "alpha": "alpha", "α": "alpha",
}


class Semantics:
    """Interned terms over Σ = {0..n-1} and their transition relation (memoised)."""

    def __init__(self, n: int):
        self.n = n
        self.nodes: list[tuple] = []
        self.ids: dict[tuple, int] = {}
        self._done: dict[int, bool] = {}
        self._aborts: dict[int, bool] = {}
        self._steps: dict[Config, list[tuple[str, int, int, bool]]] = {}
        self.NIL, self.TOP, self.BOT, self.FAIR = (self._mk((x,)) for x in ("nil", "top", "bot", "fair"))
        univ = universal_rel(n)
        self.PI, self.EPS = self._mk(("atom", PGM, univ)), self._mk(("atom", ENV, univ))
        self.ALPHA = self._mk(("choice", self.PI, self.EPS))
        self.SKIP = self.omega(self.EPS)

    # -- construction ------------------------------------------------------------------------
    def _mk(self, node: tuple) -> int:
        i = self.ids.get(node)
        if i is None:
            i = self.ids[node] = len(self.nodes)
            self.nodes.append(node)
        return i

    def seq(self, a: int, b: int) -> int:
        tag = self.nodes[a][0]
        if tag == "nil":
            return b
        if tag in ("top", "bot"):
            return a
        if tag == "seq":
            _, x, y = self.nodes[a]
            return self.seq(x, self.seq(y, b))
        if self.nodes[b][0] == "nil":
            return a
        return self._mk(("seq", a, b))

    def choice(self, a: int, b: int) -> int:
        if a == b or self.nodes[b][0] == "top":
            return a
        if self.nodes[a][0] == "top":
            return b
        return self._mk(("choice", a, b))

    def omega(self, c: int) -> int:
        return self._mk(("omega", c))

    def star(self, c: int) -> int:
        return self._mk(("star", c))

    def mute(self, c: int) -> int:
        if self.nodes[c][0] in ("nil", "top", "bot", "atom", "mute"):
            return c
        return self._mk(("mute", c))

    def sync(self, op: str, a: int, b: int, phase: int = 0) -> int:
        return self._mk((op, a, b, phase))

    def compile(self, c: Command) -> int:
        """The term of a command (derived commands unfolded into their definitions)."""
        if isinstance(c, Const):
            name = CONSTANT_NAMES[c.name]
            if name == "term":  # α*;ε^ω: finitely many steps of any kind, then only the environment's
                return self.seq(self.star(self.ALPHA), self.SKIP)
            if name == "chaos":  # α^ω
                return self.omega(self.ALPHA)
            return {"nil": self.NIL, "top": self.TOP, "bot": self.BOT, "fair": self.FAIR, "skip": self.SKIP,
                    "alpha": self.ALPHA}[name]
        if isinstance(c, Step):
            return self._mk(("atom", c.kind, c.rel))
        if isinstance(c, Iter):
            body = self.compile(c.body)
            if c.op == STAR:
                return self.star(body)
            if c.op == OMEGA:
                return self.omega(body)
            assert c.op == INF
            return self.seq(self.omega(body), self.TOP)
        if isinstance(c, Var):
            raise ValueError(f"the metavariable {c.name} has no value")
        assert isinstance(c, Binary)
        a, b = self.compile(c.left), self.compile(c.right)
        if c.op == SEQ:
            return self.seq(a, b)
        if c.op == CHOICE:
            return self.choice(a, b)
        if c.op == PAR:
            return self.sync("par", a, b)
        if c.op == CONJ:
            return self.sync("conj", a, b)
        assert c.op == FAIR_PAR  # c ∥_f d = ((c ⋒ fair);skip) ∥ ((d ⋒ fair);skip)
        return self.sync("par", self.seq(self.sync("conj", a, self.FAIR), self.SKIP),
                         self.seq(self.sync("conj", b, self.FAIR), self.SKIP))

    # -- behaviour ---------------------------------------------------------------------------
    def done(self, t: int) -> bool:
        """Whether t can terminate now (✓)."""
        r = self._done.get(t)
        if r is None:
            node = self.nodes[t]
            tag = node[0]
            if tag in ("nil", "fair", "star", "omega"):
                r = True
            elif tag in ("top", "bot", "atom"):
                r = False
            elif tag == "seq" or tag in ("par", "conj"):
                r = self.done(node[1]) and self.done(node[2])
            elif tag == "choice":
                r = self.done(node[1]) or self.done(node[2])
            else:  # mute
                r = self.done(node[1])
            self._done[t] = r
        return r

    def aborts(self, t: int) -> bool:
        """Whether t can abort now (↯)."""
        r = self._aborts.get(t)
        if r is None:
            node = self.nodes[t]
            tag = node[0]
            if tag == "bot":
                r = True
            elif tag in ("nil", "top", "atom", "fair"):
                r = False
            elif tag == "seq":
                r = self.aborts(node[1]) or (self.done(node[1]) and self.aborts(node[2]))
            elif tag in ("choice", "par", "conj"):
                r = self.aborts(node[1]) or self.aborts(node[2])
            elif tag == "omega":
                r = self.done(node[1]) or self.aborts(node[1])
            else:  # star, mute
                r = self.aborts(node[1])
            self._aborts[t] = r
        return r

    def steps(self, t: int, s: int) -> list[tuple[str, int, int, bool]]:
        """(kind, next state, next term, accepting) for every step of term t from state s."""
        key = (t, s)
        r = self._steps.get(key)
        if r is None:
            r = self._steps[key] = self._compute_steps(t, s)
        return r

    def _compute_steps(self, t: int, s: int) -> list[tuple[str, int, int, bool]]:
        node = self.nodes[t]
        tag = node[0]
        if tag in ("nil", "top", "bot"):
            return []
        if tag == "atom":
            _, kind, rel = node
            return [(kind, b, self.NIL, False) for b in range(self.n) if (s, b) in rel]
        if tag == "fair":
            return [(k, b, t, k == PGM) for k in (PGM, ENV) for b in range(self.n)]
        if tag == "seq":
            _, a, b = node
            out = [(k, s2, self.seq(a2, b), m) for k, s2, a2, m in self.steps(a, s)]
            if self.done(a):
                out += self.steps(b, s)
            return out
        if tag == "choice":
            return _unique(self.steps(node[1], s) + self.steps(node[2], s))
        if tag == "omega":
            return [(k, s2, self.seq(c2, t), True) for k, s2, c2, _ in self.steps(node[1], s)]
        if tag == "star":
            out = []
            for k, s2, c2, m in self.steps(node[1], s):
                out.append((k, s2, self.seq(self.mute(c2), t), False))  # not the last iteration
                out.append((k, s2, c2, m))  # the last iteration
            return _unique(out)
        if tag == "mute":
            return _unique([(k, s2, self.mute(c2), False) for k, s2, c2, _ in self.steps(node[1], s)])
        op, a, b, phase = node
        out = []
        right = self.steps(b, s)
        for k1, s1, a2, m1 in self.steps(a, s):
            for k2, s2, b2, m2 in right:
                if s1 != s2:
                    continue
                if op == "par":
                    if k1 == PGM and k2 == PGM:
                        continue
                    kind = PGM if PGM in (k1, k2) else ENV
                elif k1 != k2:
                    continue
                else:
                    kind = k1
                ph, acc = phase, False
                if ph == 0 and m1:
                    ph = 1
                if ph == 1 and m2:
                    ph, acc = 0, True
                out.append((kind, s1, self.sync(op, a2, b2, ph), acc))
        return _unique(out)


def _unique(steps: list) -> list:
    return list(dict.fromkeys(steps))


class CommandAutomaton:
    """A command as an automaton over letters ("init", σ0), (k, σ'): what refinement checking reads."""

    def __init__(self, sem: Semantics, command: Command):
        self.sem = sem
        self.command = command
        self.root = sem.compile(command)

    def initial(self) -> list[tuple[Letter, Config]]:
        return [(("init", s), (self.root, s)) for s in range(self.sem.n)]

    def steps(self, config: Config) -> list[tuple[Letter, Config, bool]]:
        t, s = config
        return [((k, s2), (t2, s2), m) for k, s2, t2, m in self.sem.steps(t, s)]

    def done(self, config: Config) -> bool:
        return self.sem.done(config[0])

    def aborts(self, config: Config) -> bool:
        return self.sem.aborts(config[0])

    def describe(self, config: Any) -> str:
        return f"{self.command.show()} at state {config[1]}"
