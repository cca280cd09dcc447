"""What a name spec code cannot find was probably meant to be: a close name in its scope, among the builtins or in
the modelling language (with the import that brings it in), or an attribute of the spec's class."""

from __future__ import annotations

import builtins
import difflib
import importlib
from typing import Any

LANGUAGE = ("lockstep.specs.lang", "lockstep.specs.lang.actors", "lockstep.specs.lang.rounds",
            "lockstep.specs.lang.population")
"""The modules whose public names a spec may have meant (the first that exports a name is the one to import)."""


def exception_text(e: BaseException, cls: type | None = None) -> str:
    """`NameError: name 'on_timer' is not defined; did you mean on_timeout? (...)`: the exception, and for a
    NameError what the name was probably meant to be."""
    return f"{type(e).__name__}: {e}{name_hint(e, cls)}"


def name_hint(e: BaseException, cls: type | None = None) -> str:
    """`; did you mean ...` for a NameError with a close name (or a class attribute `cls` has), else ""."""
    if not isinstance(e, NameError) or not getattr(e, "name", None):
        return ""
    hint = suggestion(e.name, _scope(e), cls)  # type: ignore[arg-type]
    return f"; {hint}" if hint else ""


def suggestion(name: str, scope: dict[str, Any], cls: type | None = None) -> str | None:
    """A hint for `name`, not found in `scope` (the failing code's globals and locals): None if nothing is close."""
    if cls is not None and any(name in vars(c) for c in cls.__mro__ if c is not object):
        return (f"{name} is an attribute of class {cls.__name__}, which the class's methods do not see by its bare "
                f"name: write {cls.__name__}.{name}")
    offered: dict[str, str | None] = {n: None for n in [*vars(builtins), *scope] if not n.startswith("_")}
    for module, names in _language().items():
        for n in names:
            offered.setdefault(n, module)
    if offered.get(name):
        return f"{name} is not imported: from {offered[name]} import {name}"
    close = difflib.get_close_matches(name, list(offered), n=1, cutoff=0.7)
    if not close:
        return None
    meant, module = close[0], offered[close[0]]
    return f"did you mean {meant}?" + (f" (from {module} import {meant})" if module else "")


def _scope(e: BaseException) -> dict[str, Any]:
    """The names the code that raised `e` could see: its frame's globals and locals."""
    tb = e.__traceback__
    if tb is None:
        return {}
    while tb.tb_next is not None:
        tb = tb.tb_next
    return {**tb.tb_frame.f_globals, **tb.tb_frame.f_locals}


def _language() -> dict[str, list[str]]:
    """{module: its public names} for the modelling language's modules."""
    out: dict[str, list[str]] = {}
    for name in LANGUAGE:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        out[name] = list(getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")]))
    return out
