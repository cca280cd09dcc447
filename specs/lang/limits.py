"""Limits on the size of a spec instance, checked from declared sizes before anything is built.

Parameters decide how large a spec's state and program are (`--param rm=1000000`, a `Range(10**9)`
key). Sizes are computed from the bound types without materialising them and refused, with the size
and the limit, where no engine could hold them or their build could not finish: a state of more than
MAX_SLOTS slots, a set over more than MAX_ELEMENTS values, a map value of more than MAX_MAP_BITS bits,
or one enumeration (an action's parameters, a quantifier, a handler's inputs) of more than
MAX_ENUMERATION combinations.
"""

from __future__ import annotations

import math

from .errors import SpecError, user_location

MAX_SLOTS = 100_000  # slots of one state (a Map holds one per key)
MAX_ELEMENTS = 1 << 20  # values of a Set's element type (a set is one bitmask of that many bits)
MAX_MAP_BITS = 1 << 24  # bits to number the values of one Map type
MAX_ENUMERATION = 1_000_000  # combinations enumerated at once while building (parameters, quantifiers, inputs)


def _refuse(what: str, size: int, limit: int, hint: str) -> SpecError:
    """A refusal without a location: the builder adds the field's."""
    return SpecError(f"{what}: {size:,} is more than the limit of {limit:,}", None, hint)


def check_map(key_size: int, leaf_slots: int, val_size: int) -> None:
    """A Map type over `key_size` keys whose values take `leaf_slots` slots and have `val_size` values."""
    slots = key_size * leaf_slots
    if slots > MAX_SLOTS:
        raise _refuse("a Map field's slots (one per key)", slots, MAX_SLOTS,
                      "use smaller parameters (the keys' type is too large for a state)")
    bits = key_size * math.log2(max(val_size, 2))
    if bits > MAX_MAP_BITS:
        raise _refuse("the bits to number a Map type's values", int(bits), MAX_MAP_BITS, "use smaller parameters")


def check_set(elements: int) -> None:
    """A Set type over a type of `elements` values."""
    if elements > MAX_ELEMENTS:
        raise _refuse("the values a Set's element type has (a set is a bitmask over them)", elements, MAX_ELEMENTS,
                      "use smaller parameters, or a smaller element type")


def check_slots(slots: int, spec: str) -> None:
    """The slots of one state of a spec."""
    if slots > MAX_SLOTS:
        raise _refuse(f"spec {spec}'s state slots", slots, MAX_SLOTS, "use smaller parameters")


def check_enumeration(sizes: list[int], what: str = "the combinations of values enumerated", here: bool = True) -> None:
    """A product of domain sizes about to be enumerated (refused before any value is listed; `here`: the refusal
    points at the spec line that asked for it, else the caller adds a location)."""
    count = 1
    for n in sizes:
        count *= n
        if count > MAX_ENUMERATION:
            shown = " x ".join(f"{s:,}" if s.bit_length() < 64 else f"2^{s.bit_length() - 1}+" for s in sizes)
            raise SpecError(f"{what} ({shown}) are more than the limit of {MAX_ENUMERATION:,}",
                            user_location() if here else None,
                            "use smaller parameters (each combination is traced when the spec is built)")
