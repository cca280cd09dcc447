"""One large run of the vector engine, to completion: distinct states, time, peak memory, spilling.

    python bench/vector_scale.py two_phase rm=11                # 363 million states
    python bench/vector_scale.py filter_lock n=6 --memory 2048  # MiB of RAM for frontiers and parent links
    python bench/vector_scale.py two_phase rm=12 --bitstate 12  # GiB of bits instead of the exact visited set

Prints progress lines while it runs (on standard error) and a table at the end: the counts,
wall and CPU seconds, distinct states per second, the peak RSS of the process, the visited
table's bytes per state, and how much of the frontiers and parent links went to disk.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from lockstep.checker.explicit import Options  # noqa: E402
from lockstep.checker.loader import load_model, parse_params  # noqa: E402
from lockstep.checker.progress import Progress  # noqa: E402
from lockstep.checker.vector import VectorOptions, check_vector  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spec")
    ap.add_argument("params", nargs="*", metavar="NAME=VALUE")
    ap.add_argument("--memory", type=int, metavar="MIB", help="RAM for frontiers and parent links before spilling")
    ap.add_argument("--spill-dir", help="where spilled data goes (default: the temporary directory)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--bitstate", type=float, metavar="GIB", help="a bitstate visited set of GIB gibibytes")
    args = ap.parse_args()
    model = load_model(args.spec, parse_params(args.params))
    vopts = VectorOptions(memory=args.memory * 2**20 if args.memory is not None else None, spill_dir=args.spill_dir,
                          bitstate=int(args.bitstate * 2**30) if args.bitstate is not None else None)
    t0, c0 = time.perf_counter(), time.process_time()
    res = check_vector(model, Options(workers=args.workers), Progress(interval=30.0), vopts)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"spec                 {model.name} {model.params}")
    print(f"verdict              {res.verdict}")
    print(f"distinct states      {res.distinct:,}")
    print(f"generated            {res.generated:,}")
    print(f"depth                {res.depth}")
    print(f"wall seconds         {wall:,.1f} ({res.distinct / wall:,.0f} distinct states/s)")
    print(f"CPU seconds          {cpu:,.1f} (this process)")
    print(f"peak RSS             {peak:,.2f} GiB")
    for note in res.notes:
        print(f"note                 {note}")


if __name__ == "__main__":
    main()
