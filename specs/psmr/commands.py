"""The replicated service's commands, their dependency relation C-Dep, and the command-to-groups function C-G.

Plain Python, shared by the spec (`spec.py`), the proof (`lockstep.proofs.psmr`) and the running
key-value service (`lockstep.executors.psmr`), so all three mean the same C-Dep and C-G.

The service is a key-value store with keys 0..K-1 (K = W, the number of workers). A command
reads and writes a set of keys:

- `get(k)`: reads k, returns its value;
- `put(k, v)`: writes k, returns the value it replaced (a swap, so replies carry information);
- `putall(v)`: writes every key, returns 0 — a global command, dependent on every other.

C-Dep (Marandi et al.: commands are dependent when they access common state and at least one of
them writes it) is computed from these access sets. The shipped C-G sends a command to the groups
of the workers that own its keys (key k belongs to worker k mod W): a single-key command to one
g_i, a command on every key to g_all. Required: dependent commands share a worker
(`proofs/psmr.py` proves it for every pair of commands). Two seeded bugs break it:
`cg_first_key` routes a multi-key command by its first key only, so `putall` and `put(1, v)` —
dependent — go to disjoint groups; `cg_read_wrong_group` sends a read of key k to the next worker's
group ((k + 1) mod W), so `get(0)` and `put(0, v)` go to disjoint groups (with W >= 2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class Command(NamedTuple):
    """One command of the service: `op` in get/put/putall, a key (None for putall), a value (None for get)."""

    op: str
    key: int | None = None
    value: int | None = None

    def keys(self, nkeys: int) -> frozenset[int]:
        return frozenset(range(nkeys)) if self.op == "putall" else frozenset({self.key})  # type: ignore[arg-type]

    def writes(self) -> bool:
        return self.op != "get"

    def __str__(self) -> str:
        if self.op == "get":
            return f"get({self.key})"
        if self.op == "put":
            return f"put({self.key},{self.value})"
        return f"putall({self.value})"


def dependent(a: Command, b: Command, nkeys: int) -> bool:
    """C-Dep: `a` and `b` access a common key and at least one of them writes."""
    return bool(a.keys(nkeys) & b.keys(nkeys)) and (a.writes() or b.writes())


def owner(key: int, workers: int) -> int:
    """The worker whose group a single-key command on `key` goes to."""
    return key % workers


def cg(c: Command, workers: int, nkeys: int | None = None) -> frozenset[int]:
    """C-G: the workers (groups g_1..g_W; all of them is g_all) a command is multicast to (K = W keys
    unless `nkeys` says otherwise)."""
    return frozenset(owner(k, workers) for k in c.keys(nkeys or workers))


def cg_first_key(c: Command, workers: int, nkeys: int | None = None) -> frozenset[int]:
    """Seeded bug: a multi-key command goes to the group of its first key only."""
    return frozenset({owner(min(c.keys(nkeys or workers)), workers)})


def cg_read_wrong_group(c: Command, workers: int, nkeys: int | None = None) -> frozenset[int]:
    """Seeded bug: a read goes to the group of the worker after its key's owner."""
    if c.op == "get":
        return frozenset({(owner(c.key, workers) + 1) % workers})  # type: ignore[arg-type]
    return cg(c, workers, nkeys)


CG_FUNCTIONS: dict[str, Callable[..., frozenset[int]]] = {"keys": cg, "first_key": cg_first_key,
                                                          "read_wrong_group": cg_read_wrong_group}


def execute(c: Command, store: list[int]) -> int:
    """Run `c` on a store (a list, changed in place); the reply."""
    if c.op == "get":
        return store[c.key]  # type: ignore[index]
    if c.op == "put":
        old = store[c.key]  # type: ignore[index]
        store[c.key] = c.value  # type: ignore[index]
        return old
    for k in range(len(store)):
        store[k] = c.value  # type: ignore[assignment]
    return 0


# The commands checked by the spec, issued in this order: two global commands (so the barrier is
# exercised and an order that is not acyclic can deadlock it), then single-key commands for both
# workers' groups (W = 2): put(0, 3) for worker 0 and get(0), a read of the key it writes (routed to
# another group, it can miss that write); put(1, 3) for worker 1 (a first-key C-G leaves it unordered
# with putall); get(1) (the sixth, with --param commands=6).
WORKLOAD = (Command("putall", None, 1), Command("putall", None, 2), Command("put", 0, 3), Command("get", 0),
            Command("put", 1, 3), Command("get", 1))
MAX_COMMANDS = len(WORKLOAD)
MAX_VALUE = 3
