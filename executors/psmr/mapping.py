"""The refinement mapping from the P-SMR service's logs (`process.py`) to the spec (`lockstep.specs.psmr`).

The spec's processes are the client proxy (0), the ordering layer (1) and replicas 2..R+1, each holding its
W workers. The service's processes map onto them: its clients onto the proxy, its group sequencers and hub
together onto the ordering layer, the W worker processes of replica r onto spec replica r + 2. A run of the
spec's workload (`lockstep run psmr --spec-workload N`: one client issuing the first N commands of
`commands.WORKLOAD`, keys = workers) is validated against the registered spec, command n as the spec's command n.
A run of a random workload is validated against the spec built for its workload (`specs/psmr/workload.py`), over
its window (`conformance.py`): client k's commands are the instance's commands of client k, in the order k issued
them. The events reach the mapping with their command numbered as the instance numbers it (`conformance.py`:
client k's command n is command n of client k's commands in the window, after those of clients 0..k-1), which
for the spec's workload is the command's own number.

Events to steps:
- `invoke` (the client sends command n) is the proxy's `tick` timeout issuing n;
- the ordering layer's atomic append of command n to the streams of every group of C-G(n) is the event
  that orders it first: the hub's `hub` for a multi-group command, the group's sequencer's `order` for a
  single-group one;
- a worker's take of position i of its group's stream is the replica's delivery of `Deliver(n, g, i)`: a
  `signal` (a worker that waits at the barrier) or an `exec` (the worker that executes n), whose reply is
  the spec's `Reply`;
- the client's first reply to n is the delivery of that replica's `Reply(n, v)`; later ones are never taken.

Deviations of the service from the spec, each handled here:
- The ordering layer is W + 1 processes, not one atomic step: the hub numbers a multi-group command and
  forwards it to the sequencers of its groups, which merge it into their streams where it arrives. The
  spec's append is mapped to the hub's event, and a sequencer's later `order` of a forwarded command is no
  step: its logged position (`stream[1][g][i]`) must be the one the spec's append gave it. With the spec's
  workload every command goes through the hub (`process.Client`), so the hub's order is the one order the
  streams are projections of, and each append comes before every event that depends on it. With a random
  workload a single-group command goes to its group's sequencer alone and is appended at that `order`; the
  commands a sequencer ordered alone before it merged a forwarded one must be appended before the hub's append
  of that one, which the events' causes do not say: the projection (`conformance.py`) orders the hub's event
  after the last of them, an edge that only narrows the orders searched (a behaviour found in them is one of
  the logs). The edges close a cycle where a sequencer orders alone a command invoked after the forwarded one
  was multicast (its client had a reply that depends on the multicast) and merges the forwarded one only after
  it, which the service allows: the spec's one-step append cannot order such a run, and the step-by-step
  validation of its window stops there, inconclusive (exit 3: an event receives a message that no event sends
  before it). The spec's rules and the clients' linearizability are still checked on the whole run. Under a
  fully loaded machine about one run in six of `tests/executors/test_psmr_run.py`'s crash round trip has one.
- A worker process receives its deliveries ahead of taking them (`deliver`, queued), and the signal and
  go frames of the barrier (`signalled`, `released`, `resume`) travel between worker processes, where the
  spec's workers share memory: those events are no steps; the barrier's order is the frames' causal order.
- Each event of a worker that executes logs the values, afterwards, of the keys the command accesses
  (`store[r][k]`): no other worker writes those keys then, the barrier holding every worker of a
  multi-group command, so they are the replica's store as the spec's step leaves it.
- Rejected frames and the fault plan's losses (`rejected`, `fault`) are no steps: a lost message stays
  in flight in the spec, never delivered.
- The service's clients are one process in the spec (the proxy issues every client's commands, each client's in
  its order, `workload.py`): steps of different clients are steps of one spec process, which commute up to
  `before` (the commands completed when one was invoked, across clients), which no guard and no logged variable
  reads (each guard reads the status of its own client's commands).

With these edges, the steps of different nodes commute (up to `before`): they change different processes' state, or different
groups' streams, or keys no other worker touches then, and each guard that reads another node's work (a
delivery, a signal, a go, a reply) reads it through a message the events' causes order. So every order of the
events consistent with happens-before has the same verdict, and the validation of a window takes one
(`Search(one_order=True)`).
"""

from __future__ import annotations

from typing import Any

from lockstep.trace import step

INTERNAL: list[str] = []  # every step is logged

CLIENT, ORDER = 0, 1
CLIENT_IDS = 10_000_000  # the service's command ids: client index * CLIENT_IDS + number (`process.CLIENT_IDS`)


def _n(cid: Any) -> int:
    """The spec's command of an event's command: as the projection numbered it (`conformance.py`), or for the spec's
    workload its number."""
    if not isinstance(cid, int) or isinstance(cid, bool) or not 0 <= cid < CLIENT_IDS:
        raise ValueError(f"command {cid!r} is not one of the instance's: validate a P-SMR run's logs through "
                         "`lockstep validate TRACE` of its --trace file, which numbers its commands for the instance")
    return cid


def _replica(e: Any) -> int:
    return 2 + e.args["replica"]


def _take(e: Any) -> Any:
    """A worker takes position i of its group's stream: the replica's delivery of Deliver(n, g, i)."""
    a = e.args
    return step("deliver", src=ORDER, dst=_replica(e),
                msg={"tag": "Deliver", "c": _n(a["c"]), "g": a["g"], "i": a["i"]})


def _invoke(e: Any) -> Any:
    return step("timeout", p=CLIENT, timer="tick", w=0, c=_n(e.args["c"]))


def _multicast(e: Any) -> Any:
    return step("deliver", src=CLIENT, dst=ORDER, msg={"tag": "Multicast", "c": _n(e.args["c"])})


def _order(e: Any) -> Any:
    return _multicast(e) if e.args["from"] == "mc" else None  # a forwarded command was appended by the hub


def _reply(e: Any) -> Any:
    a = e.args
    if not a["first"]:
        return None  # the proxy takes the first reply only
    return step("deliver", src=2 + a["replica"], dst=CLIENT, msg={"tag": "Reply", "c": _n(a["c"]), "v": a["v"]})


def _none(e: Any) -> None:
    return None


EVENTS = {"invoke": _invoke, "hub": _multicast, "order": _order, "signal": _take, "exec": _take, "reply": _reply,
          "deliver": _none, "signalled": _none, "released": _none, "resume": _none, "rejected": _none,
          "fault": _none}


def variables(e: Any) -> dict[str, Any]:
    """The stream positions the sequencers number and the store values a worker leaves."""
    a = e.args
    if e.action == "order":
        return {f"stream[{ORDER}][{a['g']}][{a['seq']}]": _n(a["c"])}
    if e.action == "exec":
        return {f"store[{_replica(e)}][{k}]": v for k, v in a["store"].items()}
    return {}


def spec_params(service: Any) -> dict[str, int]:
    """The spec's parameters of a run of the spec's workload (`ServiceConfig` with `spec_commands`); an instance for
    a random workload takes the same but `commands` (`conformance.instance`)."""
    return {"replicas": service.replicas, "workers": service.workers, "commands": service.spec_commands,
            "outstanding": service.outstanding}
