"""The fair synchronous concurrent program algebra of Hayes and Meinicke, executable on a finite Σ.

Sources: I. J. Hayes, L. A. Meinicke, "Encoding fairness in a synchronous concurrent program
algebra", RAMiCS 2018 (LNCS 10951; extended version arXiv 1805.01681), built on Hayes, Colvin,
Meinicke, Winter, Velykis, "An algebra of synchronous atomic steps", FM 2016, and on the
Isabelle/HOL theories: the AFP session `Concurrent_Ref_Alg` (refinement lattice, ;, ∥, ⋒,
iterations) and the UQ `rg_algebra` development (atomic steps π/ε, the synchronisation axioms,
and `Fairness.thy`, which encodes `fair` and fair parallel with the paper's lemmas).

Modules: `commands` (the command trees), `syntax` (the textual syntax, parsed with lark),
`semantics` (the labelled transition system with Büchi acceptance), `traces` (trace listing).
Refinement is decided by the engine in `lockstep.checker.refinement` (`lockstep algebra refines`), and
the laws are checked in `lockstep.proofs.fair_algebra_laws` (`lockstep algebra laws`).

Definitions followed
- Orientation of the paper and the AFP: ⊓ is nondeterministic choice, c ⊑ d means d refines c
  (every trace of d is a trace of c), ⊥ is abort, ⊤ is magic (infeasible).
- Traces are Aczel traces: an initial state, then program (π) and environment (ε) steps, each
  with its next state; a trace is terminated (✓), aborted (↯), infinite, or incomplete.
  Incomplete traces (feasible prefixes) are kept, so π;⊤ ≠ ⊤; abort is closed upwards (a
  command that may abort after w allows every trace extending w).
- π(r) ∥ ε(s) = π(r ∩ s), ε(r) ∥ ε(s) = ε(r ∩ s), π ∥ π = ⊤; π(r) ⋒ π(s) = π(r ∩ s), π ⋒ ε = ⊤.
  Parallel and weak conjunction proceed in lock-step and terminate only together:
  nil ∥ (a;c) = ⊤ for an atomic a (the `nil_sync_atomic_pre` axiom); ⊥ ∥ c = ⊥, c ⋒ ⊥ = ⊥.
- skip = ε^ω (unit of ∥), chaos = (π ⊓ ε)^ω (unit of ⋒), term = α*;ε^ω with α = π ⊓ ε.
- c^ω is the least fixed point of x = nil ⊓ c;x (so an unguarded loop aborts: nil^ω = ⊥),
  c* the greatest (finite iteration), c^∞ = c^ω;⊤ (infinite iteration).
- fair = ε*;(π;ε*)^ω (`fair_def` in Fairness.thy): every finite trace, and the infinite traces
  with infinitely many program steps. The fair execution of c is c ⋒ fair.
- Fair parallel is c ∥_f d = ((c ⋒ fair);skip) ∥ ((d ⋒ fair);skip) (`fair_par_def`). A component
  that has terminated continues as skip, *outside* its ⋒ fair: it matches any number of the
  other side's steps with environment steps and carries no fairness obligation, so a finished
  process does not make the composition unfair.
- "c ∥ d ⊑ c ∥_f d" is false as stated (c = nil, d = π: nil ∥ π = ⊤ but nil ∥_f π = π;skip).
  It holds when c = c;skip and d = d;skip, which is how the laws table states it (law
  `par_fair_par`); the unrestricted form is listed as a law that must be refuted.

Deviations and gaps
- The paper's body could not be consulted: definition, law and theorem numbers are not given.
  The statements follow the Isabelle encoding (lemma names are cited in the laws table), whose
  identity with the paper's definitions is assumed, not checked.
- Σ is finite and small (a parameter, 2 states by default); relations are explicit. Tests
  ([b]), assertions and specification commands of the wider algebra are not included; rely
  and guarantee are expressible (e.g. (π ⊓ ε(r))^ω;(nil ⊓ ε(-r);⊥)) but not named commands.
- Acceptance conditions are this module's construction, checked against the algebra through
  the laws (e.g. `fair_definition`, `skip_fair`, `term_fair`): c* accepts only runs that
  iterate finitely often (each iteration guesses whether it is the last); products accept
  when both sides accept infinitely often. `fair` is a primitive automaton equal (by the law
  `fair_definition`) to its definition.
- c^ω aborts at an iteration boundary whenever c can terminate at once (for any such c, not only
  nil: (nil ⊓ d)^ω = ⊥ follows from the least-fixed-point definition).
- Not checked: `decompose_atomic`, `decompose_parallel` and `par_termination` (they quantify
  over infinite meets, which finite command terms cannot express); `fair_par_interchange_seq`
  (left unproved in the Isabelle copy, with no settled statement).
"""
