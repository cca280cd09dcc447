"""The refinement mapping from the instrumented PySyncObj logs (`node.py`) to Lockstep's Raft spec (`specs/raft.py`).

Numbering: PySyncObj starts at term 0 with a log holding one no-op entry (index 1, term 0), which every node
has from the start; the spec starts at term 1 with empty logs. So an implementation term t is the spec's t + 1,
the implementation's entry at index n (n >= 2) is the spec's entry at index n - 1, and the first entry is not
mapped. Entries carry the spec's value 1 for a no-op (a new leader's first entry) and 2 for a client command.

Events map to the spec's steps as follows (`ops`, recorded by the node in the order it did things):
- an election timeout is Timeout(i) and a RequestVote(i, j) for each vote request sent;
- a message received from j is, on the channel j -> i (FIFO: the spec is checked with `ordered=1`), first a
  DropMessage for each message of that channel lost before it (senders number what they send on each channel,
  also across their restarts, so the receiver's log tells how many were lost), then UpdateTerm if the
  message's term is higher, then the spec's handler;
- a new leader is BecomeLeader(i) and ClientRequest(i, 1) for the no-op PySyncObj appends; a client command
  appended by the leader is ClientRequest(i, 2); heartbeats and replication are AppendEntries(i, j); a commit
  advanced by the leader is AdvanceCommitIndex(i); a restart after a crash is Restart(i).

Deviations of PySyncObj from the spec, each stated where it is handled:
- PySyncObj answers a vote request only to grant it, and ignores an AppendEntries request of an older term; the
  spec answers both (a refusal). The spec's answer is taken as lost (DropMessage on the channel back, at a
  position the search finds).
- PySyncObj's responses to AppendEntries and votes carry no term; a response of an older term is ignored by
  the leader. The step is the spec's handler or DropStaleResponse, whichever the spec's message allows.
- PySyncObj keeps its commit index in its journal across a restart; Raft's commit index is volatile (the spec's
  Restart sets it to 0). A node's commit index is not compared after it restarts.
- PySyncObj pipelines AppendEntries: a leader advances its next index past the entries it sends before any
  answer, as the thesis (§10.2.1) describes and the TLA+ spec does not; the spec is checked with
  `pipelined=1`, which models that. PySyncObj also advances it when the send fails (the peer is not
  connected): such entries are mapped to an AppendEntries request that the network loses.
- A leader that hears from no majority for `leaderFallbackTimeout` becomes a follower in the same term; the
  spec has no such step (a leader leaves office only for a higher term). It is mapped to no step, so the
  spec's state stays Leader: the runs here stay shorter than the timeout (30 s), and a log showing one is
  reported as not a behaviour at that step.
"""

from __future__ import annotations

from typing import Any

from lockstep.trace import ANY, one_of, step

INTERNAL: list[str] = []  # every step is logged: no internal steps

ROLE = {"follower": "Follower", "candidate": "Candidate", "leader": "Leader"}
NOOP, COMMAND = 1, 2

_restarted: set[int] = set()  # nodes whose commit index is no longer compared (it survived a restart)


def _entry(e: list[Any]) -> dict[str, Any]:
    return {"tag": "Entry", "term": e[0] + 1, "value": NOOP if e[1] == "noop" else COMMAND}


def node(raw: Any) -> int:
    return int(raw)


def variables(e: Any) -> dict[str, Any]:
    """The spec's variables of node i from what it logged."""
    v, i = e.vars, int(e.node)
    if v.get("first", 1) != 1:
        raise ValueError("the node compacted its log (PySyncObj's snapshots are not modelled)")
    out = {f"current_term[{i}]": v["term"] + 1, f"state[{i}]": ROLE[v["role"]], f"voted_for[{i}]": v["voted_for"],
           f"log[{i}]": [_entry(x) for x in v["log"]]}
    if i not in _restarted:
        out[f"commit_index[{i}]"] = max(v["commit"] - 1, 0)
    return out


def start(e: Any) -> list:
    _restarted.discard(int(e.node))
    return []


def restart(e: Any) -> list:
    _restarted.add(int(e.node))
    return [step("restart", i=int(e.node))]


def tick(e: Any) -> list:
    """What a node did on its own: elections, commits, heartbeats and replication, client commands."""
    i = int(e.node)
    return _ops(i, e.args["ops"], leader=e.args["role_before"] == "leader")


