"""Exhaustive check of Bracha's broadcast, n = 4, f = 1, on one core: state counts and time.

The baseline, measured in the same invocation, is the reference two-phase commit spec
(`two_phase`, RM = 7, 296,448 states): the ratio column compares states per second.

    .venv/bin/python bench/bracha_check.py            # the Byzantine relay (about a minute)
    .venv/bin/python bench/bracha_check.py --all      # also the equivocating sender (12.6 M states)
"""

from __future__ import annotations

import argparse

from lockstep.checker.explicit import Options, check
from lockstep.checker.loader import load_model


def measure(spec: str, params: dict[str, int]) -> tuple[str, int, int, int, float, str]:
    res = check(load_model(spec, params), Options(deadlock=False))
    return spec, res.distinct, res.generated, res.depth, res.seconds, res.verdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="also check the equivocating sender (several minutes)")
    args = ap.parse_args()
    rows = [measure("two_phase", {"rm": 7}), measure("bracha_byzantine_relay", {})]
    if args.all:
        rows.append(measure("bracha_equivocating_sender", {}))
    base = rows[0][1] / rows[0][4]
    print(f"{'spec':<28}{'distinct':>12}{'generated':>13}{'depth':>7}{'seconds':>9}{'states/s':>10}{'ratio':>7}  verdict")
    for spec, distinct, generated, depth, secs, verdict in rows:
        rate = distinct / secs
        print(f"{spec:<28}{distinct:>12,}{generated:>13,}{depth:>7}{secs:>9.1f}{rate:>10,.0f}{rate / base:>7.2f}  {verdict}")


if __name__ == "__main__":
    main()
