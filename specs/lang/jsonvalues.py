"""Plain JSON forms of typed values, for messages on the wire and states in run traces.

`to_json(dom, v)` writes a Python value of a domain; `from_json(dom, j)` reads one back and
validates it against the declared type, so data from outside (a socket, a trace file) becomes
a value of the type or a `ValueError` that says which part is wrong. Forms: Bool as a JSON
boolean, Int and Range as numbers, Enum as its name, a record (or union member) as an object
with `"tag"` and its fields, Option as `null` or the value, Set as a list ordered by the
element type, Seq as a list (the head first), Map as an object keyed by the keys' text.
"""

from __future__ import annotations

import json
from typing import Any

from .types import (
    BoolDomain,
    Domain,
    EnumDomain,
    IntDomain,
    MapDomain,
    OneOfDomain,
    OptionDomain,
    RangeDomain,
    RecordDomain,
    RecordValue,
    SeqDomain,
    SetDomain,
    UnionDomain,
)


def to_json(dom: Domain, v: Any) -> Any:
    """The JSON form of `v`, a value of `dom`."""
    if isinstance(dom, (BoolDomain, IntDomain, RangeDomain, EnumDomain)):
        return v
    if isinstance(dom, RecordDomain):
        return _record(dom, v)
    if isinstance(dom, UnionDomain):
        return _record(dom.by_name[v.tag], v)
    if isinstance(dom, OptionDomain):
        return None if v is None else to_json(dom.inner, v)
    if isinstance(dom, SetDomain):
        return [to_json(dom.elem, x) for x in sorted(v, key=dom.elem.index)]
    if isinstance(dom, SeqDomain):
        return [to_json(dom.elem, x) for x in v]
    if isinstance(dom, MapDomain):
        return {key_text(k): to_json(dom.val, v[k]) for k in dom.key.values()}
    if isinstance(dom, OneOfDomain):
        return plain_json(v)
    raise TypeError(f"no JSON form for {dom!r}")


def plain_json(v: Any) -> Any:
    """The JSON form of a plain Python value (a `OneOf` value): lists for tuples, sorted lists for sets."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, RecordValue):
        return {"tag": v.tag, **{k: plain_json(x) for k, x in v.fields().items()}}
    if isinstance(v, (tuple, list)):
        return [plain_json(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted((plain_json(x) for x in v), key=lambda j: json.dumps(j, sort_keys=True))
    return repr(v)


def _record(dom: RecordDomain, v: RecordValue) -> dict[str, Any]:
    out: dict[str, Any] = {"tag": dom.type.name}
    for name, fd, x in zip(dom.type.field_names, dom.field_doms, v._vals):
        out[name] = to_json(fd, x)
    return out


def key_text(k: Any) -> str:
    """A map key as JSON object key text."""
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, RecordValue):
        return repr(k)
    return str(k)


def from_json(dom: Domain, j: Any, where: str = "value") -> Any:
    """The value of `dom` whose JSON form is `j`; ValueError naming `where` if it is not one."""
    if isinstance(dom, BoolDomain):
        if not isinstance(j, bool):
            raise ValueError(f"{where}: expected true or false, got {_show(j)}")
        return j
    if isinstance(dom, (IntDomain, RangeDomain)):
        if isinstance(j, bool) or not isinstance(j, int) or not dom.lo <= j <= dom.hi:
            raise ValueError(f"{where}: expected an integer in {dom.lo}..{dom.hi}, got {_show(j)}")
        return j
    if isinstance(dom, EnumDomain):
        if not isinstance(j, str) or j not in dom.names:
            raise ValueError(f"{where}: expected one of {', '.join(dom.names)}, got {_show(j)}")
        return j
    if isinstance(dom, (RecordDomain, UnionDomain)):
        return _read_record(dom, j, where)
    if isinstance(dom, OptionDomain):
        return None if j is None else from_json(dom.inner, j, where)
    if isinstance(dom, SetDomain):
        if not isinstance(j, list):
            raise ValueError(f"{where}: expected a list (a set), got {_show(j)}")
        return frozenset(from_json(dom.elem, x, f"{where}[{i}]") for i, x in enumerate(j))
    if isinstance(dom, SeqDomain):
        if not isinstance(j, list) or len(j) > dom.max_len:
            raise ValueError(f"{where}: expected a list of at most {dom.max_len} elements (a sequence), got {_show(j)}")
        return tuple(from_json(dom.elem, x, f"{where}[{i}]") for i, x in enumerate(j))
    if isinstance(dom, OneOfDomain):
        key = json.dumps(j, sort_keys=True)
        for v in dom.vals:
            if json.dumps(plain_json(v), sort_keys=True) == key:
                return v
        raise ValueError(f"{where}: expected a value of {dom.describe()}, got {_show(j)}")
    if isinstance(dom, MapDomain):
        if not isinstance(j, dict):
            raise ValueError(f"{where}: expected an object (a map), got {_show(j)}")
        keys = {key_text(k): k for k in dom.key.values()}
        extra = [k for k in j if k not in keys]
        if extra:
            raise ValueError(f"{where}: unknown key {extra[0]!r}")
        missing = [t for t in keys if t not in j]
        if missing:
            raise ValueError(f"{where}: no value for key {missing[0]!r}")
        return {k: from_json(dom.val, j[t], f"{where}[{t}]") for t, k in keys.items()}
    raise TypeError(f"no JSON form for {dom!r}")


def _read_record(dom: RecordDomain | UnionDomain, j: Any, where: str) -> RecordValue:
    if not isinstance(j, dict) or not isinstance(j.get("tag"), str):
        raise ValueError(f"{where}: expected an object with a \"tag\", got {_show(j)}")
    tag = j["tag"]
    if isinstance(dom, UnionDomain):
        member = dom.by_name.get(tag)
        if member is None:
            raise ValueError(f"{where}: unknown message type {tag!r} (expected {', '.join(dom.by_name)})")
    else:
        if tag != dom.type.name:
            raise ValueError(f"{where}: expected a {dom.type.name}, got tag {tag!r}")
        member = dom
    names = member.type.field_names
    extra = [k for k in j if k != "tag" and k not in names]
    if extra:
        raise ValueError(f"{where}: {tag} has no field {extra[0]!r}")
    vals = []
    for name, fd in zip(names, member.field_doms):
        if name not in j:
            raise ValueError(f"{where}: {tag} is missing field {name!r}")
        vals.append(from_json(fd, j[name], f"{where}.{name}"))
    return RecordValue(member.type, tuple(vals))


def _show(j: Any) -> str:
    try:
        text = json.dumps(j)
    except (TypeError, ValueError):
        text = repr(j)
    return text if len(text) <= 60 else text[:57] + "..."
