"""The install: size and time of a fresh virtual environment with Lockstep, the core alone and with extras.

First the wheel is built (`pip wheel`, from a copy of this checkout without its build products), as a
release is. Then for each row, in a new temporary directory: `python -m venv`, then `pip install` of that
wheel with the extras of the row, as a user's `pip install lockstep-mc` installs a release, with an empty
pip cache, from the index that pip is configured with. Then, in that environment, `lockstep --version` and
a first and a second `lockstep check two_phase` (with an empty kernel cache, so the first pays what a
first check pays). The size is the disk space of the whole environment (as `du`, in MiB); the largest
installed distributions are listed for the first row. The core's targets: at most 350 MiB and 60 s of
`pip install`.

    python -m bench.install [--extras core,all] [--top 8]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILT = (".git", ".venv", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis", "out")
TARGET_MIB, TARGET_SECONDS = 350, 60.0


def disk_usage(path: str) -> int:
    """Bytes of disk `path` takes, each file counted once (as `du`), links not followed."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            st = os.lstat(os.path.join(top, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total + os.lstat(path).st_blocks * 512


def timed(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child and its children, output) of one command, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.stdout


def largest(venv: str, top: int) -> list[tuple[str, int]]:
    """The `top` largest distributions installed in `venv`, with the bytes of their files."""
    purelib = subprocess.run([os.path.join(venv, "bin", "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip()
    sizes = []
    for dist in metadata.distributions(path=[purelib]):
        size = 0
        for f in dist.files or []:
            try:
                size += os.lstat(dist.locate_file(f)).st_blocks * 512
            except OSError:
                pass
        sizes.append((dist.metadata["Name"], size))
    return sorted(sizes, key=lambda s: -s[1])[:top]


def wheel(into: str) -> tuple[str, float]:
    """The wheel of this checkout, built in `into` (its path, and the seconds it took)."""
    source = os.path.join(into, "lockstep-mc")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*BUILT), symlinks=True)
    env = {**os.environ, "PIP_CACHE_DIR": os.path.join(into, "pip-cache"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    took = timed([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", into, source], env, into)[0]
    shutil.rmtree(source)
    (built,) = [f for f in os.listdir(into) if f.endswith(".whl")]
    return os.path.join(into, built), took


def measure(release: str, extras: str, top: int) -> dict:
    """One row: a fresh venv with the wheel `release`, the core (`extras` "core") or the core and `extras`."""
    target = release if extras == "core" else f"{release}[{extras}]"
    with tempfile.TemporaryDirectory(prefix="lockstep-install-") as tmp:
        venv = os.path.join(tmp, "venv")
        env = {**os.environ, "PIP_CACHE_DIR": os.path.join(tmp, "pip-cache"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
               "LOCKSTEP_CACHE": os.path.join(tmp, "lockstep-cache")}
        env.pop("VIRTUAL_ENV", None)
        row: dict = {"extras": extras}
        row["venv"] = timed([sys.executable, "-m", "venv", venv], env, tmp)[0]
        row["pip"], row["pip_cpu"], _ = timed([os.path.join(venv, "bin", "pip"), "install", "-q", target], env, tmp)
        row["mib"] = disk_usage(venv) / 2**20
        lockstep = os.path.join(venv, "bin", "lockstep")
        row["version"], _, out = timed([lockstep, "--version"], env, tmp)
        row["name"] = out.strip()
        row["first"] = timed([lockstep, "check", "two_phase", "--quiet"], env, tmp)[0]
        row["second"] = timed([lockstep, "check", "two_phase", "--quiet"], env, tmp)[0]
        row["largest"] = largest(venv, top)
        shutil.rmtree(venv)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extras", default="core,all",
                    help="rows, comma-separated: core, or an extra such as all or plots (default core,all)")
    ap.add_argument("--top", type=int, default=8, help="largest distributions listed for the first row (default 8)")
    args = ap.parse_args()
    print(f"Fresh venv + pip install of the wheel of {ROOT} (Python {sys.version.split()[0]}, load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="lockstep-wheel-") as into:
        release, took = wheel(into)
        print(f"{os.path.basename(release)} built in {took:.1f} s (as a release is: not part of a user's install)")
        print(f"{'install':<10}{'venv s':>8}{'pip install s':>15}{'pip CPU s':>11}{'size MiB':>10}{'--version s':>13}"
              f"{'1st check s':>13}{'2nd check s':>13}")
        for extras in args.extras.split(","):
            row = measure(release, extras.strip(), args.top)
            rows.append(row)
            print(f"{row['extras']:<10}{row['venv']:>8.1f}{row['pip']:>15.1f}{row['pip_cpu']:>11.1f}{row['mib']:>10.0f}"
                  f"{row['version']:>13.2f}{row['first']:>13.2f}{row['second']:>13.2f}", flush=True)
    first = rows[0]
    print(f"\nLargest distributions ({first['extras']}, {first['name']}): "
          + ", ".join(f"{name} {size / 2**20:.0f}" for name, size in first["largest"]) + " MiB")
    core = next((r for r in rows if r["extras"] == "core"), None)
    if core is not None:
        print(f"core: {core['mib']:.0f} MiB (target ≤ {TARGET_MIB}), pip install {core['pip']:.1f} s "
              f"(target ≤ {TARGET_SECONDS:.0f} s), install to first check {core['venv'] + core['pip'] + core['first']:.1f} s")


if __name__ == "__main__":
    main()
