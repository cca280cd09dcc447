"""The abstract syntax of Datalog programs with aggregates, and the error type that points at a position.

A program is a list of rules, facts and declarations:

    .param source = 0.                       % a named constant, set per run with --param source=5
    .input edge(from, to, weight).           % an input relation (read from an edge-list file)
    sp(S, min<C>) <- source(S), C = 0.       % a rule; `:-` is accepted for `<-`
    sp(Y, min<C>) <- sp(X, C1), edge(X, Y, W), C = C1 + W.
    source($source).                         % a fact

Head arguments are variables, integers, parameters or one aggregate `min<V>`, `max<V>`, `count<V>`
or `sum<V>` (the last argument). Body literals are atoms, comparisons of arithmetic expressions
(`C = C1 + W`, `X != Y`, `N >= 2`) and negated atoms (`not p(X)`), which the analysis refuses.
Values are 64-bit integers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..lang.errors import SpecError

AGGREGATES = ("min", "max", "count", "sum")
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
ARITHMETIC = ("+", "-", "*")


@dataclass(frozen=True)
class Pos:
    """A position in a program's text (1-based line and column)."""

    line: int
    column: int


class DatalogError(SpecError):
    """A program that cannot be parsed or evaluated: the message names the file, line and column."""

    def __init__(self, message: str, pos: Pos | None = None, source: str | None = None, text: str | None = None,
                 hint: str | None = None):
        self.pos, self.source, self.text = pos, source, text
        where = ""
        if pos is not None:
            where = f"{source or '<program>'}:{pos.line}:{pos.column}: "
        elif source:
            where = f"{source}: "
        body = where + message
        if pos is not None and text is not None:
            lines = text.splitlines()
            if 0 < pos.line <= len(lines):
                line = lines[pos.line - 1]
                body += f"\n  {line}\n  {' ' * (pos.column - 1)}^"
        super().__init__(body, None, hint)


# ------------------------------------------------------------------------------------ terms


@dataclass(frozen=True)
class Var:
    name: str
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const:
    value: int
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class ParamRef:
    name: str
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return f"${self.name}"


@dataclass(frozen=True)
class Wildcard:
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True)
class BinOp:
    op: str  # one of ARITHMETIC
    left: Expr
    right: Expr
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class Neg:
    arg: Expr
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return f"-{self.arg}"


Term = Var | Const | ParamRef | Wildcard
Expr = Var | Const | ParamRef | BinOp | Neg


@dataclass(frozen=True)
class Aggregate:
    func: str  # one of AGGREGATES
    var: Var
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return f"{self.func}<{self.var}>"


# ---------------------------------------------------------------------------------- literals


@dataclass(frozen=True)
class Atom:
    pred: str
    args: tuple[Term, ...]
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return f"{self.pred}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Negated:
    atom: Atom
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return f"not {self.atom}"


@dataclass(frozen=True)
class Compare:
    op: str  # one of COMPARISONS
    left: Expr
    right: Expr
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


Literal = Atom | Negated | Compare


@dataclass(frozen=True)
class Head:
    pred: str
    args: tuple[Term, ...]  # the group-by arguments
    agg: Aggregate | None  # the aggregate, always the last argument
    pos: Pos = field(compare=False)

    @property
    def arity(self) -> int:
        return len(self.args) + (self.agg is not None)

    def __str__(self) -> str:
        parts = [str(a) for a in self.args] + ([str(self.agg)] if self.agg else [])
        return f"{self.pred}({', '.join(parts)})"


@dataclass(frozen=True)
class Rule:
    head: Head
    body: tuple[Literal, ...]
    pos: Pos = field(compare=False)

    @property
    def atoms(self) -> list[Atom]:
        return [lit for lit in self.body if isinstance(lit, Atom)]

    def __str__(self) -> str:
        return f"{self.head} <- {', '.join(map(str, self.body))}."


@dataclass(frozen=True)
class Fact:
    atom: Atom
    pos: Pos = field(compare=False)


@dataclass(frozen=True)
class Input:
    pred: str
    columns: tuple[str, ...]
    pos: Pos = field(compare=False)


@dataclass(frozen=True)
class ParamDecl:
    name: str
    default: int
    pos: Pos = field(compare=False)


@dataclass
class Program:
    """A parsed program (not yet analysed): its statements in order, and where it came from."""

    rules: list[Rule]
    facts: list[Fact]
    inputs: list[Input]
    params: list[ParamDecl]
    source: str | None = None
    text: str | None = None

    def error(self, message: str, pos: Pos | None, hint: str | None = None) -> DatalogError:
        return DatalogError(message, pos, self.source, self.text, hint)

    def __str__(self) -> str:
        return "\n".join(str(r) for r in self.rules)


def variables(e: Expr | Term) -> list[Var]:
    """The variables of an expression, left to right."""
    if isinstance(e, Var):
        return [e]
    if isinstance(e, BinOp):
        return variables(e.left) + variables(e.right)
    if isinstance(e, Neg):
        return variables(e.arg)
    return []
