"""Which explicit engine runs a check: `--engine auto|vector|scalar|explicit|smt`.

`auto` runs the vector engine on typed specs and the scalar engine (`lockstep.checker.explicit`) on
plain specs and on whatever the vector engine does not cover (depth-first search, integers beyond
64 bits); `explicit` is another name for `scalar`. `smt` (the symbolic
engine) is handled by the check command itself.
"""

from __future__ import annotations

from ..explicit import Options, check
from ..model import Model
from ..progress import Progress
from ..result import CheckResult
from . import check_vector
from .layout import VectorUnsupported
from .search import VectorModel, VectorOptions

ENGINES = ("auto", "vector", "scalar", "explicit", "smt")


def _usage(message: str) -> Exception:
    from ..errors import UsageError

    return UsageError(message)


def choose(name: str, model: Model, opts: Options) -> tuple[str, VectorModel | None, str | None]:
    """(engine, prepared vector model or None, why auto chose scalar) for `--engine name`."""
    if name in ("scalar", "explicit"):
        return "scalar", None, None
    try:
        if opts.dfs:
            raise VectorUnsupported("depth-first search runs on the scalar engine")
        vm = VectorModel(model)
    except VectorUnsupported as e:
        if name == "vector":
            raise _usage(f"--engine vector cannot check {model.name}: {e}; use --engine scalar") from None
        return "scalar", None, f"scalar engine chosen: {e}"
    return "vector", vm, None


def run(engine: str, model: Model, vm: VectorModel | None, opts: Options, progress: Progress,
        vopts: VectorOptions | None = None) -> CheckResult:
    """Run the chosen engine."""
    if engine == "vector" and vm is not None:
        return check_vector(vm, opts, progress, vopts)
    return check(model, opts, progress)
