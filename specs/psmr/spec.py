"""P-SMR: parallel state-machine replication (Marandi, Bezerra, Pedone, ICDCS 2014; arXiv 1311.6183).

Each replica runs W worker threads and no scheduler. There are multicast groups g_1..g_W (g_i: worker
i of every replica) and g_all (every worker). A client proxy multicasts a command C to C-G(C), the
groups computed from the declared dependency relation C-Dep (`commands.py`), and takes the first
reply. Worker t of a replica, on the next command C delivered to it:

    if |C-G(C)| = 1: execute C; reply
    else: E = the lowest-index worker of C-G(C)
          if t != E: signal(E, C); wait(go, C)
          else: wait for the signals of every other worker of C-G(C); execute C; reply; go to them all

Processes: 0 is the client proxy, 1 the ordering layer (atomic multicast), 2..R+1 the replicas, each
holding its W workers as shared-memory threads. Defaults: 3 replicas x 2 workers, the first 5 commands
of `commands.WORKLOAD` (two putall, put(0, 3), get(0), put(1, 3)), at most 2 of them outstanding.

Mechanism by mechanism:

- C-Dep and C-G — as in the paper: commands that access a common key, one of them writing, are
  dependent; C-G sends a command to the groups of the workers owning its keys (a single-key command to
  one g_i, putall to g_all). Shared with the proof (`lockstep.proofs.psmr`: dependent commands share
  a worker) and the running service.
- Atomic multicast — modelled by its contract, not as Multi-Ring Paxos: the ordering layer keeps one
  numbered stream per group; receiving C's multicast, it appends C to the stream of every group of
  C-G(C) in one step and sends `Deliver(C, g, i)` (position i of g's stream) to every replica. Each
  stream is a projection of the one order in which commands are appended, which gives acyclic order;
  every replica is sent every position (uniform agreement); a command is appended once (integrity).
  The multicasts arrive in any order, so any order of concurrent commands is explored. The ordering
  layer does not fail. Invariants `integrity`, `agreement` (every replica's worker took its group's
  stream, position by position) and `acyclic_order` check the contract on the streams and deliveries.
- The worker loop — as above: worker g of a replica takes position i of g's stream only as its i-th
  delivery, and only once the multi-group command it last signalled has been released (its
  wait(go, C)). A non-leader takes C, signals it and waits; the leader's delivery of C is enabled once
  every other worker of C-G(C) has signalled (its wait for the signals), then it executes C, replies
  and releases C (go). Signals and go are the replica's shared memory (`signals[C]`, `released`).
- Replicas — R identical replicas, interchangeable (`--symmetry` checks one state per permutation of
  them); they may crash (`--param crashes=1`): a crashed replica stops, the others go on and reply.
- The client proxy — simplified: one proxy issues the whole workload, each command once, in the
  workload's order, each at any time after the previous one, with at most `outstanding` commands
  without a reply (default 2: two closed-loop clients; `--param outstanding=5` lets all five run at
  once). It takes the first reply; `linearizable` checks its history (real-time order: the commands
  completed when each was invoked) against every order of the commands. `workload.for_workload` builds
  this spec for a given workload (several clients, any keys, the values they write): the instance the
  service's runs are validated against, step by step.
- The network — each message is acted on at most once (the proxy takes only a command's first reply,
  the ordering layer orders a multicast once, a worker takes each stream position once), so the model
  keeps delivered messages in flight (`Network(duplicating=True)`): replies that arrive after the
  first, and second copies, are never taken. The behaviours are those of a reliable network, and
  states that differ only in which late replies were already discarded are one. (With
  `--param duplicating=0` delivered messages are removed: the same verdicts on more states.) Streams
  carry positions, so channels need no order (`--param ordered=1` is not a model of P-SMR: a late
  reply at the head of a channel would block the replies behind it).
- The service — a key-value store with K = W keys (`commands.py`); put(k, v) returns the value it
  replaced, so replies constrain the order.
- Out of scope: Multi-Ring Paxos itself (rings, coordinators, their failures and recovery), replica
  recovery and state transfer, the networked file system of the paper's evaluation, several clients
  and unbounded workloads (the service on processes, `lockstep run psmr`, has those).

Properties: the ordering layer's contract (above); `replicas_agree` (replicas that executed the same
commands hold the same store), `dependent_same_order` (two replicas never execute two dependent
commands in opposite orders: no state where one has executed only the first and the other only the
second), `linearizable`, the assertion that no replica executes a command twice, and deadlock freedom
of the barrier (the checker's deadlock check: the client proxy stutters once every command has a
reply, so a state with no step is a stuck system).

Seeded bugs, each found by its command at the default parameters:
- `PSMRNoAcyclicOrder`: `lockstep check psmr_no_acyclic_order` — each group is ordered on its own, so
  the two global commands can reach g_1 and g_2 in opposite orders and the barrier deadlocks.
- `PSMRFirstKeyCG`: `lockstep check psmr_first_key_cg --invariant replicas_agree` — C-G routes putall
  by its first key, so putall and put(1, 3), dependent, go to disjoint groups and replicas diverge.
- `PSMRReadWrongGroup`: `lockstep check psmr_read_wrong_group` — C-G sends get(k) to worker k + 1's
  group, so get(0) and put(0, 3), dependent, are not ordered: two replicas execute them in opposite
  orders (`dependent_same_order`); with `--invariant linearizable`, a lagging replica's stale read
  is the first reply to a get(0) invoked after put(0, 3) completed.
"""

