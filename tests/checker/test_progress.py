"""Every long-running command shows progress: searches of slow specs, and calls that cannot report
themselves (a z3 query, a sparse solve) get a heartbeat."""

from __future__ import annotations

import io
import time

from lockstep.checker.explicit import Options, check
from lockstep.checker.plain_model import PlainModel, canonical_text
from lockstep.checker.progress import Heartbeat, Progress


class SlowLevel:
    """One level of 400 initial states whose successors take 2 ms each to compute (none exist)."""

    def init(self):
        return list(range(400))

    def next(self, state):
        time.sleep(0.002)
        return []


def test_a_slow_plain_spec_reports_progress_within_a_level():
    stream = io.StringIO()
    model = PlainModel(SlowLevel(), "slow", "SlowLevel", {})
    res = check(model, Options(deadlock=False), Progress(interval=0.1, stream=stream))
    assert res.distinct == 400
    assert stream.getvalue().count("progress: ") >= 3


def test_a_heartbeat_speaks_while_a_call_runs_and_stops_after_it():
    said: list[str] = []
    with Heartbeat(said.append, "solving", interval=0.05) as beat:
        deadline = time.monotonic() + 60
        while len(said) < 3 and time.monotonic() < deadline:  # wait for three beats, however loaded the machine
            time.sleep(0.01)
    n = len(said)
    assert n >= 3 and said[0].startswith("solving, ")
    assert beat._thread is not None and not beat._thread.is_alive()  # the exit joined it: nothing more is said
    assert len(said) == n
    with Heartbeat(None, "quiet", interval=0.01) as quiet:
        assert quiet._thread is None


def test_count_vectors_keep_their_canonical_text():
    """The fast path for integer tuples (population configurations) gives the text the general one gives."""
    from collections import namedtuple

    Config = namedtuple("Config", "a b c")
    assert canonical_text((1, 2, 3)) == "(1,2,3)" and canonical_text(Config(1, 0, 2)) == "Config(1,0,2)"
    assert canonical_text((True, 1)) == "(True,1)" and canonical_text(()) == "()"


def test_prove_and_analyze_report_progress_unless_quiet(cli):
    r = cli("prove", "two_phase", "--invariant", "consistent", "--quiet")
    assert r.code == 3 and "progress" not in r.err
    r = cli("analyze", "phase_clock", "-p", "n=3", "--quiet")
    assert r.code == 0 and "progress" not in r.err
