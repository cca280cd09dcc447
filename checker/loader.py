"""Find a spec from the command line's SPEC argument and build its model.

SPEC is a registered name (`lockstep list`), `package.module:Object`, `path/to/file.py`
or `path/to/file.py:Object`. The object is a `Spec` subclass (typed) or anything with
`init()` and `next(state)` (plain: a module, an instance, or a class instantiated with the
parameters).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lockstep.specs.lang.errors import SpecError
from lockstep.specs.lang.names import name_hint
from lockstep.specs.lang.spec import Spec, build_program, param_defaults
from lockstep.specs.registry import SPECS

from .model import Model
from .safeio import code_file

if TYPE_CHECKING:  # population protocols are imported when one is loaded (`lockstep check` starts faster)
    from lockstep.specs.lang.population import Population


class LoadError(Exception):
    """The SPEC argument does not lead to a spec."""


def parse_params(items: list[str]) -> dict[str, int]:
    """`["n=3", "f=1"]` -> {"n": 3, "f": 1}."""
    out: dict[str, int] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise LoadError(f"--param {item!r}: expected name=value, e.g. --param n=3")
        try:
            v = int(value)
        except ValueError:
            raise LoadError(f"--param {item!r}: the value must be an integer") from None
        if name in out:
            raise LoadError(f"--param {name} is given twice ({out[name]} and {v}); give it once")
        out[name] = v
    return out


def resolve(ref: str) -> tuple[Any, str]:
    """The object a SPEC argument names, and its canonical reference."""
    target = SPECS.get(ref, ref)
    path, _, attr = target.partition(":") if not _is_windows_drive(target) else (target, "", "")
    if path.endswith(".py") or os.sep in path or os.path.exists(path):
        module = _import_path(path)
    else:
        module = _import_module(path)
    if attr:
        if not hasattr(module, attr):
            raise LoadError(f"{path} has no object {attr!r}" + _candidates(module))
        return getattr(module, attr), ref
    return _default_object(module, path), ref


def _is_windows_drive(s: str) -> bool:
    return len(s) > 2 and s[1] == ":" and s[0].isalpha() and s[2] in "\\/"


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            known = ", ".join(sorted(SPECS))
            raise LoadError(f"no spec named {name!r}: not a registered name ({known}), "
                            "an importable module, or a file") from None
        raise LoadError(_import_failure(name, e)) from None
    except SpecError:
        raise
    except SystemExit as e:
        raise LoadError(f"module {name} called sys.exit({e.code!r}) while it was imported: it is not a spec Lockstep "
                        "can load (nothing was checked)") from None
    except Exception as e:
        raise LoadError(_import_failure(name, e)) from None


USER_MODULE_PREFIX = "lockstep_user_"
"""Spec files are imported under this prefix and a hash of their path (two files may share a name)."""


def display_name(obj: Any) -> str:
    """The name a user knows a plain spec by: its class's, or its module's (a spec file's stem)."""
    name = getattr(obj, "__name__", type(obj).__name__)
    if inspect.ismodule(obj) and name.startswith(USER_MODULE_PREFIX) and getattr(obj, "__file__", None):
        return os.path.splitext(os.path.basename(obj.__file__))[0]
    return name.rsplit(".", 1)[-1]


def _import_path(path: str) -> ModuleType:
    if not os.path.exists(path):
        raise LoadError(f"spec file {path} does not exist")
    try:
        full = code_file(path, "spec file")
    except OSError as e:
        raise LoadError(f"cannot load spec file {path}: {e}") from None
    mod_name = USER_MODULE_PREFIX + str(abs(hash(full)))
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, full)
    if spec is None or spec.loader is None:
        raise LoadError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    sys.path.insert(0, os.path.dirname(full))
    try:
        spec.loader.exec_module(module)
    except SpecError:
        del sys.modules[mod_name]
        raise
    except BaseException as e:
        del sys.modules[mod_name]
        if isinstance(e, KeyboardInterrupt):
            raise
        if isinstance(e, SystemExit):
            raise LoadError(f"spec file {path} called sys.exit({e.code!r}) while it was imported: it is not a spec "
                            "Lockstep can load (nothing was checked)") from None
        raise LoadError(_import_failure(path, e)) from None
    finally:
        sys.path.remove(os.path.dirname(full))
    return module


def _import_failure(what: str, e: BaseException) -> str:
    if isinstance(e, SyntaxError):
        return f"cannot import spec {what}: syntax error at {e.filename}:{e.lineno}: {e.msg}"
    frames = traceback.extract_tb(e.__traceback__)
    user = [f for f in frames if "importlib" not in f.filename]
    where = f" at {user[-1].filename}:{user[-1].lineno}" if user else ""
    return f"cannot import spec {what}: {type(e).__name__}: {e}{where}{name_hint(e)}"


def _candidates(module: ModuleType) -> str:
    names = [n for n, v in vars(module).items() if _is_spec_object(v)]
    return f" (specs in it: {', '.join(names)})" if names else ""


def _is_spec_object(v: Any) -> bool:
    if inspect.isclass(v) and issubclass(v, Spec) and v is not Spec:
        return True
    return callable(getattr(v, "init", None)) and callable(getattr(v, "next", None)) and not inspect.ismodule(v)


def _default_object(module: ModuleType, path: str) -> Any:
    if callable(getattr(module, "init", None)) and callable(getattr(module, "next", None)):
        return module
    specs = [v for v in vars(module).values()
             if inspect.isclass(v) and issubclass(v, Spec) and v is not Spec and v.__module__ == module.__name__]
    if len(specs) == 1:
        return specs[0]
    if not specs:
        raise LoadError(f"{path} defines no spec: expected a Spec subclass, or module-level init() and next(state)")
    names = ", ".join(s.__name__ for s in specs)
    raise LoadError(f"{path} defines several specs ({names}); name one, e.g. {path}:{specs[0].__name__}")


