"""The actor system model: compiled specs against independent models, network semantics, faults,
Byzantine processes, symmetry, seeded bugs, and the errors a misuse produces."""

from __future__ import annotations

import pytest

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model
from lockstep.checker.typed_model import TypedModel
from lockstep.specs.lang import Enum, Int, Range, Record, SpecError, Union, action, build_program, require
from lockstep.specs.lang.actors import ActorSpec, Local, broadcast, observe, on_message, on_start, on_timeout, send, set_timer
from tests.conftest import model_path
from tests.specs import handwritten_actors as hand


def run(spec: str, deadlock: bool = False, symmetry: bool = False, max_depth: int | None = None, **params: int):
    return check(load_model(spec, params, symmetry=symmetry), Options(deadlock=deadlock, max_depth=max_depth))


# ------------------------------------------------------------------------ against hand-written models


@pytest.mark.parametrize("rm, crashes", [(1, 1), (2, 1), (2, 0), (3, 1)])
def test_two_phase_commit_matches_a_handwritten_model(rm, crashes):
    res = run("two_phase_commit", rm=rm, crashes=crashes)
    assert res.verdict == "holds"
    assert (res.distinct, res.generated, res.depth) == hand.two_phase_commit(rm, crashes)


@pytest.mark.parametrize("n, tokens, laps", [(3, 3, 4), (4, 5, 3), (2, 1, 2)])
def test_token_ring_matches_a_handwritten_model(n, tokens, laps):
    res = run("token_ring", n=n, tokens=tokens, laps=laps)
    assert res.verdict == "holds"
    assert (res.distinct, res.generated, res.depth) == hand.token_ring(n, tokens, laps)


def test_two_phase_commit_known_counts():
    """rm = 2 with a coordinator crash: 716 distinct, 2,208 generated, depth 11 (the hand-written model agrees)."""
    res = run("two_phase_commit")
    assert (res.verdict, res.distinct, res.generated, res.depth) == ("holds", 716, 2208, 11)


def test_quiescent_states_are_deadlocks_when_checked():
    """Once every message is handled and every timer has fired, nothing is enabled: a deadlock in TLC's sense."""
    res = run("two_phase_commit", deadlock=True)
    assert res.violation.kind == "deadlock"


# ------------------------------------------------------------------------------------ seeded bugs


def test_eager_commit_on_timeout_is_caught():
    res = run("two_phase_commit_eager")
    v = res.violation
    assert v.kind == "invariant" and v.name == "follows_tm"
    assert [s.label for s in v.trace.steps[1:]] == ["deliver(src=0, dst=1, msg=Prepare())", "timeout(p=1, timer='timeout')"]
    assert v.trace.steps[-1].shown["rm_state"] == "{0: 'working', 1: 'committed', 2: 'working'}"


def test_eager_commit_breaks_consistency_too():
    model = load_model("two_phase_commit_eager", {}, invariants=["consistent"])
    res = check(model, Options(deadlock=False))
    assert res.violation.name == "consistent" and len(res.violation.trace.steps) - 1 == 3


def test_bracha_low_echo_quorum_is_caught():
    """Echo quorum f+1 = 2: an equivocating sender gets two correct processes to send ready for different values."""
    res = run("bracha_low_echo_quorum")
    v = res.violation
    assert v.kind == "invariant" and v.name == "ready_agreement"
    assert len(v.trace.steps) - 1 == 6
    assert v.trace.steps[-1].shown["readied"] in ("{0: None, 1: 1, 2: 0, 3: None}", "{0: None, 1: 0, 2: 1, 3: None}")


def test_bracha_correct_quorum_holds_to_depth_10():
    """The same adversary with the paper's quorum: no violation among all runs of 10 steps."""
    res = run("bracha_equivocating_sender", max_depth=10)
    assert res.verdict == "inconclusive" and res.violation is None and res.distinct > 100_000


def test_bracha_byzantine_relay_holds_to_depth_12():
    res = run("bracha_byzantine_relay", max_depth=12)
    assert res.verdict == "inconclusive" and res.violation is None


@pytest.mark.slow
def test_bracha_byzantine_relay_exhaustive():
    """n = 4, f = 1, process 3 lies: 772,720 distinct states, all properties hold."""
    res = run("bracha_byzantine_relay")
    assert (res.verdict, res.distinct, res.generated, res.depth) == ("holds", 772720, 6171382, 29)


@pytest.mark.slow
def test_bracha_equivocating_sender_exhaustive():
    """n = 4, f = 1, the sender equivocates: 12,642,176 distinct states, all properties hold (several minutes)."""
    res = run("bracha_equivocating_sender")
    assert (res.verdict, res.distinct, res.generated, res.depth) == ("holds", 12642176, 115982072, 28)


# ---------------------------------------------------------------------------- network semantics


def test_ordered_channels_need_room_for_two_messages():
    """Ordered: the TM's Prepare and Abort to one RM can be in one channel at once."""
    res = run("two_phase_commit", ordered=1)
    assert res.violation.kind == "assertion" and "channel capacity of 1" in res.violation.message
    assert "two_phase_commit.py" in res.violation.location
    res = run("two_phase_commit", ordered=1, capacity=2)
    assert res.verdict == "holds" and res.distinct < 716  # FIFO order removes interleavings


