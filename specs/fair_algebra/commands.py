"""Commands of the synchronous concurrent refinement algebra over a finite state space Σ = {0..n-1}.

A command is an immutable tree. `Step` is one atomic step, a program step π(r) or an environment
step ε(r) for a relation r ⊆ Σ×Σ; the derived commands (skip, chaos, fair parallel, ...) are
kept as their own nodes so that commands print as they were written, and are unfolded into
their definitions by `lockstep.specs.fair_algebra.semantics`.
"""

from __future__ import annotations

from dataclasses import dataclass

Relation = frozenset[tuple[int, int]]

PGM, ENV = "π", "ε"


def universal(n: int) -> Relation:
    """Σ×Σ."""
    return frozenset((a, b) for a in range(n) for b in range(n))


def identity(n: int) -> Relation:
    """{(σ, σ) | σ ∈ Σ}."""
    return frozenset((a, a) for a in range(n))


@dataclass(frozen=True)
class Command:
    """Base class of command trees."""

    def show(self) -> str:
        return _show(self, 0)

    def __str__(self) -> str:
        return self.show()


@dataclass(frozen=True)
class Const(Command):
    """A named constant: nil, ⊤ (magic), ⊥ (abort), skip, chaos, fair, term, α."""

    name: str


@dataclass(frozen=True)
class Step(Command):
    """One atomic step: π(r) (program) or ε(r) (environment), then terminate."""

    kind: str
    rel: Relation
    n: int  # the size of Σ, for printing the relation

    def show_rel(self) -> str:
        if self.rel == universal(self.n):
            return ""
        if self.rel == identity(self.n):
            return "(id)"
        return "({" + ", ".join(f"{a}->{b}" for a, b in sorted(self.rel)) + "})"


@dataclass(frozen=True)
class Binary(Command):
    """c op d for op in ; ⊓ ∥ ∥_f ⋒."""

    op: str
    left: Command
    right: Command


@dataclass(frozen=True)
class Iter(Command):
    """c*, c^ω or c^∞."""

    op: str
    body: Command


@dataclass(frozen=True)
class Var(Command):
    """A metavariable of a law (c, d, c0, ...), replaced by a command before checking."""

    name: str


SEQ, CHOICE, PAR, FAIR_PAR, CONJ = ";", "⊓", "∥", "∥_f", "⋒"
STAR, OMEGA, INF = "*", "^ω", "^∞"
PRECEDENCE = {CHOICE: 1, PAR: 2, FAIR_PAR: 2, CONJ: 2, SEQ: 3}


def _show(c: Command, outer: float) -> str:
    if isinstance(c, Const):
        return c.name
    if isinstance(c, Var):
        return c.name
    if isinstance(c, Step):
        return c.kind + c.show_rel()
    if isinstance(c, Iter):
        return _show(c.body, 4) + c.op
    assert isinstance(c, Binary)
    p = PRECEDENCE[c.op]
    sep = "; " if c.op == SEQ else f" {c.op} "
    inner = 3.5 if p == 2 else p  # a sequence inside ∥, ∥_f or ⋒ is bracketed, for the reader
    text = _show(c.left, inner) + sep + _show(c.right, max(inner, p + 1))
    return f"({text})" if p < outer else text


def substitute(c: Command, env: dict[str, Command]) -> Command:
    """`c` with each metavariable replaced by its command in `env`."""
    if isinstance(c, Var):
        return env[c.name]
    if isinstance(c, Binary):
        return Binary(c.op, substitute(c.left, env), substitute(c.right, env))
    if isinstance(c, Iter):
        return Iter(c.op, substitute(c.body, env))
    return c


def variables(c: Command) -> list[str]:
    """The metavariables of `c`, in order of first occurrence."""
    out: list[str] = []

    def walk(x: Command) -> None:
        if isinstance(x, Var) and x.name not in out:
            out.append(x.name)
        elif isinstance(x, Binary):
            walk(x.left)
            walk(x.right)
        elif isinstance(x, Iter):
            walk(x.body)

    walk(c)
    return out
