"""P-SMR: parallel state-machine replication (Marandi, Bezerra, Pedone, ICDCS 2014; arXiv 1311.6183).

Each replica runs W worker threads and no scheduler. There are multicast groups g_1..g_W (g_i: worker
i of every replica) and g_all (every worker). A client proxy multicasts a command C to C-G(C), the
groups computed from the declared dependency relation C-Dep (`commands.py`), and takes the first
reply. Worker t of a replica, on the next command C delivered to it:

    if |C-G(C)| = 1: execute C; reply
    else: E = the lowest-index worker of C-G(C)
          if t != E: signal(E, C); wait(go, C)
          else: wait for the signals of every other worker of C-G(C); execute C; reply; go to them all

Processes: 0 is the client proxy (it issues every command of the workload, each once, at any time);
1 is the ordering layer; 2..R+1 are the replicas, each holding its W workers as shared-memory
threads (a step of the replica is a step of one worker, chosen by the checker). The ordering
layer's contract — atomic multicast — is explicit: it keeps the multicast commands not yet
ordered, and one `order` step delivers a command to every group of C-G(C) at once (FIFO channels
to every replica), which gives validity and integrity (each command delivered once to each
addressed worker, and only if multicast), uniform agreement (every replica gets the same per-group
sequence) and acyclic order (the per-group sequences are projections of one order). The
invariants below check each of these on the delivered sequences, and the paper's properties on
the replicas: identical per-worker delivery sequences, dependent commands in the same relative
order everywhere, equal states after equal executed sets, and a linearizable client history.
Deadlock freedom of the barrier is the checker's own deadlock check: the client proxy stutters
once every command has a reply, so a state with no step is a stuck system.

Seeded bugs:
- `PSMRNoAcyclicOrder`: the ordering layer orders each group on its own (a sequencer per group and
  no merge), so two global commands can reach g_1 in one order and g_2 in the other; worker 1 then
  waits at the barrier of one command while worker 2 waits at the other's: the checker reports the
  deadlock, with a shortest trace.
- `PSMRFirstKeyCG`: C-G routes a multi-key command by its first key only, so `putall` and `put(1, v)`
  (dependent) go to disjoint groups: replicas execute them in different orders and diverge
  (`replicas_agree` fails).

Deviations and gaps filled (the paper's text could not be consulted here; the notes in
shared/research/protocols.md §6 are the source of the worker loop and the multicast properties):
- One client proxy process issues the whole workload (each command once, concurrently); the
  commands are fixed per check (`--param commands=N` takes the first N of `commands.WORKLOAD`),
  so linearizability of the client history is an invariant over that workload's orders.
- The ordering layer is modelled by its contract, not as Multi-Ring Paxos; it does not fail. Replicas
  may crash (`--param crashes=1`): a crashed replica stops, the others go on and reply.
- put(k, v) returns the replaced value, so replies constrain the order (the paper's key-value store
  replies are not modelled in more detail).
- Signals and go are per command (`signals[C]`, `released`), the shared memory of the replica's
  threads, rather than per-thread semaphores.
"""

from __future__ import annotations

from itertools import combinations, permutations