from __future__ import annotations

from itertools import combinations, permutations
from typing import NamedTuple

from ..lang import (
    And,
    Assert,
    Enum,
    ForAll,
    If,
    Implies,
    Int,
    Map,
    Not,
    Option,
    Or,
    Param,
    Range,
    Record,
    Set,
    Union,
    invariant,
    require,
)
from ..lang.actors import ActorSpec, Local, Network, on_message, on_start, on_timeout, send, set_timer
from .commands import (
    MAX_COMMANDS,
    MAX_VALUE,
    WORKLOAD,
    Command,
    cg,
    cg_first_key,
    cg_read_wrong_group,
    dependent,
    execute,
)

R = Param("replicas", default=3, lo=1, hi=4, doc="replicas")
W = Param("workers", default=2, lo=1, hi=4, doc="worker threads per replica (and groups g_1..g_W)")
N = Param("commands", default=5, lo=1, hi=MAX_COMMANDS, doc="commands of the workload issued by the client")
K = Param("outstanding", default=2, lo=1, hi=MAX_COMMANDS, doc="commands the client proxy has without a reply at once")

CLIENT, ORDER = 0, 1
Proc = Range(R + 2, symmetric=True, fixed=(CLIENT, ORDER))  # the replicas are interchangeable
Cmd = Range(N)
Wk = Range(W)
Key = Range(W)
Val = Int(0, MAX_VALUE)
Count = Int(0, N)
Pos = Int(0, N - 1)

Multicast = Record("Multicast", c=Cmd)
Deliver = Record("Deliver", c=Cmd, g=Wk, i=Pos)  # position i of group g's stream
Reply = Record("Reply", c=Cmd, v=Val)


class Messages(NamedTuple):
    """A spec's message types, which its handlers build messages with."""

    Multicast: Record
    Deliver: Record
    Reply: Record


def replicas(s) -> range:
    return range(2, int(s.replicas) + 2)


def workload(n: int) -> tuple[Command, ...]:
    return WORKLOAD[:n]


