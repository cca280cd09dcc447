"""Values in the Informal Trace Format (ITF, Apalache ADR-015, as read by Apalache and Quint).

Integers are `{"#bigint": "n"}`, sets `{"#set": [...]}`, maps `{"#map": [[k, v], ...]}`,
tuples `{"#tup": [...]}`, plain records JSON objects, and variants (the members of a union, and
options) `{"tag": t, "value": v}`, a variant without fields carrying unit, `{"#tup": []}`, as Quint
writes it. Enum values are strings. Typed specs are encoded from their declared types (and their
types written in Apalache's type syntax for `#meta.varTypes`); plain specs from Python values.
Reading accepts what Quint and Apalache write: JSON integers as well as big integers, enum values
as strings or as unit variants, and records written as variants by older Lockstep versions.
"""

from __future__ import annotations

import dataclasses
import json
import sys
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

UNIT: dict[str, Any] = {"#tup": []}


def bigint(n: int) -> dict[str, str]:
    return {"#bigint": str(n)}


def variant(tag: str, value: Any) -> dict[str, Any]:
    return {"tag": tag, "value": value}


def encode_typed(dom: Domain, v: Any) -> Any:
    """A Python value of a declared domain, as ITF."""
    if isinstance(dom, BoolDomain):
        return bool(v)
    if isinstance(dom, (IntDomain, RangeDomain)):
        return bigint(v)
    if isinstance(dom, EnumDomain):
        return v
    if isinstance(dom, RecordDomain):
        return _fields(v, dom)
    if isinstance(dom, UnionDomain):
        member = dom.by_name[v.tag]
        return variant(v.tag, _fields(v, member) if member.type.field_names else UNIT)
    if isinstance(dom, OptionDomain):
        if v is None:
            return variant("None", UNIT)
        return variant("Some", encode_typed(dom.inner, v))
    if isinstance(dom, SetDomain):
        return {"#set": [encode_typed(dom.elem, x) for x in sorted(v, key=dom.elem.index)]}
    if isinstance(dom, SeqDomain):  # ITF lists are JSON arrays
        return [encode_typed(dom.elem, x) for x in v]
    if isinstance(dom, OneOfDomain):  # a declared Python value (a quorum): as a plain value
        return encode_plain(v)
    if isinstance(dom, MapDomain):
        return {"#map": [[encode_typed(dom.key, k), encode_typed(dom.val, v[k])] for k in dom.key.values()]}
    raise TypeError(f"no ITF encoding for {dom!r}")


def _fields(v: RecordValue, dom: RecordDomain) -> dict[str, Any]:
    return {name: encode_typed(fd, x) for name, fd, x in zip(dom.type.field_names, dom.field_doms, v._vals)}


def type_string(dom: Domain) -> str:
    """The domain's type in Apalache's type syntax (Type System 1.2), for `#meta.varTypes`."""
    if isinstance(dom, BoolDomain):
        return "Bool"
    if isinstance(dom, (IntDomain, RangeDomain)):
        return "Int"
    if isinstance(dom, EnumDomain):
        return "Str"
    if isinstance(dom, RecordDomain):
        return _record_type(dom)
    if isinstance(dom, UnionDomain):
        return " | ".join(f"{m.type.name}({_record_type(m) if m.type.field_names else 'UNIT'})"
                          for m in dom.member_doms)
    if isinstance(dom, OptionDomain):
        return f"None(UNIT) | Some({type_string(dom.inner)})"
    if isinstance(dom, SetDomain):
        return f"Set({type_string(dom.elem)})"
    if isinstance(dom, MapDomain):
        return f"({type_string(dom.key)} -> {type_string(dom.val)})"
    if isinstance(dom, SeqDomain):
        return f"Seq({type_string(dom.elem)})"
    if isinstance(dom, OneOfDomain):  # declared Python values, written as plain values: their type, inferred
        return infer_type([encode_plain(v) for v in dom.vals])
    raise TypeError(f"no ITF type for {dom!r}")


def _record_type(dom: RecordDomain) -> str:
    inner = ", ".join(f"{n}: {type_string(d)}" for n, d in zip(dom.type.field_names, dom.field_doms))
    return "{ " + inner + " }" if inner else "{}"


