"""The per-user cache of compiled code: the C kernels of the vector engine and of the population simulator.

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

