"""Bitstate mode against the exact search: states kept, states omitted and the estimate of them, and time.

    python bench/bitstate.py                      # TwoPhase RM=8..10 at several hash factors
    python bench/bitstate.py --rm 9 --factors 4 16 64

Each row runs the exact vector search and a bitstate search whose table gives FACTOR bits per state of the
exact count (SPIN's hash factor), interleaved, and prints: the exact count, the bitstate count, the states
actually omitted (their difference), the omission estimate the bitstate search reports, and the time of each.
The estimate counts the states lost directly (taken for visited); states reached only through them are lost
too, so at small factors the actual loss exceeds it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from lockstep.checker.explicit import Options  # noqa: E402
from lockstep.checker.loader import load_model  # noqa: E402
from lockstep.checker.vector import VectorOptions, check_vector  # noqa: E402


def _timed(model, vopts: VectorOptions | None):
    t0 = time.perf_counter()
    res = check_vector(model, Options(), vopts=vopts or VectorOptions(native="always"))
    return res, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rm", type=int, nargs="+", default=[8, 9, 10], help="TwoPhase sizes (resource managers)")
    ap.add_argument("--factors", type=float, nargs="+", default=[4, 16, 64], help="bits per state of the table")
    args = ap.parse_args()
    print(f"{'spec':<14}{'factor':>7}{'exact':>14}{'bitstate':>14}{'omitted':>11}{'estimate':>11}"
          f"{'exact s':>9}{'bits s':>9}{'ratio':>7}")
    for rm in args.rm:
        model = load_model("two_phase", {"rm": rm})
        for factor in args.factors:
            exact, te = _timed(model, None)
            size = max(int(exact.distinct * factor / 8), 1 << 10)
            bits, tb = _timed(model, VectorOptions(native="always", bitstate=size))
            print(f"{'two_phase rm=' + str(rm):<14}{factor:>7g}{exact.distinct:>14,}{bits.distinct:>14,}"
                  f"{exact.distinct - bits.distinct:>11,}{bits.bitstate_omitted:>11,.0f}{te:>9.2f}{tb:>9.2f}"
                  f"{tb / te:>7.2f}")


if __name__ == "__main__":
    main()
