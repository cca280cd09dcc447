"""The lark grammar of Datalog programs with aggregates; a syntax error names its line and column."""

from __future__ import annotations

from lark import Lark, Token, Transformer, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, v_args

from .syntax import (
    Aggregate,
    Atom,
    BinOp,
    Compare,
    Const,
    DatalogError,
    Fact,
    Head,
    Input,
    Neg,
    Negated,
    ParamDecl,
    ParamRef,
    Pos,
    Program,
    Rule,
    Var,
    Wildcard,
)

GRAMMAR = r"""
start: statement*
?statement: rule | fact | input | param
rule: atom IMPLIES body "."
fact: atom "."
input: ".input" NAME "(" [NAME ("," NAME)*] ")" "."
param: ".param" NAME "=" signed "."
aggregate: AGG "<" VAR ">"
body: literal ("," literal)*
?literal: atom | negated | compare
negated: NOT atom
compare: expr CMP expr
atom: NAME "(" [arg ("," arg)*] ")"
?arg: term | aggregate
?term: VAR -> var
     | WILDCARD -> wildcard
     | signed -> const
     | PARAM -> param_ref
?expr: product | expr ADD product -> binop
?product: unary | product MUL unary -> binop
?unary: primary | "-" unary -> neg
?primary: VAR -> var
        | INT -> const
        | PARAM -> param_ref
        | "(" expr ")"
signed: INT | "-" INT
IMPLIES: "<-" | ":-"
NOT.2: /not\b/ | "~" | "!"
AGG.2: /(min|max|count|sum)(?=\s*<)/
CMP: "!=" | "<=" | ">=" | "==" | "=" | "<" | ">"
ADD: "+" | "-"
MUL: "*"
NAME: /[a-z][A-Za-z0-9_]*/
VAR: /[A-Z][A-Za-z0-9_]*/ | /_[A-Za-z0-9_]+/
WILDCARD: "_"
PARAM: /\$[A-Za-z_][A-Za-z0-9_]*/
COMMENT: /%[^\n]*/ | /\/\/[^\n]*/
%import common.INT
%import common.WS
%ignore WS
%ignore COMMENT
"""

_PARSER = Lark(GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=False)

# What each terminal means to a person reading the error.
TERMINALS = {
    "IMPLIES": "'<-'", "DOT": "'.'", "COMMA": "','", "LPAR": "'('", "RPAR": "')'", "NAME": "a predicate name",
    "VAR": "a variable", "INT": "an integer", "WILDCARD": "'_'", "PARAM": "a $parameter", "CMP": "a comparison",
    "ADD": "'+' or '-'", "MUL": "'*'", "AGG": "an aggregate (min, max, count, sum)", "LESSTHAN": "'<'",
    "MORETHAN": "'>'", "NOT": "'not'", "MINUS": "'-'", "EQUAL": "'='", "$END": "the end of the program",
    "__ANON_0": "'.input'", "__ANON_1": "'.param'",
}


def _pos(meta_or_token) -> Pos:
    return Pos(meta_or_token.line, meta_or_token.column)


