"""P-SMR's requirement on the command-to-groups function: dependent commands share a worker.

Marandi, Bezerra and Pedone require C-G to send any two dependent commands (C-Dep: they access a
common key and one of them writes) to groups with a common worker thread; then those commands are
ordered by the same worker's delivery sequence at every replica. The facts below decide it with z3
for the key-value service of `lockstep.specs.psmr.commands`:

- the z3 encoding of C-Dep and of both C-G functions agrees with the Python functions the spec and
  the running service use, on every command (so what is proved is about the shipped code);
- for W = 1..8 workers and K = W keys, every pair of commands (get, put, putall on symbolic keys):
  dependent => C-G(C) and C-G(C') share a worker;
- for any number of keys, any access sets and any map of keys to workers (uninterpreted): routing
  a command to the owners of the keys it accesses meets the requirement — the shipped C-G is that;
- the seeded `cg_first_key` (a multi-key command goes to its first key's worker) and
  `cg_read_wrong_group` (a read of key k goes to worker k + 1's group) are refuted for W = 2..4, each
  with the pair of commands as the counterexample.

Run: python -m lockstep.proofs.psmr
"""

from __future__ import annotations

import sys

import z3

from lockstep.specs.psmr.commands import Command, cg, cg_first_key, cg_read_wrong_group, dependent

from .facts import PROVED, REFUTED, UNKNOWN, Fact, Outcome, main

OPS = ("get", "put", "putall")
WORKERS = range(1, 9)


class SymCommand:
    """A symbolic command of the service with K keys: an op and a key (ignored by putall)."""

    def __init__(self, name: str, nkeys: int):
        self.op, self.key = z3.Int(f"{name}_op"), z3.Int(f"{name}_key")
        self.nkeys = nkeys
        self.typed = z3.And(self.op >= 0, self.op < len(OPS), self.key >= 0, self.key < nkeys)

    def accesses(self, k: int) -> z3.BoolRef:
        return z3.Or(self.op == OPS.index("putall"), self.key == k)

    def writes(self) -> z3.BoolRef:
        return self.op != OPS.index("get")

    def decode(self, m: z3.ModelRef) -> Command:
        op = OPS[m.eval(self.op, model_completion=True).as_long()]
        key = m.eval(self.key, model_completion=True).as_long()
        return Command(op, None if op == "putall" else key, None if op == "get" else 1)


def sym_dependent(a: SymCommand, b: SymCommand) -> z3.BoolRef:
    """C-Dep: a common key, and one of the two writes."""
    return z3.And(z3.Or([z3.And(a.accesses(k), b.accesses(k)) for k in range(a.nkeys)]), z3.Or(a.writes(), b.writes()))


def sym_cg(c: SymCommand, w: int, workers: int) -> z3.BoolRef:
    """Worker w is in C-G(c): it owns a key c accesses (key k belongs to worker k mod W)."""
    return z3.Or([c.accesses(k) for k in range(c.nkeys) if k % workers == w] or [z3.BoolVal(False)])


def sym_cg_first_key(c: SymCommand, w: int, workers: int) -> z3.BoolRef:
    """Worker w is in the seeded C-G of c: it owns the first key c accesses."""
    return z3.If(c.op == OPS.index("putall"), z3.BoolVal(w == 0), c.key % workers == w)


def sym_cg_read_wrong_group(c: SymCommand, w: int, workers: int) -> z3.BoolRef:
    """Worker w is in the seeded C-G of c: a read goes to the worker after its key's owner."""
    return z3.If(c.op == OPS.index("get"), (c.key + 1) % workers == w, sym_cg(c, w, workers))


ENCODINGS = {"keys": (sym_cg, cg), "first_key": (sym_cg_first_key, cg_first_key),
             "read_wrong_group": (sym_cg_read_wrong_group, cg_read_wrong_group)}


def concrete_commands(nkeys: int) -> list[Command]:
    return ([Command("get", k) for k in range(nkeys)] + [Command("put", k, 1) for k in range(nkeys)]
            + [Command("putall", None, 1)])


