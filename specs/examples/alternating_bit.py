"""The alternating-bit protocol over lossy FIFO channels, as in the TLA+ Examples `AlternatingBit` spec
(Lamport, "Specifying Systems", section 14.5; after Bartlett, Scantlebury and Wilkinson, CACM 1969).

Source: github.com/tlaplus/Examples, specifications/SpecifyingSystems/TLC/AlternatingBit.tla and its model
MCAlternatingBit (Data = {d1, d2}, msgQLen = ackQLen = 2, CONSTRAINT SeqConstraint). A sender sends each
value with a bit, resending it until an acknowledgement with that bit comes back, then flips the bit; the
receiver takes messages from the head of `msg_q` and acknowledges the bit it last received on `ack_q`. Both
channels are FIFO and may lose any message. TLC, for that model: 240 distinct states, 1392 generated,
depth 10 (the Examples manifest); Lockstep counts the same.

Properties. The TLA+ model checks the refinement `ABCSpec` (the abstract protocol of ABCorrectness.tla)
and `SentLeadsToRcvd`. A refinement is not a Lockstep property; its safety content on these variables is
stated as two invariants that ABC's reachable states satisfy: `ack_means_received` (the sender holds an
acknowledgement of its current bit only when the receiver has that bit) and `delivered` (once the
receiver has the current bit of a value not yet acknowledged, it has received that value).
`SentLeadsToRcvd` (∀ d ∈ Data: sent = d ∧ sBit ≠ sAck ↝ rcvd = d) is one temporal property per datum,
under the spec's fairness WF(ReSndMsg), WF(SndAck), SF(RcvMsg), SF(RcvAck):

    lockstep check alternating_bit                                      # 240 distinct states, invariants hold
    lockstep check alternating_bit --property SentLeadsToRcvd_d1 --property SentLeadsToRcvd_d2
    lockstep check alternating_bit_reordering                          # seeded bug: ack_means_received fails

Under that fairness the property holds; with a weakly fair receiver (`--fairness rcv_msg=weak`) it fails,
as it should over a lossy channel: the message is lost every time it is sent, so `rcv_msg` is enabled
infinitely often but never continuously.

`AlternatingBitReordering` is a seeded bug: the message channel delivers any message in it, not the
oldest. A stale copy of an earlier message flips the receiver's bit back after its acknowledgement was
received (`ack_means_received` fails in 10 steps), or is taken for the current value (`delivered`, 11).

Deviations and filled gaps: names follow Python style (`msg_q` for msgQ, `snd_new_value` for
SndNewValue). The queues are `Seq`s one longer than the constraint's bounds (`msg_q_len`, `ack_q_len`,
parameters), so that a step beyond the bound is generated and then cut by the constraint, as TLC does.
`ABTypeInv` is implied by the declared types. `Lose(q)`'s `∃ i ∈ 1..Len(q)` is the action parameter `i`
(0-based). The initial choice of sBit, sent and rcvd is `init=ANY`; sAck and rBit copy sBit in the
`@initial` function.
"""

from ..lang import (
    ANY,
    And,
    Enum,
    Implies,
    Int,
    Param,
    Range,
    Record,
    Seq,
    Spec,
    Var,
    action,
    constraint,
    initial,
    invariant,
    leads_to,
    require,
    temporal,
)

Data = Enum("d1", "d2")
Bit = Int(0, 1)
Msg = Record("Msg", bit=Bit, data=Data)
MSG_Q_LEN = Param("msg_q_len", default=2, lo=0, doc="msgQLen: the longest message queue explored")
ACK_Q_LEN = Param("ack_q_len", default=2, lo=0, doc="ackQLen: the longest acknowledgement queue explored")


class AlternatingBit(Spec):
    """The alternating-bit protocol over lossy FIFO channels (TLA+ Examples MCAlternatingBit)."""

    msg_q = Seq(Msg, MSG_Q_LEN + 1)
    ack_q = Seq(Bit, ACK_Q_LEN + 1)
    s_bit = Var(Bit, init=ANY)
    s_ack = Var(Bit)
    r_bit = Var(Bit)
    sent = Var(Data, init=ANY)
    rcvd = Var(Data, init=ANY)

    @initial
    def ab_init(s):
        s.s_ack = s.s_bit
        s.r_bit = s.s_bit

    @action
    def snd_new_value(s, d: Data):
        require(s.s_ack == s.s_bit)
        s.sent = d
        s.s_bit = 1 - s.s_bit
        s.msg_q = s.msg_q.append(Msg(bit=s.s_bit, data=d))  # sBit' (a field reads as assigned so far)

    @action(fairness="weak")
    def re_snd_msg(s):
        require(s.s_ack != s.s_bit)
        s.msg_q = s.msg_q.append(Msg(bit=s.s_bit, data=s.sent))

    @action(fairness="strong")
    def rcv_msg(s):
        require(~s.msg_q.is_empty())
        s.r_bit = s.msg_q.head().bit
        s.rcvd = s.msg_q.head().data
        s.msg_q = s.msg_q.tail()

    @action(fairness="weak")
    def snd_ack(s):
        s.ack_q = s.ack_q.append(s.r_bit)

    @action(fairness="strong")
    def rcv_ack(s):
        require(~s.ack_q.is_empty())
        s.s_ack = s.ack_q.head()
        s.ack_q = s.ack_q.tail()

    @action
    def lose_msg(s, i: Range(MSG_Q_LEN + 1)):
        require(i < s.msg_q.len())
        s.msg_q = s.msg_q.remove_at(i)

    @action
    def lose_ack(s, i: Range(ACK_Q_LEN + 1)):
        require(i < s.ack_q.len())
        s.ack_q = s.ack_q.remove_at(i)

    @constraint
    def seq_constraint(s):
        return And(s.msg_q.len() <= s.msg_q_len, s.ack_q.len() <= s.ack_q_len)

    @invariant
    def ack_means_received(s):
        return Implies(s.s_ack == s.s_bit, s.r_bit == s.s_bit)

    @invariant
    def delivered(s):
        return Implies(And(s.r_bit == s.s_bit, s.s_ack != s.s_bit), s.rcvd == s.sent)

    @temporal
    def SentLeadsToRcvd_d1(s):
        return leads_to(And(s.sent == "d1", s.s_bit != s.s_ack), s.rcvd == "d1")

    @temporal
    def SentLeadsToRcvd_d2(s):
        return leads_to(And(s.sent == "d2", s.s_bit != s.s_ack), s.rcvd == "d2")


class AlternatingBitReordering(AlternatingBit):
    """Seeded bug: the message channel delivers any of its messages, not the oldest (the invariants fail)."""

    rcv_msg = None

    @action(fairness="strong")
    def rcv_any_msg(s, i: Range(MSG_Q_LEN + 1)):
        require(i < s.msg_q.len())
        s.r_bit = s.msg_q[i].bit
        s.rcvd = s.msg_q[i].data
        s.msg_q = s.msg_q.remove_at(i)
