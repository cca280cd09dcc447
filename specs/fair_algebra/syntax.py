"""The textual syntax of commands, parsed with lark; an error points at its column.

    c ::= nil | skip | chaos | fair | term | ⊤ (top, magic) | ⊥ (bot, abort) | α (alpha)
        | π | ε | π(r) | ε(r)                  (pi, eps; π alone is π(Σ×Σ))
        | c* | c^ω | c^∞                       (c^*, c^w, c^inf)
        | c ; d | c ⊓ d | c ∥ d | c ∥_f d | c ⋒ d   (|~|, ||, ||_f, /\\)
        | ( c )
    r ::= id | all | none | {0->1, 1->1} | -r   (complement in Σ×Σ)

Binding, loosest first: ⊓, then ∥ ∥_f ⋒ (left to right), then ;, then the postfix iterations.
States are 0..n-1 for the `n` given to `parse`. Laws use metavariables (c, d, e, c0, ...),
allowed only when `variables` names them.
"""

from __future__ import annotations

from lark import Lark, Token, Transformer, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, v_args

from ..lang.errors import SpecError
from .commands import (
    CHOICE,
    CONJ,
    ENV,
    FAIR_PAR,
    INF,
    OMEGA,
    PAR,
    PGM,
    SEQ,
    STAR,
    Binary,
    Command,
    Const,
    Iter,
    Step,
    Var,
    identity,
    universal,
)
from .semantics import CONSTANT_NAMES

GRAMMAR = r"""
?start: choice
?choice: par | choice CHOICE par   -> binary
?par: seq | par PAROP seq          -> binary
?seq: post | seq SEQ post          -> binary
?post: prim | post ITER            -> iterate
?prim: NAME                        -> name
     | NAME "(" rel ")"            -> step
     | "(" choice ")"
?rel: NAME                         -> rel_name
    | "{" [pair ("," pair)*] "}"   -> rel_set
    | "-" rel                      -> rel_not
pair: INT ARROW INT
CHOICE: "⊓" | "|~|"
PAROP: "∥_f" | "||_f" | "∥" | "||" | "⋒" | "/\\"
SEQ: ";"
ITER: "*" | "^*" | "^ω" | "^w" | "^∞" | "^inf"
ARROW: "->" | "→" | ">"
NAME: /[^\W\d_][\w]*/ | "⊤" | "⊥"
%import common.INT
%import common.WS
%ignore WS
"""

_PARSER = Lark(GRAMMAR, parser="lalr", propagate_positions=True)

OPS = {"⊓": CHOICE, "|~|": CHOICE, "∥": PAR, "||": PAR, "∥_f": FAIR_PAR, "||_f": FAIR_PAR, "⋒": CONJ, "/\\": CONJ,
       ";": SEQ}
ITERS = {"*": STAR, "^*": STAR, "^ω": OMEGA, "^w": OMEGA, "^∞": INF, "^inf": INF}
STEPS = {"π": PGM, "pi": PGM, "ε": ENV, "eps": ENV}


class AlgebraError(SpecError):
    """A command text that does not parse or names something that does not exist."""


def _error(text: str, column: int, message: str, hint: str | None = None) -> AlgebraError:
    caret = " " * (column - 1) + "^"
    return AlgebraError(f"column {column}: {message}\n  {text}\n  {caret}", None, hint)


@v_args(meta=True)
class _Build(Transformer):
    def __init__(self, text: str, n: int, variables: frozenset[str]):
        super().__init__()
        self.text, self.n, self.variables = text, n, variables

    def binary(self, meta, items):
        left, op, right = items
        return Binary(OPS[str(op)], left, right)

    def iterate(self, meta, items):
        body, op = items
        return Iter(ITERS[str(op)], body)

    def name(self, meta, items):
        (tok,) = items
        word = str(tok)
        if word in STEPS:
            return Step(STEPS[word], universal(self.n), self.n)
        if word in CONSTANT_NAMES:
            return Const({"top": "⊤", "bot": "⊥", "alpha": "α"}.get(CONSTANT_NAMES[word], CONSTANT_NAMES[word]))
        if word in self.variables:
            return Var(word)
        known = "nil, skip, chaos, fair, term, top (⊤), bot (⊥), alpha (α), pi (π), eps (ε)"
        raise _error(self.text, tok.column, f"unknown command {word!r}", f"commands are {known}")

    def step(self, meta, items):
        tok, rel = items
        word = str(tok)
        if word not in STEPS:
            raise _error(self.text, tok.column, f"{word!r} takes no relation", "only π(r) and ε(r) take one")
        return Step(STEPS[word], frozenset(rel), self.n)

    def rel_name(self, meta, items):
        (tok,) = items
        rels = {"id": identity(self.n), "all": universal(self.n), "none": frozenset()}
        if str(tok) not in rels:
            raise _error(self.text, tok.column, f"unknown relation {str(tok)!r}",
                         "write id, all, none, a set such as {0->1, 1->0}, or -r for a complement")
        return rels[str(tok)]

    def rel_set(self, meta, items):
        return frozenset(p for p in items if p is not None)

    def rel_not(self, meta, items):
        (rel,) = items
        return universal(self.n) - rel

    def pair(self, meta, items):
        a, _, b = items
        for tok in (a, b):
            if int(tok) >= self.n:
                raise _error(self.text, tok.column, f"state {int(tok)} is outside Σ = {{0..{self.n - 1}}}",
                             f"use states below {self.n}, or a larger Σ (--states {int(tok) + 1})")
        return (int(a), int(b))


def parse(text: str, n: int = 2, variables: frozenset[str] | set[str] = frozenset()) -> Command:
    """The command written in `text`, over Σ = {0..n-1}."""
    if n < 1:
        raise AlgebraError(f"Σ must have at least one state, not {n}")
    try:
        tree = _PARSER.parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(text, e) from None
    try:
        return _Build(text, n, frozenset(variables)).transform(tree)
    except Exception as e:  # lark wraps errors raised inside the transformer
        inner = getattr(e, "orig_exc", e)
        if isinstance(inner, AlgebraError):
            raise inner from None
        raise


def _syntax_error(text: str, e: UnexpectedInput) -> AlgebraError:
    column = getattr(e, "column", None)
    if isinstance(e, UnexpectedEOF) or column is None or column < 1:
        return _error(text, len(text) + 1, "the command ends too early", "close every parenthesis and operator")
    if isinstance(e, UnexpectedCharacters):
        return _error(text, column, f"unexpected character {text[column - 1]!r}")
    assert isinstance(e, UnexpectedToken)
    tok: Token = e.token
    if tok.type == "$END":
        return _error(text, len(text) + 1, "the command ends too early", "close every parenthesis and operator")
    expected = sorted(_describe(x) for x in e.expected)
    return _error(text, column, f"unexpected {str(tok)!r}; expected " + ", ".join(dict.fromkeys(expected)))


def _describe(terminal: str) -> str:
    return {"NAME": "a command", "LPAR": "'('", "RPAR": "')'", "CHOICE": "'⊓'", "PAROP": "'∥', '∥_f' or '⋒'",
            "SEQ": "';'", "ITER": "an iteration (*, ^ω, ^∞)", "INT": "a state", "ARROW": "'->'", "COMMA": "','",
            "RBRACE": "'}'", "LBRACE": "'{'", "MINUS": "'-'"}.get(terminal, terminal)
