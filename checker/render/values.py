"""State values in the spec's own notation, and their per-element differences.

A value read from a trace (ITF JSON) becomes a `Node`: an atom, a set, a map, a sequence, a
tuple or a record. Nodes print as the spec writes values (Python): `{1, 2}`, `set()` for the
empty set, `{0: "init"}` for a map, `Prepare()` and `Envelope(src=0, dst=1, msg=Prepare())` for
records, `None` or the value itself for an `Option`. `diff` lists what changed between two
values element by element (added, removed, changed), as the TLA+ Toolbox shows it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from rich.text import Text

from lockstep.specs.lang.types import Domain, MapDomain, OptionDomain, RecordDomain, SetDomain, UnionDomain

STYLES = {"number": "cyan", "string": "green", "bool": "magenta", "none": "magenta", "other": ""}


@dataclass(frozen=True)
class Node:
    """A value: `kind` is atom | set | map | seq | tuple | record. Atoms hold their text and a style
    class; sets, sequences and tuples their items; maps (key, value) pairs; records (field, value) pairs."""

    kind: str
    text: str = ""
    style: str = "other"
    items: tuple = ()

    def plain(self) -> str:
        return fmt(self).plain


NONE = Node("atom", "None", "none")


def from_itf(j: Any, dom: Domain | None = None) -> Node:
    """The node of an ITF value; `dom` (the declared domain, when known) settles options and records."""
    if isinstance(j, bool):
        return Node("atom", str(j), "bool")
    if isinstance(j, int):
        return Node("atom", str(j), "number")
    if isinstance(j, str):
        return Node("atom", json.dumps(j, ensure_ascii=False), "string")
    if j is None:
        return NONE
    if isinstance(j, list):
        return Node("seq", items=tuple(from_itf(x) for x in j))
    if not isinstance(j, dict):
        return Node("atom", repr(j))
    if "#bigint" in j:
        return Node("atom", str(j["#bigint"]), "number")
    if "#unserializable" in j:
        return Node("atom", str(j["#unserializable"]))
    if "#tup" in j and isinstance(j["#tup"], list):
        return Node("tuple", items=tuple(from_itf(x) for x in j["#tup"]))
    if "#set" in j and isinstance(j["#set"], list):
        elem = dom.elem if isinstance(dom, SetDomain) else None
        items = {from_itf(x, elem) for x in j["#set"]}
        return Node("set", items=tuple(sorted(items, key=_order)))
    if "#map" in j and isinstance(j["#map"], list):
        kd, vd = (dom.key, dom.val) if isinstance(dom, MapDomain) else (None, None)
        pairs = tuple((from_itf(kv[0], kd), from_itf(kv[1], vd)) for kv in j["#map"] if isinstance(kv, list) and len(kv) == 2)
        return Node("map", items=pairs)
    if set(j) == {"tag", "value"} and isinstance(j["tag"], str):
        return _tagged(j["tag"], j["value"], dom)
    if isinstance(dom, RecordDomain):  # a plain record: ITF writes it without its name
        doms = dict(zip(dom.type.field_names, dom.field_doms))
        return Node("record", dom.type.name, items=tuple((str(k), from_itf(v, doms.get(k))) for k, v in j.items()))
    return Node("record", "", items=tuple((str(k), from_itf(v)) for k, v in j.items()))


def _tagged(tag: str, value: Any, dom: Domain | None) -> Node:
    if isinstance(dom, OptionDomain) or (dom is None and tag in ("None", "Some")):
        if tag == "None":
            return NONE
        return from_itf(value, dom.inner if isinstance(dom, OptionDomain) else None)
    member = dom if isinstance(dom, RecordDomain) else (dom.by_name.get(tag) if isinstance(dom, UnionDomain) else None)
    if value == {"#tup": []}:  # ITF's unit: a variant without fields
        return Node("record", tag, items=())
    if isinstance(value, dict) and not any(k.startswith("#") for k in value):
        doms = dict(zip(member.type.field_names, member.field_doms)) if member is not None else {}
        return Node("record", tag, items=tuple((k, from_itf(v, doms.get(k))) for k, v in value.items()))
    return Node("record", tag, items=(("", from_itf(value)),))


def _order(n: Node) -> tuple:
    """Sets list numbers numerically, everything else by its text."""
    if n.kind == "atom" and n.style == "number":
        try:
            return (0, int(n.text), "")
        except ValueError:
            pass
    return (1, 0, fmt(n).plain)


# ------------------------------------------------------------------------------ formatting


def fmt(n: Node, style: str | None = None) -> Text:
    """The node as text in the spec's notation (`style` overrides the atoms' colours)."""
    out = Text()
    _fmt(n, out, style)
    return out


def _fmt(n: Node, out: Text, style: str | None) -> None:
    if n.kind == "atom":
        out.append(n.text, style if style is not None else STYLES.get(n.style, ""))
        return
    if n.kind == "set" and not n.items:
        out.append("set()", style or "")
        return
    if n.kind == "record":
        out.append(n.text, style if style is not None else "bold")
        out.append("(")
        for i, (k, v) in enumerate(n.items):
            if i:
                out.append(", ")
            if k:
                out.append(f"{k}=")
            _fmt(v, out, style)
        out.append(")")
        return
    open_, close = {"set": "{}", "map": "{}", "seq": "[]", "tuple": "()"}[n.kind]
    out.append(open_)
    for i, item in enumerate(n.items):
        if i:
            out.append(", ")
        if n.kind == "map":
            _fmt(item[0], out, style)
            out.append(": ")
            _fmt(item[1], out, style)
        else:
            _fmt(item, out, style)
    if n.kind == "tuple" and len(n.items) == 1:
        out.append(",")
    out.append(close)


def key_text(k: Node) -> str:
    return fmt(k).plain


# ------------------------------------------------------------------------------ differences


@dataclass(frozen=True)
class Change:
    """One difference: `kind` is changed (`path` now `new`, was `old`), added or removed (an element
    of the set or sequence at `path`, or with `entry`, the map entry `path`); `at` is a sequence position."""

    kind: str
    path: str
    new: Node | None = None
    old: Node | None = None
    at: int | None = None
    entry: bool = False


def diff(path: str, old: Node, new: Node) -> list[Change]:
    """What changed from `old` to `new`, element by element."""
    if old == new:
        return []
    if old.kind == new.kind == "map":
        return _diff_map(path, old, new)
    if old.kind == new.kind == "set":
        olds, news = set(old.items), set(new.items)
        return ([Change("removed", path, old=x) for x in old.items if x not in news]
                + [Change("added", path, new=x) for x in new.items if x not in olds])
    if old.kind == new.kind and old.kind in ("seq", "tuple"):
        return _diff_seq(path, old, new)
    if old.kind == new.kind == "record" and old.text == new.text and [k for k, _ in old.items] == [k for k, _ in new.items]:
        out: list[Change] = []
        for (k, a), (_, b) in zip(old.items, new.items):
            out += diff(f"{path}.{k}" if k else path, a, b)
        return out
    return [Change("changed", path, new, old)]


def _diff_map(path: str, old: Node, new: Node) -> list[Change]:
    before = {k: v for k, v in old.items}
    after = {k: v for k, v in new.items}
    out: list[Change] = []
    for k, v in new.items:
        sub = f"{path}[{key_text(k)}]"
        if k not in before:
            out.append(Change("added", sub, new=v, entry=True))
        else:
            out += diff(sub, before[k], v)
    out += [Change("removed", f"{path}[{key_text(k)}]", old=v, entry=True) for k, v in old.items if k not in after]
    return out


def _diff_seq(path: str, old: Node, new: Node) -> list[Change]:
    """Tuples of one length change position by position; sequences by the fewest insertions and removals."""
    a, b = list(old.items), list(new.items)
    out: list[Change] = []
    if old.kind == "tuple" and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b)):
            out += diff(f"{path}[{k}]", x, y)
        return out
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and i2 - i1 == j2 - j1:
            for k in range(i2 - i1):
                out += diff(f"{path}[{j1 + k}]", a[i1 + k], b[j1 + k])
            continue
        out += [Change("removed", path, old=a[i], at=i) for i in range(i1, i2)]
        out += [Change("added", path, new=b[j], at=j) for j in range(j1, j2)]
    return out


def change_text(c: Change) -> Text:
    """One change as a line: `path = new  (was old)`, `path: + elem`, `path: - elem`."""
    t = Text(c.path)
    at = f"[{c.at}] " if c.at is not None else ""
    if c.kind == "changed":
        t.append(" = ")
        t.append_text(fmt(c.new, "bold yellow"))  # type: ignore[arg-type]
        t.append("  (was ", "dim")
        t.append_text(fmt(c.old, "dim"))  # type: ignore[arg-type]
        t.append(")", "dim")
    elif c.kind == "added":
        if c.entry:
            t.append(" = ")
            t.append_text(fmt(c.new, "bold green"))  # type: ignore[arg-type]
            t.append("  (new entry)", "dim")
        else:
            t.append(": ")
            t.append(f"+ {at}", "bold green")
            t.append_text(fmt(c.new, "green"))  # type: ignore[arg-type]
    else:
        if c.entry:
            t.append(": ")
            t.append("- entry removed", "bold red")
        else:
            t.append(": ")
            t.append(f"- {at}", "bold red")
            t.append_text(fmt(c.old, "red"))  # type: ignore[arg-type]
    return t