from ..lang import (
    And,
    Bool,
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
from .commands import MAX_COMMANDS, MAX_VALUE, WORKLOAD, Command, cg, cg_first_key, dependent, execute

R = Param("replicas", default=2, lo=1, hi=4, doc="replicas")
W = Param("workers", default=2, lo=1, hi=4, doc="worker threads per replica (and groups g_1..g_W)")
N = Param("commands", default=3, lo=1, hi=MAX_COMMANDS, doc="commands of the workload issued by the client")

CLIENT, ORDER = 0, 1
Proc = Range(R + 2)
Cmd = Range(N)
Wk = Range(W)
Key = Range(W)
Val = Int(0, MAX_VALUE)
Count = Int(0, N)

Multicast = Record("Multicast", c=Cmd)
Deliver = Record("Deliver", c=Cmd, g=Wk)
Reply = Record("Reply", c=Cmd, v=Val)


def replicas(s) -> range:
    return range(2, int(s.replicas) + 2)


def workload(n: int) -> tuple[Command, ...]:
    return WORKLOAD[:n]


class PSMR(ActorSpec):
    """P-SMR with atomic multicast (acyclic order) and the C-G computed from the keys commands access."""

    Process = Proc
    Message = Union(Multicast, Deliver, Reply)
    Timer = Enum("tick", "idle")
    network = Network(ordered=True, capacity=8)  # deliveries in flight to a replica: up to sum |C-G(C)|
    crashable = staticmethod(lambda params: range(2, params["replicas"] + 2))  # replicas may crash
    timeouts = {"tick": 1, "idle": 50}

    # the client proxy
    status = Local(Map(Cmd, Enum("idle", "pending", "done")), init="idle")
    reply = Local(Map(Cmd, Option(Val)))
    before = Local(Map(Cmd, Set(Cmd)))  # the commands completed when this one was invoked
    # the ordering layer: multicast commands not yet delivered to a group
    pending = Local(Map(Wk, Set(Cmd)))
    # a replica: per worker, the delivered sequence and how far it has got; the barrier; the store
    log = Local(Map(Wk, Map(Cmd, Option(Cmd))))
    delivered = Local(Map(Wk, Count), init=0)
    head = Local(Map(Wk, Count), init=0)
    waiting = Local(Map(Wk, Bool), init=False)
    signals = Local(Map(Cmd, Set(Wk)))
    released = Local(Set(Cmd))
    store = Local(Map(Key, Val), init=0)
    rank = Local(Map(Cmd, Int(0, MAX_COMMANDS)), init=0)  # 1 + position in the replica's execution order
    executed = Local(Int(0, MAX_COMMANDS), init=0)

    def cg(c: Command, workers: int) -> frozenset[int]:
        """The command-to-groups function (overridden by the seeded bug)."""
        return cg(c, workers)

    def groups(p, c: int) -> frozenset[int]:
        return p.spec.cg(workload(int(p.commands))[c], int(p.workers))

    @on_start
    def start(p):
        set_timer("tick")
        if p.id == CLIENT:
            set_timer("idle")

    @on_message
    def receive(p, src, m):
        if p.id == CLIENT:
            require(m.tag == "Reply")
            first = p.status[m.c] == "pending"  # the proxy takes the first reply
            p.status[m.c] = If(first, "done", p.status[m.c])
            p.reply[m.c] = If(first, m.v, p.reply[m.c])
        elif p.id == ORDER:
            require(m.tag == "Multicast")
            for g in PSMR.groups(p, m.c):
                p.pending[g] = p.pending[g].add(m.c)
        else:
            require(m.tag == "Deliver")
            d = p.delivered[m.g]
            for i in range(int(p.commands)):
                p.log[m.g][i] = If(d == i, m.c, p.log[m.g][i])
            p.delivered[m.g] = d + 1

    @on_timeout
    def timeout(p, timer, w: Wk, c: Cmd):
        if timer == "idle":  # the client proxy, once every command has its reply: stutters
            if p.id != CLIENT or w or c:
                require(False)
            require(ForAll(range(int(p.commands)), lambda d: p.status[d] == "done"))
            set_timer("idle")
            return
        set_timer("tick")
        if p.id == CLIENT:
            if w:
                require(False)
            PSMR.invoke(p, c)
        elif p.id == ORDER:
            p.spec.order(p, w, c)
        else:
            PSMR.work(p, w, c)

    def invoke(p, c):
        require(p.status[c] == "idle")
        p.status[c] = "pending"
        done = p.before[c]
        for d in range(int(p.commands)):
            if d != c:
                done = If(p.status[d] == "done", done.add(d), done)
        p.before[c] = done
        send(ORDER, Multicast(c))

    def order(p, w, c):
        """Atomic multicast with acyclic order: deliver c to every group of C-G(c) in one step."""
        groups = PSMR.groups(p, c)
        if w != min(groups):
            require(False)
        require(p.pending[w].contains(c))
        for g in groups:
            p.pending[g] = p.pending[g].remove(c)
        for r in replicas(p):
            for g in sorted(groups):
                send(r, Deliver(c, g))

    def work(p, w, c):
        """Worker w of this replica takes a step on c, the next command delivered to it."""
        groups = PSMR.groups(p, c)
        if w not in groups:
            require(False)
        n = int(p.commands)
        h = p.head[w]
        require(Or(*[And(h == i, p.log[w][i] == c) for i in range(n)]))
        cmd = workload(n)[c]
        if len(groups) == 1:
            PSMR.execute(p, c, cmd)
            p.head[w] = h + 1
            return
        leader = min(groups)
        if w != leader:
            signal = Not(p.waiting[w])
            resume = And(p.waiting[w], p.released.contains(c))
            require(Or(signal, resume))
            p.signals[c] = If(signal, p.signals[c].add(w), p.signals[c])
            p.waiting[w] = signal
            p.head[w] = If(resume, h + 1, h)
            return
        require(ForAll(sorted(groups - {leader}), lambda o: p.signals[c].contains(o)))
        PSMR.execute(p, c, cmd)
        p.released = p.released.add(c)
        p.head[w] = h + 1

    def execute(p, c, cmd: Command):
        if cmd.op == "get":
            result = p.store[cmd.key]
        elif cmd.op == "put":
            result = p.store[cmd.key]
            p.store[cmd.key] = cmd.value
        else:
            result = 0
            for k in range(int(p.workers)):
                p.store[k] = cmd.value
        p.executed = p.executed + 1
        p.rank[c] = p.executed
        if isinstance(result, int):
            send(CLIENT, Reply(c, result))
        else:
            for v in range(MAX_VALUE + 1):
                send(CLIENT, Reply(c, v), when=result == v)

    # ------------------------------------------------------------------ the ordering layer's contract
    @invariant
    def integrity(s):
        """A worker delivers a command at most once, and only one that was multicast to its group."""
        n, out = int(s.commands), []
        for r in replicas(s):
            for w in range(int(s.workers)):
                for i in range(n):
                    live = i < s.delivered[r][w]
                    for c in range(n):
                        addressed = w in s.spec.cg(workload(n)[c], int(s.workers))
                        is_c = s.log[r][w][i] == c
                        out.append(Implies(And(live, is_c), And(s.status[CLIENT][c] != "idle", addressed)))
                        for j in range(i):
                            out.append(Implies(And(live, is_c), s.log[r][w][j] != c))
        return And(*out)

    @invariant
    def agreement(s):
        """Identical per-worker delivery sequences: a worker's sequences at two replicas are one the
        prefix of the other (uniform agreement and order within each group)."""
        out = []
        for r1, r2 in combinations(replicas(s), 2):
            for w in range(int(s.workers)):
                for i in range(int(s.commands)):
                    both = And(i < s.delivered[r1][w], i < s.delivered[r2][w])
                    out.append(Implies(both, s.log[r1][w][i] == s.log[r2][w][i]))
        return And(*out)

    @invariant
    def acyclic_order(s):
        """The delivery precedence relation (c before c' at some worker of some replica) has no cycle."""
        n = int(s.commands)

        def before(a, b):
            return Or(*[And(j < s.delivered[r][w], s.log[r][w][i] == a, s.log[r][w][j] == b)
                        for r in replicas(s) for w in range(int(s.workers)) for i in range(n) for j in range(i + 1, n)])

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
        n, out = int(s.commands), []
        for r1, r2 in combinations(replicas(s), 2):
            same = And(*[(s.rank[r1][c] > 0) == (s.rank[r2][c] > 0) for c in range(n)])
            out.append(Implies(same, ForAll(range(int(s.workers)), lambda k: s.store[r1][k] == s.store[r2][k])))
        return And(*out)

    @invariant
    def dependent_same_order(s):
        """Every two dependent commands execute in the same relative order at every replica."""
        n, out = int(s.commands), []
        cmds = workload(n)
        for a, b in combinations(range(n), 2):
            if not dependent(cmds[a], cmds[b], int(s.workers)):
                continue
            for r1, r2 in combinations(replicas(s), 2):
                rk1, rk2 = s.rank[r1], s.rank[r2]
                done = And(rk1[a] > 0, rk1[b] > 0, rk2[a] > 0, rk2[b] > 0)
                out.append(Implies(done, (rk1[a] < rk1[b]) == (rk2[a] < rk2[b])))
        return And(*out)

    @invariant
    def linearizable(s):
        """The client history has a linearization: an order of the completed commands (and any of the
        pending ones), respecting real time, whose sequential execution gives the replies seen."""
        n = int(s.commands)
        cmds = workload(n)
        st, rep, bef = s.status[CLIENT], s.reply[CLIENT], s.before[CLIENT]
        options = []
        for k in range(n + 1):
            for chosen in combinations(range(n), k):
                left_out = [Not(st[c] == "done") for c in range(n) if c not in chosen]
                invoked = [st[c] != "idle" for c in chosen]
                for order in permutations(chosen):
                    store, conds = [0] * int(s.workers), []
                    for i, c in enumerate(order):
                        result = execute(cmds[c], store)
                        conds.append(Implies(st[c] == "done", rep[c] == result))
                        conds.extend(Not(bef[c].contains(d)) for d in order[i + 1:])
                    options.append(And(*left_out, *invoked, *conds))
        return Or(*options)


class PSMRNoAcyclicOrder(PSMR):
    """Seeded bug: each group is ordered on its own (no acyclic order): the barrier deadlocks.

    This ordering layer does not promise acyclic order, so that part of the contract is not asserted;
    the check shows what its absence costs: `lockstep check psmr_no_acyclic_order` finds the deadlock
    (worker 0 waits for worker 1's signal on one global command, worker 1 at the other's barrier)."""

    @invariant
    def acyclic_order(s):
        """Not promised by a per-group ordering layer."""
        return True

    def order(p, w, c):
        groups = PSMR.groups(p, c)
        if w not in groups:
            require(False)
        require(p.pending[w].contains(c))
        p.pending[w] = p.pending[w].remove(c)
        for r in replicas(p):
            send(r, Deliver(c, w))


class PSMRFirstKeyCG(PSMR):
    """Seeded bug: C-G sends a multi-key command to the group of its first key only: replicas diverge.

    `lockstep check psmr_first_key_cg --invariant replicas_agree` shows the divergence; with every
    invariant, the first violation found is of `linearizable` (a stale reply), a step earlier."""

    def cg(c: Command, workers: int) -> frozenset[int]:
        return cg_first_key(c, workers)