def test_lossy_and_duplicating_networks_add_behaviours():
    assert run("token_ring").distinct == 108
    lossy = run("token_ring", lossy=1)
    assert lossy.violation.name == "no_token_lost"
    assert lossy.violation.trace.steps[-1].label.startswith("drop(")
    assert run("two_phase_commit", lossy=1).verdict == "holds"  # safety survives message loss
    dup = run("two_phase_commit", duplicating=1)
    # delivered messages stay deliverable: more steps, but fewer distinct networks (they only grow)
    assert (dup.verdict, dup.distinct, dup.generated) == ("holds", 592, 3915)


class Twice(ActorSpec):
    """Process 0 sends process 1 the same message twice; process 1 counts what it receives."""

    Process = Range(2)
    Message = Record("Ping")
    got = Local(Int(0, 2), init=0)

    @on_start
    def start(p):
        if p.id == 0:
            send(1, Twice.Message())
            send(1, Twice.Message())

    @on_message
    def receive(p, src, m):
        p.got = p.got + 1


def test_bag_network_holds_copies_up_to_capacity():
    with pytest.raises(SpecError, match="start failed: a send exceeds the network's capacity of 1 message"):
        check(load_model("tests.specs.test_actors:Twice"), Options(deadlock=False))
    model = load_model("tests.specs.test_actors:Twice", {"capacity": 2})
    res = check(model, Options(deadlock=False))
    assert (res.verdict, res.distinct, res.depth) == ("holds", 3, 3)  # 2 copies in flight, then 1, then none
    net = model.prog.field("network").decode(model.initial_states()[0])
    assert net[Twice._types.envelope(0, 1, Twice.Message())] == 2


def test_crashes_parameter():
    assert run("two_phase_commit", crashes=0).distinct == 358
    prog = load_model("two_phase_commit", {"crashes": 0}).prog
    assert "crashed" not in [f.name for f in prog.fields]


# ------------------------------------------------------------------------------------- symmetry


def test_symmetry_reduces_a_symmetric_actor_spec():
    """Gossip, n = 3: 2^6 subsets of delivered hellos; up to relabelling, the 16 digraphs on 3 nodes."""
    spec = model_path("actor_gossip.py") + ":Gossip"
    full, reduced = run(spec), run(spec, symmetry=True)
    assert (full.verdict, full.distinct) == ("holds", 64)
    assert (reduced.verdict, reduced.distinct) == ("holds", 16)
    bug = run(model_path("actor_gossip.py") + ":GossipSelfish", symmetry=True)
    assert bug.violation.name == "not_self"


def test_byzantine_forger_sends_any_message_once():
    res = run(model_path("actor_gossip.py") + ":GossipWithForger")
    v = res.violation
    assert v.name == "zero_is_silent"
    assert [s.label.split("(")[0] for s in v.trace.steps[1:]] == ["forge", "deliver"]
    assert v.trace.steps[1].label.startswith("forge(src=0, dst=")
    prog = load_model(model_path("actor_gossip.py") + ":GossipWithForger").prog
    assert {t.action for t in prog.transitions} == {"deliver", "forge"}
    assert not [s for s in prog.system.steps if s.pid == 0]  # the Byzantine process runs no handler


def test_symmetry_is_refused_where_a_process_is_distinguished():
    """Process 0 counts pings, the others drop them: declared symmetric without fixing 0, the check
    refuses the spec; with 0 fixed, processes 1 and 2 are interchangeable."""

    class Leader(ActorSpec):
        Process = Range(3, symmetric=True)
        Message = Ping
        pings = Local(Int(0, 2), init=0)

        @on_start
        def start(p):
            broadcast(Ping(), include_self=False)

        @on_message
        def receive(p, src, m):
            if p.id == 0:
                p.pings = p.pings + 1

    with pytest.raises(SpecError, match="declared symmetric, but its steps are not"):
        TypedModel(build_program(Leader, {}), "leader", symmetry=True)

    class FixedLeader(Leader):
        Process = Range(3, symmetric=True, fixed=(0,))

    full = check(TypedModel(build_program(FixedLeader, {}), "leader"), Options(deadlock=False))
    reduced = check(TypedModel(build_program(FixedLeader, {}), "leader", symmetry=True), Options(deadlock=False))
    assert (full.verdict, reduced.verdict) == ("holds", "holds")
    assert (full.distinct, reduced.distinct) == (64, 36)


def test_byzantine_and_partly_crashable_processes_are_fixed():
    """A symmetric Process range also fixes the Byzantine ids and, when only some may crash, the crashable ones."""
    relay = load_model("bracha_byzantine_relay", {"f": 1}).prog.system.proc
    assert (relay.fixed, relay.movable) == ((0, 3), (1, 2))
    honest = load_model("bracha", {"f": 1}).prog.system.proc
    assert (honest.fixed, honest.movable) == ((0,), (1, 2, 3))

    class Crashy(ActorSpec):
        Process = Range(4, symmetric=True, fixed=(0,))
        Message = Ping
        max_crashes = 1
        crashable = (1, 2)
        x = Local(Int(0, 1), init=0)

        @on_message
        def receive(p, src, m):
            p.x = 1

    assert build_program(Crashy, {}).system.proc.fixed == (0, 1, 2)
    assert build_program(Crashy, {"crashes": 0}).system.proc.fixed == (0,)


