"""Partial-order and symmetry reduction of actor specs: states, time and reduction factor per spec.

Each spec is checked (invariants, no deadlock check: the protocols end in quiescent states) with no
reduction, with partial-order reduction (POR), with symmetry reduction, and with both; the factor is
the full search's distinct states over the reduced search's, measured in the same run. Every mode runs
on the vector engine unless `--engine scalar` is given (both engines give the same counts). A search
stopped by `--max-states` prints `>` before its count and the factor is a lower bound. `--param k=v`
sets a parameter of the specs that declare it (two-phase commit at n = 4 processes: `--param rm=3`).

    python -m bench.actor_reduction                        # 2PC, P-SMR, Bracha (Byzantine relay, low quorum)
    python -m bench.actor_reduction --all                  # also honest and equivocating Bracha (12.6 M states)
    python -m bench.actor_reduction --spec bracha_equivocating_sender --modes por,both
"""

from __future__ import annotations

import argparse

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model, parse_params, resolve
from lockstep.checker.vector import check_vector
from lockstep.specs.lang import SpecError, declared_params

QUICK = ["two_phase_commit", "psmr", "bracha_byzantine_relay", "bracha_low_echo_quorum"]
ALL = QUICK + ["bracha", "bracha_equivocating_sender"]
MODES = {"none": (False, False), "por": (True, False), "symmetry": (False, True), "both": (True, True)}


def measure(spec: str, params: dict[str, int], mode: str, engine: str,
            max_states: int | None) -> tuple[str, int, float, str, str] | None:
    """(mode, distinct, seconds, verdict, violated property) of one search; None if the mode does not apply."""
    por, symmetry = MODES[mode]
    try:
        model = load_model(spec, params, symmetry=symmetry)
    except SpecError:  # no symmetric Range to reduce by
        return None
    opts = Options(deadlock=False, por=por, max_states=max_states)
    res = (check if engine == "scalar" else check_vector)(model, opts)
    prop = res.violation.name if res.violation is not None else "-"
    return mode, res.distinct, res.seconds, res.verdict, prop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="also the 12.6-million-state Bracha variants (long)")
    ap.add_argument("--spec", action="append", help="only this spec (repeatable)")
    ap.add_argument("--modes", default="none,por,symmetry,both", help="comma-separated: none, por, symmetry, both")
    ap.add_argument("--engine", choices=("vector", "scalar"), default="vector", help="explicit engine (default vector)")
    ap.add_argument("--param", "-p", action="append", default=[], metavar="K=V",
                    help="a parameter, for the specs that declare it (repeatable)")
    ap.add_argument("--max-states", type=int, default=None, help="stop each search after this many states")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            ap.error(f"unknown mode {m!r} (choose from {', '.join(MODES)})")
    given = parse_params(args.param)
    specs = args.spec or (ALL if args.all else QUICK)
    print(f"{'spec':<28}{'mode':<10}{'distinct':>13}{'seconds':>10}{'factor':>9}  verdict ({args.engine} engine)")
    for spec in specs:
        declared = declared_params(resolve(spec)[0])
        params = {k: v for k, v in given.items() if k in declared}
        name = spec + "".join(f" {k}={v}" for k, v in params.items())
        base = None
        for mode in modes:
            row = measure(spec, params, mode, args.engine, args.max_states)
            if row is None:
                print(f"{name:<28}{mode:<10}{'-':>13}{'-':>10}{'-':>9}  (no symmetric Range)", flush=True)
                continue
            m, distinct, secs, verdict, prop = row
            cut = verdict == "inconclusive"
            if m == "none":
                base = (distinct, cut)
            factor = ""
            if base is not None and m != "none" and not cut:
                factor = ("≥" if base[1] else "") + f"{base[0] / max(distinct, 1):.1f}×"
            shown = verdict if prop == "-" else f"{verdict} ({prop})"
            print(f"{name:<28}{m:<10}{('>' if cut else '') + f'{distinct:,}':>13}{secs:>10.1f}{factor:>9}  {shown}",
                  flush=True)


if __name__ == "__main__":
    main()
