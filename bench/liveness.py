"""Liveness cost: deciding a temporal property under fairness against the safety-only search of the
same spec, measured in the same run (the baseline). Run: python -m bench.liveness"""

from __future__ import annotations

import time

from lockstep.checker.explicit import Options, check
from lockstep.checker.liveness import check_properties
from lockstep.checker.loader import load_model
from lockstep.checker.temporal import fairness, select

CASES = [
    ("ewd840", "Liveness", {"n": 3}),
    ("ewd840", "Liveness", {"n": 4}),
    ("ewd840", "Liveness", {"n": 5}),
    ("lock", "no_starvation", {"n": 3}),
    ("lock", "no_starvation", {"n": 5}),
]


def best_of(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    print(f"{'spec':<10} {'params':<8} {'property':<15} {'states':>8} {'safety s':>9} {'liveness s':>11} {'ratio':>6}  verdict")
    for spec, prop, params in CASES:
        model = load_model(spec, params)
        opts = Options(deadlock=False)
        t_safe, safe = best_of(lambda model=model, opts=opts: check(model, opts))
        p, fair = select(model, prop), fairness(model)
        t_live, live = best_of(lambda model=model, p=p, fair=fair, opts=opts: check_properties(model, [p], fair, opts))
        assert safe.distinct == live.distinct
        ps = ",".join(f"{k}={v}" for k, v in params.items())
        print(f"{spec:<10} {ps:<8} {prop:<15} {live.distinct:>8,} {t_safe:>9.3f} {t_live:>11.3f} "
              f"{t_live / t_safe:>6.1f}  {live.verdict}")


if __name__ == "__main__":
    main()
