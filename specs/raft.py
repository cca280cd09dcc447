"""Raft: leader election, log replication and commitment, after Ongaro's TLA+ specification.

Sources: D. Ongaro and J. Ousterhout, "In Search of an Understandable Consensus Algorithm", USENIX ATC
2014 (Figure 2, and §5.2-5.4); D. Ongaro, "Consensus: Bridging Theory and Practice", PhD thesis,
Stanford 2014, appendix B (`raft.tla`, github.com/ongardie/raft.tla). Names follow the TLA+ spec in
Python style (`current_term` for currentTerm, `handle_append_entries_request` for
HandleAppendEntriesRequest); Raft's log indices are 1-based in messages, `next_index`, `match_index` and
`commit_index`, and the entry at index n is `log[i][n - 1]`.

Modelled as in the TLA+ spec: the servers' persistent state (current term, vote, log) and volatile state
(role, commit index, votes responded and granted, next and match indices); Restart (a crash and
recovery that keeps the persistent state), Timeout, RequestVote, BecomeLeader (a quorum of votes),
ClientRequest, AdvanceCommitIndex (only entries of the leader's own term are committed by counting),
AppendEntries, and the receipt of each message kind: UpdateTerm (a message of a higher term turns the
receiver into a follower of that term before it is handled), HandleRequestVoteRequest (the vote goes to
a candidate whose log is at least as up-to-date, once per term), HandleRequestVoteResponse,
HandleAppendEntriesRequest (the log-consistency check on the previous entry), HandleAppendEntriesResponse,
DropStaleResponse; the network loses messages (DropMessage) and may deliver the messages of a channel
in any order.

Simplified, and how:
- A candidate votes for itself when it times out (the paper, §5.2; the TLA+ spec sends itself a vote
  request and answers it, remarking that implementations set the local vote at once).
- The network is one bounded sequence of messages per ordered pair of servers (`net[i][j]`, from i to
  j), of at most `cap` messages; a message sent to a full
  channel is lost (the network may lose any message). `--param ordered=1` delivers each channel in
  order (FIFO, as TCP connections do); by default any message of a channel may be received next, as in
  the TLA+ spec's bag. Duplication (the TLA+ spec's DuplicateMessage) is not modelled.
- An AppendEntries request carries up to `batch` entries (the TLA+ spec sends at most one; the paper
  allows several "for efficiency"), and is handled in one step by the paper's receiver rules: entries
  that conflict with the log (same index, other term) are deleted with all that follow, entries not yet
  in the log are appended, and `commit_index` becomes min(leaderCommit, index of the last new entry)
  when leaderCommit is larger. The TLA+ spec takes several steps (return to follower, remove one
  conflicting entry, append one), none of them observable apart.
- A candidate that receives an AppendEntries request of its own term returns to follower and handles
  it in the same step.
- A rejection carries the length of the follower's log (`match_index`), and the leader backs `next_index`
  up to just past it when that is lower than one step back (§5.3 of the paper describes such
  shortcuts; the TLA+ spec always steps back by one). `next_index` only chooses what is sent: safety
  does not depend on it.
- `--param pipelined=1` lets a leader pipeline AppendEntries requests, advancing `next_index` past the
  entries it sends before any answer comes (the thesis, §10.2.1; a rejection backs it up again). The TLA+
  spec does not pipeline: `pipelined=0` is the default.
- Bounds (TLC's constraints, for a finite state space): terms go up to `max_term` (a server at that term
  does not time out), logs hold at most `max_log` entries (a leader whose log is full takes no client
  request), `values` client values.
- History variables for the properties: `elected[i]`, the terms in which server i became leader (the
  TLA+ spec's `elections`), and `committed[n]`, the term of the entry at index n when a leader first
  committed it by counting, and that leader's term (`by_term`).

Properties (the paper's Figure 3): `election_safety` (at most one leader is elected in a term),
`log_matching` (two logs with an entry of the same index and term are identical up to it),
`leader_completeness` (an entry committed in term T is in the log of every leader of a later term),
`state_machine_safety` (no two servers have committed different entries at an index).

Out of scope: membership changes, log compaction and snapshots, client sessions and reads, leadership
transfer, the liveness of elections. Model-checked at 3 servers (`lockstep check raft --symmetry`: defaults
max_term=2, max_log=1, cap=1, values=1; the README gives the state counts; at max_term=3 the space is beyond
30 million states). `RaftVoteAnyLog` is a seeded bug: votes granted without the election restriction
(§5.4.1) break leader completeness (`lockstep check raft_vote_any_log -p max_term=3`, 18 steps).
"""

