"""Values in the Informal Trace Format (ITF, Apalache ADR-015, as read by Apalache and Quint).

Integers are `{"#bigint": "n"}`, sets `{"#set": [...]}`, maps `{"#map": [[k, v], ...]}`,
tuples `{"#tup": [...]}`, records JSON objects, and tagged values `{"tag": t, "value": v}`.
Typed specs are encoded from their declared types; plain specs from Python values.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from lockstep.specs.lang.types import (
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


def bigint(n: int) -> dict[str, str]:
    return {"#bigint": str(n)}


def encode_typed(dom: Domain, v: Any) -> Any:
    """A Python value of a declared domain, as ITF."""
    if isinstance(dom, BoolDomain):
        return bool(v)
    if isinstance(dom, (IntDomain, RangeDomain)):
        return bigint(v)
    if isinstance(dom, EnumDomain):
        return v
    if isinstance(dom, RecordDomain):
        return _record(v, dom)
    if isinstance(dom, UnionDomain):
        return _record(v, dom.by_name[v.tag])
    if isinstance(dom, OptionDomain):
        if v is None:
            return {"tag": "None", "value": {"#tup": []}}
        return {"tag": "Some", "value": encode_typed(dom.inner, v)}
    if isinstance(dom, SetDomain):
        return {"#set": [encode_typed(dom.elem, x) for x in sorted(v, key=dom.elem.index)]}
    if isinstance(dom, SeqDomain):  # ITF lists are JSON arrays
        return [encode_typed(dom.elem, x) for x in v]
    if isinstance(dom, OneOfDomain):  # a declared Python value (a quorum): as a plain value
        return encode_plain(v)
    if isinstance(dom, MapDomain):
        return {"#map": [[encode_typed(dom.key, k), encode_typed(dom.val, v[k])] for k in dom.key.values()]}
    raise TypeError(f"no ITF encoding for {dom!r}")


def _record(v: RecordValue, dom: RecordDomain) -> dict[str, Any]:
    fields = {name: encode_typed(fd, x) for name, fd, x in zip(dom.type.field_names, dom.field_doms, v._vals)}
    return {"tag": v.tag, "value": fields}


def encode_plain(v: Any) -> Any:
    """A Python value of a plain spec, as ITF (deterministic: sets and maps are sorted)."""
    if isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, int):
        return bigint(v)
    if v is None:
        return {"#unserializable": "None"}
    if isinstance(v, RecordValue):
        return {"tag": v.tag, "value": {k: encode_plain(x) for k, x in v.fields().items()}}
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {k: encode_plain(x) for k, x in zip(v._fields, v)}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: encode_plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, tuple):
        return {"#tup": [encode_plain(x) for x in v]}
    if isinstance(v, list):
        return [encode_plain(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return {"#set": sorted((encode_plain(x) for x in v), key=_sort_key)}
    if isinstance(v, dict):
        return {"#map": sorted(([encode_plain(k), encode_plain(x)] for k, x in v.items()), key=_sort_key)}
    if isinstance(v, float):
        return {"#unserializable": repr(v)}
    return {"#unserializable": repr(v)}


def _sort_key(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def show(v: Any) -> str:
    """A compact human rendering of a Python state value."""
    if isinstance(v, frozenset):
        return "{" + ", ".join(sorted(map(show, v))) + "}" if v else "{}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{show(k)}: {show(x)}" for k, x in v.items()) + "}"
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return "(" + ", ".join(map(show, v)) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def decode_typed(dom: Domain, v: Any) -> Any:
    """An ITF value of a declared domain, as the Python value (the inverse of `encode_typed`)."""
    if isinstance(dom, BoolDomain):
        if not isinstance(v, bool):
            raise ValueError(f"expected a Boolean, got {json.dumps(v)}")
        return v
    if isinstance(dom, (IntDomain, RangeDomain)):
        if isinstance(v, dict) and isinstance(v.get("#bigint"), str):
            try:
                return int(v["#bigint"])
            except ValueError:
                pass
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        raise ValueError(f"expected an integer, got {json.dumps(v)}")
    if isinstance(dom, EnumDomain):
        if v not in dom.names:
            raise ValueError(f"expected one of {', '.join(dom.names)}, got {json.dumps(v)}")
        return v
    if isinstance(dom, (RecordDomain, UnionDomain)):
        tag = v.get("tag") if isinstance(v, dict) else None
        member = dom if isinstance(dom, RecordDomain) else dom.by_name.get(tag)
        if member is None or tag != member.type.name or not isinstance(v.get("value"), dict):
            raise ValueError(f"expected a {dom.describe()} record, got {json.dumps(v)}")
        fields = v["value"]
        missing = [n for n in member.type.field_names if n not in fields]
        if missing:
            raise ValueError(f"record {tag} has no field {missing[0]!r}")
        return RecordValue(member.type, tuple(decode_typed(fd, fields[n])
                                              for n, fd in zip(member.type.field_names, member.field_doms)))
    if isinstance(dom, OptionDomain):
        if isinstance(v, dict) and v.get("tag") == "None":
            return None
        if isinstance(v, dict) and v.get("tag") == "Some" and "value" in v:
            return decode_typed(dom.inner, v["value"])
        raise ValueError(f"expected None or Some, got {json.dumps(v)}")
    if isinstance(dom, SetDomain):
        if not isinstance(v, dict) or not isinstance(v.get("#set"), list):
            raise ValueError(f"expected a set, got {json.dumps(v)}")
        return frozenset(decode_typed(dom.elem, x) for x in v["#set"])
    if isinstance(dom, OneOfDomain):
        for x in dom.vals:
            if encode_plain(x) == v:
                return x
        raise ValueError(f"expected a value of {dom.describe()}, got {json.dumps(v)}")
    if isinstance(dom, SeqDomain):
        if not isinstance(v, list) or len(v) > dom.max_len:
            raise ValueError(f"expected a list of at most {dom.max_len} elements, got {json.dumps(v)}")
        return tuple(decode_typed(dom.elem, x) for x in v)
    if isinstance(dom, MapDomain):
        if not isinstance(v, dict) or not isinstance(v.get("#map"), list) or \
                not all(isinstance(kv, list) and len(kv) == 2 for kv in v["#map"]):
            raise ValueError(f"expected a map, got {json.dumps(v)}")
        return {decode_typed(dom.key, k): decode_typed(dom.val, x) for k, x in v["#map"]}
    raise TypeError(f"no ITF decoding for {dom!r}")
