"""A strict reader of EDN (https://github.com/edn-format/edn), the notation of Jepsen and Knossos histories.

Built on lark (LALR, so a malformed file is reported with its line and column). Values read as
plain Python data: nil/true/false as None/True/False, integers and floats, strings, characters
as 1-character strings, `Keyword("read")` for `:read`, `Symbol` for symbols, vectors and lists as
tuples, maps as dicts (keys must be hashable), sets as frozensets, and a tagged element
`#inst "..."` as `Tagged("inst", "...")` — tags are data here, never dispatched to code.
`#_ form` discards the next form; `;` starts a comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, VisitError

GRAMMAR = r"""
start: _form*
_form: value | discard
discard: "#_" _form
?value: map | vector | list | set | tagged | atom
map: "{" _form* "}"
vector: "[" _form* "]"
list: "(" _form* ")"
set: "#{" _form* "}"
tagged: TAG value
atom: STRING | CHAR | KEYWORD | NUMBER | SYMBOL

STRING: /"(\\.|[^"\\])*"/
CHAR: /\\(newline|return|space|tab|u[0-9a-fA-F]{4}|\S)/
TAG.2: /#[a-zA-Z][^\s,()\[\]{}"#;]*/
KEYWORD: /:[^\s,()\[\]{}"#;:][^\s,()\[\]{}"#;]*/
NUMBER.2: /[+-]?\d+(\.\d+)?([eE][+-]?\d+)?[NM]?(?=[\s,()\[\]{}";]|$)/
SYMBOL: /[^\s,()\[\]{}"#;:0-9\\][^\s,()\[\]{}";\\]*/
COMMENT: /;[^\n]*/
%ignore COMMENT
%ignore /[\s,]+/
"""


@dataclass(frozen=True)
class Keyword:
    """An EDN keyword (`:read` is `Keyword("read")`)."""

    name: str

    def __repr__(self) -> str:
        return ":" + self.name


@dataclass(frozen=True)
class Symbol:
    """An EDN symbol."""

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Tagged:
    """A tagged element, kept as data."""

    tag: str
    value: Any


class EDNError(ValueError):
    """Malformed EDN; the message gives the line and column."""


ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "b": "\b", "f": "\f"}
LITERALS = {"nil": None, "true": True, "false": False}
CHARS = {"newline": "\n", "return": "\r", "space": " ", "tab": "\t"}


@v_args(inline=True)
class _ToPython(Transformer):
    def start(self, *forms: Any) -> list[Any]:
        return [f for f in forms if f is not _DISCARDED]

    def discard(self, *form: Any) -> Any:
        return _DISCARDED

    def map(self, *items: Any) -> dict:
        items = tuple(i for i in items if i is not _DISCARDED)
        if len(items) % 2:
            raise EDNError("a map needs an even number of forms (a value for every key)")
        out: dict = {}
        for k, v in zip(items[::2], items[1::2]):
            try:
                out[k] = v
            except TypeError:
                raise EDNError(f"a map key must not be a map ({k!r})") from None
        return out

    def vector(self, *items: Any) -> tuple:
        return tuple(i for i in items if i is not _DISCARDED)

    list = vector

    def set(self, *items: Any) -> frozenset:
        try:
            return frozenset(i for i in items if i is not _DISCARDED)
        except TypeError:
            raise EDNError("a set element must not be a map") from None

    def tagged(self, tag: Token, value: Any) -> Tagged:
        return Tagged(str(tag)[1:], value)

    def atom(self, tok: Token) -> Any:
        kind, text = tok.type, str(tok)
        if kind == "STRING":
            return _unescape(text[1:-1])
        if kind == "KEYWORD":
            return Keyword(text[1:])
        if kind == "NUMBER":
            return _number(text)
        if kind == "CHAR":
            body = text[1:]
            if body in CHARS:
                return CHARS[body]
            return chr(int(body[1:], 16)) if len(body) == 5 and body[0] == "u" else body
        if text in LITERALS:
            return LITERALS[text]
        return Symbol(text)


_DISCARDED = object()


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            n = s[i + 1]
            if n == "u":
                out.append(chr(int(s[i + 2:i + 6], 16)))
                i += 6
                continue
            if n not in ESCAPES:
                raise EDNError(f"unknown string escape \\{n}")
            out.append(ESCAPES[n])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _number(text: str) -> int | float:
    t = text.rstrip("NM")
    if "." in t or "e" in t or "E" in t:
        return float(t)
    return int(t)


@cache
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr", maybe_placeholders=False, propagate_positions=True)


_SCAN = re.compile(r'"(?:\\.|[^"\\])*"|;[^\n]*|\\(?:newline|return|space|tab|\S)|([\[({])|([\])}])')


def check_nesting(text: str, limit: int, source: str = "<edn>") -> None:
    """Refuse (EDNError at the first bracket too deep) text whose brackets nest deeper than `limit`: one linear
    scan before parsing, so a file of a million opening brackets is refused at once, not after a parse."""
    depth = 0
    for m in _SCAN.finditer(text):
        if m.group(1):
            depth += 1
            if depth > limit:
                pos = m.start()
                line = text.count("\n", 0, pos) + 1
                column = pos - text.rfind("\n", 0, pos)
                raise EDNError(f"{source}:{line}:{column}: forms nested too deeply (more than {limit} levels)")
        elif m.group(2):
            depth -= 1


def loads(text: str, source: str = "<edn>", max_nesting: int | None = None) -> list[Any]:
    """Every top-level form of `text`, as Python values (EDNError names the line and column); with `max_nesting`,
    text whose brackets nest deeper is refused before it is parsed."""
    if max_nesting is not None:
        check_nesting(text, max_nesting, source)
    try:
        tree = _parser().parse(text)
        return _ToPython().transform(tree)
    except VisitError as e:
        inner = e.orig_exc
        line = getattr(getattr(e, "obj", None), "meta", None)
        where = f"{source}:{line.line}:{line.column}" if line is not None and not line.empty else source
        raise EDNError(f"{where}: {inner}") from None
    except UnexpectedEOF:
        raise EDNError(f"{source}: the file ends inside a form (an unclosed bracket or string)") from None
    except UnexpectedCharacters as e:
        raise EDNError(f"{source}:{e.line}:{e.column}: unexpected character {text[e.pos_in_stream]!r}") from None
    except UnexpectedInput as e:
        tok = getattr(e, "token", None)
        if tok is None or tok.type == "$END":
            raise EDNError(f"{source}: the file ends inside a form (an unclosed bracket)") from None
        raise EDNError(f"{source}:{e.line}:{e.column}: unexpected {str(tok)!r}") from None
    except LarkError as e:
        raise EDNError(f"{source}: {e}") from None
