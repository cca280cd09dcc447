"""`TypedModel`: a `lockstep.specs.lang` spec compiled for the explicit engines."""

from __future__ import annotations

from itertools import product
from typing import TYPE_CHECKING, Any

from lockstep.specs.lang.errors import SpecError
from lockstep.specs.lang.program import Program, Transition

from . import interpret
from .codegen import compile_program
from .itf import decode_typed, encode_typed, show
from .model import Model, StepFailure

if TYPE_CHECKING:  # symmetry reduction is imported when asked for
    from .symmetry import Symmetry


class TypedModel(Model):
    """A typed spec's program, with compiled successor, predicate and fingerprint functions."""

    def __init__(self, prog: Program, ref: str, symmetry: bool = False):
        self.prog = prog
        self.name = prog.name
        self.ref = ref
        self.params = dict(prog.params)
        self.invariant_names = [p.name for p in prog.invariants]
        self.constraint_names = [p.name for p in prog.constraints]
        self.vars = [f.name for f in prog.fields]
        self.compiled = compile_program(prog)
        self.successors = self.compiled.successors  # type: ignore[method-assign]
        self.violated = self.compiled.violated  # type: ignore[method-assign]
        self.outside = self.compiled.outside  # type: ignore[method-assign]
        self.fingerprint = self.compiled.fingerprint  # type: ignore[method-assign]
        self.symmetry = False
        self.sym: Symmetry | None = None
        if symmetry:
            if not prog.symmetric:
                raise SpecError(f"spec {self.name} declares no symmetric Range, so --symmetry has nothing to reduce",
                                None, "declare process ids as Range(..., symmetric=True)")
            from .symmetry import Symmetry

            self.sym = Symmetry(prog)
            self.symmetry = True
            self.canonical = self.sym.canonical  # type: ignore[method-assign]
            self._validate_symmetry()

    def level_expander(self, deadlock: bool, partitioned: bool, flat: bool = False):
        """The compiled level expansion (codegen.expand_source) for these options."""
        key = (deadlock, partitioned, flat)
        cache = self.__dict__.setdefault("_expanders", {})
        if key not in cache:
            cache[key] = self.compiled.expander(partitioned=partitioned, symmetric=self.symmetry,
                                                constrained=bool(self.constraint_names), deadlock=deadlock, flat=flat)
        return cache[key]

    def flat_width(self) -> int | None:
        """Slots per state if every slot fits a signed 64-bit int (states can travel as flat arrays)."""
        for d in self.prog.slot_doms:
            hi = (1 << d.elem.size) - 1 if d.kind == "set" else d.hi
            if hi >= 1 << 63 or d.lo < -(1 << 63):
                return None
        return self.prog.nslots

    # -- initial states ---------------------------------------------------------------------
    def initial_states(self) -> list[tuple]:
        prog = self.prog
        slots = [prog.init_choices.get(i, [v]) for i, v in enumerate(prog.init_defaults)]
        out: list[tuple] = []
        for pre in product(*slots):
            if not prog.init_transitions:
                out.append(pre)
                continue
            try:
                out.extend(t for _, t in self.compiled.init_successors(pre))
            except Exception:
                failure = self._diagnose_with(prog.init_transitions, pre)
                raise SpecError(f"initial-state function failed: {failure.describe()}") from None
        return out

    # -- labels and states ----------------------------------------------------------------------
    def label(self, lid: int) -> str:
        return self.prog.transitions[lid].label

    def label_json(self, lid: int) -> dict[str, Any]:
        return _label_json(self.prog.transitions[lid])

    def encode_state(self, st: tuple) -> dict[str, Any]:
        return {f.name: encode_typed(f.dom, f.decode(st)) for f in self.prog.fields}

    def show_state(self, st: tuple) -> dict[str, str]:
        return {f.name: show(f.decode(st)) for f in self.prog.fields}

    def decode_state(self, values: dict[str, Any]) -> tuple:
        out: dict[str, Any] = {}
        for f in self.prog.fields:
            if f.name not in values:
                raise ValueError(f"no value for {f.name}")
            try:
                out[f.name] = decode_typed(f.dom, values[f.name])
            except ValueError as e:
                raise ValueError(f"{f.name}: {e}") from None
        try:
            return self.prog.encode(out)
        except (SpecError, ValueError) as e:
            raise ValueError(str(e)) from None

    def invariant_holds(self, name: str, st: tuple) -> bool:
        for p in self.prog.invariants:
            if p.name == name:
                if p.error is not None:
                    return False
                try:
                    return bool(interpret.evaluate(p.term, st))
                except interpret.EvalError:
                    return False
        raise ValueError(f"spec {self.name} has no invariant {name!r}")

    def steps_that_succeed(self, st: tuple) -> list[tuple[int, tuple]]:
        """(label id, successor) for every enabled step that does not fail (to follow a path through a
        state where some other step fails)."""
        out = []
        for lid, t in enumerate(self.prog.transitions):
            try:
                nxt = interpret.run_transition(self.prog, t, st)
            except interpret.Failure:
                continue
            if nxt is not None:
                out.append((lid, nxt))
        return out

    # -- diagnosis --------------------------------------------------------------------------------
    def diagnose(self, st: tuple) -> StepFailure:
        return self._diagnose_with(self.prog.transitions, st)

    def _diagnose_with(self, transitions, st: tuple) -> StepFailure:
        for t in transitions:
            try:
                interpret.run_transition(self.prog, t, st)
            except interpret.Failure as f:
                return StepFailure(t.label, f.kind, f.message, str(f.loc) if f.loc else None)
        return StepFailure("", "error", "a step failed, but it does not fail again when re-evaluated", None)

    def diagnose_predicate(self, st: tuple) -> StepFailure:
        for p in self.prog.invariants + self.prog.constraints:
            if p.error is not None:
                msg, loc = p.error
                return StepFailure(p.name, "error", msg, str(loc) if loc else None)
            try:
                interpret.evaluate(p.term, st)
            except interpret.EvalError as e:
                return StepFailure(p.name, e.kind, e.message, str(e.loc) if e.loc else None)
        return StepFailure("", "error", "a predicate failed, but not when re-evaluated", None)

    def explain_disabled(self, st: tuple, label_json: dict[str, Any]) -> str:
        for t in self.prog.transitions:
            if _label_json(t) == label_json:
                guard = interpret.first_false_guard(t, st)
                if guard is not None:
                    where = f" (guard at {guard.loc})" if guard.loc else ""
                    return f"{t.label} is not enabled here{where}"
                return f"{t.label} is enabled but produces a different state"
        return f"the spec has no action {label_json.get('action')!r} with these arguments"

    # -- symmetry soundness ---------------------------------------------------------------------
    def _validate_symmetry(self, limit: int = 500) -> None:
        """Check, on the first states of the unreduced graph, that steps and invariants commute
        with permutations of the symmetric ranges (what the reduction relies on)."""
        seen: set = set()
        frontier = list(self.initial_states())
        while frontier and len(seen) < limit:
            nxt = []
            for st in frontier:
                if st in seen or len(seen) >= limit:
                    continue
                seen.add(st)
                try:
                    self.check_symmetric(st)
                    nxt.extend(t for _, t in self.successors(st))
                except SpecError:
                    raise
                except Exception:
                    return  # a failing step is the search's to report
            frontier = nxt

    def check_symmetric(self, st: tuple) -> None:
        """Raise SpecError if a generator permutation does not commute with the spec at `st`."""
        assert self.sym is not None
        succ = {t for _, t in self.successors(st)}
        bad = self.violated(st)
        for sigma in self.sym.generators():
            apply = self.sym.applier(sigma)
            image = apply(st)
            image_succ = {t for _, t in self.successors(image)}
            if image_succ != {apply(t) for t in succ}:
                raise SpecError(
                    f"spec {self.name} is declared symmetric, but its steps are not: from state "
                    f"[{self._fmt(st)}] and its permuted image [{self._fmt(image)}] the successors differ",
                    None, "remove symmetric=True from the Range, or treat all its values alike "
                    "(no constants like `p == 0` on a symmetric process id)")
            if self.violated(image) != bad:
                raise SpecError(
                    f"spec {self.name} is declared symmetric, but an invariant distinguishes processes "
                    f"(state [{self._fmt(st)}])", None, "remove symmetric=True or make the invariant symmetric")

    def _fmt(self, st: tuple) -> str:
        return ", ".join(f"{k} = {v}" for k, v in self.show_state(st).items())


def _label_json(t: Transition) -> dict[str, Any]:
    args = {name: encode_typed(dom, v) for (name, v), dom in zip(t.args, t.arg_doms)}
    return {"action": t.action, "args": args}