def encode_plain(v: Any) -> Any:
    """A Python value of a plain spec, as ITF (deterministic: sets and maps are sorted).

    None is the unit variant `None` (as Quint writes an absent option); a float is a variant
    `Float` carrying its exact value as a fraction (ITF has no floats)."""
    if isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, int):
        return bigint(v)
    if v is None:
        return variant("None", UNIT)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return variant("Float", repr(v))
        q = v.as_integer_ratio()
        return variant("Float", {"num": bigint(q[0]), "den": bigint(q[1])})
    fractions = sys.modules.get("fractions")  # (a Fraction exists only once its module is imported)
    if fractions is not None and isinstance(v, fractions.Fraction):
        return variant("Fraction", {"num": bigint(v.numerator), "den": bigint(v.denominator)})
    if isinstance(v, RecordValue):
        return variant(v.tag, {k: encode_plain(x) for k, x in v.fields().items()} or UNIT)
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
    return {"#unserializable": repr(v)}


def _sort_key(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def normalize(v: Any) -> Any:
    """An ITF value in one canonical form: integers as big integers, sets and maps sorted, so that two
    writers' forms of the same value compare equal."""
    if isinstance(v, bool) or isinstance(v, str) or v is None:
        return v
    if isinstance(v, int):
        return bigint(v)
    if isinstance(v, float):
        return bigint(int(v)) if v.is_integer() else v
    if isinstance(v, list):
        return [normalize(x) for x in v]
    if isinstance(v, dict):
        if set(v) == {"#bigint"} and isinstance(v["#bigint"], str):
            try:
                return bigint(int(v["#bigint"]))
            except ValueError:
                return v
        if set(v) == {"#set"} and isinstance(v["#set"], list):
            return {"#set": sorted((normalize(x) for x in v["#set"]), key=_sort_key)}
        if set(v) == {"#map"} and isinstance(v["#map"], list):
            return {"#map": sorted((normalize(x) for x in v["#map"]), key=_sort_key)}
        return {k: normalize(x) for k, x in v.items()}
    return v


def infer_type(values: list[Any]) -> str:
    """An Apalache type for ITF values of a plain spec (a type variable where the values say nothing)."""
    kinds = [v for v in values if v is not None]
    if not kinds:
        return "a"
    v = kinds[0]
    if isinstance(v, bool):
        return "Bool"
    if isinstance(v, str):
        return "Str"
    if isinstance(v, list):
        return f"Seq({infer_type([x for w in kinds if isinstance(w, list) for x in w])})"
    if not isinstance(v, dict):
        return "a"
    if "#bigint" in v:
        return "Int"
    if "#set" in v:
        return f"Set({infer_type([x for w in kinds for x in w.get('#set', [])])})"
    if "#map" in v:
        pairs = [p for w in kinds for p in w.get("#map", []) if isinstance(p, list) and len(p) == 2]
        return f"({infer_type([p[0] for p in pairs])} -> {infer_type([p[1] for p in pairs])})"
    if "#tup" in v:
        width = len(v["#tup"])
        parts = [infer_type([w["#tup"][i] for w in kinds if len(w.get("#tup", [])) == width]) for i in range(width)]
        return "<<" + ", ".join(parts) + ">>"
    if "tag" in v and "value" in v:
        tags: dict[str, list[Any]] = {}
        for w in kinds:
            tags.setdefault(str(w.get("tag")), []).append(w.get("value"))
        return " | ".join(f"{t}({'UNIT' if all(x == UNIT for x in xs) else infer_type(xs)})" for t, xs in tags.items())
    names = sorted(v)
    return "{ " + ", ".join(f"{n}: {infer_type([w.get(n) for w in kinds])}" for n in names) + " }"


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
    """An ITF value of a declared domain, as the Python value (the inverse of `encode_typed`, accepting
    the other forms Quint and Apalache write)."""
    if isinstance(dom, BoolDomain):
        if not isinstance(v, bool):
            raise ValueError(f"expected a Boolean, got {_short(v)}")
        return v
    if isinstance(dom, (IntDomain, RangeDomain)):
        if isinstance(v, dict) and set(v) == {"#bigint"} and isinstance(v["#bigint"], str):
            text = v["#bigint"]
            if len(text) <= 4300:
                try:
                    return int(text)
                except ValueError:
                    pass
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        raise ValueError(f"expected an integer, got {_short(v)}")
    if isinstance(dom, EnumDomain):
        name = v.get("tag") if isinstance(v, dict) and v.get("value") in (UNIT, {}) else v
        if not isinstance(name, str) or name not in dom.names:
            raise ValueError(f"expected one of {', '.join(dom.names)}, got {_short(v)}")
        return name
    if isinstance(dom, (RecordDomain, UnionDomain)):
        return _decode_record(dom, v)
    if isinstance(dom, OptionDomain):
        if isinstance(v, dict) and v.get("tag") == "None" and v.get("value", UNIT) in (UNIT, {}):
            return None
        if isinstance(v, dict) and v.get("tag") == "Some" and "value" in v:
            return decode_typed(dom.inner, v["value"])
        raise ValueError(f"expected None or Some, got {_short(v)}")
    if isinstance(dom, SetDomain):
        if not isinstance(v, dict) or not isinstance(v.get("#set"), list):
            raise ValueError(f"expected a set, got {_short(v)}")
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
            raise ValueError(f"expected a map, got {_short(v)}")
        out = {decode_typed(dom.key, k): decode_typed(dom.val, x) for k, x in v["#map"]}
        missing = [k for k in dom.key.values() if k not in out]
        if missing:
            raise ValueError(f"the map has no value for key {missing[0]!r}")
        return out
    raise TypeError(f"no ITF decoding for {dom!r}")


def _decode_record(dom: RecordDomain | UnionDomain, v: Any) -> RecordValue:
    if not isinstance(v, dict):
        raise ValueError(f"expected a {dom.describe()} record, got {_short(v)}")
    if isinstance(dom, RecordDomain) and "tag" not in v:
        member, fields = dom, v  # a plain record: a JSON object
    else:
        tag = v.get("tag")
        member = dom if isinstance(dom, RecordDomain) else dom.by_name.get(tag) if isinstance(tag, str) else None
        fields = v.get("value")
        if member is None or tag != member.type.name:
            raise ValueError(f"expected a {dom.describe()} record, got {_short(v)}")
        if fields in (UNIT, {}) and not member.type.field_names:
            fields = {}
        if not isinstance(fields, dict):
            raise ValueError(f"record {tag}: expected its fields as an object, got {_short(fields)}")
    missing = [n for n in member.type.field_names if n not in fields]
    if missing:
        raise ValueError(f"record {member.type.name} has no field {missing[0]!r}")
    return RecordValue(member.type, tuple(decode_typed(fd, fields[n])
                                          for n, fd in zip(member.type.field_names, member.field_doms)))


def _short(v: Any) -> str:
    text = json.dumps(v, separators=(",", ":"))
    return text if len(text) <= 120 else text[:117] + "..."


@dataclasses.dataclass(frozen=True)
class Tagged:
    """A record or variant read back from ITF: its tag and fields (`r.tag`, `r.slot` as in spec code)."""

    tag: str
    fields: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["fields"][name]
        except KeyError:
            raise AttributeError(f"{self.__dict__.get('tag')} has no field {name!r}") from None

    def __hash__(self) -> int:
        return hash((self.tag, tuple(sorted(self.fields))))


def to_python(v: Any) -> Any:
    """An ITF value as a Python value without its declared type: integers, frozensets, dicts, tuples,
    lists, None / the value of an Option, `Tagged` records, dicts of untagged records."""
    if isinstance(v, list):
        return [to_python(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "#bigint" in v:
        return int(v["#bigint"])
    if "#set" in v:
        return frozenset(to_python(x) for x in v["#set"])
    if "#map" in v:
        return {_hashable(to_python(k)): to_python(x) for k, x in v["#map"]}
    if "#tup" in v:
        return tuple(to_python(x) for x in v["#tup"])
    if "#unserializable" in v:
        return None if v["#unserializable"] == "None" else v["#unserializable"]
    if set(v) == {"tag", "value"} and isinstance(v["tag"], str):
        if v["tag"] == "None" and v["value"] == {"#tup": []}:
            return None
        if v["tag"] == "Some":
            return to_python(v["value"])
        inner = to_python(v["value"])
        return Tagged(v["tag"], inner if isinstance(inner, dict) else {"value": inner})
    return {k: to_python(x) for k, x in v.items()}


def _hashable(k: Any) -> Any:
    if isinstance(k, dict):
        return tuple(sorted(k.items()))
    if isinstance(k, list):
        return tuple(k)
    return k