from .lang import (
    And,
    Bool,
    Enum,
    ForAll,
    If,
    Implies,
    Int,
    Map,
    Max,
    Min,
    Not,
    Option,
    Or,
    Param,
    Range,
    Record,
    Seq,
    Set,
    Spec,
    Union,
    action,
    invariant,
    require,
)
from .lang.terms import lift

SERVERS = Param("servers", default=3, lo=1, doc="servers")
MAX_TERM = Param("max_term", default=2, lo=1, doc="largest term (a server at it does not time out)")
MAX_LOG = Param("max_log", default=1, lo=1, doc="entries a log holds at most")
VALUES = Param("values", default=1, lo=1, doc="client values")
CAP = Param("cap", default=1, lo=1, doc="messages a channel holds at most (a send to a full channel is lost)")
BATCH = Param("batch", default=1, lo=1, doc="entries an AppendEntries request carries at most")
ORDERED = Param("ordered", default=0, lo=0, hi=1, doc="1: each channel delivers in order (FIFO)")
PIPELINED = Param("pipelined", default=0, lo=0, hi=1,
                  doc="1: a leader advances next_index past the entries it sends, before any answer (pipelining)")

Server = Range(SERVERS, symmetric=True)
Term = Int(0, MAX_TERM)
Index = Int(0, MAX_LOG)
Value = Int(1, VALUES)
Entry = Record("Entry", term=Term, value=Value)
Log = Seq(Entry, MAX_LOG)

RequestVoteRequest = Record("RequestVoteRequest", term=Term, last_log_term=Term, last_log_index=Index)
RequestVoteResponse = Record("RequestVoteResponse", term=Term, granted=Bool)
Entries = Seq(Entry, BATCH)
AppendEntriesRequest = Record("AppendEntriesRequest", term=Term, prev_log_index=Index, prev_log_term=Term,
                              entries=Entries, commit_index=Index)
AppendEntriesResponse = Record("AppendEntriesResponse", term=Term, success=Bool, match_index=Index)
Message = Union(RequestVoteRequest, RequestVoteResponse, AppendEntriesRequest, AppendEntriesResponse)
Committed = Record("Committed", term=Term, by_term=Term)
Position = Int(0, CAP - 1)

FOLLOWER, CANDIDATE, LEADER = "Follower", "Candidate", "Leader"


def last_term(log):
    """The term of a log's last entry (0 for an empty log)."""
    return If(log.len() == 0, 0, log[Max(log.len() - 1, 0)].term)


def term_at(log, n):
    """The term of the entry at (1-based) index n, 0 for index 0 or an index beyond the log."""
    out = 0
    for k in range(1, MAX_LOG.value() + 1):
        out = If(And(n == k, log.len() >= k), log[k - 1].term, out)
    return out