class PSMR(ActorSpec):
    """P-SMR with atomic multicast (acyclic order) and the C-G computed from the keys commands access."""

    Process = Proc
    Message = Union(Multicast, Deliver, Reply)
    Timer = Enum("tick", "idle")
    network = Network(ordered=False, duplicating=True)  # each message is taken at most once: see the docstring
    crashable = staticmethod(lambda params: range(2, params["replicas"] + 2))  # replicas may crash
    timeouts = {"tick": 1, "idle": 50}
    outstanding = K

    # the client proxy
    status = Local(Map(Cmd, Enum("idle", "pending", "done")), init="idle")
    reply = Local(Map(Cmd, Option(Val)))
    before = Local(Map(Cmd, Set(Cmd)))  # the commands completed when this one was invoked
    # the ordering layer: the multicasts received, and one numbered stream per group
    received = Local(Set(Cmd))
    stream = Local(Map(Wk, Map(Pos, Option(Cmd))))
    length = Local(Map(Wk, Count), init=0)
    pending = Local(Map(Wk, Set(Cmd)))  # multicast, not yet ordered (only the per-group ordering of a seeded bug)
    # a replica: per worker, the positions taken and the command last signalled; the barrier; the store
    head = Local(Map(Wk, Count), init=0)
    took = Local(Map(Wk, Map(Pos, Option(Cmd))))
    waiting = Local(Map(Wk, Option(Cmd)))
    signals = Local(Map(Cmd, Set(Wk)))
    released = Local(Set(Cmd))
    store = Local(Map(Key, Val), init=0)
    executed = Local(Set(Cmd))

    msgs = Messages(Multicast, Deliver, Reply)  # the message types (an instance for a workload has its own)
    values = range(MAX_VALUE + 1)  # the values a key holds, one reply message each

    def cg(c: Command, workers: int, nkeys: int | None = None) -> frozenset[int]:
        """The command-to-groups function (overridden by the seeded bugs)."""
        return cg(c, workers, nkeys)

    def workload_of(p) -> tuple[Command, ...]:
        """The commands the client proxy issues (command c is the c-th)."""
        return workload(int(p.commands))

    def keys_of(p) -> int:
        """The keys of the store."""
        return int(p.workers)

    def previous(p, c: int) -> int | None:
        """The command issued before c (c waits until it is issued), or None."""
        return c - 1 if c else None

    def room(p, c: int):
        """Whether c may be issued now that the ones before it are: once the command `outstanding` before it has
        its reply."""
        k = int(p.outstanding)
        return p.status[c - k] == "done" if c >= k else True

    def groups(p, c: int) -> frozenset[int]:
        return p.spec.cg(p.spec.workload_of(p)[c], int(p.workers), p.spec.keys_of(p))

    @on_start
    def start(p):
        if p.id == CLIENT:
            set_timer("tick")
            set_timer("idle")
        elif p.id == ORDER:
            set_timer("tick")

    @on_message
    def receive(p, src, m):
        if p.id == CLIENT:
            require(m.tag == "Reply", p.status[m.c] == "pending")  # the proxy takes the first reply
            p.status[m.c] = "done"
            p.reply[m.c] = m.v
        elif p.id == ORDER:
            require(m.tag == "Multicast", Not(p.received.contains(m.c)))
            p.received = p.received.add(m.c)
            p.spec.multicast(p, m.c)
        else:
            require(m.tag == "Deliver")
            PSMR.deliver(p, m.c, m.g, m.i)

    @on_timeout
    def timeout(p, timer, w: Wk, c: Cmd):
        if timer == "idle":  # the client proxy, once every command has its reply: stutters
            if p.id != CLIENT or w or c:
                require(False)
            require(ForAll(range(len(p.spec.workload_of(p))), lambda d: p.status[d] == "done"))
            set_timer("idle")
            return
        set_timer("tick")
        if p.id == CLIENT:
            if w:
                require(False)
            p.spec.invoke(p, c)
        else:
            p.spec.order(p, w, c)

    def invoke(p, c):
        """The proxy issues command c: the next of the workload, with fewer than `outstanding` without a reply."""
        require(p.status[c] == "idle")
        prev = p.spec.previous(p, c)
        if prev is not None:
            require(p.status[prev] != "idle")
        require(p.spec.room(p, c))
        p.status[c] = "pending"
        done = p.before[c]
        for d in range(len(p.spec.workload_of(p))):
            if d != c:
                done = If(p.status[d] == "done", done.add(d), done)
        p.before[c] = done
        send(ORDER, p.spec.msgs.Multicast(c))

    def multicast(p, c):
        """Atomic multicast with acyclic order: c joins the stream of every group of C-G(c) in one step."""
        for g in sorted(p.spec.groups(p, c)):
            PSMR.append(p, g, c)

    def order(p, w, c):
        """The per-group ordering of a seeded bug (the correct ordering layer orders on receipt)."""
        require(False)

    def append(p, g, c):
        """Command c takes the next position of group g's stream, sent to every replica."""
        at = p.length[g]
        for i in range(len(p.spec.workload_of(p))):
            p.stream[g][i] = If(at == i, c, p.stream[g][i])
            for r in replicas(p):
                send(r, p.spec.msgs.Deliver(c, g, i), when=at == i)
        p.length[g] = at + 1

    def deliver(p, c, g, i):
        """Worker g of this replica takes position i of its group's stream, command c."""
        groups = p.spec.groups(p, c)
        if g not in groups:
            require(False)  # never sent (`integrity`)
        last = p.waiting[g]
        gone = [And(last == d, p.released.contains(d)) for d in range(len(p.spec.workload_of(p)))
                if len(p.spec.groups(p, d)) > 1]
        require(p.head[g] == i, Or(last == None, *gone))  # noqa: E711 (a term comparison)
        p.head[g] = i + 1
        p.took[g][i] = c
        cmd = p.spec.workload_of(p)[c]
        if len(groups) == 1:
            PSMR.execute(p, c, cmd)
        elif g != min(groups):
            p.signals[c] = p.signals[c].add(g)  # signal(E, C); wait(go, C)
            p.waiting[g] = c
        else:
            require(ForAll(sorted(groups - {g}), lambda o: p.signals[c].contains(o)))
            PSMR.execute(p, c, cmd)
            p.released = p.released.add(c)  # go

    def execute(p, c, cmd: Command):
        Assert(Not(p.executed.contains(c)), f"command {c} ({cmd}) executed twice")
        if cmd.op == "get":
            result = p.store[cmd.key]
        elif cmd.op == "put":
            result = p.store[cmd.key]
            p.store[cmd.key] = cmd.value
        else:
            result = 0
            for k in range(p.spec.keys_of(p)):
                p.store[k] = cmd.value
        p.executed = p.executed.add(c)
        p.spec.answer(p, c, result)

    def answer(p, c, result):
        """Send the client the reply of command c: `result`, one message per value it may have."""
        if isinstance(result, int):
            send(CLIENT, p.spec.msgs.Reply(c, result))
        else:
            for v in p.spec.values:
                send(CLIENT, p.spec.msgs.Reply(c, v), when=result == v)

    # ------------------------------------------------------------------ the ordering layer's contract
    @invariant
    def integrity(s):
        """A group's stream holds a command at most once, and only one multicast to that group."""
        n, out = len(s.spec.workload_of(s)), []
        st = s.stream[ORDER]
        for g in range(int(s.workers)):
            for i in range(n):
                for c in range(n):
                    addressed = g in s.spec.groups(s, c)
                    here = st[g][i] == c
                    out.append(Implies(here, And(s.status[CLIENT][c] != "idle", addressed)))
                    out.extend(Implies(here, st[g][j] != c) for j in range(i))
        return And(*out)

    @invariant
    def agreement(s):
        """Identical per-worker delivery sequences: every replica's worker g took, position by position,
        its group's one stream (uniform agreement and order within each group)."""
        out = []
        for r in replicas(s):
            for g in range(int(s.workers)):
                for i in range(len(s.spec.workload_of(s))):
                    out.append(Implies(i < s.head[r][g], s.took[r][g][i] == s.stream[ORDER][g][i]))
        return And(*out)

    @invariant
    def acyclic_order(s):
        """The delivery precedence relation (c before c' in some group's stream) has no cycle."""
        n = len(s.spec.workload_of(s))
        st = s.stream[ORDER]

        def before(a, b):
            return Or(*[And(st[g][i] == a, st[g][j] == b)
                        for g in range(int(s.workers)) for i in range(n) for j in range(i + 1, n)])

        cycles = []
        for k in range(2, n + 1):
            for ring in permutations(range(n), k):
                if ring[0] == min(ring):  # each cycle once
                    cycles.append(And(*[before(ring[i], ring[(i + 1) % k]) for i in range(k)]))
        return Not(Or(*cycles)) if cycles else True

    # ------------------------------------------------------------------------------- P-SMR's claims
    @invariant
    def replicas_agree(s):
        """Replicas that have executed the same commands hold the same state."""
        out = []
        for r1, r2 in combinations(replicas(s), 2):
            same = s.executed[r1] == s.executed[r2]
            out.append(Implies(same, ForAll(range(s.spec.keys_of(s)), lambda k: s.store[r1][k] == s.store[r2][k])))
        return And(*out)

    @invariant
    def dependent_same_order(s):
        """Every two dependent commands execute in the same relative order at every replica: no replica
        has executed only the first while another has executed only the second."""
        cmds = s.spec.workload_of(s)
        n, out = len(cmds), []
        for a, b in combinations(range(n), 2):
            if not dependent(cmds[a], cmds[b], s.spec.keys_of(s)):
                continue
            for r1, r2 in permutations(replicas(s), 2):
                e1, e2 = s.executed[r1], s.executed[r2]
                out.append(Not(And(e1.contains(a), Not(e1.contains(b)), e2.contains(b), Not(e2.contains(a)))))
        return And(*out)

    @invariant
    def linearizable(s):
        """The client history has a linearization: an order of the completed commands (and any of the
        pending ones), respecting real time, whose sequential execution gives the replies seen."""
        cmds = s.spec.workload_of(s)
        n = len(cmds)
        st, rep, bef = s.status[CLIENT], s.reply[CLIENT], s.before[CLIENT]
        options = []
        for k in range(n + 1):
            for chosen in combinations(range(n), k):
                left_out = [Not(st[c] == "done") for c in range(n) if c not in chosen]
                invoked = [st[c] != "idle" for c in chosen]
                for order in permutations(chosen):
                    store, conds = [0] * s.spec.keys_of(s), []
                    for i, c in enumerate(order):
                        result = execute(cmds[c], store)
                        conds.append(Implies(st[c] == "done", rep[c] == result))
                        conds.extend(Not(bef[c].contains(d)) for d in order[i + 1:])
                    options.append(And(*left_out, *invoked, *conds))
        return Or(*options)


