"""A reader that goes away (`lockstep check SPEC | head -3`) ends a command quietly with exit 141, as a SIGPIPE would:
never a false message (such as "the spec's code called sys.exit(1)"), a traceback or another exit code, whichever
command it is and whether its results (stdout) or its progress (stderr) lose their reader.

The closed pipe is made without timing: the read end is closed before the command starts, or the command's output is
larger than the pipe can hold while the reader takes one byte and closes it (the rest must then fail to be written)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.render.text import printer
from lockstep.trace import Log
from tests.conftest import model_path

LOCKSTEP = [sys.executable, "-m", "lockstep"]
SIGPIPE_EXIT = 141
PIPE_SIZE = 4096  # the smallest pipe Linux makes; the long counterexample below prints about 12 KB

LONG_COUNT = textwrap.dedent('''
    from lockstep.specs.lang import Int, Spec, Var, action, invariant


    class LongCount(Spec):
        """Its counterexample has 300 steps."""

        x = Var(Int(0, 300), init=0)

        @action
        def inc(s):
            s.x = s.x + 1

        @invariant
        def below(s):
            return s.x < 300
''')


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("pipes")
    check(load_model("peterson_buggy"), Options()).violation.trace.save(str(d / "cex.json"))
    (d / "long_count.py").write_text(LONG_COUNT)
    with Log(d / "n0.jsonl", node=0) as a, Log(d / "n1.jsonl", node=1) as b:  # logs of an implementation
        b.event("receive", {"v": 1}, {"got": 1}, after=a.event("send", {"v": 1}, {"sent": 1}))
    return d


def closed_pipe() -> int:
    """The write end of a pipe nobody reads."""
    r, w = os.pipe()
    os.close(r)
    return w


def run_closed(args: list[str], cwd, stream: str = "stdout") -> subprocess.CompletedProcess:
    """Run lockstep with `stream` writing into a closed pipe (the other captured)."""
    w = closed_pipe()
    try:
        if stream == "stdout":
            return subprocess.run(LOCKSTEP + args, stdout=w, stderr=subprocess.PIPE, text=True, cwd=cwd, timeout=300)
        return subprocess.run(LOCKSTEP + args, stdout=subprocess.PIPE, stderr=w, text=True, cwd=cwd, timeout=300)
    finally:
        os.close(w)


def only_progress(stderr: str) -> bool:
    return all(line.startswith(("progress:", "building ")) for line in stderr.splitlines())


COMMANDS = [
    ["--help"],  # argparse's own output: help, a command's help, the version
    ["check", "--help"],
    ["--version"],
    ["list"],
    ["check", "peterson_buggy"],  # a violation: its trace is printed through rich
    ["check", "peterson"],
    ["check", "peterson_buggy", "--engine", "smt", "--depth", "8"],
    ["simulate", "peterson_buggy", "--runs", "20"],
    ["prove", f"{model_path('induction.py')}:Hop", "--invariant", "zero"],
    ["replay", "cex.json", "--full"],
    ["analyze", "phase_clock_buggy", "--measure", "reach"],
    ["run", "bracha", "--duration", "0.5", "--trace", "run.jsonl"],
    ["validate", "n0.jsonl", "n1.jsonl", "--spec", model_path("relay_log.py"), "--map", model_path("relay_mapping.py"),
     "--max-internal", "1", "--format", "json"],  # JSON output
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_a_closed_stdout_ends_the_command_quietly(files, args):
    p = run_closed(args, files)
    assert p.returncode == SIGPIPE_EXIT, p.stderr
    assert only_progress(p.stderr), p.stderr


@pytest.mark.parametrize("args", [["check", "peterson_buggy"], ["run", "bracha", "--duration", "0.5", "--no-trace"]],
                         ids=lambda a: a[0])
def test_a_closed_stderr_ends_the_command_quietly(files, args):
    p = run_closed(args, files, stream="stderr")
    assert p.returncode == SIGPIPE_EXIT, p.stdout


def test_a_reader_that_leaves_during_the_trace_ends_the_command_quietly(files):
    """`check SPEC | head -7`: the reader leaves once the trace listing has begun. The listing is about 12 KB and the
    pipe holds 4 KB, so the listing itself (written by rich, line by line) meets the closed pipe, whatever the timing."""
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    proc = subprocess.Popen(LOCKSTEP + ["check", "long_count.py:LongCount", "--quiet"], stdout=w,
                            stderr=subprocess.PIPE, text=True, cwd=files)
    os.close(w)
    seen = b""
    while b"0  init" not in seen:  # the first line of the listing
        chunk = os.read(r, 64)
        assert chunk, seen
        seen += chunk
    os.close(r)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == SIGPIPE_EXIT and err == "", err


def test_a_trace_printed_into_a_closed_pipe_raises_broken_pipe():
    """rich's own console would exit the process with status 1 (read as a violation, or as spec code exiting)."""

    class Gone:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

        def isatty(self) -> bool:
            return False

    say = printer(Gone())  # type: ignore[arg-type]
    with pytest.raises(BrokenPipeError):
        say("0  init")