# ----------------------------------------------------------------------------- the local steps


def test_local_steps_are_the_composed_handlers():
    prog = load_model("two_phase_commit", {"rm": 2}).prog
    sysm = prog.system
    kinds = sorted({(s.kind, s.pid) for s in sysm.steps})
    assert ("start", 0) in kinds and ("timeout", 2) in kinds
    delivers = [t for t in prog.transitions if t.action == "deliver"]
    assert len(delivers) == len([s for s in sysm.steps if s.kind == "message"])
    start0 = sysm.by_key[("start", 0, ())]
    assert [(d, m.tag) for _, d, m in start0.sends] == [(1, "Prepare"), (2, "Prepare")]
    assert sysm.timeouts_ms == {"timeout": 300}


# --------------------------------------------------------------------------------------- misuse

P = Range("n", default=2)
Ping = Record("Ping")


def build(cls):
    return build_program(cls, {})


def test_state_dependent_if_in_a_handler():
    class Bad(ActorSpec):
        Process = P
        Message = Ping
        x = Local(Int(0, 3), init=0)

        @on_message
        def receive(p, src, m):
            if p.x == 1:  # marker: python-if
                p.x = 2

    with pytest.raises(SpecError, match="`if`.*on a state-dependent value") as e:
        build(Bad)
    assert "test_actors.py" in str(e.value)


def test_send_to_a_non_process():
    class Bad(ActorSpec):
        Process = P
        Message = Ping
        x = Local(Int(0, 3), init=0)

        @on_start
        def start(p):
            send(5, Ping())

    with pytest.raises(SpecError, match=r"send\(\) to 5, which is not a process id \(0..1\)"):
        build(Bad)


def test_send_outside_a_handler():
    with pytest.raises(SpecError, match="send\\(\\) is used outside of an actor handler"):
        send(0, Ping())


def test_unknown_timer_and_missing_timers():
    class NoTimers(ActorSpec):
        Process = P
        Message = Ping
        x = Local(Int(0, 3), init=0)

        @on_start
        def start(p):
            set_timer("t")

    with pytest.raises(SpecError, match="declares no timers"):
        build(NoTimers)

    class WrongTimer(NoTimers):
        Timer = Enum("tick")

    with pytest.raises(SpecError, match="'t' is not a timer of WrongTimer"):
        build(WrongTimer)


def test_timeout_handler_without_timers():
    class Bad(ActorSpec):
        Process = P
        Message = Ping
        x = Local(Int(0, 3), init=0)

        @on_timeout
        def tick(p, t):
            p.x = 1

    with pytest.raises(SpecError, match="has a timeout handler but declares no timers"):
        build(Bad)


def test_reserved_local_name_and_actions():
    with pytest.raises(SpecError, match="cannot be named 'network'"):
        class Reserved(ActorSpec):
            Process = P
            Message = Ping
            network = Local(Int(0, 1))

    with pytest.raises(SpecError, match="declares an @action"):
        class WithAction(ActorSpec):
            Process = P
            Message = Ping
            x = Local(Int(0, 1))

            @action
            def poke(s):
                require(s.x == 0)


def test_choice_parameters_need_types():
    class Bad(ActorSpec):
        Process = P
        Message = Union(Ping)
        x = Local(Int(0, 3), init=0)

        @on_start
        def start(p, v):
            p.x = v

    with pytest.raises(SpecError, match="choice parameter 'v' of handler start needs a finite type"):
        build(Bad)


def test_history_of_observed_operations():
    spec = model_path("actor_gossip.py") + ":GossipObserved"
    res = check(load_model(spec), Options(deadlock=False))
    assert (res.verdict, res.distinct) == ("holds", 64)  # the history mirrors `heard`: no new states
    wrong = model_path("actor_gossip.py") + ":GossipObservedWrongClaim"
    bug = check(load_model(wrong, {}, invariants=["one_reporter"]), Options(deadlock=False))
    assert bug.violation.name == "one_reporter" and len(bug.violation.trace.steps) == 2
    assert "Heard(by=" in bug.violation.trace.steps[-1].shown["history"]


def test_observe_needs_an_observation_type():
    class Bad(ActorSpec):
        Process = P
        Message = Ping
        x = Local(Int(0, 3), init=0)

        @on_start
        def start(p):
            observe(Ping())

    with pytest.raises(SpecError, match="declares no Observation type"):
        build(Bad)


def test_two_handlers_of_a_kind_in_one_class():
    with pytest.raises(SpecError, match="Twice2 has two start handlers \\(a, b\\)"):
        class Twice2(ActorSpec):
            Process = P
            Message = Ping
            x = Local(Int(0, 3), init=0)

            @on_start
            def a(p):
                p.x = 1

            @on_start
            def b(p):
                p.x = 2