@v_args(meta=True)
class _Build(Transformer):
    def __init__(self, program: Program):
        super().__init__()
        self.program = program

    def start(self, meta, items):
        return items

    def var(self, meta, items):
        t = items[0]
        return Var(str(t), _pos(t))

    def wildcard(self, meta, items):
        return Wildcard(_pos(items[0]))

    def signed(self, meta, items):
        return int(items[-1]) * (-1 if len(items) == 1 and str(items[0]).startswith("-") else 1) \
            if len(items) == 1 else -int(items[-1])

    def const(self, meta, items):
        v = items[0]
        if isinstance(v, Token):
            return Const(int(v), _pos(v))
        return Const(v, _pos(meta))

    def param_ref(self, meta, items):
        t = items[0]
        return ParamRef(str(t)[1:], _pos(t))

    def binop(self, meta, items):
        left, op, right = items
        return BinOp(str(op), left, right, _pos(op))

    def neg(self, meta, items):
        return Neg(items[0], _pos(meta))

    def aggregate(self, meta, items):
        func, var = items
        return Aggregate(str(func), Var(str(var), _pos(var)), _pos(func))

    def atom(self, meta, items):
        name, *args = items
        return Atom(str(name), tuple(args), _pos(name))  # aggregates are checked where the atom is used

    def _plain(self, atom: Atom, where: str) -> Atom:
        for a in atom.args:
            if isinstance(a, Aggregate):
                raise self.program.error(f"an aggregate can only appear in the head of a rule, not in {where}", a.pos,
                                         "aggregate in the head: p(X, min<C>) <- ...")
        return atom

    def negated(self, meta, items):
        return Negated(self._plain(items[1], "a body"), _pos(items[0]))

    def compare(self, meta, items):
        left, op, right = items
        o = "=" if str(op) == "==" else str(op)
        return Compare(o, left, right, _pos(op))

    def _head(self, atom: Atom) -> Head:
        name, args = atom.pred, list(atom.args)
        aggs = [i for i, a in enumerate(args) if isinstance(a, Aggregate)]
        if len(aggs) > 1:
            raise self.program.error("a head has at most one aggregate", args[aggs[1]].pos,
                                     "group by the other arguments and aggregate one")
        if aggs and aggs[0] != len(args) - 1:
            raise self.program.error("the aggregate must be the last argument of the head", args[aggs[0]].pos,
                                     f"write {name}(..., {args[aggs[0]]})")
        agg = args.pop() if aggs else None
        return Head(name, tuple(args), agg, atom.pos)

    def body(self, meta, items):
        return tuple(self._plain(i, "a body") if isinstance(i, Atom) else i for i in items)

    def rule(self, meta, items):
        atom, _, body = items
        head = self._head(atom)
        return Rule(head, body, head.pos)

    def fact(self, meta, items):
        atom = self._plain(items[0], "a fact")
        return Fact(atom, atom.pos)

    def input(self, meta, items):
        name, *cols = items
        return Input(str(name), tuple(str(c) for c in cols), _pos(name))

    def param(self, meta, items):
        name, value = items
        return ParamDecl(str(name), value, _pos(name))


def parse(text: str, source: str | None = None) -> Program:
    """Parse a program's text (DatalogError with line and column if it is malformed)."""
    program = Program([], [], [], [], source, text)
    try:
        tree = _PARSER.parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(e, program) from None
    try:
        statements = _Build(program).transform(tree)
    except Exception as e:  # lark wraps errors raised inside the transformer
        inner = getattr(e, "orig_exc", e)
        if isinstance(inner, DatalogError):
            raise inner from None
        raise
    for s in statements:
        {Rule: program.rules, Fact: program.facts, Input: program.inputs, ParamDecl: program.params}[type(s)].append(s)
    return program


def _syntax_error(e: UnexpectedInput, program: Program) -> DatalogError:
    pos = Pos(getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1)
    if isinstance(e, UnexpectedCharacters):
        ch = program.text[e.pos_in_stream] if program.text and e.pos_in_stream < len(program.text) else "?"
        return program.error(f"unexpected character {ch!r}", pos, _hint(ch))
    if isinstance(e, UnexpectedEOF):
        lines = (program.text or "").splitlines() or [""]
        pos = Pos(len(lines), len(lines[-1]) + 1)
        return program.error("the program ends in the middle of a statement", pos, "end every rule and fact with '.'")
    assert isinstance(e, UnexpectedToken)
    tok = e.token
    got = "the end of the program" if tok.type == "$END" else repr(str(tok))
    expected = sorted({TERMINALS.get(t, repr(t)) for t in e.expected if not t.startswith("__ANON") or t in TERMINALS})
    if tok.type == "$END":
        lines = (program.text or "").splitlines() or [""]
        pos = Pos(len(lines), len(lines[-1]) + 1)
    msg = f"unexpected {got}; expected {', '.join(expected[:6])}" + (" or ..." if len(expected) > 6 else "")
    if tok.type == "$END":
        msg = f"the program ends in the middle of a statement; expected {', '.join(expected[:6])}"
    hint = None
    if tok.type == "LPAR" and e.token_history and e.token_history[-1].type == "VAR":
        hint = "predicate names start with a lower-case letter"
    elif tok.type == "VAR" and "NAME" in e.expected:
        hint = "predicate names start with a lower-case letter, variables with an upper-case letter"
    elif tok.type == "NAME" and "VAR" in e.expected:
        hint = "variables start with an upper-case letter; constants are integers"
    return program.error(msg, pos, hint)


def _hint(ch: str) -> str | None:
    if ch in "\"'":
        return "values are integers: strings are not supported"
    if ch == "/":
        return "division is not supported: use +, - and *"
    return None
