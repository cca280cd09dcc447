"""The configuration of a population run over time: how many agents are in each state.

A few states: one line per state. Many states: a heat map, states × time, the colour giving the
number of agents in the state at that time.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from lockstep.specs.lang.population import Population

from ..loader import LoadError
from ..safeio import replacing

MAX_LINES = 8  # up to this many occupied states, one line each; beyond, a heat map
COLUMNS = 600  # time samples of the heat map


def plot_counts(protocol: Population, path: list[tuple[int, str, tuple]], out: str, title: str) -> None:
    """Plot agent counts per state against parallel time (interactions / n), from a run's validated
    configuration path ([(interaction, label, configuration after)], the start first)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = protocol.n
    ts = np.array([k / n for k, _, _ in path], dtype=float)
    counts = np.array([c for _, _, c in path], dtype=np.int64)  # (changes, states)
    occupied = [i for i in range(counts.shape[1]) if counts[:, i].max() > 0]
    names = [str(s) for s in protocol.states]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    if len(occupied) <= MAX_LINES:
        for i in occupied:
            ax.step(ts, counts[:, i], where="post", lw=1.2, label=names[i])
        ax.set(ylabel="agents", ylim=(0, n * 1.04))
        ax.legend(loc="upper right", fontsize=8)
    else:
        end = ts[-1] if ts[-1] > 0 else 1.0
        grid = np.linspace(0, end, COLUMNS)
        at = np.searchsorted(ts, grid, side="right") - 1
        image = counts[at][:, occupied].T
        im = ax.imshow(image, aspect="auto", origin="lower", interpolation="nearest", cmap="viridis",
                       extent=(0, end, -0.5, len(occupied) - 0.5))
        step = max(1, len(occupied) // 16)
        ax.set_yticks(range(0, len(occupied), step), [names[occupied[j]] for j in range(0, len(occupied), step)])
        ax.set(ylabel="agent state")
        fig.colorbar(im, ax=ax, label="agents")
    ax.set(xlabel="parallel time (interactions / n)", title=title)
    fig.tight_layout()
    try:
        save_figure(fig, out)
    finally:
        plt.close(fig)


def save_figure(fig: Any, out: str) -> None:
    """Write a matplotlib figure to `out` (its format from the extension), replacing the file (`safeio.replacing`);
    a LoadError says why it cannot be written."""
    try:
        with replacing(out, binary=True) as f:
            fig.savefig(f, dpi=110, format=os.path.splitext(out)[1][1:].lower() or "png")
    except (OSError, ValueError) as e:
        raise LoadError(f"cannot write the plot {out}: {getattr(e, 'strerror', None) or e}") from None
