"""Tokens passed around a ring of processes: a small actor spec, and the executors' load test.

Each process starts `tokens / n` tokens of its own (process p owns tokens p, p+n, ...) and
sends each to its successor; a process that receives a token counts it (modulo `laps`) and
passes it on, forever. `no_token_lost` is the invariant: every token is always in flight (a
handler runs atomically), and the non-duplicating network rejects a copy of one.

Source: the token ring is folklore (e.g. Dijkstra's self-stabilising ring, CACM 17(11), 1974,
without the stabilisation); this is the plain circulating-token workload, not a protocol
from a paper. Deviations: none to state.
"""

from .lang import Int, Param, Range, Record, invariant
from .lang.actors import ActorSpec, Local, on_message, on_start, send

N = Range("n", default=3)
TOKENS = Param("tokens", default=3, lo=1, doc="tokens in the ring")
LAPS = Param("laps", default=4, lo=1, doc="a process counts the tokens it handled modulo laps")

Token = Record("Token", id=Int(0, TOKENS - 1))


class TokenRing(ActorSpec):
    """Tokens circulating around a ring of processes (the executors' load test)."""

    Process = N
    Message = Token
    counted = Local(Int(0, LAPS - 1), init=0)

    @on_start
    def start(p):
        for t in range(p.id, p.tokens, p.n):
            send((p.id + 1) % p.n, Token(t))

    @on_message
    def receive(p, src, m):
        p.counted = (p.counted + 1) % p.laps
        send((p.id + 1) % p.n, m)

    @invariant
    def no_token_lost(s):
        """Every token is in flight (one envelope each: the network holds no copies)."""
        return s.network.card() == s.tokens
