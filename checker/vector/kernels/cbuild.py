"""Build generated C into shared libraries with the system's C compiler, cached per user, loaded with ctypes.

The vector engine's compiled loops are C: a fixed runtime (`runtime`) and one kernel per spec
(`fused`), generated from the spec's terms. A library is named by the hash of its source and the
compiler, and kept in the per-user cache (`lockstep.checker.cache`: used only once shown private, and only
through the descriptor that check opened), so a spec compiles once per machine (about half a second)
and later runs load it in a millisecond. Without a C compiler
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

from ... import cache

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


class Library:
    """One C source, built (or found built) and loaded. The library lives in the per-user cache (`cache`), opened
    once and used only through that descriptor; where the cache is not private (`refusal` says why) it is built
    for this process in a directory of its own and removed once loaded."""

    def __init__(self, source: str, stem: str):
        self.source = source
        self._dir: int | None = None  # the cache's descriptor (set before anything can fail: `__del__` closes it)
        self._scratch: int | None = None  # this process's own directory, where there is no private cache
        self._scratch_path = ""
        cc = compiler()
        if cc is None:
            raise BuildError("no C compiler (set CC, or install cc, gcc or clang)")
        self.cc = cc
        digest = hashlib.sha256("\n".join([cc, *FLAGS, source]).encode()).hexdigest()[:24]
        self.name = f"{stem}_{digest}.so"
        self.refusal: str | None = None
        try:
            self._dir = cache.open_dir("kernels")
        except OSError as e:
            self.refusal = str(e)
        self._proc: subprocess.Popen | None = None
        self._kill_on_cancel = True
        self._lock = threading.Lock()

    def __del__(self) -> None:
        if self._dir is not None:
            os.close(self._dir)
        self._drop_scratch()

    def cached(self) -> bool:
        """Whether the library is built in the cache."""
        return self._dir is not None and self._built_in(self._dir)

    def _built_in(self, store: int) -> bool:
        try:
            return stat.S_ISREG(os.stat(self.name, dir_fd=store, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            return False

    def _store(self) -> int:
        """The directory the library is built into: the cache, else a new one (mode 0700) of this process's."""
        if self._dir is not None:
            return self._dir
        if self._scratch is None:
            self._scratch_path = tempfile.mkdtemp(prefix="lockstep-kernels-")
            self._scratch = os.open(self._scratch_path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        return self._scratch

    def _drop_scratch(self) -> None:
        """Remove this process's own build directory (a loaded library stays mapped)."""
        if self._scratch is not None:
            shutil.rmtree(self._scratch_path, ignore_errors=True)
            os.close(self._scratch)
            self._scratch = None

    def build(self) -> None:
        """Compile the library (unless already built). The compiler runs in a child process, in a new directory
        (mode 0700) of the library's directory, and that child also renames the library into place, so a build
        still running when this process ends completes for the next one. Another process may build the same
        library at the same time: each builds in its own directory and renames its file into place."""
        if self.cached():
            return
        store = self._store()
        private = self._dir is not None
        build = f".build-{os.urandom(8).hex()}"
        os.mkdir(build, 0o700, dir_fd=store)
        bfd = os.open(build, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=store)
        try:
            fd = os.open("kernel.c", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=bfd)
            with os.fdopen(fd, "w") as f:
                f.write(self.source)
            env = {**os.environ, "OUT": self.name, "BUILD": build}
            script = ('"$0" "$@" -o kernel.so kernel.c && mv -f -- kernel.so "../$OUT"; rc=$?; '
                      'rm -f -- kernel.c kernel.so; rmdir -- "../$BUILD"; exit $rc')
            with self._lock:
                self._proc = subprocess.Popen(["/bin/sh", "-c", script, self.cc, *FLAGS], env=env, text=True,
                                              cwd=f"/proc/self/fd/{bfd}", pass_fds=(bfd,), stdout=subprocess.PIPE,
                                              stderr=subprocess.STDOUT, start_new_session=True)
                self._kill_on_cancel = not private
        finally:
            os.close(bfd)
        try:
            out, _ = self._proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired as e:
            _kill(self._proc)
            raise BuildError(f"compiling took more than {TIMEOUT} s") from e
        if self._proc.returncode != 0 or not self._built_in(store):
            raise BuildError(f"{os.path.basename(self.cc)} failed on generated code: {(out or '').strip()[-2000:]}")

    def cancel(self) -> None:
        """Stop waiting for a build in progress: it goes on, detached, and fills the cache for the next search
        (killed instead when there is no cache to fill)."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None and self._kill_on_cancel:
                _kill(self._proc)
                self._drop_scratch()

    def load(self) -> ctypes.CDLL:
        """Build if needed, and load: the library must be a file of the user's that only the user may write, and
        is loaded through the directory's descriptor (`/proc/self/fd/N/name`), never by resolving a path again."""
        self.build()
        store = self._store()
        try:
            st = os.stat(self.name, dir_fd=store, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                raise BuildError(f"{self.name} in the kernel cache is not a file of yours that only you may write: "
                                 "not loaded")
            return ctypes.CDLL(f"/proc/self/fd/{store}/{self.name}")
        finally:
            self._drop_scratch()


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