class Raft(Spec):
    """Raft's election, replication and commitment (Ongaro's TLA+ spec, with the deviations listed above)."""

    ordered = ORDERED
    pipelined = PIPELINED
    current_term = Map(Server, Term, init=1)
    state = Map(Server, Enum(FOLLOWER, CANDIDATE, LEADER), init=FOLLOWER)
    voted_for = Map(Server, Option(Server), init=None)
    log = Map(Server, Log)
    commit_index = Map(Server, Index, init=0)
    votes_responded = Map(Server, Set(Server))
    votes_granted = Map(Server, Set(Server))
    next_index = Map(Server, Map(Server, Int(1, MAX_LOG + 1)), init=1)
    match_index = Map(Server, Map(Server, Index), init=0)
    net = Map(Server, Map(Server, Seq(Message, CAP)))
    elected = Map(Server, Set(Term))
    committed = Map(Int(1, MAX_LOG), Option(Committed), init=None)

    # -- the network ----------------------------------------------------------------------------------
    def send(s, i, j, m):
        """Send m from i to j (lost if the channel is full)."""
        q = s.net[i][j]
        s.net[i][j] = If(q.len() < CAP, q.append(m), q)

    def message(s, i, j, k):
        """Message k of the channel from j to i (the one i receives), with the guard that it is there."""
        if ORDERED.value() and k > 0:
            require(False)
        require(s.net[j][i].len() > k)
        return s.net[j][i][k]

    def consume(s, i, j, k):
        s.net[j][i] = s.net[j][i].remove_at(k)

    # -- servers --------------------------------------------------------------------------------------
    @action
    def restart(s, i: Server):
        """Server i crashes and recovers: it keeps its term, vote and log, and loses its volatile state."""
        s.state[i] = FOLLOWER
        s.votes_responded[i] = s.votes_responded[i].diff(s.votes_responded[i])
        s.votes_granted[i] = s.votes_granted[i].diff(s.votes_granted[i])
        for j in Server:
            s.next_index[i][j] = 1
            s.match_index[i][j] = 0
        s.commit_index[i] = 0

    @action
    def timeout(s, i: Server):
        """Server i times out and starts a new election, voting for itself."""
        require(Or(s.state[i] == FOLLOWER, s.state[i] == CANDIDATE), s.current_term[i] < MAX_TERM)
        s.state[i] = CANDIDATE
        s.current_term[i] = s.current_term[i] + 1
        s.voted_for[i] = i
        s.votes_responded[i] = s.votes_responded[i].diff(s.votes_responded[i]).add(i)
        s.votes_granted[i] = s.votes_granted[i].diff(s.votes_granted[i]).add(i)

    @action
    def request_vote(s, i: Server, j: Server):
        """Candidate i sends j a RequestVote request."""
        require(i != j, s.state[i] == CANDIDATE, Not(s.votes_responded[i].contains(j)))
        Raft.send(s, i, j, RequestVoteRequest(s.current_term[i], last_term(s.log[i]), s.log[i].len()))

    @action
    def become_leader(s, i: Server):
        """Candidate i has the votes of a quorum and becomes leader."""
        require(s.state[i] == CANDIDATE, s.votes_granted[i].card() * 2 > SERVERS)
        s.state[i] = LEADER
        for j in Server:
            s.next_index[i][j] = s.log[i].len() + 1
            s.match_index[i][j] = 0
        s.elected[i] = s.elected[i].add(s.current_term[i])

    @action
    def client_request(s, i: Server, v: Value):
        """Leader i appends a client's value to its log."""
        require(s.state[i] == LEADER, s.log[i].len() < MAX_LOG)
        s.log[i] = s.log[i].append(Entry(s.current_term[i], v))

    @action
    def advance_commit_index(s, i: Server):
        """Leader i commits the entries of its term that a quorum has (and those before them)."""
        require(s.state[i] == LEADER)
        agreed = 0  # the largest index a quorum has, counting i itself
        for n in range(1, MAX_LOG.value() + 1):
            count = 1 + sum(If(And(j != i, s.match_index[i][j] >= n), 1, 0) for j in Server)
            agreed = If(And(count * 2 > SERVERS, s.log[i].len() >= n), n, agreed)
        new = If(And(agreed > 0, term_at(s.log[i], agreed) == s.current_term[i]), agreed, s.commit_index[i])
        for n in range(1, MAX_LOG.value() + 1):
            first = And(n <= new, n > s.commit_index[i], s.committed[n].is_none())
            s.committed[n] = If(first, Committed(term_at(s.log[i], n), s.current_term[i]), s.committed[n])
        s.commit_index[i] = new

    @action
    def append_entries(s, i: Server, j: Server):
        """Leader i sends j an AppendEntries request: the entries from next_index[i][j] on (at most `batch`)."""
        require(i != j, s.state[i] == LEADER)
        nxt = s.next_index[i][j]
        prev = nxt - 1
        count = Max(Min(s.log[i].len() - prev, BATCH), 0)
        batch = _first(count, [_entry_at(s.log[i], prev + x) for x in range(BATCH.value())], Entries)
        Raft.send(s, i, j, AppendEntriesRequest(s.current_term[i], prev, term_at(s.log[i], prev), batch,
                                                s.commit_index[i]))
        if PIPELINED.value():
            s.next_index[i][j] = If(count > 0, nxt + count, nxt)

    # -- receiving ------------------------------------------------------------------------------------
    @action
    def update_term(s, i: Server, j: Server, k: Position):
        """A message of a higher term: i moves to that term as a follower (the message stays to be handled)."""
        m = Raft.message(s, i, j, k)
        t = _term(m)
        require(t > s.current_term[i])
        s.current_term[i] = t
        s.state[i] = FOLLOWER
        s.voted_for[i] = None

    @action
    def handle_request_vote_request(s, i: Server, j: Server, k: Position):
        """i answers j's vote request: granted if the terms agree, j's log is at least as up-to-date as i's,
        and i has not voted for another server in this term."""
        m = Raft.message(s, i, j, k)
        require(m.tag == "RequestVoteRequest")
        r = m.as_(RequestVoteRequest)
        require(r.term <= s.current_term[i])
        log_ok = Or(r.last_log_term > last_term(s.log[i]),
                    And(r.last_log_term == last_term(s.log[i]), r.last_log_index >= s.log[i].len()))
        grant = And(r.term == s.current_term[i], log_ok,
                    Or(s.voted_for[i].is_none(), s.voted_for[i] == j))
        s.voted_for[i] = If(grant, j, s.voted_for[i])
        Raft.consume(s, i, j, k)
        Raft.send(s, i, j, RequestVoteResponse(s.current_term[i], grant))

    @action
    def handle_request_vote_response(s, i: Server, j: Server, k: Position):
        """i records j's vote (a response of i's current term)."""
        m = Raft.message(s, i, j, k)
        require(m.tag == "RequestVoteResponse")
        r = m.as_(RequestVoteResponse)
        require(r.term == s.current_term[i])
        s.votes_responded[i] = s.votes_responded[i].add(j)
        s.votes_granted[i] = If(r.granted, s.votes_granted[i].add(j), s.votes_granted[i])
        Raft.consume(s, i, j, k)

    @action
    def handle_append_entries_request(s, i: Server, j: Server, k: Position):
        """i handles j's AppendEntries request by the paper's receiver rules, and answers it."""
        m = Raft.message(s, i, j, k)
        require(m.tag == "AppendEntriesRequest")
        r = m.as_(AppendEntriesRequest)
        require(r.term <= s.current_term[i])
        log = s.log[i]
        prev = r.prev_log_index
        log_ok = Or(prev == 0, And(prev <= log.len(), term_at(log, prev) == r.prev_log_term))
        accept = And(r.term == s.current_term[i], log_ok)
        n_new = r.entries.len()
        conflict = Or(*(And(x < n_new, prev + x < log.len(), _entry_at(log, prev + x).term != _entry_in(r.entries, x).term)
                        for x in range(BATCH.value())))
        last_new = prev + n_new
        length = If(conflict, last_new, Max(log.len(), last_new))
        merged = _first(length, [If(And(n >= prev, n < last_new), _entry_in(r.entries, n - prev), _entry_at(log, n))
                                 for n in range(MAX_LOG.value())], Log)
        s.log[i] = If(accept, merged, log)
        s.commit_index[i] = If(And(accept, r.commit_index > s.commit_index[i]), Min(r.commit_index, last_new),
                               s.commit_index[i])
        s.state[i] = If(And(r.term == s.current_term[i], s.state[i] == CANDIDATE), FOLLOWER, s.state[i])
        Raft.consume(s, i, j, k)
        Raft.send(s, i, j, AppendEntriesResponse(s.current_term[i], accept, If(accept, last_new, Min(log.len(), MAX_LOG))))

    @action
    def handle_append_entries_response(s, i: Server, j: Server, k: Position):
        """i updates its indices for j from j's answer (a response of i's current term)."""
        m = Raft.message(s, i, j, k)
        require(m.tag == "AppendEntriesResponse")
        r = m.as_(AppendEntriesResponse)
        require(r.term == s.current_term[i])
        s.next_index[i][j] = If(r.success, r.match_index + 1,
                                Max(Min(s.next_index[i][j] - 1, r.match_index + 1), 1))
        s.match_index[i][j] = If(r.success, r.match_index, s.match_index[i][j])
        Raft.consume(s, i, j, k)

    @action
    def drop_stale_response(s, i: Server, j: Server, k: Position):
        """i drops a response of an earlier term."""
        m = Raft.message(s, i, j, k)
        require(Or(m.tag == "RequestVoteResponse", m.tag == "AppendEntriesResponse"), _term(m) < s.current_term[i])
        Raft.consume(s, i, j, k)

    @action
    def drop_message(s, i: Server, j: Server, k: Position):
        """The network loses message k of the channel from i to j."""
        require(s.net[i][j].len() > k)
        s.net[i][j] = s.net[i][j].remove_at(k)

    # -- properties (Figure 3 of the paper) ------------------------------------------------------------
    @invariant
    def election_safety(s):
        """At most one leader is elected in a term."""
        return ForAll(Server, Server, lambda i, j: Implies(i != j, s.elected[i].inter(s.elected[j]).is_empty()))

    @invariant
    def log_matching(s):
        """If two logs have an entry with the same index and term, they are identical up to that index. (Stated
        index by index: entries of the same index and term are equal, and so are the entries before them.)"""
        def matching(a, b):
            la, lb = a.len(), b.len()

            def same_term(n):
                return And(la > n, lb > n, _entry_at(a, n).term == _entry_at(b, n).term)
            return And(*(Implies(same_term(n), And(_entry_at(a, n) == _entry_at(b, n),
                                                   True if n == 0 else same_term(n - 1)))
                         for n in range(MAX_LOG.value())))
        return ForAll(Server, Server, lambda i, j: Implies(i < j, matching(s.log[i], s.log[j])))

    @invariant
    def leader_completeness(s):
        """An entry committed in a term is in the log of every leader of a later term."""
        def has(ld, n):
            c = s.committed[n]
            return Implies(And(c.is_some(), s.state[ld] == LEADER, s.current_term[ld] > c.get().by_term),
                           And(s.log[ld].len() >= n, term_at(s.log[ld], n) == c.get().term))
        return ForAll(Server, lambda ld: And(*(has(ld, n) for n in range(1, MAX_LOG.value() + 1))))

    @invariant
    def state_machine_safety(s):
        """No two servers have committed different entries at the same index."""
        return ForAll(Server, Server, lambda i, j: Implies(i < j, And(*(
            Implies(And(s.commit_index[i] > n, s.commit_index[j] > n),
                    And(s.log[i].len() > n, s.log[j].len() > n, _entry_at(s.log[i], n) == _entry_at(s.log[j], n)))
            for n in range(MAX_LOG.value())))))