def load_model(ref: str, params: dict[str, int] | None = None, symmetry: bool = False,
               invariants: list[str] | None = None) -> Model:
    """Build the model named by `ref` for the given parameter values."""
    twice = sorted({n for n in invariants or [] if (invariants or []).count(n) > 1})
    if twice:
        raise LoadError(f"--invariant {twice[0]} is given twice; name each invariant once")
    obj, ref = resolve(ref)
    return model_of(obj, ref, params, symmetry, invariants)


def model_of(obj: Any, ref: str, params: dict[str, int] | None = None, symmetry: bool = False,
             invariants: list[str] | None = None) -> Model:
    """Build the model of a spec object (a Spec subclass, or a plain spec: class, object or module);
    `ref` is how a trace names it."""
    params = params or {}
    if inspect.isclass(obj) and issubclass(obj, Spec):
        from .typed_model import TypedModel

        prog = build_program(obj, params)
        if invariants:
            _select(prog.invariants, invariants, obj.__name__)
        return TypedModel(prog, ref, symmetry=symmetry)
    if callable(getattr(obj, "init", None)) and callable(getattr(obj, "next", None)) or inspect.isclass(obj):
        from .plain_model import PlainModel

        name = display_name(obj)
        if inspect.isclass(obj):
            try:
                obj = obj(**params)
            except TypeError as e:
                raise LoadError(f"plain spec {name} does not accept these parameters: {e}") from None
        elif params:
            raise LoadError(f"plain spec {name} takes no parameters (it is not a class)")
        if not (callable(getattr(obj, "init", None)) and callable(getattr(obj, "next", None))):
            raise LoadError(f"{name} is neither a Spec subclass nor a plain spec with init() and next(state)")
        if symmetry:
            raise LoadError(f"plain spec {name}: --symmetry needs a typed spec with a symmetric Range")
        model = PlainModel(obj, ref, name, params)
        if invariants:
            keep = dict(model._invariants)
            missing = [n for n in invariants if n not in keep]
            if missing:
                raise LoadError(f"plain spec {name} has no invariant {missing[0]!r} "
                                f"(its invariants: {', '.join(keep) or 'none'})")
            model._invariants = [(n, keep[n]) for n in invariants]
            model.invariant_names = list(invariants)
        return model
    raise LoadError(f"{ref} is neither a Spec subclass nor a plain spec with init() and next(state)")


def _select(preds: list, names: list[str], spec: str) -> None:
    known = {p.name: p for p in preds}
    for n in names:
        if n not in known:
            raise LoadError(f"spec {spec} has no invariant {n!r} (its invariants: {', '.join(known) or 'none'})")
    preds[:] = [known[n] for n in names]


def spec_summary(ref: str) -> tuple[str, dict[str, int]]:
    """(first docstring line, parameter defaults) of a registered spec, for `lockstep list`."""
    obj, _ = resolve(ref)
    doc = (inspect.getdoc(obj) or "").strip().splitlines()
    if inspect.isclass(obj) and issubclass(obj, Spec):
        params = param_defaults(obj)
    elif inspect.isclass(obj) and callable(getattr(obj, "declared_params", None)):  # population protocols
        params = {n: p.default for n, p in obj.declared_params().items()}
    else:
        params = {}
    return (doc[0] if doc else ""), params


def spec_summaries() -> Iterator[tuple[str, str, dict[str, int]]]:
    """(name, first docstring line, parameter defaults) of every registered spec, by name, for `lockstep list` and the
    manual; a spec that does not load is summarised by why, with no parameters."""
    for name in sorted(SPECS):
        try:
            doc, params = spec_summary(name)
        except LoadError as e:
            doc, params = f"(cannot load: {e})", {}
        yield name, doc, params


def load_protocol(ref: str, params: dict[str, int]) -> Population:
    """The population protocol named by `ref`, built for `params` (LoadError for any other spec)."""
    from lockstep.specs.lang.population import Population

    obj, _ = resolve(ref)
    if inspect.isclass(obj) and issubclass(obj, Population):
        return obj(**params)
    if isinstance(obj, Population):
        return obj
    raise LoadError(f"{ref} is not a population protocol (a Population subclass, see lockstep.specs.lang.population)")


def is_protocol(ref: str) -> bool:
    """Whether `ref` names a population protocol (without building it)."""
    from lockstep.specs.lang.population import Population

    obj, _ = resolve(ref)
    return (inspect.isclass(obj) and issubclass(obj, Population)) or isinstance(obj, Population)


def reference(obj: Any) -> str:
    """How a trace names the spec object `obj`: its registered name, else `module:Name` when its module
    can be imported again, else `file.py:Name`."""
    if inspect.ismodule(obj):
        module, name = obj, ""
    else:
        module, name = sys.modules.get(getattr(obj, "__module__", "") or ""), getattr(obj, "__qualname__", "")
        if not name:  # an instance of a plain spec class
            name = type(obj).__qualname__
    modname = getattr(module, "__name__", "")
    target = f"{modname}:{name}" if name else modname
    for registered, where in SPECS.items():
        if where == target:
            return registered
    if modname and not modname.startswith("lockstep_user_") and modname != "__main__":
        return target
    path = getattr(module, "__file__", None)
    if path:
        return f"{path}:{name}" if name else path
    raise LoadError(f"spec {name or modname} was defined where it cannot be loaded again (no module or file)")