def encoding_agrees(workers: int) -> Outcome:
    """The z3 encodings equal commands.dependent and every C-G function on every command and pair."""
    cmds = concrete_commands(workers)
    for name, (sym, concrete) in ENCODINGS.items():
        for c in cmds:
            a = SymCommand("a", workers)
            pin = z3.And(a.op == OPS.index(c.op), a.key == (c.key if c.key is not None else 0))
            for w in range(workers):
                s = z3.Solver()
                s.add(pin, sym(a, w, workers) != z3.BoolVal(w in concrete(c, workers)))
                if s.check() != z3.unsat:
                    return Outcome(REFUTED, f"{name}: worker {w} and {c} disagree")
    for c in cmds:
        for d in cmds:
            a, b = SymCommand("a", workers), SymCommand("b", workers)
            s = z3.Solver()
            s.add(a.op == OPS.index(c.op), a.key == (c.key or 0), b.op == OPS.index(d.op), b.key == (d.key or 0))
            s.add(sym_dependent(a, b) != z3.BoolVal(dependent(c, d, workers)))
            if s.check() != z3.unsat:
                return Outcome(REFUTED, f"C-Dep disagrees on {c}, {d}")
    return Outcome(PROVED)


def requirement(workers: int, which: str) -> Outcome:
    """For every pair of commands: dependent => C-G(a) and C-G(b) share a worker."""
    sym = ENCODINGS[which][0]
    a, b = SymCommand("a", workers), SymCommand("b", workers)
    s = z3.Solver()
    s.add(a.typed, b.typed, sym_dependent(a, b))
    s.add(z3.Not(z3.Or([z3.And(sym(a, w, workers), sym(b, w, workers)) for w in range(workers)])))
    r = s.check()
    if r == z3.unsat:
        return Outcome(PROVED)
    if r == z3.sat:
        m = s.model()
        ca, cb = a.decode(m), b.decode(m)
        ga, gb = sorted(ENCODINGS[which][1](ca, workers)), sorted(ENCODINGS[which][1](cb, workers))
        return Outcome(REFUTED, f"counterexample {ca} -> workers {ga}, {cb} -> workers {gb}: dependent, no common worker")
    return Outcome(UNKNOWN, s.reason_unknown())


def owner_routing_for_any_map() -> Outcome:
    """Any keys, any access sets, any map owner: key -> worker: if A and B share a key (and one writes),
    then owner[A] and owner[B] share a worker."""
    key = z3.IntSort()
    acc_a, acc_b = z3.Array("A", key, z3.BoolSort()), z3.Array("B", key, z3.BoolSort())
    owner = z3.Function("owner", key, z3.IntSort())
    wa, wb = z3.Bools("writes_a writes_b")
    k0, k1, k2 = z3.Ints("k0 k1 k2")
    s = z3.Solver()
    s.add(acc_a[k0], acc_b[k0], z3.Or(wa, wb))  # dependent
    s.add(z3.ForAll([k1, k2], z3.Implies(z3.And(acc_a[k1], acc_b[k2]), owner(k1) != owner(k2))))  # disjoint groups
    r = s.check()
    return Outcome(PROVED) if r == z3.unsat else Outcome(REFUTED if r == z3.sat else UNKNOWN, str(r))


FACTS = [
    *(Fact(f"W = {w}: the z3 encoding of C-Dep and C-G is commands.py's on every command", PROVED,
           lambda w=w: encoding_agrees(w)) for w in (1, 2, 3, 4)),
    *(Fact(f"W = {w}, K = {w}: dependent commands share a worker under the shipped C-G", PROVED,
           lambda w=w: requirement(w, "keys")) for w in WORKERS),
    Fact("any keys, access sets and key-to-worker map: routing to the keys' owners meets the requirement", PROVED,
         owner_routing_for_any_map),
    *(Fact(f"W = {w}, K = {w}: dependent commands share a worker under the seeded first-key C-G", REFUTED,
           lambda w=w: requirement(w, "first_key")) for w in (2, 3, 4)),
    *(Fact(f"W = {w}, K = {w}: dependent commands share a worker under the seeded read-wrong-group C-G", REFUTED,
           lambda w=w: requirement(w, "read_wrong_group")) for w in (2, 3, 4)),
]


if __name__ == "__main__":
    sys.exit(main(FACTS))