def _first(count, elems, seq):
    """The sequence of the first `count` of `elems` (a term of `seq`'s type; each prefix is built once)."""
    prefixes = [lift((), seq.dom())]
    for e in elems:
        prefixes.append(prefixes[-1].append(e))
    out = prefixes[-1]
    for k in range(len(elems) - 1, -1, -1):
        out = If(count == k, prefixes[k], out)
    return out


def _term(m):
    """The term of any message."""
    out = m.as_(RequestVoteRequest).term
    for kind in (RequestVoteResponse, AppendEntriesRequest, AppendEntriesResponse):
        out = If(m.tag == kind.name, m.as_(kind).term, out)
    return out


def _entry_at(log, n):
    """The entry at (0-based) position n of a log, or Entry(0, 1) beyond its end (never read there)."""
    if not isinstance(n, int):
        out = Entry(0, 1)
        for x in range(MAX_LOG.value()):
            out = If(And(n == x, log.len() > x), log[x], out)
        return out
    return If(log.len() > n, log[n], Entry(0, 1))


def _entry_in(entries, x):
    """Entry x (symbolic, 0-based) of a batch, or Entry(0, 1) outside it."""
    out = Entry(0, 1)
    for y in range(BATCH.value()):
        out = If(And(x == y, entries.len() > y), entries[y], out)
    return out



class RaftVoteAnyLog(Raft):
    """Seeded bug: a server grants its vote without the election restriction (§5.4.1: the candidate's log must
    be at least as up-to-date), so a leader may lack a committed entry."""

    @action
    def handle_request_vote_request(s, i: Server, j: Server, k: Position):
        m = Raft.message(s, i, j, k)
        require(m.tag == "RequestVoteRequest")
        r = m.as_(RequestVoteRequest)
        require(r.term <= s.current_term[i])
        grant = And(r.term == s.current_term[i], Or(s.voted_for[i].is_none(), s.voted_for[i] == j))
        s.voted_for[i] = If(grant, j, s.voted_for[i])
        Raft.consume(s, i, j, k)
        Raft.send(s, i, j, RequestVoteResponse(s.current_term[i], grant))
