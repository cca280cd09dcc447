"""Two-phase commit, as in the TLA+ Examples `TwoPhase` spec (Lamport; after Gray).

Source: github.com/tlaplus/Examples, specifications/transaction_commit/TwoPhase.tla.
A transaction manager (TM) and resource managers (RMs) exchange Prepared, Commit and Abort
messages; messages are never lost or removed, so `msgs` only grows. TLC, RM = 3: 288
distinct states, 1146 generated, depth 11, and `TPConsistent` holds.

Deviations: none in behaviour. Names follow Python style (`rm_state` for `rmState`); the
type invariant `TPTypeOK` is implied by the field types and checked on every assignment.
"""

from specs.lang import And, Enum, ForAll, Map, Not, Range, Record, Set, Spec, Union, Var, action, invariant, require

RM = Range("rm", default=3, symmetric=True)

Prepared = Record("Prepared", rm=RM)
Commit = Record("Commit")
Abort = Record("Abort")
Message = Union(Prepared, Commit, Abort)


class TwoPhase(Spec):
    """Two-phase commit (TLA+ Examples TwoPhase)."""

    rm_state = Map(RM, Enum("working", "prepared", "committed", "aborted"), init="working")
    tm_state = Var(Enum("init", "committed", "aborted"), init="init")
    tm_prepared = Set(RM)
    msgs = Set(Message)

    @action
    def tm_rcv_prepared(s, r: RM):
        require(s.tm_state == "init", s.msgs.contains(Prepared(r)))
        s.tm_prepared = s.tm_prepared.add(r)

    @action
    def tm_commit(s):
        require(s.tm_state == "init", ForAll(RM, lambda r: s.tm_prepared.contains(r)))
        s.tm_state = "committed"
        s.msgs = s.msgs.add(Commit())

    @action
    def tm_abort(s):
        require(s.tm_state == "init")
        s.tm_state = "aborted"
        s.msgs = s.msgs.add(Abort())

    @action
    def rm_prepare(s, r: RM):
        require(s.rm_state[r] == "working")
        s.rm_state[r] = "prepared"
        s.msgs = s.msgs.add(Prepared(r))

    @action
    def rm_choose_to_abort(s, r: RM):
        require(s.rm_state[r] == "working")
        s.rm_state[r] = "aborted"

    @action
    def rm_rcv_commit_msg(s, r: RM):
        require(s.msgs.contains(Commit()))
        s.rm_state[r] = "committed"

    @action
    def rm_rcv_abort_msg(s, r: RM):
        require(s.msgs.contains(Abort()))
        s.rm_state[r] = "aborted"

    @invariant
    def consistent(s):
        """TPConsistent: no RM has committed while another has aborted."""
        return ForAll(RM, RM, lambda r1, r2: Not(And(s.rm_state[r1] == "aborted", s.rm_state[r2] == "committed")))
