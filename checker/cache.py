"""The per-user cache of compiled code: the vector engine's C kernels and numba's machine code.

What the cache holds is loaded and run, so it is used only once it is shown private
(`safeio.private_directory`: the user's own directory, which no other user can write or swap), and
only through the descriptor that check opened, never by resolving its path again.
"""

from __future__ import annotations

import os

from .safeio import FileRefused, private_directory


def root() -> str:
    """`$LOCKSTEP_CACHE`, else `$XDG_CACHE_HOME/lockstep`, else `~/.cache/lockstep`."""
    return os.environ.get("LOCKSTEP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "lockstep")


def open_dir(sub: str) -> int:
    """An open descriptor of the cache's directory `sub` (made, mode 0700, if missing); FileRefused saying why
    and how to fix it if another user could change what it holds."""
    path = os.path.join(root(), sub)
    try:
        return private_directory(path)
    except OSError as e:
        chosen = "LOCKSTEP_CACHE" if os.environ.get("LOCKSTEP_CACHE") else \
            "XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "the home directory"
        raise FileRefused(f"cache directory {path} (from {chosen}) is not private: {e.strerror}; set LOCKSTEP_CACHE "
                          "to a directory of your own", e.errno or 0) from None


_numba: list[str | None] = []  # numba's cache directory, once decided in this process


def numba_dir() -> str | None:
    """Where numba keeps compiled kernels: the cache's `numba` directory, through its descriptor
    (`/proc/self/fd/N`, held open for the life of the process), also set as numba's `CACHE_DIR` so that numba
    looks nowhere else; None if it is not private (then nothing is cached)."""
    if not _numba:
        try:
            fd = open_dir("numba")
        except OSError:
            _numba.append(None)
        else:
            from numba.core import config

            config.CACHE_DIR = f"/proc/self/fd/{fd}"
            _numba.append(config.CACHE_DIR)
    return _numba[0]
