"""The P-SMR spec for a given workload: several clients, each issuing its own commands in order, on K keys.

`for_workload(clients, keys)` is the spec (`spec.PSMR`, or one of its seeded-bug variants) whose client proxy
issues exactly these commands: client k's commands in the order given, each once its predecessor of that client
was issued and, with `outstanding` = n, while fewer than n of that client's commands are without a reply (each
client a closed loop of n slots, as each client of the service on processes is; the shipped spec's one client
waits instead for the reply of the command n before, the order in which `--spec-workload` runs issue them).
Command j of the instance is the j-th of the clients' commands taken in turn: client 0's, then client 1's, and
so on. The store has keys 0..K-1 (key k belongs to worker k mod W) and holds values 0..the largest value issued.
Every handler is the spec's: only the workload, the keys, the values (hence the types of commands, positions and
values) and the proxy's rule above change; with `outstanding` = 1 the two rules agree, and
`for_workload((WORKLOAD[:N],), W)` has the states of the shipped spec with N commands.

Deviations from the shipped instance, each stated:
- One process, the spec's client proxy, issues every client's commands: the clients share no state, so this is
  their product (and `before`, the commands completed when one was invoked, spans every client: the real-time
  order across clients, which `linearizable` needs).
- The invariants whose terms grow faster than the square of the commands are not evaluated by this instance:
  `integrity` (every position against every earlier one, for every command: cubic), `acyclic_order` (every
  cycle of commands) and `linearizable` (every order of commands) are checked where the number of commands is
  small (`lockstep check psmr`); a run validated against an instance is also checked for them on its events
  (the rules of `checker/validation/psmr.py`) and on its clients' history (`lockstep linearizable`).
  `agreement`, `replicas_agree` and `dependent_same_order` are evaluated in every state.
- A reply is one message whose value is the store's (the shipped spec sends one message per value it may have,
  under the condition that it is that value: the same step, built in time linear in the values).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..lang import Enum, If, Int, Map, Option, Param, Range, Record, Set, Sum, Union, invariant
from ..lang.actors import Local, send
from .commands import Command
from .spec import CLIENT, PSMR, Messages, Wk

MAX_INSTANCE_COMMANDS = 10_000  # commands of one instance (its types have one value per command)


def for_workload(clients: Sequence[Sequence[Command]], keys: int, base: type[PSMR] = PSMR) -> type[PSMR]:
    """The spec `base` whose client proxy issues `clients[k]`, in order, for every client k, on `keys` keys."""
    cmds = tuple(c for commands in clients for c in commands)
    if not cmds or len(cmds) > MAX_INSTANCE_COMMANDS:
        raise ValueError(f"a workload of 1 to {MAX_INSTANCE_COMMANDS:,} commands, not {len(cmds):,}")
    if keys < 1 or any(c.op != "putall" and not 0 <= c.key < keys for c in cmds):  # type: ignore[operator]
        raise ValueError(f"every command's key must be one of the {keys} keys")
    if any(c.op != "get" and (not isinstance(c.value, int) or c.value < 0) for c in cmds):
        raise ValueError("a put or putall writes a value of at least 0")
    owner: list[tuple[int, int]] = [(k, i) for k, commands in enumerate(clients) for i in range(len(commands))]
    first = {k: next(j for j, (kk, _) in enumerate(owner) if kk == k) for k in range(len(clients)) if clients[k]}
    n = len(cmds)
    top = max([c.value for c in cmds if c.value is not None] + [1])
    cmd, pos, val = Range(n), Int(0, n - 1), Int(0, top)
    count = Int(0, n)
    multicast, deliver, reply_msg = (Record("Multicast", c=cmd), Record("Deliver", c=cmd, g=Wk, i=pos),
                                 Record("Reply", c=cmd, v=val))

    def workload_of(p) -> tuple[Command, ...]:
        return cmds

    def keys_of(p) -> int:
        return keys

    def previous(p, c: int) -> int | None:
        """The same client's command before c, or None."""
        return c - 1 if owner[c][1] else None

    def room(p, c: int):
        """Whether c may be issued now that the same client's commands before it are: while fewer than
        `outstanding` of them are without a reply (each client a closed loop of that many slots)."""
        client, i = owner[c]
        if i < int(p.outstanding):
            return True
        return Sum(If(p.status[d] == "pending", 1, 0) for d in range(first[client], c)) < int(p.outstanding)

    def answer(p, c, result):
        """Send the client the reply of command c: one message, whose value is `result` (a term of the store's)."""
        send(CLIENT, p.spec.msgs.Reply(c, result))

    def integrity(s):
        """Not evaluated by an instance for a workload (see the module's docstring)."""
        return True

    def acyclic_order(s):
        """Not evaluated by an instance for a workload (see the module's docstring)."""
        return True

    def linearizable(s):
        """Not evaluated by an instance for a workload (see the module's docstring)."""
        return True

    namespace = {
        "__module__": __name__, "__doc__": f"{base.__name__} for a workload of {n} command(s) from "
                                          f"{len(clients)} client(s) on {keys} key(s)",
        "_actor_param_commands": None,  # the workload is the instance's own, not the first N of the spec's
        "outstanding": Param("outstanding", default=2, lo=1, hi=None, doc="commands each client has without a reply"),
        "Cmd": cmd, "Wk": Wk, "Message": Union(multicast, deliver, reply_msg),
        "msgs": Messages(multicast, deliver, reply_msg), "values": range(top + 1),
        "workload_of": workload_of, "keys_of": keys_of, "previous": previous, "room": room, "answer": answer,
        "integrity": invariant(integrity), "acyclic_order": invariant(acyclic_order),
        "linearizable": invariant(linearizable),
        "status": Local(Map(cmd, Enum("idle", "pending", "done")), init="idle"), "reply": Local(Map(cmd, Option(val))),
        "before": Local(Map(cmd, Set(cmd))), "received": Local(Set(cmd)),
        "stream": Local(Map(Wk, Map(pos, Option(cmd)))), "length": Local(Map(Wk, count), init=0),
        "pending": Local(Map(Wk, Set(cmd))), "head": Local(Map(Wk, count), init=0),
        "took": Local(Map(Wk, Map(pos, Option(cmd)))), "waiting": Local(Map(Wk, Option(cmd))),
        "signals": Local(Map(cmd, Set(Wk))), "released": Local(Set(cmd)), "store": Local(Map(Range(keys), val), init=0),
        "executed": Local(Set(cmd)),
    }
    return type(f"{base.__name__}Workload", (base,), namespace)