class PSMRNoAcyclicOrder(PSMR):
    """Seeded bug: each group is ordered on its own (no acyclic order): the barrier deadlocks.

    A multicast joins the pending set of each of its groups, and each group's sequencer appends its
    pending commands in any order, independently of the others. This ordering layer does not promise
    acyclic order, so that part of the contract is not asserted; the check shows what its absence
    costs: `lockstep check psmr_no_acyclic_order` finds the deadlock (worker 0, the leader of both
    global commands, waits for worker 1's signal on one while worker 1 waits for the go of the other)."""

    @invariant
    def acyclic_order(s):
        """Not promised by a per-group ordering layer."""
        return True

    def multicast(p, c):
        for g in p.spec.groups(p, c):
            p.pending[g] = p.pending[g].add(c)

    def order(p, w, c):
        if p.id != ORDER or w not in p.spec.groups(p, c):
            require(False)
        require(p.pending[w].contains(c))
        p.pending[w] = p.pending[w].remove(c)
        PSMR.append(p, w, c)


class PSMRFirstKeyCG(PSMR):
    """Seeded bug: C-G sends a multi-key command to the group of its first key only: replicas diverge.

    `lockstep check psmr_first_key_cg --invariant replicas_agree` shows the divergence (putall and
    put(1, 3) execute in opposite orders at two replicas); with every invariant, `dependent_same_order`
    is violated first, on a shorter trace."""

    def cg(c: Command, workers: int, nkeys: int | None = None) -> frozenset[int]:
        return cg_first_key(c, workers, nkeys)


class PSMRReadWrongGroup(PSMR):
    """Seeded bug: C-G sends a read of key k to worker k + 1's group instead of its owner's.

    get(0) and put(0, 3) are dependent but go to disjoint groups, so no worker orders them:
    `lockstep check psmr_read_wrong_group` finds two replicas executing them in opposite orders
    (`dependent_same_order`); `--invariant linearizable` finds the client's stale read."""

    def cg(c: Command, workers: int, nkeys: int | None = None) -> frozenset[int]:
        return cg_read_wrong_group(c, workers, nkeys)
