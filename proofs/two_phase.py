"""Two-phase commit (specs/examples/two_phase.py): `consistent` is an inductive invariant once strengthened.

TPConsistent — no RM has committed while another has aborted — holds in every reachable state
but is not inductive on its own: a state that satisfies it can step to one that does not (an RM
receives a Commit message while another has aborted, in a state no run reaches). The six
strengthening invariants declared in the spec rule such states out; together with them,
`consistent` holds initially and every step preserves it, for 3, 4 and 5 resource managers.
"""

from __future__ import annotations

import sys

from lockstep.checker.loader import load_model
from lockstep.checker.smt import induction
from lockstep.checker.typed_model import TypedModel

from .facts import PROVED, REFUTED, UNKNOWN, Fact, Outcome, main

GOAL = "consistent"
STRENGTHENING = [
    "commit_msg_means_tm_committed",
    "abort_msg_means_tm_aborted",
    "committed_rm_saw_commit",
    "commit_msg_means_all_prepared",
    "tm_prepared_were_sent",
    "prepared_rm_aborts_only_on_abort_msg",
]
SIZES = (3, 4, 5)


def inductive(rm: int, assumed: list[str]) -> Outcome:
    """Whether `consistent`, with `assumed`, is inductive for TwoPhase with `rm` resource managers."""
    model = load_model("two_phase", {"rm": rm})
    assert isinstance(model, TypedModel)
    res = induction.prove(model, GOAL, assumed)
    if res.verdict == induction.PROVED:
        return Outcome(PROVED)
    if res.verdict == induction.NOT_INDUCTIVE and res.trace is not None:
        first, last = res.trace.steps[0], res.trace.steps[-1]
        start = ", ".join(f"{k}={v}" for k, v in first.shown.items())
        return Outcome(REFUTED, f"from {start}, {last.label} gives rm_state={last.shown['rm_state']}")
    return Outcome(REFUTED if res.verdict == induction.REFUTED else UNKNOWN, res.reason)


FACTS = [
    *(Fact(f"TwoPhase rm={rm}: consistent alone is inductive", REFUTED, lambda rm=rm: inductive(rm, []))
      for rm in SIZES),
    *(Fact(f"TwoPhase rm={rm}: consistent with its {len(STRENGTHENING)} strengthening invariants is inductive",
           PROVED, lambda rm=rm: inductive(rm, STRENGTHENING)) for rm in SIZES),
]


if __name__ == "__main__":
    sys.exit(main(FACTS))
