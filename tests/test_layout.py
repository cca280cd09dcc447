"""The repository's layout: no import cycles, no system-model prefixes, one installed namespace."""

from __future__ import annotations

import ast
import base64
import hashlib
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("specs", "checker", "executors", "proofs")
MODELS = ("actors", "rounds", "population", "autobahn", "psmr", "datalog")


def project_modules() -> dict[str, Path]:
    """Installed module name -> file, for every module of the four packages."""
    mods = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(["lockstep", *parts])] = path
    return mods


def import_targets(name: str, path: Path) -> set[str]:
    """Every absolute name module `name` imports anywhere in its file (function-level imports included): a
    `from M import x` gives both M and M.x."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
    return found


def imported(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The project modules `name` imports anywhere in its file."""
    found = set()
    for t in import_targets(name, path):
        while t and t not in mods:
            t = t.rpartition(".")[0]
        if t and t != name:
            found.add(t)
    return found


def test_no_two_modules_import_each_other():
    mods = project_modules()
    graph = nx.DiGraph()
    for name, path in mods.items():
        for t in imported(name, path, mods):
            # a package's __init__ re-exporting its own modules is not a dependency between concepts
            if t.rpartition(".")[0] != name and name.rpartition(".")[0] != t:
                graph.add_edge(name, t)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == [], f"modules that import each other: {cycles}"


def test_the_language_imports_no_engine():
    """A module under specs/ imports nothing of Lockstep outside specs/: no engine (lockstep.checker, the Datalog
    evaluator included), no runtime, and not the public API (which imports the engines)."""
    for name, path in project_modules().items():
        if name.startswith("lockstep.specs."):
            bad = {t for t in import_targets(name, path)
                   if t.partition(".")[0] == "lockstep" and not t.startswith("lockstep.specs")}
            assert not bad, f"{name} imports {bad}: a spec or the language never imports an engine"


def test_the_import_check_sees_an_engine_imported_by_a_spec(tmp_path):
    spec = tmp_path / "plan.py"
    spec.write_text("def bind():\n    from ...checker.datalog.evaluate import Evaluator\n    import lockstep.api\n")
    found = import_targets("lockstep.specs.datalog.plan", spec)
    assert {"lockstep.checker.datalog.evaluate.Evaluator", "lockstep.api"} <= found


def test_no_system_model_prefixes_at_the_top_of_a_package():
    flat = [p.name for pkg in ("checker", "executors") for p in (ROOT / pkg).glob("*.py")
            if p.stem.split("_")[0] in MODELS]
    assert flat == [], f"group these in a subpackage per system model: {flat}"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def stand_in_wheel(out: Path, dist: str, package: str) -> Path:
    """A minimal wheel named like an existing PyPI distribution, owning the top-level `package`."""
    files = {f"{package}/__init__.py": f'ORIGIN = "{dist} from elsewhere"\n'.encode()}
    info = f"{dist}-1.0.dist-info"
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/top_level.txt"] = f"{package}\n".encode()
    record = [_record_line(n, d) for n, d in files.items()] + [f"{info}/RECORD,,"]
    path = out / f"{dist}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (found,) = out.glob("lockstep_mc-*.whl")
    return found


def test_the_wheel_installs_one_top_level_name(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"lockstep"}
    assert "lockstep/py.typed" in names
    assert "lockstep/specs/lang/actors/spec.py" in names and "lockstep/executors/rounds/process.py" in names


def test_the_wheel_holds_every_module_and_the_shipped_programs(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    missing = sorted(str(p.relative_to(ROOT)) for p in project_modules().values()
                     if f"lockstep/{p.relative_to(ROOT).as_posix()}" not in names)
    assert missing == [], f"not in the wheel (a folder without __init__.py?): {missing}"
    programs = sorted(p.name for p in (ROOT / "specs" / "datalog" / "programs").glob("*.dl"))
    assert programs and all(f"lockstep/specs/datalog/programs/{p}" in names for p in programs)


def test_the_wheel_installs_beside_distributions_named_checker_and_specs(wheel, tmp_path):
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", "--no-index"]
    others = [stand_in_wheel(tmp_path, "checker", "checker"), stand_in_wheel(tmp_path, "specs", "specs")]
    subprocess.run([*pip, *map(str, others)], check=True, capture_output=True, timeout=120)
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True, timeout=120)
    probe = ("import checker, specs, lockstep, os; print(checker.ORIGIN); print(specs.ORIGIN); "
             "print(lockstep.__version__); print(os.path.isfile(os.path.join(os.path.dirname(lockstep.__file__), "
             "'checker', 'cli.py')))")
    run = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert run.returncode == 0, run.stderr
    from lockstep import __version__

    assert run.stdout.splitlines() == ["checker from elsewhere", "specs from elsewhere", __version__, "True"]
