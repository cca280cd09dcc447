"""Build generated C into shared libraries with the system's C compiler, cached per user, loaded with ctypes.

The vector engine's compiled loops are C: a fixed runtime (`runtime`) and one kernel per spec
(`fused`), generated from the spec's terms. A library is named by the hash of its source and the
compiler, and kept in a cache directory private to its owner (`cache_dir`), so a spec compiles once
per machine (about half a second) and later runs load it in a millisecond. Without a C compiler
(`compiler()` is None) the engine runs the same loops as numpy passes, with the same results.
ctypes releases the GIL during each call, so threads of one search run the loops in parallel.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading

FLAGS = ["-O2", "-shared", "-fPIC", "-std=c99", "-fno-strict-aliasing"]
TIMEOUT = 300  # seconds a compilation may take


class BuildError(Exception):
    """The compiler failed or is missing (said why)."""


def compiler() -> str | None:
    """The C compiler: `$CC`, else `cc`, `gcc` or `clang` on the PATH; None if there is none."""
    cc = os.environ.get("CC")
    if cc:
        return shutil.which(cc)
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


def cache_dir() -> str | None:
    """The directory for built libraries, private to this user (created 0700; refused if another user
    owns it or may write to it); None if that cannot be ensured."""
    root = os.environ.get("LOCKSTEP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "lockstep")
    path = os.path.join(root, "kernels")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        for d in (root, path):
            st = os.stat(d)
            if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return None
    except OSError:
        return None
    return path


class Library:
    """One C source, built (or found built) and loaded."""

    def __init__(self, source: str, stem: str):
        self.source = source
        cc = compiler()
        if cc is None:
            raise BuildError("no C compiler (set CC, or install cc, gcc or clang)")
        self.cc = cc
        digest = hashlib.sha256("\n".join([cc, *FLAGS, source]).encode()).hexdigest()[:24]
        self.name = f"{stem}_{digest}.so"
        self._dir = cache_dir()
        self._proc: subprocess.Popen | None = None
        self._kill_on_cancel = True
        self._lock = threading.Lock()

    def path(self) -> str | None:
        """Where the built library is, if it is built."""
        if self._dir is None:
            return None
        p = os.path.join(self._dir, self.name)
        return p if os.path.exists(p) else None

    def build(self) -> str:
        """Compile the library (unless already built); its path. The compiler runs in a child process that
        also moves the library into the cache, so a build still running when this process ends completes
        for the next one. Another process may build the same library at the same time: each writes its own
        file and renames it into place."""
        done = self.path()
        if done:
            return done
        private = self._dir is not None
        where = self._dir or tempfile.mkdtemp(prefix="lockstep-kernels-")
        fd, src = tempfile.mkstemp(dir=where, suffix=".c")
        with os.fdopen(fd, "w") as f:
            f.write(self.source)
        final = os.path.join(where, self.name)
        env = {**os.environ, "SRC": src, "TMP": src[:-2] + ".so", "OUT": final}
        script = '"$0" "$@" -o "$TMP" "$SRC" && mv -f -- "$TMP" "$OUT"; rc=$?; rm -f -- "$SRC" "$TMP"; exit $rc'
        with self._lock:
            self._proc = subprocess.Popen(["/bin/sh", "-c", script, self.cc, *FLAGS], env=env, text=True,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
            self._kill_on_cancel = not private
        try:
            out, _ = self._proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired as e:
            _kill(self._proc)
            raise BuildError(f"compiling took more than {TIMEOUT} s") from e
        if self._proc.returncode != 0 or not os.path.exists(final):
            raise BuildError(f"{os.path.basename(self.cc)} failed on generated code: {(out or '').strip()[-2000:]}")
        return final

    def cancel(self) -> None:
        """Stop waiting for a build in progress: it goes on, detached, and fills the cache for the next search
        (killed instead when there is no cache to fill)."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None and self._kill_on_cancel:
                _kill(self._proc)

    def load(self) -> ctypes.CDLL:
        """Build if needed, and load."""
        return ctypes.CDLL(self.build())


def _kill(proc: subprocess.Popen) -> None:
    """Kill a build: the shell and the compiler under it (they have a process group of their own)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class Background:
    """Libraries built (each by its own compiler process, at once) and loaded on threads while the caller
    goes on."""

    def __init__(self, libs: list[Library]):
        self.libs = libs
        self.result: list[ctypes.CDLL | None] = [None] * len(libs)
        self.error: str | None = None
        self._threads = [threading.Thread(target=self._run, args=(k,), name="lockstep-cc", daemon=True)
                         for k in range(len(libs))]
        for t in self._threads:
            t.start()

    def _run(self, k: int) -> None:
        try:
            self.result[k] = self.libs[k].load()
        except (BuildError, OSError) as e:
            self.error = str(e)

    def done(self) -> bool:
        return not any(t.is_alive() for t in self._threads)

    def wait(self) -> None:
        for t in self._threads:
            t.join()

    def cancel(self) -> None:
        """Stop waiting: a library being compiled finishes on its own (see `Library.cancel`), and these daemon
        threads end with it or with the process."""
        for lib in self.libs:
            lib.cancel()
