"""Partial synchrony for Autobahn: a GST step, after which honest timers are timely.

With `--param gst=1` the global program has a Bool `gst` and a weakly fair step `gst` that sets it
once (global stabilisation time is reached, at some point of every fair behaviour). An honest
replica's slot timer (the one whose expiry sends a Timeout) may then fire

- before GST: at any time, except in view `views - 1`: GST comes before the last view change
  (the bound on views stands for "enough views for GST to fall within them");
- after GST: only when the honest part of the system is quiescent: no message between honest
  replicas is in flight, no honest leader's fast-path timer is armed and no honest leader is ready
  to propose. That is the timeliness a timeout longer than an honest view's message exchanges
  gives: after GST a view led by an honest replica completes before any honest timer expires.

Messages take any time before and after GST, but every message to an honest replica from an honest
one is eventually delivered (weak fairness). A Byzantine replica's messages are never forced
through: it may send them as late as it likes, so their delivery is not fair (which is also how a
Byzantine broadcast reaches only some replicas).
"""

from __future__ import annotations

from typing import Any

from ..lang import And, Bool, If, Not, Or, SpecError
from ..lang.actors import ActorProgram
from ..lang.actors.networks import SetNetwork
from ..lang.actors.spec import LocalStep, _ActorBuilder
from ..lang.program import Check, Field, Transition
from ..lang.spec import require
from .local import At
from .params import sizes


class PartialSynchrony(_ActorBuilder):
    """The actor builder, plus (with `gst=1`) the `gst` field and step and the timeliness of honest
    slot timers after GST; deliveries from Byzantine replicas are never fair."""

    def _gst(self) -> bool:
        return bool(self.binding.values.get("gst", 0))

    def _global_program(self) -> ActorProgram:
        prog = super()._global_program()
        if not self._gst():
            return prog
        if not isinstance(self.net, SetNetwork) or self.net.duplicating:
            raise SpecError(f"{self.cls.__name__} with gst=1 needs the default network (unordered, no duplicates)", None,
                            "drop --param ordered=1 / duplicating=1, or check with gst=0")
        fields = [*prog.fields, Field("gst", Bool.dom(), prog.nslots, False, None)]
        out = ActorProgram(self.cls, dict(self.binding.values), fields)
        out.symmetric = prog.symmetric
        out.init_defaults, out.init_choices = self._initial_values(out)
        return out

    def _compose(self, prog: ActorProgram, gslots: dict[int, list[int]], step: LocalStep) -> Transition | None:
        t = super()._compose(prog, gslots, step)
        if t is None:
            return None
        if step.kind == "message" and step.src in self.byz:
            t.meta.pop("fairness", None)
        if self._gst() and step.kind == "timeout" and not step.byzantine and step.timer.startswith("slot"):
            guard = self._timely(prog, step.pid, int(step.timer[4:]))
            t.checks.insert(0, Check("require", guard, "after GST, a timer fires only when the honest replicas are quiescent",
                                     step.loc))
        return t

    def _fault_transitions(self, prog: ActorProgram) -> list[Transition]:
        out = super()._fault_transitions(prog)
        if self._gst():
            def reach(g: Any, tracer: Any) -> None:
                require(Not(g.gst))
                g.gst = True

            # no "event" meta: partial-order reduction does not apply (it is refused, with a note)
            t = self._global_step(prog, "gst", (), (), None, reach, {"fairness": "weak"})
            if t is not None:
                out.append(t)
        return out

    def _timely(self, prog: ActorProgram, pid: int, slot: int) -> Any:
        """The condition on the global state under which honest replica `pid`'s timer of `slot` may fire."""
        honest = [q for q in self.proc.values() if q not in self.byz]
        to = {b: frozenset(self.types.envelope(a, b, m) for a in honest if a != b for m in self.msg.values()) for b in honest}

        def cond(s: Any) -> Any:
            z = sizes(s)
            quiet = []
            for q in honest:  # a crashed replica neither receives nor acts
                at = At(s, q)
                busy = [s.network.inter(to[q]).is_empty()]
                for t in range(1, z.slots + 1):
                    if z.fast:
                        busy.append(Not(s.timers[q][f"fast{t}"]))
                    ready = s.spec.lead_ready(at, t)
                    if ready is not False:
                        busy.append(Not(And(s.timers[q][f"lead{t}"], ready)))
                quiet.append(Or(s.crashed.contains(q), And(*busy)) if self.crashes else And(*busy))
            early = s.view[pid][slot] < z.views - 1
            return If(s.gst, And(*quiet), early)

        return self._predicate(prog, f"timely slot{slot} of {pid}", lambda s: cond(s)).term
