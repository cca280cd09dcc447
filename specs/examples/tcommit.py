"""Transaction commit, as in the TLA+ Examples `TCommit` spec (Lamport).

Source: github.com/tlaplus/Examples, specifications/transaction_commit/TCommit.tla. Each
resource manager (RM) prepares, then all commit or all abort. TLC, RM = 3: 34 distinct
states, 94 generated, depth 7; `TCConsistent` holds.

Deviations: TLA+'s `Decide(r)` is a disjunction of a commit and an abort step; here they are
two actions, `decide_commit` and `decide_abort`, which generate the same successors. The
all-committed and all-aborted states have no successors; TLC's published counts come from a
run without deadlock checking, so check with `--no-deadlock`.
"""

from ..lang import And, Enum, ForAll, Map, Not, Or, Range, Spec, action, invariant, require

RM = Range("rm", default=3, symmetric=True)
RMState = Enum("working", "prepared", "committed", "aborted")


class TCommit(Spec):
    """Transaction commit (TLA+ Examples TCommit): all RMs commit or all abort."""

    rm_state = Map(RM, RMState, init="working")

    def can_commit(s):
        return ForAll(RM, lambda r: Or(s.rm_state[r] == "prepared", s.rm_state[r] == "committed"))

    def not_committed(s):
        return ForAll(RM, lambda r: s.rm_state[r] != "committed")

    @action
    def prepare(s, r: RM):
        require(s.rm_state[r] == "working")
        s.rm_state[r] = "prepared"

    @action
    def decide_commit(s, r: RM):
        require(s.rm_state[r] == "prepared", TCommit.can_commit(s))
        s.rm_state[r] = "committed"

    @action
    def decide_abort(s, r: RM):
        require(Or(s.rm_state[r] == "working", s.rm_state[r] == "prepared"), TCommit.not_committed(s))
        s.rm_state[r] = "aborted"

    @invariant
    def consistent(s):
        """TCConsistent: no RM has aborted while another has committed."""
        return ForAll(RM, RM, lambda r1, r2: Not(And(s.rm_state[r1] == "aborted", s.rm_state[r2] == "committed")))
