"""What a `lockstep run` command says and returns when the user interrupted the run (SIGINT, Ctrl-C)."""

from __future__ import annotations

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


def interrupted_exit(seconds: float | None, code: int, trace: str | None = None) -> int:
    """A run command's exit code: `code` (its validation's), unless the user interrupted the run `seconds` into it:
    then say so, and exit 130, or 1 if what was recorded up to then is already a violation."""
    if seconds is None:
        return code
    kept = f"; the trace {trace} is marked interrupted and keeps what was recorded" if trace else ""
    print(f"Interrupted: the run was stopped {seconds:.2f} s in (SIGINT){kept}")
    return code if code == 1 else EXIT_INTERRUPTED