def receive(e: Any) -> list:
    """A Raft message from j, and what the node did while handling it."""
    i, j, kind = int(e.node), e.args["from"], e.args["type"]
    ops = e.args["ops"]
    steps = [step("drop_message", i=j, j=i, k=0) for _ in range(_lost(i, j, e.args["n"]))]
    if any(op[0] == "term" for op in ops):
        steps.append(step("update_term", i=i, j=j, k=0))
    answered = any(op[0] == "send" and op[1] == j for op in ops)
    if kind == "request_vote":
        steps.append(step("handle_request_vote_request", i=i, j=j, k=0))
        if not answered:  # PySyncObj answers only to grant a vote: the spec's refusal is lost
            steps.append(step("drop_message", i=i, j=j, k=ANY))
        return steps
    if kind == "append_entries":
        steps.append(step("handle_append_entries_request", i=i, j=j, k=0))
        if not answered:  # an AppendEntries request of an older term: PySyncObj ignores it
            steps.append(step("drop_message", i=i, j=j, k=ANY))
        return steps
    handler = "handle_request_vote_response" if kind == "response_vote" else "handle_append_entries_response"
    steps.append(one_of(step(handler, i=i, j=j, k=0), step("drop_stale_response", i=i, j=j, k=0)))
    return steps + _ops(i, ops[1:], leader=e.args["role_before"] == "leader", handled=True)


_heard: dict[tuple[int, int], int] = {}  # (receiver, sender) -> the number of the last message received


def _lost(i: int, j: int, n: int) -> int:
    """How many messages of the channel j -> i were lost before message n (senders number what they send)."""
    lost = max(n - _heard.get((i, j), 0) - 1, 0)
    _heard[(i, j)] = n
    return lost


def _ops(i: int, ops: list, leader: bool, handled: bool = False) -> list:
    """The spec steps of a node's own operations, in order. In a message's handling (`handled`), the changes of
    term, role, log and commit index are the handler's, except what a new leader does."""
    steps = []
    for op in ops:
        kind = op[0]
        if kind == "term" and not handled:
            steps.append(step("timeout", i=i))
        elif kind == "leader":
            steps.append(step("become_leader", i=i))
            leader = True
        elif kind == "append" and leader:
            steps.append(step("client_request", i=i, v=NOOP if op[1][1] == "noop" else COMMAND))
        elif kind == "commit" and leader and not handled:
            steps.append(step("advance_commit_index", i=i))
        elif kind == "send":
            if op[2]["type"] == "request_vote":
                steps.append(step("request_vote", i=i, j=op[1]))
            elif op[2]["type"] == "append_entries":
                steps.append(step("append_entries", i=i, j=op[1]))
        elif kind == "unsent":  # entries PySyncObj meant to send, and counted as sent: a request the network lost
            steps += [step("append_entries", i=i, j=op[1]), step("drop_message", i=i, j=op[1], k=ANY, optional=True)]
        elif kind == "role" and op[1] == "leader" and not handled:
            leader = False  # PySyncObj's leader fallback: no spec step (see the module's docstring)
    return steps


def spec_params(paths: list[str]) -> dict[str, int]:
    """The spec's parameters that bound these logs: servers, terms, log length, batch, and channel capacity (the
    most messages of one channel in flight or lost and not yet known lost, in causal order)."""
    from lockstep.checker.validation.conformance.causal import CausalMerge, Logs

    logs = Logs.open(paths)
    term = log_len = batch = 1
    flight: dict[tuple[int, int], int] = {}
    cap = 1
    for e in CausalMerge(logs):
        v = e.vars
        if v:
            term = max(term, v["term"] + 1)
            log_len = max(log_len, len(v["log"]))
        i = int(e.node)
        for op in e.args.get("ops", []):
            if op[0] in ("send", "unsent"):
                key = (i, op[1])
                cap = max(cap, flight.get(key, 0) + 1)
                if op[0] == "send":
                    flight[key] = flight.get(key, 0) + 1
                batch = max(batch, len(op[2].get("entries", [])))
        if e.action == "receive":
            key = (e.args["from"], i)
            flight[key] = flight.get(key, 0) - 1 - _lost(i, e.args["from"], e.args["n"])
    _heard.clear()
    # one more than was ever in flight: the spec's refusals, which PySyncObj does not send, pass through the
    # channel (sent, then lost) within one event
    return {"servers": len(logs.nodes), "max_term": term, "max_log": log_len, "batch": batch, "cap": cap + 1,
            "values": 2, "ordered": 1, "pipelined": 1}
